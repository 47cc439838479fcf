"""How often `git merge-file` calls two changes clean where git's own merge of the two
branches, landed in either order, stops with a conflict.

The pre-edit check relaxes a line-level conflict to "git's merge of the two is clean"
with `git merge-file` of the pair's base, the edit's result and the sibling's file. Git's
merges of branches (`merge-tree`, `merge`, `rebase`: the ort strategy) line files up with
another diff (histogram; `merge-file` of git before 2.44 has only myers), and a landing is
not one three-way merge: where this side rebased onto work landed since the pair's base,
the sibling landing first and this side rebasing onto it is a second merge of its own.

Random small files of a few repeated lines (where diffs have most room to line up
differently): a base B, the trunk H (B changed), the sibling S (B changed) and this side
M (H changed), kept when `git merge-file M B S` is clean. For each, in a scratch
repository: git's merge of the branches M and S (this side lands first, the sibling
rebases), and S merged into H then M rebased onto that (the sibling lands first); and
`git merge-file` of the second order (H, B, S, then M, H and that).

    python benchmarks/merge_orders.py --cases 300 --seed 7 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence

LINES = ("x\n", "=\n", "\n", "a\n", "b\n")


def git(args: Sequence[str], cwd: str, data: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=data,
                          check=False)


def merge_file(d: str, ours: str, base: str, theirs: str) -> str | None:
    """`git merge-file -p` of three texts; None when it conflicts."""
    names = []
    for name, text in (("o", ours), ("b", base), ("t", theirs)):
        names.append(os.path.join(d, name))
        with open(names[-1], "w") as f:
            f.write(text)
    r = git(["merge-file", "-p", *names], d)
    return None if r.returncode else r.stdout


def mutate(lines: list[str], rng: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 2)):
        op, i = rng.random(), rng.randint(0, len(out))
        if op < 0.5:
            out[i:i] = [rng.choice(LINES) for _ in range(rng.randint(1, 3))]
        elif op < 0.8 and out:
            del out[i:min(len(out), i + rng.randint(1, 2))]
        elif out:
            out[min(i, len(out) - 1)] = rng.choice(LINES)
    return out


def landings(d: str, b: str, h: str, s: str, m: str) -> dict[str, str]:
    """git's own merges, in a new repository at ``d``: this side landing first (the
    merge of branches M and S), the sibling's own landing onto the trunk, and this side
    rebased onto that."""
    git(["init", "-q"], d)
    f = os.path.join(d, "f")

    def commit(text: str, msg: str) -> None:
        with open(f, "w") as fh:
            fh.write(text)
        git(["add", "f"], d)
        git(["-c", "user.name=m", "-c", "user.email=m@m", "commit", "-qm", msg], d)

    commit(b, "B")
    git(["branch", "base"], d)
    commit(h, "H")
    git(["branch", "trunk"], d)
    git(["checkout", "-qb", "mine"], d)
    commit(m, "M")
    git(["checkout", "-qb", "sib", "base"], d)
    commit(s, "S")
    first = git(["merge-tree", "--write-tree", "--name-only", "mine", "sib"], d).returncode
    git(["checkout", "-q", "trunk"], d)
    lands = git(["-c", "user.name=m", "-c", "user.email=m@m", "merge", "-q", "--no-edit",
                 "sib"], d).returncode
    after = "-"
    if lands == 0:
        git(["checkout", "-q", "mine"], d)
        after = "conflict" if git(["-c", "user.name=m", "-c", "user.email=m@m", "rebase", "-q",
                                   "trunk"], d).returncode else "clean"
    return {"mine_first": "conflict" if first else "clean",
            "sibling_lands": "conflict" if lands else "clean", "then_mine": after}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    tally: Counter[str] = Counter()
    kept = 0
    with tempfile.TemporaryDirectory() as top:
        while kept < args.cases:
            base = [rng.choice(LINES) for _ in range(rng.randint(4, 9))]
            h, s = mutate(base, rng), mutate(base, rng)
            m = mutate(h, rng)
            b, hs, ss, ms = ("".join(x) for x in (base, h, s, m))
            if merge_file(top, ms, b, ss) is None:
                continue
            kept += 1
            landed = merge_file(top, hs, b, ss)
            seq = "-" if landed is None else (
                "clean" if merge_file(top, ms, hs, landed) is not None else "conflict")
            d = tempfile.mkdtemp(dir=top)
            got = landings(d, b, hs, ss, ms)
            git_conflict = got["mine_first"] == "conflict" or got["then_mine"] == "conflict"
            tally["cases"] += 1
            tally["git conflicts in an order"] += git_conflict
            tally["git: this side first conflicts"] += got["mine_first"] == "conflict"
            tally["git: sibling first, then this side conflicts"] += \
                got["then_mine"] == "conflict"
            tally["merge-file of the second order conflicts"] += seq == "conflict"
            tally["... where git conflicts"] += seq == "conflict" and git_conflict
            tally["... where git is clean in both orders"] += seq == "conflict" and \
                not git_conflict and got["then_mine"] != "-"
    out = dict(tally)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:55} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
