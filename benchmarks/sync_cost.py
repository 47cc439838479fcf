"""Cost of `proximity sync` for N worktrees: wall time and bytes that cross the remote.

    python benchmarks/sync_cost.py --files 5000 --worktrees 8

A generated repository (every worktree with uncommitted edits) pushes its branch to a local
bare remote (the baseline a team already has), then: the first sync (publishes one snapshot
per worktree), a second sync after one small edit (the steady state), and a second clone
("another machine") fetching everything. Bytes are measured as growth of the object stores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(__file__))

from genrepo import ENV, du, generate, git

PY = sys.executable


def sync(where: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([PY, "-m", "proximity", "sync"], cwd=where, env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="proximity-sync-")
    try:
        main_wt = generate(root, a.files, a.worktrees, changes=5)
        remote = os.path.join(root, "remote.git")
        git(root, "init", "-q", "--bare", remote)
        git(main_wt, "remote", "add", "origin", remote)
        git(main_wt, "push", "-q", "origin", "main")
        before = du(remote)
        first = sync(main_wt)
        first_bytes = du(remote) - before
        steady, steady_bytes = [], []
        for i in range(a.runs):
            with open(os.path.join(root, "wt00", "bench.txt"), "a") as f:
                f.write(f"edit {i}\n")
            b0 = du(remote)
            steady.append(sync(main_wt))
            steady_bytes.append(du(remote) - b0)
        other = os.path.join(root, "machine2")
        git(root, "clone", "-q", remote, other)
        b0 = du(os.path.join(other, ".git"))
        fetch_s = sync(other)
        fetch_bytes = du(os.path.join(other, ".git")) - b0
        rows = {
            "files": a.files, "worktrees": a.worktrees, "agents": a.worktrees + 1,
            "first_sync_s": round(first, 3), "first_sync_bytes": first_bytes,
            "steady_sync_s": round(statistics.median(steady), 3),
            "steady_sync_bytes": int(statistics.median(steady_bytes)),
            "other_machine_first_sync_s": round(fetch_s, 3),
            "other_machine_fetched_bytes": fetch_bytes,
        }
        for k, v in rows.items():
            print(f"{k:32} {v}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
