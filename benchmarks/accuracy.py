"""Accuracy of the risk computed from changed files and line ranges alone.

Replays labelled real merges (``../shared/eval/*.jsonl`` or any file of that format) through
proximity's own overlap and tree channels and noisy-OR, *without* the exact conflict channel,
and prints precision / recall / flag rate of the Traffic and Resolution advisories for
predicting ``conflict``, next to the baselines recomputed on the same cases.

    python benchmarks/accuracy.py                       # the shared cases
    python benchmarks/accuracy.py more.jsonl --json     # any other case file
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from proximity import config, intervals, model, overlap, risk, treeprox

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = sorted(glob.glob(os.path.join(HERE, "..", "..", "shared", "eval", "*.jsonl")))


def side(case_side: dict[str, Any]) -> model.WorkingSet:
    status = case_side.get("status") or {}
    renames = case_side.get("renames") or {}
    binary = set(case_side.get("binary") or [])
    files = {}
    for path, ranges in case_side["files"].items():
        st = status.get(path, "M")
        kind = model.BINARY if path in binary else model.TEXT
        fc = model.FileChange(
            path=path, status=st, kind=kind,
            ranges=None if kind == model.BINARY else tuple(tuple(r) for r in ranges),
            new_path=renames.get(path, ""),
        )
        files[path] = fc
    return model.WorkingSet(files)


def score(case: dict[str, Any], cfg: config.Config) -> float:
    a, b = side(case["a"]), side(case["b"])
    channels: dict[str, float | None] = {
        "overlap": overlap.channel(a, b, cfg)[0],
        "tree": treeprox.channel(a.touched(), b.touched()),
    }
    return risk.noisy_or(channels, cfg.weights)


def _common(case: dict[str, Any]) -> list[str]:
    return sorted(set(case["a"]["files"]) & set(case["b"]["files"]))


def rule_common_file(case: dict[str, Any]) -> bool:
    return bool(_common(case))


def rule_intersect(case: dict[str, Any]) -> bool:
    for f in _common(case):
        for s1, e1 in case["a"]["files"][f]:
            for s2, e2 in case["b"]["files"][f]:
                if max(s1, s2) <= min(e1, e2) or (s1 == s2 and (e1 < s1 or e2 < s2)):
                    return True
    return False


def rule_touch(case: dict[str, Any]) -> bool:
    return any(intervals.touching(case["a"]["files"][f], case["b"]["files"][f])
               for f in _common(case))


def metrics(pred: Sequence[bool], truth: Sequence[bool]) -> dict[str, float]:
    tp = sum(p and t for p, t in zip(pred, truth, strict=True))
    fp = sum(p and not t for p, t in zip(pred, truth, strict=True))
    fn = sum(t and not p for p, t in zip(pred, truth, strict=True))
    clean = sum(not t for t in truth)
    return {
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "flag_rate": (tp + fp) / len(truth) if truth else 0.0,
        "false_on_clean": fp / clean if clean else 0.0,
        "tp": tp, "fp": fp, "fn": fn, "n": len(truth),
    }


def evaluate(cases: list[dict[str, Any]], cfg: config.Config) -> dict[str, Any]:
    truth = [bool(c["conflict"]) for c in cases]
    risks = [score(c, cfg) for c in cases]
    rules: dict[str, Callable[[dict[str, Any]], bool]] = {
        "baseline: common file": rule_common_file,
        "baseline: ranges intersect": rule_intersect,
        "baseline: ranges intersect or touch": rule_touch,
    }
    out: dict[str, Any] = {name: metrics([r(c) for c in cases], truth)
                           for name, r in rules.items()}
    out["proximity TA-or-RA (R >= tau_TA)"] = metrics([r >= cfg.tau_ta for r in risks], truth)
    out["proximity RA (R >= tau_RA)"] = metrics([r >= cfg.tau_ra for r in risks], truth)
    missed = [c["id"] for c, r in zip(cases, risks, strict=True)
              if c["conflict"] and r < cfg.tau_ra]
    return {"rows": out, "missed_by_ra": missed, "tau_ta": cfg.tau_ta, "tau_ra": cfg.tau_ra}


def load(paths: Sequence[str]) -> list[dict[str, Any]]:
    cases = []
    for p in paths:
        with open(p) as f:
            cases.extend(json.loads(line) for line in f if line.strip())
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=DEFAULT)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.files:
        print("no case files given and ../shared/eval not found", file=sys.stderr)
        return 2
    cases = load(args.files)
    res = evaluate(cases, config.Config())
    res["files"] = [os.path.basename(f) for f in args.files]
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    n_conf = sum(bool(c["conflict"]) for c in cases)
    print(f"{len(cases)} cases ({n_conf} with a conflict) from {', '.join(res['files'])}")
    print(f"{'rule':40} {'precision':>9} {'recall':>7} {'flagged':>8} {'false/clean':>11}")
    for name, m in res["rows"].items():
        print(f"{name:40} {m['precision']:9.3f} {m['recall']:7.3f} {m['flag_rate']:8.1%} "
              f"{m['false_on_clean']:11.1%}")
    print(f"conflicts the RA misses: {', '.join(res['missed_by_ra']) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
