"""Accuracy of the risk computed from changed files and line ranges alone.

Replays labelled real merges (``../shared/eval/*.jsonl`` or any file of that format) through
proximity's own overlap and tree channels and noisy-OR, *without* the exact conflict channel,
and prints precision / recall / flag rate of the Traffic and Resolution advisories for
predicting ``conflict``, next to the baselines recomputed on the same cases.

    python benchmarks/accuracy.py                       # the shared cases + semantic corpus
    python benchmarks/accuracy.py more.jsonl --json     # any other case file
    python benchmarks/accuracy.py --semantic 0          # skip the executable corpus

The second part runs the generated corpus of executable semantic collisions
(``benchmarks/semantic.py``): labels come from merging with git and running the merged
program; proximity scans the same changes as live worktrees with every channel.
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
sys.path.insert(0, os.path.dirname(__file__))

from proximity import config, model
from proximity.analysis import intervals
from proximity.channels import overlap, tree
from proximity.tcas import risk

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
        "overlap": overlap.value(a, b, cfg).value,  # no exact channel: the stand-in classes
        "tree": tree.value(a.touched(), b.touched()).value,
    }
    return risk.combine(channels, cfg.weights, cfg.tau_ra)


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


def semantic(variants: int, langs: Sequence[str]) -> dict[str, Any]:
    import shutil
    from collections import Counter, defaultdict

    import semantic as sem

    out: dict[str, Any] = {"by_kind": defaultdict(Counter), "labels": Counter(), "misses": [],
                           "false_ra": []}
    for lang in langs:
        if lang == "javascript" and shutil.which("node") is None:
            out["skipped"] = "javascript (node not installed)"
            continue
        for case in sem.cases(lang, variants):
            sem.evaluate(case, sem.scan)
            out["labels"][case.label] += 1
            if case.label not in ("collision", "clean"):
                continue
            adv = case.result["advisory"]
            row = out["by_kind"][f"{lang}: {case.kind}"]
            row[case.label] += 1
            row[f"{case.label}:{adv}"] += 1
            out.setdefault("raw", []).append((case.label, case.result["channels"]))
            if case.label == "collision" and adv == "clear":
                out["misses"].append(case.id)
            if case.label == "clean" and adv == "resolution":
                out["false_ra"].append(case.id)
    coll = [(k, v) for k, v in out["by_kind"].items()]
    n_coll = sum(v["collision"] for _, v in coll)
    n_clean = sum(v["clean"] for _, v in coll)
    caught = sum(v["collision:traffic"] + v["collision:resolution"] for _, v in coll)
    ra = sum(v["collision:resolution"] for _, v in coll)
    false_ra = sum(v["clean:resolution"] for _, v in coll)
    false_ta = sum(v["clean:traffic"] for _, v in coll)
    out.update({
        "collisions": n_coll, "clean": n_clean,
        "ta_or_ra_recall": caught / n_coll if n_coll else 0.0,
        "ra_recall": ra / n_coll if n_coll else 0.0,
        "false_ra_rate": false_ra / n_clean if n_clean else 0.0,
        "false_ta_or_ra_rate": (false_ra + false_ta) / n_clean if n_clean else 0.0,
    })
    out["by_kind"] = {k: dict(v) for k, v in out["by_kind"].items()}
    out["labels"] = dict(out["labels"])
    return out


def calibrate(cases: list[dict[str, Any]], sem: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Re-score recorded channel values under other weights and thresholds."""
    base = config.Config()
    rows = []
    truth = [bool(c["conflict"]) for c in cases]
    public = [(overlap.value(side(c["a"]), side(c["b"]), base).value,
               tree.value(side(c["a"]).touched(), side(c["b"]).touched()).value) for c in cases]
    for w_sym in (0.7, 0.8, 0.9, 1.0):
        for w_dep in (0.4, 0.5, 0.6, 0.7):
            for tau_ra in (0.6, 0.7, 0.8):
                w = {**base.weights, "symbol": w_sym, "dependency": w_dep}
                pub = metrics([risk.noisy_or({"overlap": o, "tree": t}, w) >= tau_ra
                               for o, t in public], truth)
                row = {"symbol": w_sym, "dependency": w_dep, "tau_ra": tau_ra,
                       "public_ra_recall": pub["recall"], "public_ra_flag": pub["flag_rate"]}
                if sem and sem.get("raw"):
                    coll = [ch for lab, ch in sem["raw"] if lab == "collision"]
                    clean = [ch for lab, ch in sem["raw"] if lab == "clean"]
                    row["sem_ra_recall"] = sum(risk.noisy_or(ch, w) >= tau_ra
                                               for ch in coll) / max(1, len(coll))
                    row["sem_ta_recall"] = sum(risk.noisy_or(ch, w) >= base.tau_ta
                                               for ch in coll) / max(1, len(coll))
                    row["sem_false_ra"] = sum(risk.noisy_or(ch, w) >= tau_ra
                                              for ch in clean) / max(1, len(clean))
                rows.append(row)
    return rows


def print_calibration(rows: list[dict[str, Any]]) -> None:
    print("\ncalibration (public: overlap+tree only; semantic: all channels, recorded values)")
    keys = [k for k in rows[0] if k not in ("symbol", "dependency", "tau_ra")]
    print(f"{'w_symbol':>8} {'w_dep':>6} {'tau_RA':>6} " + " ".join(f"{k:>16}" for k in keys))
    for r in rows:
        mark = " <- default" if (r["symbol"], r["dependency"], r["tau_ra"]) == (0.9, 0.5, 0.7) \
            else ""
        print(f"{r['symbol']:8} {r['dependency']:6} {r['tau_ra']:6} "
              + " ".join(f"{r[k]:16.3f}" for k in keys) + mark)


def print_semantic(res: dict[str, Any]) -> None:
    print(f"\nexecutable semantic corpus: {res['collisions']} colliding pairs, "
          f"{res['clean']} clean pairs (labels: {res['labels']})")
    if res.get("skipped"):
        print(f"  skipped: {res['skipped']}")
    print(f"{'template':52} {'n':>3} {'RA':>4} {'TA':>4} {'clear':>5}")
    for kind, c in sorted(res["by_kind"].items()):
        lab = "collision" if c.get("collision") else "clean"
        print(f"{kind:52} {c.get(lab, 0):3} {c.get(lab + ':resolution', 0):4} "
              f"{c.get(lab + ':traffic', 0):4} {c.get(lab + ':clear', 0):5}")
    print(f"TA-or-RA recall on collisions: {res['ta_or_ra_recall']:.3f}   "
          f"RA recall: {res['ra_recall']:.3f}")
    print(f"false RA rate on clean pairs: {res['false_ra_rate']:.3f}   "
          f"(any advisory: {res['false_ta_or_ra_rate']:.3f})")
    if res["misses"]:
        print(f"missed collisions: {', '.join(res['misses'])}")
    if res["false_ra"]:
        print(f"false RAs: {', '.join(res['false_ra'])}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=DEFAULT)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--semantic", type=int, default=10, metavar="VARIANTS",
                    help="program variants per language for the executable corpus (0: skip)")
    ap.add_argument("--langs", nargs="*", default=["python", "javascript"])
    ap.add_argument("--calibrate", action="store_true", help="print the weight/threshold sweep")
    args = ap.parse_args(argv)
    if not args.files:
        print("no case files given and ../shared/eval not found", file=sys.stderr)
        return 2
    cases = load(args.files)
    res = evaluate(cases, config.Config())
    res["files"] = [os.path.basename(f) for f in args.files]
    if args.semantic:
        res["semantic"] = semantic(args.semantic, args.langs)
    if args.calibrate:
        res["calibration"] = calibrate(cases, res.get("semantic"))
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
    if "semantic" in res:
        print_semantic(res["semantic"])
    if "calibration" in res:
        print_calibration(res["calibration"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
