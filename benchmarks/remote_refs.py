"""What other machines' published snapshots cost this machine's git commands.

    python benchmarks/remote_refs.py --files 1000 --refs 2000 --runs 7 --sync-refs 200

1. `git commit` and `git push` (each machine to its own local bare remote) with
   proximity's plain hooks installed (`proximity install`), on two identical machines in the
   same run: one whose remote carries no published snapshots, one whose remote carries
   ``--refs`` of them (each a real snapshot commit with one changed file of its own) that
   `proximity sync` fetched. Runs alternate between the two machines, with and without
   hooks (--no-verify); medians, the ratio, and the ratio of what the hooks alone add.
2. Loose objects after fetching ``--sync-refs`` refs in 20 rounds (teammates publishing a
   few at a time): `proximity sync` vs a plain `git fetch` of the same refspec (git's
   defaults explode fetches of fewer than 100 objects into loose objects).

The published refs are written straight into the bare remote with `git fast-import` (one
process for thousands of commits), exactly as `sync` names them: refs/ecm/<machine>/<wt>.
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
from genrepo import ENV, generate, git

PY = sys.executable
PER_MACHINE = 40


def craft(bare: str, base: str, first: int, count: int) -> None:
    """``count`` published snapshots (ids first..first+count-1) into ``bare``."""
    now = time.time()
    chunks: list[bytes] = []
    for n in range(first, first + count):
        machine, wt = f"machine{n // PER_MACHINE}", f"wt{n % PER_MACHINE}"
        meta = {"schema": 1, "machine": machine, "worktree": wt, "branch": f"feat/{wt}",
                "head": base, "clock": {wt: 3}, "time": now, "created": now - 60,
                "subject": "their work"}
        msg = f"proximity snapshot {machine}/{wt}\n\n{json.dumps(meta)}\n".encode()
        body = f"work of {machine}/{wt}\n".encode()
        chunks += [f"commit refs/ecm/{machine}/{wt}\n".encode(),
                   b"committer proximity <proximity@localhost> 0 +0000\n",
                   f"data {len(msg)}\n".encode(), msg, f"from {base}\n".encode(),
                   f"M 100644 inline remote/{machine}/{wt}.txt\n".encode(),
                   f"data {len(body)}\n".encode(), body, b"\n"]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=bare, env=ENV, check=True,
                   input=b"".join(chunks))


def timed(cmd: Sequence[str], cwd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(list(cmd), cwd=cwd, env=ENV, capture_output=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr.decode(errors='replace')}")
    return dt


def one_round(wt: str, tag: str, hooks: bool, times: dict[str, list[float]]) -> None:
    with open(os.path.join(wt, "src", "mine.txt"), "a") as f:
        f.write(f"{tag} {hooks}\n")
    git(wt, "add", "-A")
    skip = [] if hooks else ["--no-verify"]
    sfx = "" if hooks else "_no_hooks"
    times.setdefault("commit" + sfx, []).append(
        timed(["git", "commit", "-q", *skip, "-m", tag], wt))
    times.setdefault("push" + sfx, []).append(
        timed(["git", "push", "-q", *skip, "origin", "HEAD:refs/heads/bench"], wt))


def machine(root: str, name: str, files: int) -> tuple[str, str, str, str]:
    """(bare remote, main checkout, worktree, base commit) with proximity's hooks."""
    bare = os.path.join(root, f"{name}.git")
    git(root, "init", "-q", "--bare", bare)
    repo = generate(os.path.join(root, name), files, 0, 0)
    git(repo, "remote", "add", "origin", bare)
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    subprocess.run([PY, "-m", "proximity", "install", "-C", repo], env=ENV, check=True,
                   capture_output=True)
    wt = os.path.join(root, f"{name}-wt")
    git(repo, "worktree", "add", "-q", "-b", "bench", wt)
    return bare, repo, wt, git(repo, "rev-parse", "HEAD").strip()


def loose(repo: str) -> int:
    out = git(repo, "count-objects", "-v")
    return int(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("count:")))


def loose_fetched(repo: str) -> int:
    """Loose objects that belong to others' snapshots (reachable from refs/ecm-remote)."""
    objects = git(repo, "rev-parse", "--git-path", "objects").strip()
    objects = os.path.join(repo, objects) if not os.path.isabs(objects) else objects
    reach = git(repo, "rev-list", "--objects", "--glob=refs/ecm-remote/*").split()
    return sum(os.path.exists(os.path.join(objects, x[:2], x[2:])) for x in reach
               if len(x) == 40)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--refs", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sync-refs", type=int, default=200)
    ap.add_argument("--packed-remote", action="store_true",
                    help="pack the remote's refs after publishing (as its gc would)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="proximity-remote-refs-")
    try:
        # two identical machines, each with its own remote; one remote carries --refs
        # published snapshots. Runs alternate between them, so load drift hits both alike.
        _, _, wt0, _ = machine(root, "zero", args.files)
        bare, repo, wtn, base = machine(root, "many", args.files)
        craft(bare, base, 0, args.refs)
        if args.packed_remote:  # a remote whose own gc has packed its refs
            git(bare, "pack-refs", "--all")
        sync = subprocess.run([PY, "-m", "proximity", "sync", "--json", "-C", repo], env=ENV,
                              capture_output=True, text=True)
        if sync.returncode != 0:
            raise SystemExit(sync.stderr)
        known = json.loads(sync.stdout)["remote_agents"]
        zero: dict[str, list[float]] = {}
        many: dict[str, list[float]] = {}
        for i in range(2):  # first-run work (import graph, caches) out of the figures
            one_round(wt0, f"warm {i}", True, {})
            one_round(wtn, f"warm {i}", True, {})
        time.sleep(2)
        for i in range(args.runs):
            for hooks in (True, False):
                one_round(wt0, f"run {i}", hooks, zero)
                one_round(wtn, f"run {i}", hooks, many)
        rows: dict[str, float | int] = {"files": args.files, "published_refs": args.refs,
                                        "remote_refs_packed": int(args.packed_remote),
                                        "remote_agents_known": known}
        med0 = {k: statistics.median(v) for k, v in zero.items()}
        medn = {k: statistics.median(v) for k, v in many.items()}
        for k in med0:
            rows[f"{k}_0_refs_s"] = med0[k]
            rows[f"{k}_{args.refs}_refs_s"] = medn[k]
        for k in ("commit", "push"):
            rows[f"{k}_ratio"] = medn[k] / med0[k]
            # what the hooks alone add (the same command without hooks subtracted)
            rows[f"{k}_hooks_only_ratio"] = ((medn[k] - medn[k + "_no_hooks"])
                                             / (med0[k] - med0[k + "_no_hooks"]))
        # loose objects: teammates publish a few refs at a time; we sync after each round
        bare2 = os.path.join(root, "remote2.git")
        git(root, "clone", "-q", "--bare", bare, bare2)
        for ref in git(bare2, "for-each-ref", "--format=%(refname)", "refs/ecm/").split():
            git(bare2, "update-ref", "-d", ref)
        ours, plain = os.path.join(root, "ours"), os.path.join(root, "plain")
        for where in (ours, plain):
            git(root, "clone", "-q", bare2, where)
        rounds = 20
        for r in range(rounds):
            craft(bare2, base, 100_000 + r * (args.sync_refs // rounds),
                  args.sync_refs // rounds)
            p = subprocess.run([PY, "-m", "proximity", "sync", "-C", ours], env=ENV,
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(p.stderr)
            git(plain, "fetch", "-q", "--prune", "origin", "+refs/ecm/*:refs/ecm-remote/origin/*")
        rows["synced_refs"] = (args.sync_refs // rounds) * rounds
        rows["loose_objects_after_sync"] = loose(ours)
        rows["loose_of_them_fetched"] = loose_fetched(ours)
        rows["loose_objects_plain_git_fetch"] = loose(plain)
        for k, v in rows.items():
            print(f"{k:32} {round(v, 3) if isinstance(v, float) else v}")
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
