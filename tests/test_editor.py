"""A real editor: headless Neovim's built-in LSP client runs `proximity lsp` (through the
set-up docs/editors.md gives, editors/nvim/proximity.lua) and reads a sibling's lines and
a conflict as typed through ``vim.diagnostic.get()``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lines

NVIM = shutil.which("nvim")
SETUP = Path(__file__).resolve().parent.parent / "editors" / "nvim" / "proximity.lua"
pytestmark = pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (tests/run.sh "
                                "installs Debian's neovim package)")
APP = lines(30)

SCRIPT = """
local out = {}
local prox = dofile(%(setup)s)
prox.setup({ cmd = { %(python)s, "-m", "proximity", "lsp" } })
vim.cmd("edit " .. vim.fn.fnameescape(%(file)s))
local function seen(want)
  return vim.wait(30000, function()
    for _, d in ipairs(vim.diagnostic.get(0)) do
      if d.severity == want then return true end
    end
    return false
  end, 50)
end
local function take(label)
  local got = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(got, { lnum = d.lnum, severity = d.severity, message = d.message,
                        source = d.source })
  end
  out[label] = got
end
out.opened = seen(vim.diagnostic.severity.INFO)
take("open")
-- the person types over the sibling's line, without saving
vim.api.nvim_buf_set_lines(0, 11, 12, false, { "line 12 typed in nvim" })
out.typed = seen(vim.diagnostic.severity.ERROR)
take("typing")
vim.fn.writefile({ vim.fn.json_encode(out) }, %(out)s)
vim.cmd("qa!")
"""


def test_neovim_reads_the_siblings_lines_and_the_conflict_through_vim_diagnostic(
        space, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert NVIM is not None
    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    script, out = tmp_path / "run.lua", tmp_path / "out.json"
    script.write_text(SCRIPT % {k: json.dumps(str(v)) for k, v in {
        "setup": SETUP, "python": sys.executable, "file": a / "app.txt", "out": out}.items()})
    proc = subprocess.run([NVIM, "--headless", "--clean", "-c", f"luafile {script}"],
                          cwd=a, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert out.exists(), proc.stdout + proc.stderr
    got = json.loads(out.read_text())
    assert got["opened"] and got["typed"], got
    (info,) = got["open"]
    assert info["lnum"] == 11 and info["severity"] == 3 and info["source"] == "proximity"
    assert "worktree 'b' (branch feat/b) is changing these lines" in info["message"]
    (err,) = [d for d in got["typing"] if d["severity"] == 1]
    assert err["lnum"] == 11 and err["message"].startswith("proximity check: DENY: worktree 'b'")


EMACS = shutil.which("emacs")
ELISP = r""";; -*- lexical-binding: t -*-
(require 'eglot)
(require 'flymake)
(require 'cl-lib)
(setq eglot-server-programs
      (list (cons '(text-mode fundamental-mode) (list %(python)s "-m" "proximity" "lsp"))))
(defun prox-wait (pred)
  (let ((n 0))
    (while (and (< n 600) (not (funcall pred)))
      (accept-process-output nil 0.05)
      (setq n (1+ n)))
    (funcall pred)))
(defun prox-take ()
  (apply #'vector
         (mapcar (lambda (d) (vector (line-number-at-pos (flymake-diagnostic-beg d))
                                     (symbol-name (flymake-diagnostic-type d))
                                     (flymake-diagnostic-text d)))
                 (flymake-diagnostics))))
(defun prox-has (type)
  (lambda () (flymake-start) (cl-some (lambda (d) (equal (aref d 1) type)) (prox-take))))
(find-file %(file)s)
(text-mode)
(apply #'eglot--connect (eglot--guess-contact))
(let* ((opened (prox-wait (prox-has "eglot-note")))
       (open (prox-take)))
  (goto-char (point-min))
  (forward-line 11)
  (delete-region (line-beginning-position) (line-end-position))
  (insert "line 12 typed in emacs")
  ;; (eglot sends changes from an idle timer, and a batch Emacs is never idle)
  (eglot--signal-textDocument/didChange)
  (let* ((typed (prox-wait (prox-has "eglot-error")))
         (typing (prox-take)))
    (with-temp-file %(out)s
      (insert (json-encode (list (cons 'opened opened) (cons 'open open)
                                 (cons 'typed typed) (cons 'typing typing)))))))
(kill-emacs 0)
"""


@pytest.mark.skipif(EMACS is None, reason="Emacs is not installed (Debian's emacs-nox and "
                    "elpa-eglot packages)")
def test_emacs_eglot_shows_the_siblings_lines_and_the_conflict_through_flymake(
        space, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert EMACS is not None
    probe = subprocess.run([EMACS, "--batch", "--eval", "(require 'eglot)"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip("Emacs has no eglot (Emacs 29+, or Debian's elpa-eglot)")
    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    script, out = tmp_path / "run.el", tmp_path / "out.json"
    script.write_text(ELISP % {k: json.dumps(str(v)) for k, v in {
        "python": sys.executable, "file": a / "app.txt", "out": out}.items()})
    proc = subprocess.run([EMACS, "--batch", "-l", str(script)], cwd=a, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.exists(), proc.stdout + proc.stderr
    got = json.loads(out.read_text())
    assert got["opened"] and got["typed"], got
    (info,) = got["open"]
    assert info[0] == 12 and info[1] == "eglot-note"
    assert "worktree 'b' (branch feat/b) is changing these lines" in info[2]
    (err,) = [d for d in got["typing"] if d[1] == "eglot-error"]
    assert err[0] == 12 and "proximity check: DENY: worktree 'b'" in err[2]
