"""What other machines' published snapshots cost this machine's git commands.

    python benchmarks/remote_refs.py --files 1000 --refs 2000 --runs 7 --sync-refs 200

1. `git commit` and `git push` (to a local bare remote) with proximity's plain hooks
   installed (`proximity install`), first with no remote refs, then after `proximity sync`
   fetched ``--refs`` snapshot refs that other "machines" published (each a real snapshot
   commit with one changed file of its own), in the same run: medians and the ratio.
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


def commit_and_push(wt: str, runs: int, tag: str) -> dict[str, float]:
    """Medians of commit and push, with the hooks and without (--no-verify), interleaved."""
    times: dict[str, list[float]] = {"commit": [], "push": [], "commit_no_hooks": [],
                                     "push_no_hooks": []}
    for i in range(runs):
        for hooks in (True, False):
            with open(os.path.join(wt, "src", "mine.txt"), "a") as f:
                f.write(f"{tag} {i} {hooks}\n")
            git(wt, "add", "-A")
            skip = [] if hooks else ["--no-verify"]
            sfx = "" if hooks else "_no_hooks"
            times["commit" + sfx].append(
                timed(["git", "commit", "-q", *skip, "-m", f"{tag} {i}"], wt))
            times["push" + sfx].append(
                timed(["git", "push", "-q", *skip, "origin", "HEAD:refs/heads/bench"], wt))
    return {k: statistics.median(v) for k, v in times.items()}


def loose(repo: str) -> int:
    out = git(repo, "count-objects", "-v")
    return int(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("count:")))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--refs", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sync-refs", type=int, default=200)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="proximity-remote-refs-")
    try:
        bare = os.path.join(root, "remote.git")
        git(root, "init", "-q", "--bare", bare)
        repo = generate(os.path.join(root, "gen"), args.files, 0, 0)
        git(repo, "remote", "add", "origin", bare)
        git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
        base = git(repo, "rev-parse", "HEAD").strip()
        subprocess.run([PY, "-m", "proximity", "install", "-C", repo], env=ENV, check=True,
                       capture_output=True)
        wt = os.path.join(root, "wt")
        git(repo, "worktree", "add", "-q", "-b", "bench", wt)
        commit_and_push(wt, 2, "warm")  # first-run work (import graph) out of the figures
        time.sleep(2)
        zero = commit_and_push(wt, args.runs, "zero")
        craft(bare, base, 0, args.refs)
        sync = subprocess.run([PY, "-m", "proximity", "sync", "--json", "-C", repo], env=ENV,
                              capture_output=True, text=True)
        if sync.returncode != 0:
            raise SystemExit(sync.stderr)
        known = json.loads(sync.stdout)["remote_agents"]
        many = commit_and_push(wt, args.runs, "many")
        rows: dict[str, float | int] = {"files": args.files, "published_refs": args.refs,
                                        "remote_agents_known": known}
        for k in zero:
            rows[f"{k}_0_refs_s"] = zero[k]
            rows[f"{k}_{args.refs}_refs_s"] = many[k]
        for k in ("commit", "push"):
            rows[f"{k}_ratio"] = many[k] / zero[k]
            # what the hooks alone add (the same command without hooks subtracted)
            rows[f"{k}_hooks_only_ratio"] = ((many[k] - many[k + "_no_hooks"])
                                             / (zero[k] - zero[k + "_no_hooks"]))
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
