"""Plot scan cost vs repository size and vs worktrees from scan_speed.py's --json output.

    python benchmarks/plot.py benchmarks/out/scan_grid.json benchmarks/scan_cost.png

Writes an SVG (no plotting library) and, when Chromium is installed, a PNG of it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any

W, H, PAD = 520, 360, 56
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def panel(rows: list[dict[str, Any]], x_key: str, group_key: str, title: str, x0: int) -> str:
    xs = sorted({r[x_key] for r in rows})
    ys = [r[k] for r in rows for k in ("warm_scan_s", "git_status_floor_s")]
    lo, hi = math.log10(min(ys)) - 0.1, math.log10(max(ys)) + 0.1

    def px(x: float) -> float:
        i = xs.index(x)
        return x0 + PAD + i * (W - 2 * PAD) / max(1, len(xs) - 1)

    def py(y: float) -> float:
        return H - PAD - (math.log10(y) - lo) / (hi - lo) * (H - 2 * PAD)

    out = [f'<text x="{x0 + W / 2}" y="24" text-anchor="middle" font-size="15">{title}</text>',
           f'<line x1="{x0 + PAD}" y1="{H - PAD}" x2="{x0 + W - PAD}" y2="{H - PAD}" '
           'stroke="#333"/>',
           f'<line x1="{x0 + PAD}" y1="{PAD}" x2="{x0 + PAD}" y2="{H - PAD}" stroke="#333"/>']
    for x in xs:
        out.append(f'<text x="{px(x)}" y="{H - PAD + 18}" text-anchor="middle" '
                   f'font-size="12">{x:,}</text>')
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= math.log10(v) <= hi:
                out.append(f'<text x="{x0 + PAD - 6}" y="{py(v) + 4}" text-anchor="end" '
                           f'font-size="11">{v:g}s</text>')
                out.append(f'<line x1="{x0 + PAD}" y1="{py(v)}" x2="{x0 + W - PAD}" '
                           f'y2="{py(v)}" stroke="#eee"/>')
    out.append(f'<text x="{x0 + W / 2}" y="{H - 12}" text-anchor="middle" font-size="12">'
               f'{x_key}</text>')
    for i, g in enumerate(sorted({r[group_key] for r in rows})):
        series = sorted((r for r in rows if r[group_key] == g), key=lambda r: r[x_key])
        c = COLOURS[i % len(COLOURS)]
        for key, dash in (("warm_scan_s", ""), ("git_status_floor_s", ' stroke-dasharray="5,4"')):
            pts = " ".join(f"{px(r[x_key])},{py(r[key])}" for r in series)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"'
                       f'{dash}/>')
        out.append(f'<text x="{x0 + W - PAD + 4}" y="{py(series[-1]["warm_scan_s"]) + 4}" '
                   f'font-size="11" fill="{c}">{g:,} {group_key}</text>')
    return "\n".join(out)


def svg(rows: list[dict[str, Any]]) -> str:
    grid = [r for r in rows if r.get("changes", 5) == 5]
    body = panel(grid, "files", "worktrees", "warm scan vs repository size", 0)
    body += panel(grid, "worktrees", "files", "warm scan vs worktrees", W + 40)
    legend = (f'<text x="20" y="{H + 16}" font-size="12">solid: proximity scan (warm, whole '
              'process) · dashed: git status in every worktree (the floor) · log scale</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W + 80}" height="{H + 30}" '
            f'font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>'
            f"{body}{legend}</svg>")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="scan_speed.py --json output")
    ap.add_argument("out", help="the PNG to write (an SVG is written beside it)")
    args = ap.parse_args(argv)
    src, out = args.src, args.out
    with open(src) as f:
        rows = json.load(f)
    text = svg(rows)
    svg_path = out.rsplit(".", 1)[0] + ".svg"
    with open(svg_path, "w") as f:
        f.write(text)
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe and out.endswith(".png"):
        with tempfile.TemporaryDirectory() as prof:
            subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--hide-scrollbars",
                            f"--user-data-dir={prof}", f"--window-size={2 * W + 80},{H + 30}",
                            f"--screenshot={os.path.abspath(out)}", "file://" +
                            os.path.abspath(svg_path)], check=True, capture_output=True)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
