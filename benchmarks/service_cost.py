"""What the resident service buys: git commands with proximity's plain hooks against bare git,
in the same run on the same generated repository, and how fast a saved file reaches the
other worktree's inbox.

    python benchmarks/service_cost.py --files 10000 --worktrees 8 --runs 11 --fresh-install

Measured (medians, seconds): `git commit` bare / hooks answered by the service / hooks
judging in process (PROXIMITY_SERVICE=0, the path before the service) / PROXIMITY_SKIP=1 /
hooks that do nothing (`exit 0`: the floor any installed hook costs), once right after
the file was written and staged, once as an agent commits (the edit saved a while before:
the service has seen it; then `git add`, `git commit`);
`git switch` of the main checkout between two branches; `git push` of a branch that
collides with nobody (the last worktree, its generated edits dropped) to a bare remote
(`push`: of a commit made with hooks off, a state the service never judged;
`push_committed`: right after a `git commit` through the variant's own hooks, an agent's
commit-then-push; `push_colliding`: the same from wt00, which has a Resolution Advisory
with wt01 and the right-of-way, so the push prints the advisory and is not blocked); a
10-commit `git rebase`. Then the time from a file
save in one worktree to the message in the other's inbox (no git command), median and p95,
and the service's resident memory (peak by /usr/bin/time -v, current by /proc).

``--commit-only`` (for 50k files x 32 worktrees): only `git commit`, bare / service /
PROXIMITY_SKIP=1 (judging in process there takes minutes per commit), the ledger created by
one in-process snapshot of the main checkout (the service's warm-up snapshots the rest), and
the service's memory and warm-up time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate, git
from timing import NO_HOOKS, captured, interpreter, save_json, timed
from timing import interleaved as interleaved_variants

PY = sys.executable


EMPTY_HOOKS: list[str] = []  # git's args for a hooks directory of `exit 0` scripts


def variants() -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (git's extra args, environment). ``empty_hooks``: hooks that do nothing,
    the floor any hook costs (git runs each script, re-reads the index after pre-commit)."""
    return {"bare": (NO_HOOKS, ENV), "service": ([], ENV),
            "in_process": ([], {**ENV, "PROXIMITY_SERVICE": "0"}),
            "skip": ([], {**ENV, "PROXIMITY_SKIP": "1"}),
            "empty_hooks": (EMPTY_HOOKS, ENV)}


def empty_hooks(root: str) -> list[str]:
    """A hooks directory whose every hook is `#!/bin/sh` + `exit 0`; git's args for it."""
    d = os.path.join(root, "hooks-empty")
    os.makedirs(d, exist_ok=True)
    for name in ("pre-commit", "post-commit", "pre-push", "post-checkout", "post-merge",
                 "post-rewrite"):
        with open(os.path.join(d, name), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(d, name), 0o755)
    return ["-c", f"core.hooksPath={d}"]


SETTLE: list[Callable[[], None]] = []  # waits run before each timed command


def settle_service(common: str, py: str | None = None) -> Callable[[], None]:
    """Wait until the service has no background work left (its re-snapshots and rescans
    after the previous command), so no variant is timed while it competes for the CPU.
    ``py``: the interpreter whose package the service runs (default: the measured one):
    a client of other code would ask the service to exit."""
    code = ("import sys, time\nfrom proximity.service import client\nend = time.time() + 30\n"
            "while time.time() < end:\n"
            "    a = client.request(sys.argv[1], {'op': 'status'}, 2.0)\n"
            "    if a is None or not a['status'].get('busy'):\n        break\n"
            "    time.sleep(0.05)\n")

    def wait() -> None:
        time.sleep(0.3)  # the watcher's debounce: the last command's saves are reported
        # cwd: not this source tree, whose package would shadow the installed one (a
        # client of other code asks the service to exit)
        subprocess.run([py or PY, "-c", code, common], cwd=common, env=ENV, check=False)
    return wait


def interleaved(runs: int, names: Sequence[str],
                one: Callable[[str, list[str], dict[str, str], int], float]
                ) -> dict[str, float]:
    """Median seconds per variant, the variants taking turns (one warm-up round first)."""
    vs = variants()
    return interleaved_variants(runs, {n: vs[n] for n in names}, one, SETTLE)


def commit_once(wt: str) -> Callable[[str, list[str], dict[str, str], int], float]:
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        with open(os.path.join(wt, "bench.txt"), "a") as f:
            f.write(f"{name} {i}\n")
        subprocess.run(["git", "add", "bench.txt"], cwd=wt, env=ENV, check=True)
        return timed(["git", *extra, "commit", "-q", "-m", f"{name} {i}"], wt, env,
                     captured(name))
    return one


def commit_settled(wt: str) -> Callable[[str, list[str], dict[str, str], int], float]:
    """The agent's flow: the edit was saved a while ago (the service has seen it), then
    `git add` and `git commit`."""
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        with open(os.path.join(wt, "bench.txt"), "a") as f:
            f.write(f"settled {name} {i}\n")
        for wait in SETTLE:
            wait()
        subprocess.run(["git", "add", "bench.txt"], cwd=wt, env=ENV, check=True)
        return timed(["git", *extra, "commit", "-q", "-m", f"settled {name} {i}"], wt, env,
                     captured(name))
    return one


def switch_once(main: str, there: str = "side", back: str = "main"
                ) -> Callable[[str, list[str], dict[str, str], int], float]:
    """`git switch` to ``there`` and back to ``back`` (50 files differ: see prepare)."""
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        s = timed(["git", *extra, "switch", "-q", there], main, env, captured(name))
        return s + timed(["git", *extra, "switch", "-q", back], main, env, captured(name))
    return one


def push_once(wt: str, branch: str) -> Callable[[str, list[str], dict[str, str], int], float]:
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        with open(os.path.join(wt, f"push-{os.path.basename(wt)}.txt"), "a") as f:
            f.write(f"push {name} {i}\n")
        subprocess.run(["git", "add", "-A"], cwd=wt, env=ENV, check=True)
        subprocess.run(["git", *NO_HOOKS, "commit", "-qm", f"p {name} {i}"], cwd=wt, env=ENV,
                       check=True)
        return timed(["git", *extra, "push", "-q", "origin", branch], wt, env, captured(name))
    return one


def push_committed(wt: str, branch: str
                   ) -> Callable[[str, list[str], dict[str, str], int], float]:
    """An agent's flow: `git commit` through the variant's hooks (not timed), then at once
    the timed `git push`."""
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        with open(os.path.join(wt, f"push-{os.path.basename(wt)}.txt"), "a") as f:
            f.write(f"pushc {name} {i}\n")
        subprocess.run(["git", "add", "-A"], cwd=wt, env=ENV, check=True)
        subprocess.run(["git", *extra, "commit", "-qm", f"pc {name} {i}"], cwd=wt, env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return timed(["git", *extra, "push", "-q", "origin", branch], wt, env, captured(name))
    return one


def rebase_once(main: str, work: str = "rb-work", back: str = "main"
                ) -> Callable[[str, list[str], dict[str, str], int], float]:
    """`git rebase` of ten commits (branch ``work``, reset to rb-tip each time) onto
    rb-onto, then back to ``back`` (each worktree rebases a branch of its own)."""
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        git(main, *NO_HOOKS, "checkout", "-q", "-B", work, "rb-tip")
        s = timed(["git", *extra, "rebase", "-q", "rb-onto"], main, env, captured(name))
        git(main, *NO_HOOKS, "switch", "-q", back)
        return s
    return one


def solo_worktree(root: str, worktrees: int) -> tuple[str, str]:
    """The last worktree, made to collide with nobody (the issue's "push of a non-colliding
    branch"): its generated edits, which overlap its neighbour's, dropped, one file of its
    own added, its branch on the remote. (path, branch)"""
    n = worktrees - 1
    solo = os.path.join(root, f"wt{n:02}")
    git(solo, "checkout", "--", ".")
    with open(os.path.join(solo, "solo.txt"), "w") as f:
        f.write("solo\n")
    git(solo, "push", "-q", "origin", f"agent{n}")
    return solo, f"agent{n}"


def prepare(main: str, root: str) -> None:
    """A side branch for switch (50 files differ), ten commits to rebase, a bare remote."""
    files = sorted(p for p in git(main, "ls-files").split() if p.endswith(".py"))[:50]
    git(main, *NO_HOOKS, "switch", "-q", "-c", "side")
    for p in files:
        with open(os.path.join(main, p), "a") as f:
            f.write("# side\n")
    git(main, *NO_HOOKS, "commit", "-qam", "side")
    git(main, *NO_HOOKS, "switch", "-q", "main")
    git(main, "branch", "rb-onto", "main")
    git(main, *NO_HOOKS, "switch", "-q", "-c", "rb-tmp")
    for k in range(10):
        with open(os.path.join(main, "rebased.txt"), "a") as f:
            f.write(f"line {k}\n")
        git(main, "add", "rebased.txt")
        git(main, *NO_HOOKS, "commit", "-qm", f"rb {k}")
    git(main, "branch", "-f", "rb-tip", "rb-tmp")
    git(main, *NO_HOOKS, "switch", "-q", "rb-onto")
    with open(os.path.join(main, "onto.txt"), "w") as f:
        f.write("onto\n")
    git(main, "add", "onto.txt")
    git(main, *NO_HOOKS, "commit", "-qm", "onto")
    git(main, *NO_HOOKS, "switch", "-q", "main")
    git(main, "branch", "-D", "rb-tmp")
    remote = os.path.join(root, "remote.git")
    git(root, "init", "-q", "--bare", remote)
    git(main, "remote", "add", "origin", remote)


def request(common: str, msg: dict[str, Any], budget: float = 60.0) -> dict[str, Any] | None:
    out = subprocess.run([PY, "-c", "import json, sys\nfrom proximity.service import client\n"
                          "print(json.dumps(client.request(sys.argv[1], json.loads(sys.argv[2]),"
                          f" {budget})))", common, json.dumps(msg)],
                         cwd=common, env=ENV, capture_output=True, text=True, check=True).stdout
    got: dict[str, Any] | None = json.loads(out)
    return got


def save_to_inbox(root: str, common: str, trials: int) -> dict[str, Any]:
    """A pair that is clear; each trial saves the same new file in both (an add/add
    collision) and waits for the message in the first one's inbox; then both files go
    and the pair is clear again."""
    scan = request(common, {"op": "scan"})
    assert scan is not None
    pairs = [p for p in scan["scan"]["pairs"] if p["advisory"] == "clear"
             and "main" not in (p["a"], p["b"]) and "wt00" not in (p["a"], p["b"])]
    p, q = pairs[0]["a"], pairs[0]["b"]
    wp, wq = os.path.join(root, p), os.path.join(root, q)
    db = sqlite3.connect(os.path.join(common, "ecm", "ledger.sqlite3"), timeout=30)
    out = []
    for i in range(trials):
        name = f"collide{i}.txt"
        with open(os.path.join(wp, name), "w") as f:
            f.write("".join(f"{p} line {k}\n" for k in range(20)))
        time.sleep(1.0)
        last = db.execute("SELECT COALESCE(MAX(id), 0) FROM inbox").fetchone()[0]
        t0 = time.time()
        with open(os.path.join(wq, name), "w") as f:
            f.write("".join(f"{q} line {k}\n" for k in range(20)))
        while True:
            row = db.execute("SELECT created FROM inbox WHERE id>? AND recipient=? AND sender=?",
                             (last, p, q)).fetchone()
            if row:
                out.append(time.time() - t0)
                break
            if time.time() - t0 > 30:
                out.append(float("inf"))
                break
            time.sleep(0.005)
        os.unlink(os.path.join(wp, name))
        os.unlink(os.path.join(wq, name))
        time.sleep(1.5)  # the pair is seen clear again before the next trial
    db.close()
    out.sort()
    return {"pair": [p, q], "trials": trials, "median_s": round(statistics.median(out), 3),
            "p95_s": round(out[min(len(out) - 1, int(0.95 * len(out)))], 3),
            "max_s": round(out[-1], 3)}


def idle_cpu(pid: int, seconds: float) -> float | None:
    """The service's CPU use while nothing happens (its watcher's polling), in percent of
    one core, from /proc (None elsewhere)."""
    def ticks() -> int:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    try:
        t0, c0 = time.monotonic(), ticks()
        time.sleep(seconds)
        used = (ticks() - c0) / os.sysconf("SC_CLK_TCK")
        return round(100.0 * used / (time.monotonic() - t0), 2)
    except (OSError, ValueError, IndexError):
        return None


def measure(files: int, worktrees: int, runs: int, trials: int, commit_only: bool = False
            ) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="proximity-service-")
    svc = None
    try:
        t0 = time.perf_counter()
        main = generate(root, files, worktrees, changes=3)
        prepare(main, root)
        gen_s = time.perf_counter() - t0
        common = os.path.join(main, ".git")
        wt = os.path.join(root, "wt00")
        git(wt, "push", "-q", "origin", "agent0")
        # wt00 (right-of-way over wt01) pushes a colliding one
        solo, solo_branch = solo_worktree(root, worktrees)
        subprocess.run([PY, "-m", "proximity", "install"], cwd=main, env=ENV, check=True,
                       stdout=subprocess.DEVNULL)
        # git config: no cooldown, so every rise in the latency trials sends a message
        git(main, "config", "proximity.cooldownSeconds", "0")
        warm = [main] + ([] if commit_only else
                         [os.path.join(root, f"wt{i:02}") for i in range(worktrees)])
        for w in warm:
            subprocess.run([PY, "-m", "proximity", "snapshot"], cwd=w, env=ENV, check=True,
                           stdout=subprocess.DEVNULL)  # a warm ledger, as after a day of work
        rss_file = os.path.join(root, "service.rss")
        t0 = time.perf_counter()
        log = open(os.path.join(root, "service.log"), "w")  # noqa: SIM115 -- its lifetime
        svc = subprocess.Popen(["/usr/bin/time", "-v", "-o", rss_file, PY, "-m",
                                "proximity.service", common], cwd=common, env=ENV,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=log, start_new_session=True)
        while True:
            ping = request(common, {"op": "ping"}, 1.0)
            if ping and ping.get("ready"):
                break
            if svc.poll() is not None or time.perf_counter() - t0 > 600:
                log.flush()
                with open(os.path.join(root, "service.log")) as fh:
                    said = fh.read()[-2000:]
                raise RuntimeError(f"the service did not start (exit {svc.poll()}): {said}")
            time.sleep(0.1)
        warm_s = time.perf_counter() - t0
        SETTLE.append(settle_service(common))
        EMPTY_HOOKS[:] = empty_hooks(root)
        names = ("bare", "service", "in_process", "skip")
        floor = ("bare", "service", "skip", "empty_hooks")
        row: dict[str, Any] = {"files": files, "worktrees": worktrees, "runs": runs,
                               "generate_s": round(gen_s, 1), "service_warm_up_s":
                               round(warm_s, 2)}
        if commit_only:
            row["commit"] = interleaved(runs, floor, commit_once(wt))
            row["commit_settled"] = interleaved(runs, floor, commit_settled(wt))
        else:
            row["commit"] = interleaved(runs, (*names, "empty_hooks"), commit_once(wt))
            row["commit_settled"] = interleaved(runs, floor, commit_settled(wt))
            row["switch"] = interleaved(runs, names[:3], switch_once(main))
            row["push"] = interleaved(runs, names[:3], push_once(solo, solo_branch))
            row["push_committed"] = interleaved(runs, names[:3],
                                                push_committed(solo, solo_branch))
            row["push_colliding"] = interleaved(runs, names[:3], push_committed(wt, "agent0"))
            row["rebase10"] = interleaved(max(3, runs // 2), names[:3], rebase_once(main))
            row["save_to_inbox"] = save_to_inbox(root, common, trials)
        for wait in SETTLE:
            wait()  # its background work done: what follows is the idle service
        st = request(common, {"op": "status"})
        row["service_rss_now_mib"] = round(st["status"]["rss_kb"] / 1024, 1) if st else None
        row["answered"] = st["status"].get("answered") if st else None
        row["git_calls"] = st["status"].get("git_calls") if st else None
        row["last_ms"] = st["status"].get("last_ms") if st else None
        row["idle_cpu_percent"] = idle_cpu(int(st["status"]["pid"]), 10.0) if st else None
        request(common, {"op": "shutdown"})
        svc.wait(60)
        svc = None
        with open(rss_file) as fh:
            for line in fh:
                if "Maximum resident set size" in line:
                    row["service_rss_peak_mib"] = round(int(line.split()[-1]) / 1024, 1)
        for k in ("commit", "commit_settled", "switch", "push", "push_committed",
                  "push_colliding", "rebase10"):
            if k not in row:
                continue
            b = row[k]["bare"]
            row[k]["ratio_service"] = round(row[k]["service"] / b, 2)
            if "in_process" in row[k]:
                row[k]["ratio_in_process"] = round(row[k]["in_process"] / b, 2)
            if "skip" in row[k]:
                row[k]["ratio_skip"] = round(row[k]["skip"] / b, 2)
            if "empty_hooks" in row[k]:
                row[k]["ratio_empty_hooks"] = round(row[k]["empty_hooks"] / b, 2)
        return row
    finally:
        if svc is not None:
            svc.kill()
            svc.wait()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="git with hooks and the service vs bare git")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--trials", type=int, default=15, help="save-to-inbox trials")
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit-only", action="store_true",
                    help="only git commit (bare, service, PROXIMITY_SKIP=1) and the service's "
                    "memory: for 50k x 32")
    ap.add_argument("--fresh-install", action="store_true",
                    help="measure a normal pip install in a throwaway venv (default: this "
                    "interpreter, which may be an editable install)")
    a = ap.parse_args(argv)
    global PY
    with interpreter(a.fresh_install, PY) as PY:
        row = measure(a.files, a.worktrees, a.runs, a.trials, a.commit_only)
    print(json.dumps(row, indent=2))
    save_json(a.json, row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
