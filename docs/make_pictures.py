"""Regenerate the README pictures from the demo: `status` and the 3-D view (needs Chromium).

    python docs/make_pictures.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from rich.console import Console

from proximity.commands import demo, view
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.views import tables

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=3000"]


def shoot(exe: str, url: str, out: str, size: str, profile: str) -> None:
    subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                    f"--screenshot={out}", url], check=True, capture_output=True)


def main() -> int:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("needs chromium", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="proximity-pictures-")
    try:
        repo = demo.build(os.path.join(tmp, "demo"))
        ctx = workspace.open_context(repo)
        try:
            result = pipeline.run_scan(ctx)
            payload = view.data(result, "shop (proximity demo)")
        finally:
            ctx.close()
        con = Console(record=True, width=100, file=open(os.devnull, "w"))  # noqa: SIM115
        tables.status(result, con)
        svg = os.path.join(tmp, "status.svg")
        con.save_svg(svg, title="proximity status")
        page = os.path.join(tmp, "view.html")
        with open(page, "w") as f:
            f.write(view.html(payload))
        shoot(exe, "file://" + svg, os.path.join(HERE, "status.png"), "1000,760",
              os.path.join(tmp, "p1"))
        shoot(exe, "file://" + page, os.path.join(HERE, "view.png"), "1200,640",
              os.path.join(tmp, "p2"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(os.path.join(HERE, "status.png"), os.path.join(HERE, "view.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
