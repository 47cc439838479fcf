"""For a saved swarm plan (`swarm.py --plan-dir`): every pair of lanes that change one file,
whether git's merge of their final states conflicts there, and whether the rule of line
ranges predicts it (two changes meet when their base ranges overlap or touch), from
`git diff`'s hunks with the myers and with the histogram algorithm (git's merge, ort,
diffs with histogram).

    python benchmarks/swarm_pairs.py PLAN_DIR CHANGES.rst --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Sequence

Hunk = tuple[int, int]  # (first base line, lines); 0 lines: an insertion after that line


def git(scratch: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", scratch, *args], capture_output=True, text=True,
                          check=False)


def hunks(scratch: str, base: str, tip: str, path: str, algorithm: str) -> list[Hunk]:
    out = git(scratch, "diff", f"--diff-algorithm={algorithm}", "-U0", base, tip, "--",
              path).stdout
    return [(int(m.group(1)), int(m.group(2) or 1))
            for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+", out, re.M)]


def meet(a: Sequence[Hunk], b: Sequence[Hunk]) -> bool:
    """Whether any two changes overlap or touch in base lines (an insertion is the empty
    range after its line)."""
    def span(h: Hunk) -> tuple[int, int]:
        start, n = h
        return (start + 1, start) if n == 0 else (start, start + n - 1)

    return any(x0 <= y1 + 1 and y0 <= x1 + 1
               for (x0, x1), (y0, y1) in ((span(p), span(q)) for p, q in
                                          itertools.product(a, b)))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan_dir")
    ap.add_argument("path")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        with open(f"{args.plan_dir}/assignment.json") as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        print(f"swarm_pairs: cannot read the plan: {e}", file=sys.stderr)
        return 2
    scratch, trunk = f"{args.plan_dir}/scratch", plan["trunk"]
    lanes = [(i, p["commits"][-1]) for i, p in enumerate(plan["plans"]) if p["commits"]
             and git(scratch, "diff", "--quiet", trunk, p["commits"][-1], "--",
                     args.path).returncode == 1]
    tally = {alg: {"agree": 0, "missed": 0, "false": 0} for alg in ("myers", "histogram")}
    conflicting = 0
    for (_, a), (_, b) in itertools.combinations(lanes, 2):
        merged = git(scratch, "merge-tree", "--write-tree", "--name-only", "--no-messages",
                     a, b)
        truth = merged.returncode == 1 and args.path in merged.stdout.split("\n")[1:]
        conflicting += truth
        for alg, row in tally.items():
            said = meet(hunks(scratch, trunk, a, args.path, alg),
                        hunks(scratch, trunk, b, args.path, alg))
            row["agree" if said == truth else "missed" if truth else "false"] += 1
    result = {"path": args.path, "lanes": len(lanes),
              "pairs": len(lanes) * (len(lanes) - 1) // 2, "conflicting": conflicting,
              "prediction": tally}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.path}: {result['lanes']} lanes, {result['pairs']} pairs, "
              f"{conflicting} conflict in git's merge")
        for alg, row in tally.items():
            print(f"  {alg}: {row['agree']} agree, {row['missed']} missed, "
                  f"{row['false']} false")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
