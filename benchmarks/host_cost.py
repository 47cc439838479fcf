"""What each hook host costs: `git commit`, `git switch`, `git rebase` and `git push` on the
same generated repository with bare git, proximity's plain hooks, and proximity under the
pre-commit framework, prek and lefthook, plus each host with an empty config (one no-op
`true` hook per stage: the host's own overhead, proximity absent), the variants taking turns
round by round; medians and ratios to bare git in the same run; with the resident service
off (hooks judge in process), all variants taking turns, and on, in one block per host whose
service runs on that host's own install of proximity (bare git taking turns with it).

Every variant runs twice, its output to /dev/null and captured (read from pipes to their
end, the way agents, IDEs and CI run git: a hook that leaves a process holding git's
stdout or stderr costs only the captured run): `captured_over_devnull` is their ratio.

    python benchmarks/host_cost.py --files 10000 --worktrees 8 --runs 7 --fresh-install
    python benchmarks/host_cost.py --untracked 30000 --ops commit_untracked --runs 5 --fresh-install

Every variant has its own hooks directory (`git -c core.hooksPath=DIR`), made by the host's
own installer; pre-commit and prek build their proximity environment from this checkout's
HEAD before timing starts; lefthook is its Go binary (LEFTHOOK_BIN, what npm, brew or go
users run), and once more, empty, through the PyPI package's Python wrapper on PATH.
`git commit` runs pre-commit + post-commit, in a linked worktree (`commit`) and in the main
checkout (`commit_main`); `git push` pre-push, of a commit no hook saw (made with hooks off),
from a linked worktree whose branch collides with nobody (`push`) and from the main checkout
(`push_main`); `git switch` two post-checkouts (main -> side -> main, 50 files differ);
`git rebase` of 10 commits (post-rewrite); both in the main checkout (`switch`, `rebase`)
and in one more linked worktree, clean, on branches of its own (`switch_linked`,
`rebase_linked`). ``--untracked N``: a linked worktree also holds N
untracked files (not ignored), and `git commit` there (`commit_untracked`) is set against
`git status` there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV, generate, git
from service_cost import (
    commit_once,
    prepare,
    push_once,
    rebase_once,
    settle_service,
    solo_worktree,
    switch_once,
)
from timing import (
    CAPTURED,
    NO_HOOKS,
    ROOT,
    Variant,
    captured,
    interleaved,
    interpreter,
    load,
    save_json,
)
from timing import timed as timed_one

HOOK_TYPES = ("pre-commit", "pre-push", "post-commit", "post-checkout", "post-merge",
              "post-rewrite")
HOSTS = ("pre-commit", "prek", "lefthook")


def tool(name: str) -> str:
    here = os.path.dirname(sys.executable)
    path = shutil.which(name, path=here) or shutil.which(name)
    if path is None:
        raise SystemExit(f"{name} not found: `pip install -e '.[test]'` installs it")
    return path


def lefthook_binary() -> str:
    """The Go binary inside the PyPI package (what the other installers put on PATH)."""
    import lefthook  # type: ignore[import-not-found, import-untyped, unused-ignore]

    base = os.path.join(os.path.dirname(lefthook.__file__), "bin")
    for d, _, files in os.walk(base):
        if "lefthook" in files:
            return os.path.join(d, "lefthook")
    raise SystemExit(f"no lefthook binary under {base}")


def framework_config(repo: str, rev: str | None) -> str:
    """pre-commit's and prek's config: proximity's ids, or (``rev`` None) one no-op hook
    per stage (prek refuses a config with no hooks at all)."""
    types = "default_install_hook_types: [" + ", ".join(HOOK_TYPES) + "]\n"
    if rev is None:
        return (types + "repos:\n- repo: local\n  hooks:\n  - id: noop\n    name: noop\n"
                "    entry: 'true'\n    language: system\n    pass_filenames: false\n"
                "    always_run: true\n    stages: [" + ", ".join(HOOK_TYPES) + "]\n")
    return (types + f"repos:\n- repo: {repo}\n  rev: {rev}\n  hooks:\n"
            "  - id: proximity-snapshot\n  - id: proximity-warn\n  - id: proximity-guard\n")


def hooks_dirs(root: str, main: str, env: dict[str, str], py: str,
               worktrees: Sequence[str]) -> dict[str, str]:
    """One hooks directory per way of running hooks, each made by its own installer in
    .git/hooks and moved aside. Host configs live untracked (and ignored) in each worktree."""
    from proximity.hooks import hosts

    rev = git(ROOT, "rev-parse", "HEAD").strip()
    configs = {".pre-commit-config.yaml": framework_config(ROOT, rev),
               ".pre-commit-empty.yaml": framework_config(ROOT, None),
               "lefthook.yml": hosts.lefthook_block(),
               "lefthook-empty.yml": "".join(f"{h}:\n  commands:\n    noop:\n      run: 'true'\n"
                                             for h in HOOK_TYPES)}
    with open(os.path.join(main, ".git", "info", "exclude"), "a") as f:
        f.write("".join(f"/{name}\n" for name in configs))
    for w in worktrees:
        for name, text in configs.items():
            with open(os.path.join(w, name), "w") as f:
                f.write(text)
    hooks = os.path.join(main, ".git", "hooks")
    out = {}

    def take(name: str, *cmds: list[str]) -> None:
        shutil.rmtree(hooks, ignore_errors=True)
        os.makedirs(hooks)
        for cmd in cmds:
            subprocess.run(cmd, cwd=main, env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.STDOUT)
        out[name] = os.path.join(root, f"hooks-{name}")
        shutil.copytree(hooks, out[name], symlinks=True)

    take("plain", [py, "-m", "proximity", "install"])
    pc = [sys.executable, "-m", "pre_commit"]
    take("pre-commit", [*pc, "install", "-c", ".pre-commit-config.yaml"],
         [*pc, "install-hooks", "-c", ".pre-commit-config.yaml"])
    take("pre-commit-empty", [*pc, "install", "-c", ".pre-commit-empty.yaml"])
    prek = tool("prek")
    take("prek", [prek, "install", "-c", ".pre-commit-config.yaml"],
         [prek, "install-hooks", "-c", ".pre-commit-config.yaml"])
    take("prek-empty", [prek, "install", "-c", ".pre-commit-empty.yaml"])
    take("lefthook", [tool("lefthook"), "install"])
    shutil.rmtree(hooks, ignore_errors=True)
    os.makedirs(hooks)
    return out


def variants(dirs: dict[str, str], env: dict[str, str], service: bool,
             empty: bool) -> dict[str, Variant]:
    """name -> (git's extra arguments, environment); each also as "<name> captured"."""
    plain = _variants(dirs, env, service, empty)
    return {**plain, **{n + CAPTURED: v for n, v in plain.items()}}


def _variants(dirs: dict[str, str], env: dict[str, str], service: bool,
              empty: bool) -> dict[str, Variant]:
    e = {**env, "PROXIMITY_SERVICE": "1" if service else "0"}
    at = {name: ["-c", f"core.hooksPath={d}"] for name, d in dirs.items()}
    out: dict[str, Variant] = {"bare": (NO_HOOKS, e)}
    for name in ("plain", "pre-commit", "prek", "lefthook"):
        out[name] = (at[name], e)
    if empty:
        out["pre-commit-empty"] = (at["pre-commit-empty"], e)
        out["prek-empty"] = (at["prek-empty"], e)
        out["lefthook-empty"] = (at["lefthook"], {**e, "LEFTHOOK_CONFIG": "lefthook-empty.yml"})
        # PyPI's lefthook is a Python wrapper around the binary: found on PATH, the hook
        # script starts it twice (`lefthook -h` to probe, then `lefthook run`)
        pip = {k: v for k, v in e.items() if k != "LEFTHOOK_BIN"}
        pip["PATH"] = os.path.dirname(tool("lefthook")) + os.pathsep + pip["PATH"]
        out["lefthook-pip-empty"] = (at["lefthook"], {**pip,
                                                      "LEFTHOOK_CONFIG": "lefthook-empty.yml"})
    return out


def ratios(medians: dict[str, float]) -> dict[str, float]:
    """Each variant against bare git run the same way (captured or not)."""
    return {n: round(s / medians["bare" + (CAPTURED if captured(n) else "")], 2)
            for n, s in medians.items() if n not in ("bare", "bare" + CAPTURED)}


def capture_cost(medians: dict[str, float]) -> dict[str, float]:
    """Each variant's captured run against its run to /dev/null."""
    return {n: round(medians[n + CAPTURED] / s, 2) for n, s in medians.items()
            if not captured(n) and n + CAPTURED in medians and s > 0}


def summary(med: dict[str, float]) -> dict[str, Any]:
    return {"median_s": med, "ratio_to_bare": ratios(med),
            "captured_over_devnull": capture_cost(med)}


def status_once(wt: str) -> Callable[[str, list[str], dict[str, str], int], float]:
    """`git status` in ``wt`` (what a commit there is set against)."""
    def one(name: str, extra: list[str], env: dict[str, str], i: int) -> float:
        return timed_one(["git", *extra, "status", "--porcelain"], wt, env, captured(name))
    return one


def many_untracked(wt: str, n: int) -> None:
    """``n`` untracked, not ignored files in ``wt`` (gen/dNN/fNNNN.txt, 1,000 a directory)."""
    for i in range(n):
        d = os.path.join(wt, "gen", f"d{i // 1000:02}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}.txt"), "w") as f:
            f.write(f"generated {i}\n")


def host_python(home: str) -> str:
    """The interpreter of the proximity environment a host built under ``home`` (the
    one whose `bin/` holds a `proximity` command)."""
    for d, _, files in os.walk(home):
        if os.path.basename(d) == "bin" and "proximity" in files and "python" in files:
            return os.path.join(d, "python")
    raise SystemExit(f"no proximity environment under {home}")


def measure(files: int, worktrees: int, runs: int, py: str,
            service_only: bool = False, untracked: int = 0,
            only: Sequence[str] = (),
            hosts: Sequence[str] = ("plain", *HOSTS)) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix="proximity-hosts-")
    try:
        main = generate(root, files, worktrees, changes=3)
        prepare(main, root)
        wt = os.path.join(root, "wt00")
        git(wt, "push", "-q", "origin", "agent0")
        git(main, "push", "-q", "origin", "main")
        # the push: a branch that collides with nobody; wt00, which commits, collides
        solo, solo_branch = solo_worktree(root, worktrees)
        bulk = os.path.join(root, "wt01")
        # a clean linked worktree to switch and rebase in: branches of its own at main and
        # side (a branch checked out in one worktree cannot be in another)
        linked = os.path.join(root, "ops")
        git(main, "branch", "ops-main", "main")
        git(main, "branch", "ops-side", "side")
        git(main, *NO_HOOKS, "worktree", "add", "-q", linked, "ops-main")
        if untracked:
            many_untracked(bulk, untracked)
        env = {**ENV, "PATH": os.path.dirname(py) + os.pathsep + ENV.get("PATH", ""),
               "PRE_COMMIT_HOME": os.path.join(root, "pre-commit-home"),
               "PREK_HOME": os.path.join(root, "prek-home"),
               "LEFTHOOK_BIN": lefthook_binary()}
        dirs = hooks_dirs(root, main, env, py, [main, wt, solo, bulk, linked])
        for w in [main, linked] + [os.path.join(root, f"wt{i:02}") for i in range(worktrees)]:
            subprocess.run([py, "-m", "proximity", "snapshot"], cwd=w, env=env, check=True,
                           stdout=subprocess.DEVNULL)  # a warm ledger, as after a day of work
        common = os.path.join(main, ".git")
        row: dict[str, Any] = {"files": files, "worktrees": worktrees, "runs": runs,
                               "untracked": untracked, "load_before": load()}
        ops: dict[str, Callable[..., float]] = {
            "commit": commit_once(wt), "commit_main": commit_once(main),
            "switch": switch_once(main), "rebase": rebase_once(main),
            "switch_linked": switch_once(linked, "ops-side", "ops-main"),
            "rebase_linked": rebase_once(linked, "rb-work-ops", "ops-main"),
            "push": push_once(solo, solo_branch), "push_main": push_once(main, "main")}
        if untracked:
            ops["commit_untracked"] = commit_once(bulk)
        if only:
            ops = {op: one for op, one in ops.items() if op in only}
            bare = {n: v for n, v in _variants(dirs, env, False, False).items() if n == "bare"}
            row["status_untracked"] = interleaved(runs, {**bare, "bare" + CAPTURED:
                                                         bare["bare"]}, status_once(bulk))
            print("git status there: " + json.dumps(row["status_untracked"]), flush=True)
        if not service_only:
            row["service_off"] = {}
            vs = variants(dirs, env, False, empty=True)
            for op, one in ops.items():
                med = interleaved(runs, vs, one)
                row["service_off"][op] = summary(med)
                print("service_off " + op + ": " + json.dumps(row["service_off"][op]),
                      flush=True)
        # service on: one block per host, its service run by that host's own install of
        # proximity (installs of other code stop each other's service: each hook asks a
        # service of other code to exit), bare git taking turns with it in the same block
        row["service_on"] = {}
        every = variants(dirs, env, True, empty=False)
        pythons = {"plain": py, "lefthook": py,
                   "pre-commit": host_python(env["PRE_COMMIT_HOME"]),
                   "prek": host_python(env["PREK_HOME"])}
        for host in hosts:
            hpy = pythons[host]
            subprocess.run([hpy, "-m", "proximity", "service", "start"], cwd=main,
                           env={**env, "PROXIMITY_SERVICE": "1"}, check=True,
                           stdout=subprocess.DEVNULL)
            before = [settle_service(common, hpy)]
            vs = {n: every[n] for n in ("bare", host, "bare" + CAPTURED, host + CAPTURED)}
            row["service_on"][host] = {"python": hpy}
            for op, one in ops.items():
                med = interleaved(runs, vs, one, before)
                row["service_on"][host][op] = summary(med)
                print(f"service_on {host} {op}: " + json.dumps(row["service_on"][host][op]),
                      flush=True)
            subprocess.run([hpy, "-m", "proximity", "service", "stop"], cwd=main,
                           env=env, check=False, stdout=subprocess.DEVNULL)
        row["load_after"] = load()
        return row
    finally:
        subprocess.run([py, "-m", "proximity", "service", "stop"], cwd=root, env=ENV,
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)


# each target: (git command, what it is set against, most allowed): against bare git run
# the same way, or (status) against `git status` in the worktree of untracked files
TARGETS = (("commit", "bare", 2.5), ("commit_main", "bare", 2.5), ("rebase", "bare", 2.0),
           ("rebase_linked", "bare", 2.0), ("push_main", "bare", 3.0),
           ("commit_untracked", "status", 2.0))


def table(row: dict[str, Any]) -> str:
    """The measured medians as text, one line per service mode, git command and variant:
    seconds and ratio, to /dev/null and captured, captured over /dev/null, and the
    command's target (met or missed, by the worse of the two runs)."""
    status = row.get("status_untracked", {})
    blocks = []
    if "service_off" in row:
        blocks.append(("service off (hooks judge in process)", {"": row["service_off"]}))
    if "service_on" in row:
        blocks.append(("service on (each host's own service)", {
            h: {op: v for op, v in ops.items() if op != "python"}
            for h, ops in row["service_on"].items()}))
    out = [f"{'':16} {'variant':18} {'to /dev/null':>16} {'captured':>16} {'cap/null':>8}"
           "  target"]
    for title, by_host in blocks:
        out.append(title)
        for host, ops in by_host.items():
            for op, got in ops.items():
                med = got["median_s"]
                target = next(((against, most) for t_op, against, most in TARGETS
                               if t_op == op), None)
                for name in med:
                    if name.startswith("bare") or name.endswith(CAPTURED) or (
                            host and name != host):
                        continue
                    cells, worst = [], 0.0
                    for suffix in ("", CAPTURED):
                        ref = (status.get("bare" + suffix, 0.0) if target and target[0]
                               == "status" else med["bare" + suffix])
                        ratio = med[name + suffix] / ref if ref else float("inf")
                        worst = max(worst, ratio)
                        cells.append(f"{med[name + suffix]:7.3f} {ratio:6.1f}x")
                    cap = med[name + CAPTURED] / med[name] if med[name] else float("inf")
                    verdict = ""
                    if target and "empty" not in name:
                        verdict = (f"<= {target[1]}x {target[0]}: "
                                   f"{'met' if worst <= target[1] else 'missed'}")
                    out.append(f"{op:16} {name:18} {cells[0]:>16} {cells[1]:>16} "
                               f"{cap:8.2f}  {verdict}".rstrip())
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="git with each hook host vs bare git")
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", default=None)
    ap.add_argument("--service-only", action="store_true",
                    help="only the service-on blocks (one per host)")
    ap.add_argument("--untracked", type=int, default=0,
                    help="untracked files in one linked worktree: `git commit` there against "
                    "`git status` there")
    ap.add_argument("--fresh-install", action="store_true",
                    help="plain hooks and lefthook run a normal pip install in a throwaway "
                    "venv (default: this interpreter, which may be an editable install)")
    ap.add_argument("--ops", default="",
                    help="comma-separated: only these git commands (commit, commit_main, "
                    "switch, rebase, switch_linked, rebase_linked, push, push_main, "
                    "commit_untracked)")
    ap.add_argument("--hosts", default=",".join(("plain", *HOSTS)),
                    help="comma-separated: the service-on blocks to run (plain, "
                    + ", ".join(HOSTS) + ")")
    ap.add_argument("--table", metavar="JSON", default=None,
                    help="print the figures a --json run saved, with the targets, and exit")
    a = ap.parse_args(argv)
    if a.table:
        with open(a.table) as fh:
            print(table(json.load(fh)))
        return 0
    hosts = [h for h in a.hosts.split(",") if h]
    unknown = sorted(set(hosts) - {"plain", *HOSTS})
    if unknown:
        ap.error(f"unknown host: {', '.join(unknown)}")
    with interpreter(a.fresh_install) as py:
        row = measure(a.files, a.worktrees, a.runs, py, a.service_only, a.untracked,
                      [op for op in a.ops.split(",") if op], hosts)
    print(json.dumps(row, indent=2))
    print(table(row))
    save_json(a.json, row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
