"""Regenerate docs/editor.png: a real Neovim (in tmux) with `proximity lsp` attached, showing
a sibling's lines and a conflict typed over one of them (needs nvim, tmux and Chromium).

    python docs/make_editor_picture.py

The screen is tmux's own capture of the running editor (its colours included), drawn as
HTML by rich and photographed by headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.terminal_theme import MONOKAI
from rich.text import Text

COLS = 124  # the terminal's width
HERE = os.path.dirname(os.path.abspath(__file__))
SETUP = os.path.join(HERE, "..", "editors", "nvim", "proximity.lua")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=2000"]
APP = '''"""Prices for the shop."""

TAX = 0.2


def price(amount, discount=0):
    """The price after discount, with tax."""
    net = amount - discount
    return round(net * (1 + TAX), 2)


def shipping(weight):
    """Shipping by weight."""
    if weight < 1:
        return 4.0
    return 4.0 + weight * 0.5
'''
INIT = '''
vim.o.number = true
vim.o.termguicolors = true
vim.o.signcolumn = "yes"
vim.diagnostic.config({ virtual_text = { spacing = 2 }, severity_sort = true })
vim.cmd("highlight NormalFloat guibg=#26282e guifg=#d8d8d8")
vim.cmd("highlight FloatBorder guibg=#26282e guifg=#808080")
local proximity = dofile(%(setup)r)
proximity.setup({ cmd = { %(python)r, "-m", "proximity", "lsp" } })
'''


def git(cwd: str, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", "proximity-picture", *args], check=True,
                          capture_output=True, text=True).stdout


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not (chromium and shutil.which("nvim") and shutil.which("tmux")):
        print("needs nvim, tmux and chromium", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="proximity-editor-picture-")
    try:
        repo = os.path.join(tmp, "shop")
        os.makedirs(repo)
        git(repo, "init", "-q", "-b", "main")
        with open(os.path.join(repo, "prices.py"), "w") as f:
            f.write(APP)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "prices")
        me, alice = os.path.join(tmp, "me"), os.path.join(tmp, "alice")
        git(repo, "worktree", "add", "-q", "-b", "me", me)
        git(repo, "worktree", "add", "-q", "-b", "agent/alice-vat", alice)
        with open(os.path.join(alice, "prices.py"), "w") as f:  # the agent, uncommitted
            f.write(APP.replace("TAX = 0.2\n", "TAX = 0.21  # VAT from July\n").replace(
                "    return round(net * (1 + TAX), 2)\n",
                "    return round(net * (1 + TAX), 2) if net > 0 else 0.0\n"))
        init = os.path.join(tmp, "init.lua")
        with open(init, "w") as f:
            f.write(INIT % {"setup": os.path.abspath(SETUP), "python": sys.executable})
        tmux("new-session", "-d", "-x", str(COLS), "-y", "30", "-c", me,
             f"nvim --clean -u {init} prices.py")
        try:
            time.sleep(4)  # the server starts, judges the file, shows alice's lines
            # the person types over alice's line 9, unsaved
            tmux("send-keys", "9G", "cc", "    return round(net * (1 + TAX) * 100) / 100",
                 "Escape")
            time.sleep(3)
            tmux("send-keys", "9G0")  # the hover on that line: their hunk, who yields
            time.sleep(0.5)
            tmux("send-keys", ":lua vim.lsp.buf.hover()", "Enter")
            time.sleep(2)
            screen = tmux("capture-pane", "-e", "-p")
        finally:
            tmux("kill-server")
        console = Console(record=True, width=COLS, file=open(os.devnull, "w"),  # noqa: SIM115
                          color_system="truecolor")
        console.print(Text.from_ansi(screen.rstrip("\n")), soft_wrap=True)
        html = os.path.join(tmp, "screen.html")
        console.save_html(html, theme=MONOKAI)
        out = os.path.join(HERE, "editor.png")
        subprocess.run([chromium, *FLAGS, f"--user-data-dir={os.path.join(tmp, 'profile')}",
                        "--window-size=1240,640", f"--screenshot={out}", f"file://{html}"],
                       check=True, capture_output=True)
        print(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
