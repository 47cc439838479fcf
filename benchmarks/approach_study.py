"""Which approach evidence tells a pair that will conflict from one that will not?

Reads ``steps.py --out`` lines (commit-by-commit replays with their labels and the scan's
advisory) and recomputes, for every step, the approach features of
``proximity.channels.approach`` on each path both sides changed: the line gap between the
nearest hunks, whether both sides' changed lines sit in the same function/method (``fn``),
the same class or type (``cls``) or neither (``file``), how much of the file both changed,
and whether the gap closed since the pair's previous step. Reported per candidate class,
for fit and held-out repositories separately:

* ``rate``: among steps that do not conflict yet, the share (steps of a pair weigh one pair)
  whose pair conflicts at a later step: what the class is worth as a calibrated probability;
* ``early``: the share of eligible conflicting pairs (first conflict not at their first step)
  where the class is present strictly before the first conflict;
* ``never``: the share of the steps of never-conflicting pairs where it is present.

Also: ``ceiling`` (at the step before the first conflict, had both sides, one, or neither
modified the path that then conflicts?) and ``lookahead`` (a simulation of declared intents:
each side declares the files it will modify up to the next sampled step).

    python benchmarks/approach_study.py benchmarks/out/steps.jsonl CASES... [--git-dir ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay

from proximity.channels import approach

Row = dict[str, Any]


def step_features(src: replay.Source, a: str, b: str) -> list[dict[str, Any]]:
    """Approach features of every path both tips changed since their merge base."""
    base = src.repo.merge_base(a, b)
    if base is None:
        return []
    bt = src.tree(base)
    ca = {fc.path: fc for fc in src.repo.changes(bt, src.tree(a), src.cfg.max_diff_bytes)}
    cb = {fc.path: fc for fc in src.repo.changes(bt, src.tree(b), src.cfg.max_diff_bytes)}
    out = []
    for path in sorted(set(ca) & set(cb)):
        fa, fb = ca[path], cb[path]
        if not fa.ranges or not fb.ranges or fa.status != "M" or fb.status != "M":
            continue
        if fa.new_oid == fb.new_oid:
            continue
        facts = approach.writes.facts(src.facts.symbols_cache, src.repo.blob, path,
                                       fa.old_oid)
        f = approach.features(fa.ranges, fb.ranges, facts["defs"] if facts else None)
        if f is None:
            continue
        n = max(1, fa.old_lines)
        cov = min(sum(max(1, e - s + 1) for s, e in fa.ranges),
                  sum(max(1, e - s + 1) for s, e in fb.ranges)) / n
        out.append({"path": path, "gap": f.gap, "level": f.level, "shared": f.shared,
                    "cov": round(cov, 3), "parsed": facts is not None})
    return out


def channel_kinds(src: replay.Source, a: str, b: str) -> list[str]:
    """The approach channel's own evidence classes for one step (as the scan would report)."""
    from proximity.model import WorkingSet

    base = src.repo.merge_base(a, b)
    if base is None:
        return []
    bt = src.tree(base)
    wa, wb = (WorkingSet({fc.dest: fc for fc in src.repo.changes(bt, src.tree(t),
                                                                   src.cfg.max_diff_bytes)})
              for t in (a, b))
    exact = frozenset(src.repo.merge_conflicts(a, b) or [])
    res = approach.value(wa, wb, src.repo.blob, src.facts.symbols_cache, src.cfg.tau_ra, exact,
                         src.cfg.excluded)
    return sorted({f.kind for f in res.findings})


CANDIDATES: dict[str, Callable[[dict[str, Any], dict[str, Any] | None], bool]] = {
    "common-text-file": lambda f, p: True,
    "gap<=0": lambda f, p: f["gap"] <= 0,
    "gap<=6": lambda f, p: f["gap"] <= 6,
    "gap<=20": lambda f, p: f["gap"] <= 20,
    "gap<=60": lambda f, p: f["gap"] <= 60,
    "gap>60": lambda f, p: f["gap"] > 60,
    "fn": lambda f, p: f["level"] == "fn",
    "fn-g6": lambda f, p: f["level"] == "fn" and f["gap"] <= 6,
    "fn-g20": lambda f, p: f["level"] == "fn" and f["gap"] <= 20,
    "fn-far": lambda f, p: f["level"] == "fn" and f["gap"] > 20,
    "cls": lambda f, p: f["level"] == "cls",
    "cls-g20": lambda f, p: f["level"] == "cls" and f["gap"] <= 20,
    "file-g6": lambda f, p: f["level"] == "file" and f["gap"] <= 6,
    "file-g20": lambda f, p: f["level"] == "file" and f["gap"] <= 20,
    "file-g60": lambda f, p: f["level"] == "file" and 20 < f["gap"] <= 60,
    "file-far": lambda f, p: f["level"] == "file" and f["gap"] > 60,
    "cov>=0.1": lambda f, p: f["cov"] >= 0.1,
    "cov>=0.2": lambda f, p: f["cov"] >= 0.2,
    "cov>=0.3": lambda f, p: f["cov"] >= 0.3,
    "cov>=0.5": lambda f, p: f["cov"] >= 0.5,
    "cov>=0.1-g20": lambda f, p: f["cov"] >= 0.1 and f["gap"] <= 20,
    "closing": lambda f, p: p is not None and f["gap"] < p["gap"],
    "closing-g20": lambda f, p: p is not None and f["gap"] < p["gap"] and f["gap"] <= 20,
    "fn-persist": lambda f, p: f["level"] == "fn" and p is not None and p["level"] == "fn"
    and p["shared"] == f["shared"],
}


def classes(feats: list[dict[str, Any]], prev: list[dict[str, Any]]) -> set[str]:
    before = {f["path"]: f for f in prev}
    return {name for f in feats for name, test in CANDIDATES.items()
            if test(f, before.get(f["path"]))}


def study(rows: list[Row], scan_warn: bool) -> dict[str, dict[str, Any]]:
    pairs: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        pairs[r["id"]].append(r)
    stat: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for ss in pairs.values():
        ss.sort(key=lambda r: r["step"])
        conflicting = any(r["conflict_now"] for r in ss)
        first = next((i for i, r in enumerate(ss) if r["conflict_now"]), None)
        w = 1.0 / len(ss)
        seen: set[str] = set()
        for i, r in enumerate(ss):
            cs = r["classes"] | ({"scan-warns"} if r["advisory"] != "clear" else set())
            if not r["conflict_now"]:
                for c in cs:
                    stat[c]["n"] += w
                    stat[c]["k"] += w * r["conflict_later"]
            if not conflicting:
                for c in cs:
                    stat[c]["never"] += 1
            elif first is not None and i < first:
                seen |= cs
        if conflicting and first:
            for c in seen:
                stat[c]["early"] += 1
            for c in set(CANDIDATES) | seen | {"scan-warns"}:
                if c in seen or "scan-warns" in seen:
                    stat[c]["early_or_scan"] += 1
    never = sum(len(ss) for ss in pairs.values() if not any(r["conflict_now"] for r in ss))
    elig = sum(1 for ss in pairs.values()
               if any(r["conflict_now"] for r in ss) and not ss[0]["conflict_now"])
    out = {"_": {"never_steps": never, "eligible": elig, "pairs": len(pairs)}}
    for c, s in sorted(stat.items()):
        out[c] = {"rate": round(s["k"] / s["n"], 3) if s["n"] else None,
                  "n": round(s["n"], 1), "early": round(s["early"] / elig, 3) if elig else None,
                  "early_or_scan": round(s["early_or_scan"] / elig, 3) if elig else None,
                  "never": round(s["never"] / never, 3) if never else None}
    return out


def ceiling(rows: list[Row], srcs: dict[str, replay.Source]) -> dict[str, Any]:
    """For eligible conflicting pairs: had both sides, one, or neither changed a path that
    conflicts at the first conflicting step, at the step just before it? (No evidence on a
    file that one side has not touched yet can warn about that file.)"""
    pairs: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        pairs[r["id"]].append(r)
    out: dict[str, int] = defaultdict(int)
    for ss in pairs.values():
        ss.sort(key=lambda r: r["step"])
        first = next((i for i, r in enumerate(ss) if r["conflict_now"]), None)
        if not first:
            continue
        src = srcs[ss[0]["repo"]]
        hit, prev = ss[first], ss[first - 1]
        paths = set(src.repo.merge_conflicts(hit["a"], hit["b"]) or [])
        base = src.repo.merge_base(prev["a"], prev["b"])
        bt = src.tree(base) if base else ""
        ca = set(src.repo.changed_paths(bt, src.tree(prev["a"]))) if bt else set()
        cb = set(src.repo.changed_paths(bt, src.tree(prev["b"]))) if bt else set()
        if paths & ca & cb:
            out["both-touched-conflict-path"] += 1
        elif paths & (ca | cb):
            out["one-side-touched-it"] += 1
        else:
            out["neither-touched-it"] += 1
        out["any-common-path-before"] += bool(ca & cb)
        out["eligible"] += 1
    return dict(out)


def lookahead(rows: list[Row], srcs: dict[str, replay.Source]) -> dict[str, Any]:
    """What declared intents could add (a simulation, not a measurement of proximity): at
    each step, each side "declares" the files its commits up to the next sampled step will
    modify; a declared file the other side has already modified is an intent meeting an edit
    (overlap ``intent-file``). Reported like the step figures: share of eligible conflicting
    pairs with such a hit strictly before the first conflict, share of never-conflict steps
    with one."""
    pairs: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        pairs[r["id"]].append(r)
    hits_never = never = early = eligible = 0
    for ss in pairs.values():
        ss.sort(key=lambda r: r["step"])
        src = srcs[ss[0]["repo"]]
        first = next((i for i, r in enumerate(ss) if r["conflict_now"]), None)
        marks = []
        for i, r in enumerate(ss):
            nxt = ss[i + 1] if i + 1 < len(ss) else None
            base = src.repo.merge_base(r["a"], r["b"])
            bt = src.tree(base) if base else ""
            hit = False
            if nxt is not None and bt:
                ca = set(src.repo.changed_paths(bt, src.tree(r["a"])))
                cb = set(src.repo.changed_paths(bt, src.tree(r["b"])))
                ia = set(src.repo.changed_paths(src.tree(r["a"]), src.tree(nxt["a"])))
                ib = set(src.repo.changed_paths(src.tree(r["b"]), src.tree(nxt["b"])))
                hit = bool((ia & cb) or (ib & ca) or (ia & ib))
            marks.append(hit)
        if first is None:
            never += len(ss)
            hits_never += sum(marks)
        elif first > 0:
            eligible += 1
            early += any(marks[:first])
    return {"eligible": eligible, "warned_early": round(early / eligible, 3) if eligible else None,
            "never_steps": never,
            "never_flagged": round(hits_never / never, 3) if never else None}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps")
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--git-dir", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--features", help="write/read per-step features here (cache)")
    ap.add_argument("--augment", help="write the steps lines here with the approach "
                    "channel's classes added (for calibrate.py, without a new scan)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with open(args.steps) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    cached: dict[str, list[dict[str, Any]]] = {}
    if args.features and os.path.exists(args.features):
        with open(args.features) as f:
            cached = json.load(f)
    dirs = replay.git_dirs(args.cases, args.git_dir)
    srcs: dict[str, replay.Source] = {}
    for r in rows:
        key = f"{r['a']}:{r['b']}"
        if key not in cached:
            if r["repo"] not in srcs:
                srcs[r["repo"]] = replay.Source(r["repo"], dirs[r["repo"]],
                                                os.path.join(replay.OUT, "scratch-study"))
            cached[key] = step_features(srcs[r["repo"]], r["a"], r["b"])
    if args.features:
        with open(args.features, "w") as f:
            json.dump(cached, f)
    if args.augment:
        with open(args.augment, "w") as f:
            for r in rows:
                if r["repo"] not in srcs:
                    srcs[r["repo"]] = replay.Source(r["repo"], dirs[r["repo"]],
                                                    os.path.join(replay.OUT, "scratch-study"))
                got = channel_kinds(srcs[r["repo"]], r["a"], r["b"])
                kinds = {**r["kinds"], **({"approach": got} if got else {})}
                f.write(json.dumps({**r, "kinds": kinds}) + "\n")
    by_pair: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_pair[r["id"]].append(r)
    for ss in by_pair.values():
        ss.sort(key=lambda r: r["step"])
        prev: list[dict[str, Any]] = []
        for r in ss:
            feats = cached[f"{r['a']}:{r['b']}"]
            r["classes"] = classes(feats, prev)
            prev = feats
    report = {"fit": study([r for r in rows if r["repo"] in replay.FIT], True),
              "held_out": study([r for r in rows if r["repo"] not in replay.FIT], True)}
    for part, keep in (("fit", True), ("held_out", False)):
        sub = [r for r in rows if (r["repo"] in replay.FIT) == keep]
        for r in sub:
            if r["repo"] not in srcs:
                srcs[r["repo"]] = replay.Source(r["repo"], dirs[r["repo"]],
                                                os.path.join(replay.OUT, "scratch-study"))
        report[part]["_"]["ceiling"] = ceiling(sub, srcs)
        report[part]["_"]["lookahead"] = lookahead(sub, srcs)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        for part, res in report.items():
            print(f"== {part}: {res['_']}")
            print(f"{'class':20}{'rate':>8}{'n':>8}{'early':>8}{'+scan':>8}{'never':>8}")
            for c, s in res.items():
                if c != "_":
                    print(f"{c:20}{s['rate']!s:>8}{s['n']!s:>8}{s['early']!s:>8}"
                          f"{s['early_or_scan']!s:>8}{s['never']!s:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
