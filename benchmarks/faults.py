"""Events under a service that is killed and stopped: none lost, none doubled.

W worktrees commit concurrently through the real hooks (`proximity install`) with the
resident service on, in three phases: no fault (the reference), the service SIGKILLed
every few seconds, then the service SIGSTOPped and left stopped. Afterwards the next hook
(or service) records what was left pending. Every commit made must have exactly one commit
event in the ledger.

With ``--table``: instead, each fault of fault_cases.py and each route around the guard of
guard_routes.py played for real, and the table
"fault → what the user sees → is the guard still on" (markdown) printed.

    python benchmarks/faults.py [--worktrees 8] [--commits 30] [--kill-every 3]
                                [--json OUT]
    python benchmarks/faults.py --table [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from proximity.views import progress

ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
       "GIT_CONFIG_NOSYSTEM": "1", "PROXIMITY_SERVICE": "1", "PROXIMITY_SERVICE_IDLE": "120"}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def service_pid(common: Path) -> int | None:
    try:
        return int(json.loads((common / "ecm" / "service.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def setup(root: Path, worktrees: int, env: dict[str, str]) -> tuple[Path, list[Path]]:
    main = root / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main", env=env)
    for i in range(worktrees):
        (main / f"w{i}.txt").write_text("".join(f"line {n}\n" for n in range(40)))
    git(main, "add", "-A", env=env)
    git(main, "commit", "-qm", "base", env=env)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True, env=env)
    wts = []
    for i in range(worktrees):
        wt = root / f"wt{i}"
        git(main, "worktree", "add", "-q", "-b", f"b{i}", str(wt), env=env)
        wts.append(wt)
    return main, wts


def committer(wt: Path, i: int, n: int, phase: str, env: dict[str, str],
              out: list[tuple[str, float]], lock: threading.Lock,
              tick: progress.Tick) -> None:
    for k in range(n):
        path = wt / f"w{i}.txt"
        lines = path.read_text().splitlines(keepends=True)
        lines[k % len(lines)] = f"{phase} {k} by {i}\n"
        path.write_text("".join(lines))
        t0 = time.monotonic()
        subprocess.run(["git", "commit", "-qam", f"{phase} {k}"], cwd=wt, env=env,
                       capture_output=True, check=True, timeout=120)
        took = time.monotonic() - t0
        sha = git(wt, "rev-parse", "HEAD", env=env)
        with lock:
            out.append((sha, took))
        tick(1)


def phase(name: str, common: Path, wts: list[Path], commits: int, env: dict[str, str],
          fault: str, every: float) -> list[tuple[str, float]]:
    made: list[tuple[str, float]] = []
    lock = threading.Lock()
    done = threading.Event()
    faults = [0]

    def inject() -> None:
        stopped: int | None = None
        while not done.wait(every if fault == "kill" else 1.0):
            pid = service_pid(common)
            if pid is None or pid == stopped:
                continue
            with contextlib.suppress(OSError):
                if fault == "none":
                    continue
                if fault == "kill":
                    os.kill(pid, signal.SIGKILL)
                    faults[0] += 1
                elif stopped is None:  # stopped once, and left so
                    os.kill(pid, signal.SIGSTOP)
                    stopped = pid
                    faults[0] += 1
        if stopped is not None:
            with contextlib.suppress(OSError):
                os.kill(stopped, signal.SIGCONT)

    with progress.bar(f"phase {name}", len(wts) * commits) as tick:
        threads = [threading.Thread(target=committer,
                                    args=(wt, i, commits, name, env, made, lock, tick))
                   for i, wt in enumerate(wts)]
        injector = threading.Thread(target=inject)
        injector.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    done.set()
    injector.join()
    print(f"{name}: {len(made)} commits, {faults[0]} faults injected", file=sys.stderr)
    return made


def count(common: Path, made: list[tuple[str, float]]) -> dict[str, int]:
    db = sqlite3.connect(common / "ecm" / "ledger.sqlite3")
    try:
        rows = db.execute("SELECT stream, head FROM events WHERE kind='commit'").fetchall()
    finally:
        db.close()
    heads = [h for _s, h in rows]
    return {"commits": len(made),
            "lost": sum(1 for sha, _t in made if sha not in heads),
            "doubled": sum(1 for sha, _t in made if heads.count(sha) > 1)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--worktrees", type=int, default=8)
    p.add_argument("--commits", type=int, default=30, help="per worktree and phase")
    p.add_argument("--kill-every", type=float, default=3.0)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--table", action="store_true",
                   help="play each fault case and print what the user sees")
    args = p.parse_args(argv)
    if args.table:
        return fault_table(args.json)
    env = {**os.environ, **ENV}
    root = Path(tempfile.mkdtemp(prefix="proximity-faults-"))
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
    main_wt, wts = setup(root, args.worktrees, env)
    common = main_wt / ".git"
    results: dict[str, object] = {"worktrees": args.worktrees}
    made_all: list[tuple[str, float]] = []
    for name, fault in (("none", "none"), ("kill", "kill"), ("stop", "stop")):
        made = phase(name, common, wts, args.commits, env, fault, args.kill_every)
        made_all += made
        took = sorted(t for _s, t in made)
        results[name] = {"commits": len(made), "slowest_s": round(took[-1], 2),
                         "median_s": round(statistics.median(took), 3),
                         "over_3s": sum(1 for t in took if t > 3.0)}
    # what is still pending is taken by the next hook or service after its age
    time.sleep(11)
    subprocess.run([sys.executable, "-m", "proximity", "hook", "post-checkout", "0", "0",
                    "0"], cwd=main_wt, env={**env, "PROXIMITY_SERVICE": "0"},
                   capture_output=True)
    results.update(count(common, made_all))
    pid = service_pid(common)
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if results["lost"] == 0 and results["doubled"] == 0 else 1


def fault_table(out: str | None) -> int:
    """Each fault case, played; the table printed; 1 when any left the guard off silently."""
    import fault_cases
    import guard_routes

    rows = fault_cases.play(lambda line: print(line, file=sys.stderr),
                            [*fault_cases.CASES, *guard_routes.CASES])
    print(fault_cases.table(rows))
    if out:
        Path(out).write_text(json.dumps([r._asdict() for r in rows], indent=2) + "\n")
    return 1 if any("SILENT" in r.guard for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
