"""Scan cost against the floor, measured in the same run on the same machine.

    python benchmarks/scan_speed.py --files 5000 --worktrees 4
    python benchmarks/scan_speed.py --grid          # 1k/10k/50k files x 2/8/32 worktrees

For each repository: the cold scan (empty ledger: every blob parsed), the warm scan (median
of --runs), the floor "git status in every worktree" (the cost of merely looking) and
"git merge-tree --write-tree per pair" (what exact-only tools pay), peak RSS of the scan
process, and the ratios. Figures go to stdout (and --json).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate

PY = sys.executable


def run_rss(cmd: list[str], cwd: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {err.decode()}")
    return wall, int(usage.ru_maxrss)


def median_of(runs: int, cmd: list[str], cwd: str) -> float:
    return statistics.median(run_rss(cmd, cwd)[0] for _ in range(runs))


def measure(files: int, worktrees: int, runs: int, changes: int) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="proximity-bench-")
    try:
        t0 = time.perf_counter()
        main = generate(root, files, worktrees, changes)
        gen_s = time.perf_counter() - t0
        wts = [main] + [os.path.join(root, f"wt{w:02}") for w in range(worktrees)]
        scan = [PY, "-m", "proximity", "scan", "--json"]
        cold, cold_rss = run_rss(scan, main)
        warm_runs = [run_rss(scan, main) for _ in range(runs)]
        warm = statistics.median(w for w, _ in warm_runs)
        rss = max(r for _, r in [*warm_runs, (cold, cold_rss)])
        status_floor = statistics.median(
            sum(run_rss(["git", "status", "--porcelain"], w)[0] for w in wts)
            for _ in range(runs))
        heads = [f"agent{w}" for w in range(worktrees)] + ["main"]
        pairs = list(itertools.combinations(heads, 2))
        merge_floor = statistics.median(
            sum(run_rss(["git", "merge-tree", "--write-tree", a, b], main)[0]
                for a, b in pairs) for _ in range(max(1, runs // 2)))
        startup = median_of(runs, [PY, "-c", "pass"], main)
        return {"files": files, "worktrees": worktrees, "changes": changes,
                "agents": len(wts),
                "pairs": len(pairs), "generate_s": round(gen_s, 2),
                "cold_scan_s": round(cold, 3), "warm_scan_s": round(warm, 3),
                "git_status_floor_s": round(status_floor, 3),
                "merge_tree_floor_s": round(merge_floor, 3),
                "python_startup_s": round(startup, 3),
                "warm_vs_status": round(warm / status_floor, 2),
                "warm_vs_merge_tree": round(warm / merge_floor, 2),
                "peak_rss_mib": round(rss / 1024, 1)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="scan cost vs git's floor")
    ap.add_argument("--files", type=int, nargs="*", default=[5000])
    ap.add_argument("--worktrees", type=int, nargs="*", default=[4])
    ap.add_argument("--changes", type=int, nargs="*", default=[5])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--grid", action="store_true", help="1k/10k/50k files x 2/8/32 worktrees")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    a = ap.parse_args(argv)
    configs = [(f, w, c) for f in a.files for w in a.worktrees for c in a.changes]
    if a.grid:  # size x worktrees at 5 changes each, then change size at 10k x 8
        configs = [(f, w, 5) for f in (1000, 10000, 50000) for w in (2, 8, 32)]
        configs += [(10000, 8, c) for c in (50, 500)]
    rows = []
    cols = ("files", "worktrees", "changes", "pairs", "cold_scan_s", "warm_scan_s",
            "git_status_floor_s", "merge_tree_floor_s", "warm_vs_status", "warm_vs_merge_tree",
            "peak_rss_mib")
    print(" ".join(f"{c:>18}" for c in cols), flush=True)
    for f, w, c in configs:
        row = measure(f, w, a.runs, c)
        rows.append(row)
        print(" ".join(f"{row[k]:>18}" for k in cols), flush=True)
        if a.json:
            with open(a.json, "w") as fh:
                json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
