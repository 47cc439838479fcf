"""Where a hooked commit's time goes, the resident service on: a hooked `git commit` in a
linked worktree (output captured, as agents run git) against bare git taking turns, and for
each hooked commit what the service says its own part took (its status, read after the
commit): the read-ahead the hook script's sync cookie started (``ahead:pre-commit``) and the
verdict the hook's request waited for (``hook:...``); beside them what the hook's interpreter
costs to start (``python -S``, then the thin client's imports), and the git processes the
service ran per commit.

    python benchmarks/commit_path.py --files 10000 --worktrees 8 --runs 15 --fresh-install

The read-ahead runs while the interpreter starts: the hook's request waits for it only for
as long as it outlasts that start. Medians in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from genrepo import ENV, generate
from timing import interpreter, load, save_json

NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def _ms(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _status(py: str, common: str) -> dict[str, Any]:
    """The service's status, asked with the measured interpreter's own client (a client
    of other code would ask the service to exit)."""
    code = ("import json, sys\nfrom proximity.service import client\n"
            "a = client.request(sys.argv[1], {'op': 'status'}, 5.0)\n"
            "print(json.dumps(a['status'] if a else {}))\n")
    out = subprocess.run([py, "-c", code, common], cwd=common, env=ENV, capture_output=True,
                         text=True, check=True).stdout
    got: dict[str, Any] = json.loads(out)
    return got


def _settle(py: str, common: str) -> None:
    """The watcher's debounce, then until the service has no background work left."""
    time.sleep(0.3)
    end = time.time() + 30
    while time.time() < end and _status(py, common).get("busy"):
        time.sleep(0.05)


def _start_cost(py: str, runs: int) -> dict[str, float | None]:
    """The hook interpreter's start without site (``-S``, as the hook script starts it),
    and with the thin client imported from where the package is installed."""
    root = subprocess.run([py, "-c", "import os, proximity; print(os.path.dirname("
                           "os.path.dirname(proximity.__file__)))"], env=ENV,
                          capture_output=True, text=True, check=True).stdout.strip()
    cmds = {"python -S": [py, "-S", "-c", "pass"],
            "python -S + thin client": [py, "-S", "-c", "import sys; sys.path.insert(0, "
                                        f"{root!r}); import proximity.thin"]}
    out: dict[str, float | None] = {}
    for name, cmd in cmds.items():
        took = []
        for _ in range(runs + 1):
            t = time.perf_counter()
            subprocess.run(cmd, env=ENV, check=True, cwd=tempfile.gettempdir())
            took.append((time.perf_counter() - t) * 1000)
        out[name] = _ms(took[1:])
    return out


def _commit(wt: str, i: int, hooked: bool) -> float:
    with open(os.path.join(wt, "bench_path.txt"), "a") as f:
        f.write(f"{hooked} {i}\n")
    subprocess.run(["git", "add", "bench_path.txt"], cwd=wt, env=ENV, check=True)
    cmd = ["git", *([] if hooked else NO_HOOKS), "commit", "-q", "-m", f"path {i}"]
    t = time.perf_counter()
    subprocess.run(cmd, cwd=wt, env=ENV, check=True, capture_output=True)
    return (time.perf_counter() - t) * 1000


def measure(py: str, files: int, worktrees: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="proximity-path-") as root:
        main = generate(root, files, worktrees, 5)
        common = os.path.join(main, ".git")
        wt = os.path.join(root, "wt00")
        subprocess.run([py, "-m", "proximity", "install"], cwd=main, env=ENV, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([py, "-m", "proximity", "service", "start"], cwd=main, env=ENV,
                       check=True, stdout=subprocess.DEVNULL)
        try:
            hooked: list[float] = []
            bare: list[float] = []
            jobs: dict[str, list[float]] = {}
            git_calls: list[int] = []
            for i in range(runs + 1):  # (round 0 warms up, not counted)
                _settle(py, common)
                before = _status(py, common)
                took = _commit(wt, i, True)
                _settle(py, common)
                after = _status(py, common)
                _settle(py, common)
                b = _commit(wt, i, False)
                if not i:
                    continue
                hooked.append(took)
                bare.append(b)
                for key, ms in after.get("last_ms", {}).items():
                    # a job of this commit's: one whose figure moved
                    if key.endswith("pre-commit") or before.get("last_ms", {}).get(key) != ms:
                        jobs.setdefault(key, []).append(ms)
                calls = sum(after.get("git_calls", {}).values()) - sum(
                    before.get("git_calls", {}).values())
                git_calls.append(calls)
        finally:
            subprocess.run([py, "-m", "proximity", "service", "stop"], cwd=main, env=ENV,
                           check=False, stdout=subprocess.DEVNULL)
    return {"files": files, "worktrees": worktrees, "runs": runs,
            "hooked_commit_ms": _ms(hooked), "bare_commit_ms": _ms(bare),
            "ratio": round(statistics.median(hooked) / statistics.median(bare), 2),
            "service_jobs_ms": {k: _ms(v) for k, v in sorted(jobs.items())},
            "git_calls_per_commit": _ms([float(c) for c in git_calls]),
            "interpreter_ms": _start_cost(py, runs)}


def table(row: dict[str, Any]) -> str:
    lines = [f"hooked commit {row['hooked_commit_ms']} ms, bare {row['bare_commit_ms']} ms "
             f"({row['ratio']}x), medians of {row['runs']}",
             "the service's jobs (its status, after each hooked commit):"]
    lines += [f"  {k:28s} {v} ms" for k, v in row["service_jobs_ms"].items()]
    lines.append(f"  git processes the service ran per commit: {row['git_calls_per_commit']}")
    lines.append("the hook's interpreter:")
    lines += [f"  {k:28s} {v} ms" for k, v in row["interpreter_ms"].items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--fresh-install", action="store_true",
                    help="a normal pip install of this checkout in a throwaway venv "
                         "(default: this interpreter)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    with interpreter(args.fresh_install) as py:
        row = {"load_before": load(), **measure(py, args.files, args.worktrees, args.runs),
               "load_after": load()}
    save_json(args.json, row)
    print(table(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
