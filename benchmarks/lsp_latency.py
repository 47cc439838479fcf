"""What a person in an editor waits for: `proximity lsp` on a generated repository, the
resident service warm, driven as an editor drives it (benchmarks/lsp_human.py).

    python benchmarks/lsp_latency.py --files 10000 --worktrees 8 --runs 40

Figures (milliseconds unless said):
  open             didOpen of a file a sibling changes -> its diagnostics published
  change, contested   didChange of the lines the sibling changed (a deny: an error) ->
                   the diagnostics for that very version published
  change, clear    didChange elsewhere in the same file (information only) -> same
  check alone      the very question the server asks for "change, contested" (the
                   buffer's lines that differ from HEAD, the buffer as the edit's result)
                   asked of the check in this process right after each edit (one warm
                   interpreter, no server): the floor the server stands on, same load
  sibling write    a sibling's agent writes the open file (its Edit, uncommitted) -> the
                   open buffer's diagnostics show it, with no action of the editor's
  sibling intent   a sibling's `proximity intend` returns (its ledger event recorded) ->
                   the open buffer shows the declared lines
  memory           the server's resident set with 1 and with 50 open files (MiB)
  churn            the server's processor time over wall time while every other worktree
                   records a new state as fast as it can (``--churn`` seconds), the
                   person's contested buffer open: what a swarm around a person costs the
                   person's editor
Each edit comes after a quiet spell (``--pause``): a person's edit, then a look, the first
keystroke after quiet being judged at once (typing on coalesces for 150 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate, module_paths
from lsp_human import Human

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from timing import load, save_json

from proximity.lsp.answer import ask
from proximity.lsp.judge import own_lines


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, round(q * (len(s) - 1))))]


def row(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": round(statistics.median(xs), 1),
            "p95_ms": round(pct(xs, 0.95), 1), "max_ms": round(max(xs), 1)}


def warm_service(py: str, wt: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    for attempt in range(3):  # (a start can time out on a loaded machine: said, retried)
        got = subprocess.run([py, "-m", "proximity", "service", "start"], cwd=wt, env=env,
                             capture_output=True, text=True, check=False)
        if got.returncode == 0:
            break
        print(f"service start, attempt {attempt + 1}: {got.stderr.strip()}", file=sys.stderr)
    else:
        raise SystemExit("the service did not start")
    while True:
        st = json.loads(subprocess.run([py, "-m", "proximity", "service", "status", "--json"],
                                       cwd=wt, env=env, capture_output=True, text=True,
                                       check=True).stdout)
        if (st.get("status") or {}).get("ready"):
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > 600:
            raise SystemExit("the service did not start")
        time.sleep(0.2)


def churn(human: Human, rel: str, typed: str, py: str, env: dict[str, str],
          siblings: list[str], seconds: float) -> dict[str, float]:
    """The server's processor share while every sibling records a new state of its
    worktree as fast as it goes (all at once, as a swarm's agents do), for ``seconds``,
    the person's typed buffer open and judged."""
    human.change(rel, typed)
    human.diagnostics(rel)
    counts = [0] * len(siblings)
    cpu0, t0 = human.cpu_seconds(), time.monotonic()

    def record(k: int) -> None:
        wt = siblings[k]
        while time.monotonic() - t0 < seconds:
            with open(os.path.join(wt, "churn.txt"), "a") as f:
                f.write(f"churn {counts[k]}\n")
            subprocess.run([py, "-m", "proximity", "snapshot"], cwd=wt, env=env, check=True,
                           capture_output=True)
            counts[k] += 1

    threads = [threading.Thread(target=record, args=(k,)) for k in range(len(siblings))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.monotonic() - t0, human.cpu_seconds() - cpu0
    return {"seconds": round(wall, 1), "records": sum(counts), "server_cpu_s": round(cpu, 2),
            "cpu_share": round(cpu / wall, 3)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--changes", type=int, default=5)
    ap.add_argument("--runs", type=int, default=40, help="edits of each kind")
    ap.add_argument("--live-runs", type=int, default=10, help="sibling changes of each kind")
    ap.add_argument("--open", type=int, default=50, help="files open for the memory figure")
    ap.add_argument("--pause", type=float, default=0.3, help="seconds between edits")
    ap.add_argument("--churn", type=float, default=10.0,
                    help="seconds of siblings recording at once, for the processor figure")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    py = a.python
    env = {**ENV, "PROXIMITY_SERVICE": "1"}
    out: dict[str, object] = {"files": a.files, "worktrees": a.worktrees}
    times: dict[str, list[float]] = {k: [] for k in (
        "open", "change, contested", "change, clear", "check alone", "sibling write",
        "sibling intent")}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        root = os.path.join(tmp, "repo")
        os.makedirs(root)
        generate(root, a.files, a.worktrees, a.changes)
        print(f"generated {a.files} files x {a.worktrees} worktrees in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for w in sorted(os.listdir(root)):  # a ledger as after a day of work
            subprocess.run([py, "-m", "proximity", "snapshot"], cwd=os.path.join(root, w),
                           env=env, check=True, capture_output=True)
        me, sib = os.path.join(root, "wt00"), os.path.join(root, "wt01")
        print(f"service warm in {warm_service(py, me, env):.1f} s", file=sys.stderr)
        paths = module_paths(a.files)
        shared = paths[a.changes - 1]  # wt00 and wt01 both append to it (genrepo)
        with open(os.path.join(me, shared)) as f:
            text = f.read()
        rows = text.split("\n")
        with open(os.path.join(sib, shared)) as f:
            theirs = f.read()
        contested = theirs.split("\n").index("# edit by agent 1")  # 0-based: their lines
        head = subprocess.run(["git", "show", f"HEAD:{shared}"], cwd=me, env=env, text=True,
                              capture_output=True, check=True).stdout
        human = Human(me, py, env)
        try:
            for k in range(3):  # the open, three times (closed between)
                t = human.open(shared)
                human.diagnostics(shared, lambda d: bool(d))
                times["open"].append((human.diagnostics(shared)[1] - t) * 1000)
                if k < 2:
                    human.close(shared)
                    time.sleep(a.pause)
            rss_one = human.rss_kb()
            for i in range(a.runs):
                # their appended lines, typed over: a conflict; a line in a function: clear
                typed = [*rows[:contested], f"# typed by the person {i}", *rows[contested + 1:]]
                for name, new in (("change, contested", typed),
                                  ("change, clear", [*rows[:5], f"    # note {i}", *rows[6:]])):
                    time.sleep(a.pause)
                    t = human.change(shared, "\n".join(new))
                    diags, when = human.diagnostics(shared)
                    times[name].append((when - t) * 1000)
                    sev = {d["severity"] for d in diags}
                    out.setdefault(f"{name}: severities", sorted(sev))
                    if name == "change, contested":
                        body = "\n".join(new)
                        t = time.perf_counter()
                        alone = ask(os.path.join(me, shared), own_lines(body, head), body)
                        times["check alone"].append((time.perf_counter() - t) * 1000)
                        out.setdefault("check alone: decision", alone.decision)
            out["churn"] = churn(human, shared, "\n".join(typed), py, env,
                                 [os.path.join(root, w) for w in sorted(os.listdir(root))
                                  if w not in ("wt00", "main")], a.churn)
            human.change(shared, text)
            human.diagnostics(shared)
            for i in range(a.live_runs):
                time.sleep(a.pause)
                # the sibling rewrites a line of a function of the open file (as its agent's
                # Edit does, uncommitted); the person's editor shows its new text there
                with open(os.path.join(sib, shared)) as f:
                    lines = f.read().split("\n")
                k = lines.index(f"def func{i % 6}(x, y=0):") + 1
                lines[k] = f"    z = x * {i % 6} + y  # live edit {i}"
                t = time.monotonic()
                with open(os.path.join(sib, shared), "w") as f:
                    f.write("\n".join(lines))
                _d, when = human.diagnostics(shared, lambda d, n=i: any(
                    f"# live edit {n}" in x["message"] for x in d), after=t)
                times["sibling write"].append((when - t) * 1000)
            for i in range(a.live_runs):
                time.sleep(a.pause)
                line = 20 + i
                subprocess.run([py, "-m", "proximity", "intend", f"{shared}:{line}-{line}"],
                               cwd=os.path.join(root, "wt02"), env=env, check=True,
                               capture_output=True)
                t = time.monotonic()
                _d, when = human.diagnostics(shared, lambda d, ln=line: any(
                    x["line"] == ln and x["agent"] == "wt02" for x in d), after=None)
                times["sibling intent"].append(max(0.0, when - t) * 1000)
            others = [p for p in paths[a.changes * a.worktrees + 10:] if p.endswith(".py")]
            for p in others[:a.open - 1]:
                human.open(p)
            for p in others[:a.open - 1]:
                human.diagnostics(p)
            time.sleep(1.0)
            rss_many = human.rss_kb()
        finally:
            human.stop()
            subprocess.run([py, "-m", "proximity", "service", "stop"], cwd=me, env=env,
                           check=False, capture_output=True)
    figures = {k: row(v) for k, v in times.items() if v}
    out.update(figures=figures, memory_mib={"1 file": round(rss_one / 1024, 1),
                                            f"{a.open} files": round(rss_many / 1024, 1)},
               load=load())
    print(f"{a.files} files x {a.worktrees} worktrees, service warm, pause {a.pause} s")
    print(f"{'case':22} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for k, r in figures.items():
        print(f"{k:22} {r['n']:4} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['max_ms']:8.1f}")
    print(f"server memory: {out['memory_mib']} (resident)")
    print(f"server processor while siblings record: {out['churn']}")
    for k, v in out.items():
        if k.endswith(("severities", "decision")):
            print(f"{k}: {v}")
    save_json(a.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
