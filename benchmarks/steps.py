"""Commit-by-commit replays of real branch pairs: does proximity warn before git conflicts?

For a mined merge (``mine.py`` format), the first-parent commits base..P1 and base..P2 are
interleaved by committer time; at each step the two tips so far are scanned as two agents
(HEAD = the tip, live state = its tree; proximity's own pipeline with the exact conflict
channel on) and the step is labelled by ``git merge-tree --write-tree`` of the two tips.
Steps start once both sides have a commit; a pair with more than ``--max-steps`` steps keeps
that many, evenly spaced, the last one included.

    python benchmarks/steps.py benchmarks/out/cases/*.jsonl --pairs 30 --json
    python benchmarks/steps.py CASES... --out benchmarks/out/steps.jsonl

Pairs are sampled at random per repository (``--pairs`` each, ``--seed``), so conflicting and
clean pairs keep their real proportions. Reported: RA and traffic-or-RA rates on the steps of
pairs that never conflict; for conflicting pairs whose first conflict is not at their first
step, the share warned (TA or RA) strictly before that step. ``--out`` keeps one line per step
(channels, evidence classes, ``conflict_now``/``conflict_later`` labels) for ``calibrate.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay

from proximity import gitio


def chain(src: replay.Source, base: str, tip: str) -> list[tuple[int, str]]:
    """(committer time, commit) of tip's first-parent line since base, oldest first."""
    out = gitio.git(["log", "--first-parent", "--format=%ct %H", f"{base}..{tip}"],
                    cwd=src.path).stdout.decode().split("\n")
    return [(int(t), c) for t, c in (ln.split() for ln in reversed(out) if ln.strip())]


def step_tips(src: replay.Source, case: dict[str, Any], cap: int) -> list[tuple[str, str]]:
    base = case["base"]
    events = sorted([(t, 0, c) for t, c in chain(src, base, case["a"]["commit"])]
                    + [(t, 1, c) for t, c in chain(src, base, case["b"]["commit"])])
    tips = [base, base]
    out: list[tuple[str, str]] = []
    for _, side, c in events:
        tips[side] = c
        if tips[0] != base and tips[1] != base:
            out.append((tips[0], tips[1]))
    if len(out) > cap:
        idx = sorted({round(i * (len(out) - 1) / (cap - 1)) for i in range(cap)})
        out = [out[i] for i in idx]
    return out


def replay_pair(src: replay.Source, case: dict[str, Any], cap: int) -> list[dict[str, Any]]:
    rows = []
    for i, (ta, tb) in enumerate(step_tips(src, case, cap)):
        now = src.conflicts(ta, tb)
        a = src.agent("a", ta, src.tree(ta))
        b = src.agent("b", tb, src.tree(tb))
        p = src.pair(a, b)
        rows.append({"id": case["id"], "repo": case["repo"], "step": i, "a": ta, "b": tb,
                     "conflict_now": bool(now), "advisory": p.advisory,
                     "risk": round(p.risk, 4),
                     "channels": {k: None if v is None else round(v, 4)
                                  for k, v in p.channels.items()},
                     "kinds": replay.kinds_of(p, src.tree_kind(p.base, a, b)),
                     "top": [[f.channel, f.kind, round(f.score, 3), f.path_a]
                             for f in p.findings[:3]]})
    later = False
    for r in reversed(rows):
        later = later or r["conflict_now"]
        r["conflict_later"] = later  # conflicts at this or a later step
    return rows


def summary(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    pairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        pairs[r["id"]].append(r)
    never = [s for ss in pairs.values() if not any(r["conflict_now"] for r in ss) for s in ss]
    conflicting = [ss for ss in pairs.values() if any(r["conflict_now"] for r in ss)]
    warned, eligible, at_first = 0, 0, 0
    for ss in conflicting:
        first = next(i for i, r in enumerate(ss) if r["conflict_now"])
        if first == 0:
            at_first += 1
            continue
        eligible += 1
        warned += any(r["advisory"] != "clear" for r in ss[:first])
    n = len(never)
    return {
        "pairs": len(pairs), "steps": sum(len(v) for v in pairs.values()),
        "never_conflict_pairs": len(pairs) - len(conflicting), "never_conflict_steps": n,
        "ra_never": round(sum(r["advisory"] == "resolution" for r in never) / n, 4) if n
        else None,
        "ta_or_ra_never": round(sum(r["advisory"] != "clear" for r in never) / n, 4) if n
        else None,
        "conflicting_pairs": len(conflicting), "conflict_at_first_step": at_first,
        "eligible_conflicting_pairs": eligible,
        "warned_before_first_conflict": round(warned / eligible, 4) if eligible else None,
        "ra_on_conflicting_steps": _share([r for ss in conflicting for r in ss
                                           if r["conflict_now"]], "resolution"),
    }


def sweep(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """What another traffic threshold would give on the same risks (the scan's own R)."""
    rows = list(rows)
    out = []
    for tau in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35):
        marked = [{**r, "advisory": "resolution" if r["advisory"] == "resolution" else
                   "traffic" if r["risk"] >= tau else "clear"} for r in rows]
        s = summary(marked)
        out.append({"tau_ta": tau, "ta_or_ra_never": s["ta_or_ra_never"],
                    "warned_before_first_conflict": s["warned_before_first_conflict"]})
    return out


def _share(rows: list[dict[str, Any]], adv: str) -> float | None:
    return round(sum(r["advisory"] == adv for r in rows) / len(rows), 4) if rows else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--git-dir", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--pairs", type=int, default=30, help="random pairs per repository")
    ap.add_argument("--max-steps", type=int, default=15)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repos", help="comma-separated repository names (default: all)")
    ap.add_argument("--out")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cases = replay.load_cases(args.cases)
    dirs = replay.git_dirs(args.cases, args.git_dir)
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cases:
        by_repo[c["repo"]].append(c)
    want = set(args.repos.split(",")) if args.repos else set(by_repo)
    rows: list[dict[str, Any]] = []
    errors = []
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 -- written as we go
    for name, cs in sorted(by_repo.items()):
        if name not in want or name not in dirs:
            continue
        src = replay.Source(name, dirs[name], os.path.join(replay.OUT, "scratch-steps"))
        rnd = random.Random(f"{args.seed}:{name}")
        for c in rnd.sample(cs, min(args.pairs, len(cs))):
            try:
                got = replay_pair(src, c, args.max_steps)
            except Exception as e:  # reported, never hidden
                errors.append([c["id"], repr(e)[:160]])
                continue
            rows.extend(got)
            if sink:
                sink.writelines(json.dumps(r) + "\n" for r in got)
                sink.flush()
        print(f"{name}: {len({r['id'] for r in rows if r['repo'] == name})} pairs",
              file=sys.stderr)
    report = {
        "overall": summary(rows),
        "fit": summary(r for r in rows if r["repo"] in replay.FIT),
        "held_out": summary(r for r in rows if r["repo"] not in replay.FIT),
        "per_repo": {n: summary(r for r in rows if r["repo"] == n)
                     for n in sorted({r["repo"] for r in rows})},
        "tau_ta_sweep_held_out": sweep(r for r in rows if r["repo"] not in replay.FIT),
        "tau_ta_sweep_overall": sweep(rows),
        "fit_repos": list(replay.FIT), "errors": errors,
        "false_ra_examples": [[r["id"], r["step"], r["top"][:2]] for r in rows
                              if r["advisory"] == "resolution" and not r["conflict_now"]][:10],
    }
    if sink:
        sink.close()
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        cols = ("pairs", "steps", "never_conflict_steps", "ra_never", "ta_or_ra_never",
                "conflicting_pairs", "eligible_conflicting_pairs",
                "warned_before_first_conflict")
        print(f"{'':14}" + "".join(f"{c[:14]:>15}" for c in cols))
        for n, s in [*report["per_repo"].items(), ("FIT", report["fit"]),
                     ("HELD-OUT", report["held_out"]), ("OVERALL", report["overall"])]:
            print(f"{n:14}" + "".join(f"{'-' if s[c] is None else s[c]!s:>15}" for c in cols))
        print(f"errors: {errors[:5]}")
        for ex in report["false_ra_examples"]:
            print("RA on a clean step:", ex)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
