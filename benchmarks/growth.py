"""What proximity's hooks cost in disk and in time that a user does not ask for.

    python benchmarks/growth.py --files 2000 --commits 10 --mb 200 --untracked 10000 --runs 21

Measured in one run on one generated repository with plain hooks (`proximity install`):

1. object store growth over ``--commits`` commits while an untracked file of ``--mb`` MB
   (random, incompressible) grows by 1 MB before each commit (goal: < 5 MB), and the loose
   objects left behind;
2. ledger growth per commit with ``--untracked`` small untracked files lying around;
3. `git commit` with ``PROXIMITY_SKIP=1`` against the same commit without hooks (interleaved,
   medians; goal <= 1.2x).
"""

from __future__ import annotations

import argparse
import json
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


def loose(repo: str) -> int:
    out = git(repo, "count-objects", "-v")
    return int(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("count:")))


def commit(repo: str, tag: str, env: dict[str, str] | None = None) -> float:
    with open(os.path.join(repo, "bench.txt"), "a") as f:
        f.write(f"{tag}\n")
    subprocess.run(["git", "add", "bench.txt"], cwd=repo, env=ENV, check=True)
    t0 = time.perf_counter()
    r = subprocess.run(["git", "commit", "-q", "-m", tag], cwd=repo, env=env or ENV,
                       capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"commit failed: {r.stderr}")
    return took


def ledger_tables(repo: str) -> dict[str, int]:
    """Bytes of pages per ledger table (SQLite's dbstat), after a checkpoint."""
    import sqlite3

    db = sqlite3.connect(os.path.join(repo, ".git", "ecm", "ledger.sqlite3"))
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {str(n): int(b) for n, b in db.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
    finally:
        db.close()


def growing_file(repo: str, mb: int, commits: int) -> dict[str, object]:
    big = os.path.join(repo, "dump.bin")
    with open(big, "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    before, loose0 = du(os.path.join(repo, ".git", "objects")), loose(repo)
    times = []
    for i in range(commits):
        with open(big, "ab") as f:
            f.write(os.urandom(1 << 20))
        times.append(commit(repo, f"grow {i}"))
    grown = du(os.path.join(repo, ".git", "objects")) - before
    os.unlink(big)
    return {"objects_growth_mb": round(grown / 1e6, 2), "loose_before": loose0,
            "loose_after": loose(repo), "commit_median_s": round(statistics.median(times), 3)}


def untracked_ledger(repo: str, n: int, commits: int, ext: str) -> dict[str, object]:
    d = os.path.join(repo, "untracked")
    os.makedirs(d)
    for i in range(n):
        with open(os.path.join(d, f"u{i}.{ext}"), "w") as f:
            f.write(f"{i}\n")
    commit(repo, "untracked first")  # the first event keeps the whole map once
    before = ledger_tables(repo)
    for i in range(commits):
        commit(repo, f"untracked {i}")
    after = ledger_tables(repo)
    shutil.rmtree(d)
    grew = {k: round((after.get(k, 0) - before.get(k, 0)) / commits) for k in after}
    return {"untracked_files": f"{n} *.{ext}", "events_bytes_per_commit": grew.get("events", 0),
            "ledger_bytes_per_commit": sum(grew.values()),
            "ledger_growth_by_table": {k: v for k, v in grew.items() if v}}


def skip_cost(repo: str, runs: int) -> dict[str, object]:
    bare_env = {**ENV}
    skip_env = {**ENV, "PROXIMITY_SKIP": "1"}
    bare, skip = [], []
    for i in range(runs):  # interleaved, so drift hits both alike
        git(repo, "config", "core.hooksPath", os.devnull)
        bare.append(commit(repo, f"bare {i}", bare_env))
        git(repo, "config", "--unset", "core.hooksPath")
        skip.append(commit(repo, f"skip {i}", skip_env))
    b, s = statistics.median(bare), statistics.median(skip)
    return {"bare_commit_ms": round(b * 1000, 1), "skip_commit_ms": round(s * 1000, 1),
            "ratio": round(s / b, 2)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--untracked", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--ext", default="txt", help="extension of the untracked files")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the hooks")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="prox-growth-") as tmp:
        repo = generate(os.path.join(tmp, "repo"), args.files, 1, 0)
        subprocess.run([args.python, "-m", "proximity", "install"], cwd=repo, env=ENV,
                       check=True, stdout=subprocess.DEVNULL)
        commit(repo, "warm up")
        result: dict[str, object] = {"files": args.files, "commits": args.commits,
                                     "mb": args.mb}
        result.update(growing_file(repo, args.mb, args.commits))
        result.update(untracked_ledger(repo, args.untracked, args.commits, args.ext))
        result.update(skip_cost(repo, args.runs))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
