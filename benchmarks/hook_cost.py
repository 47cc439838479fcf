"""Wall time each hook adds to `git commit` and `git push`, against the same command without
hooks, measured in the same run on the same generated repository.

    python benchmarks/hook_cost.py --files 5000 --worktrees 8 --runs 15
    python benchmarks/hook_cost.py --grid      # 1k/10k/50k files x 2/8/32 worktrees

Reports medians of: git commit without hooks; with proximity's plain hooks (pre-commit warn +
post-commit snapshot); the post-commit snapshot hook process alone (what the issue's 150 ms
target is about: pre-commit's own start-up is not part of it); git push without hooks and with
the pre-push guard.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate, git
from timing import interpreter, save_json
from timing import timed as t

PY = sys.executable


def commits(wt: str, runs: int, tag: str) -> list[float]:
    out = []
    for i in range(runs):
        with open(os.path.join(wt, "bench.txt"), "a") as f:
            f.write(f"{tag} {i}\n")
        subprocess.run(["git", "add", "bench.txt"], cwd=wt, env=ENV, check=True)
        out.append(t(["git", "commit", "-q", "-m", f"{tag} {i}"], wt))
    return out


def pushes(wt: str, runs: int, branch: str) -> list[float]:
    out = []
    for i in range(runs):
        with open(os.path.join(wt, "bench.txt"), "a") as f:
            f.write(f"push {i}\n")
        subprocess.run(["git", "commit", "-qam", f"p{i}", "--no-verify"], cwd=wt, env=ENV,
                       check=True)
        out.append(t(["git", "push", "-q", "origin", branch], wt))
    return out


def measure(files: int, worktrees: int, runs: int) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="proximity-hooks-")
    try:
        main = generate(root, files, worktrees, changes=3)
        remote = os.path.join(root, "remote.git")
        git(root, "init", "-q", "--bare", remote)
        git(main, "remote", "add", "origin", remote)
        wt = os.path.join(root, "wt00")
        git(wt, "push", "-q", "origin", "agent0")
        base_commit = statistics.median(commits(wt, runs, "plain"))
        base_push = statistics.median(pushes(wt, runs, "agent0"))
        subprocess.run([PY, "-m", "proximity", "install"], cwd=main, env=ENV, check=True,
                       stdout=subprocess.DEVNULL)
        for w in [main] + [os.path.join(root, f"wt{i:02}") for i in range(worktrees)]:
            subprocess.run([PY, "-m", "proximity", "snapshot"], cwd=w, env=ENV, check=True,
                           stdout=subprocess.DEVNULL)  # warm ledger, as after a day of work
        hooked_commit = statistics.median(commits(wt, runs, "hooked"))
        post_commit = statistics.median(
            t([PY, "-m", "proximity", "hook", "post-commit"], wt) for _ in range(runs))
        pre_commit = statistics.median(
            t([PY, "-m", "proximity", "hook", "pre-commit"], wt) for _ in range(runs))
        hooked_push = statistics.median(pushes(wt, runs, "agent0"))
        startup = statistics.median(t([PY, "-c", "pass"], wt) for _ in range(runs))
        return {
            "files": files, "worktrees": worktrees, "runs": runs,
            "commit_no_hooks_s": round(base_commit, 3),
            "commit_with_hooks_s": round(hooked_commit, 3),
            "commit_added_s": round(hooked_commit - base_commit, 3),
            "post_commit_hook_s": round(post_commit, 3),
            "pre_commit_hook_s": round(pre_commit, 3),
            "push_no_hooks_s": round(base_push, 3),
            "push_with_guard_s": round(hooked_push, 3),
            "push_added_s": round(hooked_push - base_push, 3),
            "python_startup_s": round(startup, 3),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="hook cost vs no hooks")
    ap.add_argument("--files", type=int, nargs="*", default=[5000])
    ap.add_argument("--worktrees", type=int, nargs="*", default=[8])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--fresh-install", action="store_true",
                    help="measure a normal pip install in a throwaway venv (default: this "
                    "interpreter, which may be an editable install)")
    a = ap.parse_args(argv)
    global PY
    with interpreter(a.fresh_install, PY) as PY:
        rows = _measure_all(a)
    save_json(a.json, rows)
    return 0


def _measure_all(a: argparse.Namespace) -> list[dict[str, Any]]:
    files, wts = (a.files, a.worktrees) if not a.grid else ([1000, 10000, 50000], [2, 8, 32])
    cols = ("files", "worktrees", "commit_no_hooks_s", "commit_with_hooks_s",
            "post_commit_hook_s", "pre_commit_hook_s", "push_no_hooks_s",
            "push_with_guard_s")
    print(" ".join(f"{c:>19}" for c in cols), flush=True)
    rows = []
    for f in files:
        for w in wts:
            row = measure(f, w, a.runs)
            rows.append(row)
            print(" ".join(f"{row[c]:>19}" for c in cols), flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
