"""The pre-edit check of two source trees side by side: the same Claude Code events on one
generated repository, the two trees' code taking turns round by round (``timing.
interleaved``), so that a machine getting busier or quieter shifts both alike. For a change
whose cost is within the noise of two separate `check_latency.py` runs on a shared machine.

    python benchmarks/check_ab.py --old /path/to/main --new . --files 3000 --runs 60

Each tree is run from its own source (PYTHONPATH: the tree's ``proximity`` package ahead
of any installed one), without the service (the whole check in a new process):
  edit, no call     check_latency.py's Edit of a function body (``z = x * 0 + y`` to
                    ``z = x + y``): the common path, no call written
  edit, a call      the same line made ``z = f(x) + y``: a call of a name no sibling's
                    work redefines
and the same two in one warm interpreter per tree (what the resident service pays: what
it learnt of the siblings' work is kept), the median of ``--inproc`` answers, taken every
fourth round. Reports p50 in milliseconds per tree, and
the new tree's as a ratio of the old one's.
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

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate, module_paths
from timing import interleaved, save_json, timed

INPROC = """
import os, statistics, sys, time
from proximity.agents.answer import CheckRequest, answer
req = CheckRequest(os.getcwd(), harness="claude", event=sys.stdin.read())
answer(req)
ts = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter()
    answer(req)
    ts.append(time.perf_counter() - t)
print(statistics.median(ts))
"""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="the source tree to compare against")
    ap.add_argument("--new", required=True, help="the source tree measured")
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--worktrees", type=int, default=6)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--inproc", type=int, default=20)
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    trees = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "repo")
        os.makedirs(repo)
        generate(repo, a.files, a.worktrees, 5)
        wt = os.path.join(repo, "wt00")
        quiet = next(p for p in module_paths(a.files)[5 * a.worktrees + 10:]
                     if p.endswith(".py"))
        events = {name: json.dumps({
            "session_id": "bench", "cwd": wt, "hook_event_name": "PreToolUse",
            "tool_name": "Edit", "tool_input": {"file_path": os.path.join(wt, quiet),
                                                "old_string": "    z = x * 0 + y\n",
                                                "new_string": new}})
            for name, new in (("edit, no call", "    z = x + y\n"),
                              ("edit, a call", "    z = f(x) + y\n"))}
        env = {side: {**ENV, "PROXIMITY_SERVICE": "0", "PYTHONPATH": path}
               for side, path in trees.items()}
        for w in sorted(os.listdir(repo)):  # a warm ledger: each worktree recorded
            timed([sys.executable, "-m", "proximity", "snapshot"], os.path.join(repo, w),
                  env["old"])
        hook = [sys.executable, "-m", "proximity", "check", "--hook", "claude"]
        decisions: dict[str, str] = {}

        def one_check(case: str, side: str) -> float:
            t = timed_input(hook, wt, env[side], events[case])
            decisions[f"{case} [{side}]"] = t[1]
            return t[0]

        rows: dict[str, float] = {}
        for case in events:
            got = interleaved(a.runs, {side: ([], env[side]) for side in trees},
                              lambda side, _x, _e, _i, c=case: one_check(c, side))
            rows.update({f"{case} [{side}]": s * 1000 for side, s in got.items()})
        inproc: dict[str, list[float]] = {f"in-process, {case[6:]} [{side}]": []
                                          for case in events for side in trees}
        for i in range(max(1, a.runs // 4)):
            for side in (trees if i % 2 == 0 else reversed(list(trees))):
                for case, event in events.items():
                    out = subprocess.run([sys.executable, "-c", INPROC, str(a.inproc)],
                                         cwd=wt, env=env[side], input=event,
                                         capture_output=True, text=True, check=True)
                    inproc[f"in-process, {case[6:]} [{side}]"].append(float(out.stdout))
        rows.update({k: statistics.median(v) * 1000 for k, v in inproc.items()})
    print(f"{a.files} files x {a.worktrees} worktrees, {a.runs} rounds; old {trees['old']}, "
          f"new {trees['new']}")
    print(f"{'case':34} {'old p50 ms':>10} {'new p50 ms':>10} {'new/old':>8}  decision")
    for case in [*events, *(f"in-process, {c[6:]}" for c in events)]:
        old, new = rows[f"{case} [old]"], rows[f"{case} [new]"]
        said = decisions.get(f"{case} [new]", "")
        print(f"{case:34} {old:10.1f} {new:10.1f} {new / old:8.3f}  {said}")
    save_json(a.json, {"files": a.files, "worktrees": a.worktrees, "runs": a.runs,
                       "trees": trees, "p50_ms": {k: round(v, 2) for k, v in rows.items()}})
    return 0


def timed_input(cmd: list[str], cwd: str, env: dict[str, str], stdin: str
                ) -> tuple[float, str]:
    """Wall seconds of one hook call with its event on stdin, and its decision (a reply
    without one is no objection)."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                         check=True)
    took = time.perf_counter() - t0
    reply = json.loads(out.stdout or "{}")
    said = (reply.get("hookSpecificOutput") or {}).get("permissionDecision") or "allow"
    return took, str(said)


if __name__ == "__main__":
    raise SystemExit(main())
