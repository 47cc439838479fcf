"""Regenerate the README pictures from the demo: `status`, the 3-D view, and the recorded
timeline of `demo --swarm` at its first resolution advisory (needs Chromium). With
``--swarm-repo DIR`` (the main checkout of a run of `benchmarks/swarm.py --keep`), only the
recorded timeline of that run, at its busiest frame with a person in a resolution advisory,
as ``docs/swarm_timeline.png``.

    python docs/make_pictures.py
    python docs/make_pictures.py --swarm-repo KEEP/proximity/repo
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from rich.console import Console

from proximity.commands import demo, swarm, view
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.views import tables

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


def shoot(exe: str, url: str, out: str, size: str, profile: str) -> None:
    subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                    f"--screenshot={out}", url], check=True, capture_output=True)


def timeline(exe: str, tmp: str) -> str:
    """`demo --swarm`'s recording, photographed at its first resolution advisory."""
    page, _log = swarm.run(os.path.join(tmp, "swarm"))
    frames = frames_of(page)
    ra = next(i for i, f in enumerate(frames)
              if any(p["advisory"] == "resolution" for p in f["pairs"]))
    out = os.path.join(HERE, "timeline.png")
    shoot(exe, f"file://{page}#t={ra}", out, "1200,760", os.path.join(tmp, "p3"))
    return out


def frames_of(page: str) -> list[dict[str, Any]]:
    with open(page) as f:
        blob = re.search(r'<script type="application/json" id="data">(.*?)</script>',
                         f.read(), re.S)
    assert blob
    frames: list[dict[str, Any]] = json.loads(blob.group(1).replace("<\\/", "</"))["timeline"]
    return frames


def swarm_timeline(exe: str, repo: str, tmp: str) -> str:
    """A kept swarm run's recording (`proximity view`, the command a user runs), at the
    frame with the most resolution advisories among those where a person (h*) is in one."""
    page = os.path.join(tmp, "swarm.html")
    subprocess.run([sys.executable, "-m", "proximity", "view", "--out", page], cwd=repo,
                   check=True, capture_output=True)
    frames = frames_of(page)

    def ras(f: dict[str, Any], person: bool) -> int:
        return sum(p["advisory"] == "resolution" and (not person or any(
            str(p.get(k, "")).startswith("h") for k in ("a", "b"))) for p in f["pairs"])
    best = max(range(len(frames)), key=lambda i: (ras(frames[i], True) > 0,
                                                   ras(frames[i], False), -i))
    out = os.path.join(HERE, "swarm_timeline.png")
    shoot(exe, f"file://{page}#t={best}", out, "1200,1300", os.path.join(tmp, "p4"))
    print(f"frame {best} of {len(frames)}: {ras(frames[best], False)} resolution "
          f"advisories, {ras(frames[best], True)} with a person", file=sys.stderr)
    return out


def main() -> int:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("needs chromium", file=sys.stderr)
        return 1
    if sys.argv[1:2] == ["--swarm-repo"] and len(sys.argv) == 3:
        tmp = tempfile.mkdtemp(prefix="proximity-pictures-")
        try:
            print(swarm_timeline(exe, sys.argv[2], tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
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
        recorded = timeline(exe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(os.path.join(HERE, "status.png"), os.path.join(HERE, "view.png"), recorded)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
