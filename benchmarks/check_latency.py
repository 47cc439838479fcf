"""Latency of `proximity check` as a process (what an agent's pre-edit hook pays), next to
the interpreter's own start-up, measured in the same run on the same generated repository.

    python benchmarks/check_latency.py --files 10000 --worktrees 8 --runs 40

Cases, run from the first worktree (its neighbour edits a file it also edits):
  python -I -S -c pass / python -c pass / python -c "import proximity"   the floor
Each row's p95 is also given as a multiple of the bare interpreter's (python -I -S) p95.
  check, plain lines     lines with no definition in them (no symbol check)
  check, function body   lines inside a function: the symbol check reads siblings' diffs
  check, contested       lines a sibling changed (uncommitted): deny, with its hunk
  hook claude (Edit)     the Claude Code PreToolUse hook on an Edit event on stdin
  hook codex (patch)     the Codex PreToolUse hook on an apply_patch event on stdin
The check cases start as `python -m proximity`; three more rows start as the agent hooks'
settings do: the console script (`proximity check --hook claude`, what docs/agents.md
writes) and the line `proximity launcher` prints (`python -I -S …/launch.py`).
  in-process             the same check asked of the one answerer in one warm interpreter
                         (no start-up, no imports): what the resident service pays
Each check case runs twice: answered by the resident service (started and warm before
the rounds: the process is a thin client) and with PROXIMITY_SERVICE=0 (the whole check in
the new process). Reports p50 and p95 in milliseconds; the cases are interleaved round by
round.
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
from timing import interpreter, load, save_json


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(q * (len(s) - 1))))
    return s[k]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--changes", type=int, default=5)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--fresh-install", action="store_true",
                    help="measure a normal (non-editable) `pip install .` in a throwaway venv")
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    with interpreter(a.fresh_install, a.python) as py, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tmp = os.path.join(tmp, "repo")
        os.makedirs(tmp)
        generate(tmp, a.files, a.worktrees, a.changes)
        print(f"generated {a.files} files x {a.worktrees} worktrees in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        wt = os.path.join(tmp, "wt00")
        paths = module_paths(a.files)
        # wt00 edits paths[0..changes-1]; wt01 starts at paths[changes-1]: shared file
        shared = paths[a.changes - 1]
        with open(os.path.join(tmp, "wt01", shared)) as f:
            n_lines = f.read().count("\n")
        quiet = next(p for p in paths[a.changes * a.worktrees + 10:] if p.endswith(".py"))
        with open(os.path.join(wt, quiet)) as f:
            src = f.read().split("\n")
        body = src.index("def func0(x, y=0):") + 2  # first line of func0's body
        blank = src.index("def func1(x, y=0):")  # the blank line just above func1
        event = json.dumps({
            "session_id": "bench", "cwd": wt, "hook_event_name": "PreToolUse",
            "tool_name": "Edit", "tool_input": {"file_path": os.path.join(wt, quiet),
                                                "old_string": "    z = x * 0 + y\n",
                                                "new_string": "    z = x + y\n"}})
        patch = json.dumps({
            "session_id": "bench", "turn_id": "t", "transcript_path": None, "cwd": wt,
            "hook_event_name": "PreToolUse", "model": "m", "permission_mode": "default",
            "tool_name": "apply_patch", "tool_use_id": "c", "tool_input": {"command": (
                f"*** Begin Patch\n*** Update File: {quiet}\n@@ def func0(x, y=0):\n"
                "-    z = x * 0 + y\n+    z = x + y\n*** End Patch\n")}})
        cmd = [py, "-m", "proximity", "check", "--json"]
        env = {**ENV, "PROXIMITY_SERVICE": "1"}
        alone = {**ENV, "PROXIMITY_SERVICE": "0"}
        checks: dict[str, tuple[list[str], str | None]] = {
            "check, plain lines": ([*cmd, f"{quiet}:{blank}"], None),
            "check, function body": ([*cmd, f"{quiet}:{body}-{body + 1}"], None),
            "check, contested (deny)": ([*cmd, f"{shared}:{n_lines - 1}-{n_lines}"], None),
            "hook claude (Edit)": ([py, "-m", "proximity", "check", "--hook", "claude"], event),
            "hook codex (patch)": ([py, "-m", "proximity", "check", "--hook", "codex"], patch),
        }
        script = [os.path.join(os.path.dirname(py), "proximity")]
        started = {
            "hook claude (Edit), console script": ([*script, "check", "--hook", "claude"],
                                                   event),
        }
        asked = subprocess.run([py, "-m", "proximity", "launcher", "--json"],
                               capture_output=True, text=True, check=False)
        if asked.returncode == 0:  # (code from before `proximity launcher`: no such rows)
            launch = json.loads(asked.stdout)["argv"]
            started["hook claude (Edit), launcher"] = (
                [*launch, "check", "--hook", "claude"], event)
            started["check, contested (deny), launcher"] = (
                [*launch, "check", "--json", f"{shared}:{n_lines - 1}-{n_lines}"], None)
        cases: dict[str, tuple[list[str], str | None, dict[str, str]]] = {
            "python -I -S -c pass": ([py, "-I", "-S", "-c", "pass"], None, env),
            "python -c pass": ([py, "-c", "pass"], None, env),
            "python -c 'import proximity'": ([py, "-c", "import proximity"], None, env),
            **{f"{k} [service]": (v[0], v[1], env) for k, v in checks.items()},
            **{f"{k} [service]": (v[0], v[1], env) for k, v in started.items()},
            **{f"{k} [no service]": (v[0], v[1], alone) for k, v in checks.items()},
        }
        # a warm ledger (as after a day of work), then the resident service, warm
        for w in sorted(os.listdir(tmp)):
            subprocess.run([py, "-m", "proximity", "snapshot"], cwd=os.path.join(tmp, w),
                           env=alone, check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([py, "-m", "proximity", "service", "start"], cwd=wt, env=env,
                       check=True, capture_output=True)
        status = [py, "-m", "proximity", "service", "status", "--json"]
        while True:
            st = json.loads(subprocess.run(status, cwd=wt, env=env, capture_output=True,
                                           text=True, check=True).stdout)
            if (st.get("status") or {}).get("ready"):
                break
            if time.perf_counter() - t0 > 600:
                raise SystemExit("the service did not start")
            time.sleep(0.2)
        print(f"service warm in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for args, stdin, e in cases.values():  # warm caches once, and check it answers
            out = subprocess.run(args, cwd=wt, env=e, input=stdin, capture_output=True,
                                 text=True, check=False)
            if out.returncode not in (0, 1):
                raise SystemExit(f"{args}: exit {out.returncode}: {out.stderr}")
        decisions = {}
        times: dict[str, list[float]] = {k: [] for k in cases}
        load_before = load()
        for _ in range(a.runs):
            for name, (args, stdin, e) in cases.items():
                t = time.perf_counter()
                out = subprocess.run(args, cwd=wt, env=e, input=stdin, capture_output=True,
                                     text=True, check=False)
                times[name].append((time.perf_counter() - t) * 1000)
                if name.startswith(("check", "hook")):
                    d = json.loads(out.stdout)
                    hso = d.get("hookSpecificOutput") or {}
                    # a hook reply without a decision is no objection (proximity never
                    # says allow to a harness); Codex's ask is context, not a decision
                    decisions[name] = d.get("decision") or hso.get(
                        "permissionDecision") or ("ask" if hso else "allow")
        load_after = load()
        st = json.loads(subprocess.run(status, cwd=wt, env=env, capture_output=True,
                                       text=True, check=True).stdout)
        answered = (st.get("status") or {}).get("answered")
        subprocess.run([py, "-m", "proximity", "service", "stop"], cwd=wt, env=env,
                       check=False, capture_output=True)
        # the same check inside one warm process: what a resident service would pay
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from proximity.agents.answer import answer, of_specs

        for name, spec in (("in-process, plain lines", f"{quiet}:{blank}"),
                           ("in-process, contested", f"{shared}:{n_lines - 1}-{n_lines}")):
            request = of_specs(wt, [spec])
            answer(request)
            times[name] = []
            for _ in range(a.runs):
                t = time.perf_counter()
                decisions[name] = answer(request).decision
                times[name].append((time.perf_counter() - t) * 1000)
    rows = {k: {"p50_ms": round(statistics.median(v), 1), "p95_ms": round(pct(v, 0.95), 1),
                "decision": decisions.get(k)} for k, v in times.items()}
    print(f"{a.files} files x {a.worktrees} worktrees, {a.runs} runs per case; answered by "
          f"the service: {answered}")
    print(f"load average before the rounds: {load_before}; after: {load_after}")
    bare = rows["python -I -S -c pass"]["p95_ms"] or 1.0
    print(f"{'case':45} {'p50 ms':>8} {'p95 ms':>8} {'x bare':>7}  decision")
    for k, r in rows.items():
        print(f"{k:45} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['p95_ms'] / bare:7.2f}  "
              f"{r['decision'] or ''}")
    save_json(a.json, {"files": a.files, "worktrees": a.worktrees, "runs": a.runs,
                       "answered": answered, "load": [load_before, load_after],
                       "cases": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
