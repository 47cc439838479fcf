"""Fit each channel's evidence classes to observed collision rates; draw a reliability diagram.

Observations (one per scanned pair or step, each with its evidence classes per channel:
``Finding.kind``, or ``bin:<lo>`` of the raw value where a channel sets no kind yet):

* commit-by-commit replays (``steps.py --out``): label = the pair conflicts at this or a
  later step, which is what approach evidence (touch-merged, near, same directory...)
  predicts for live work; the steps of one pair are not independent, so together they weigh
  as one observation. These fit every class but the symbol channel's;
* real merges replayed as live worktrees (``replay.py --out``): label = git's merge of the
  two parents conflicts. A final merge has no "later", so these only fit the classes seen
  where git's merge decided (the conflict class, and the stand-ins ``touch``,
  ``rename-rename``... that speak for it where it cannot run), and everything when no step
  replays are given;
* executable labels for the symbol channel: the generated corpus of ``semantic.py`` (merged
  and run) and, when present, ``benchmarks/out/nearmiss.jsonl`` (lines with ``kinds``
  ``{channel: [kind]}`` or ``findings`` ``[{channel, kind}]``, and ``label``
  collision|clean|textual or ``collision`` true|false).

Model: the scan's noisy-OR, R = 1 - prod_c (1 - p[c, k_c]) with k_c the channel's strongest
class present, fitted by EM (each collision is credited to the classes present in
proportion to their probability, so evidence that always comes with stronger evidence is not
paid twice). Git's merge is authoritative: the conflict class keeps its observed rate, and a
pair where it is present teaches the softer classes nothing (they keep their marginal rate
where they are never seen without it: the stand-ins for when git's merge cannot run).
Rates are Beta-smoothed toward the rate at which pairs without a conflict collide, then made
monotone along natural orders (tree b4 >= ... >= b0, b4 nearest; import-1 >= import-2 ...;
touch >= touch-merged >= near >= near-far >= same-file; fn-near >= fn-far; raw-value
bins increasing) by pooling
adjacent violators. Symbol classes are fitted on executable labels when any exist, real
history otherwise. Only repositories in ``replay.FIT`` are fitted; the others are held out
for the reliability diagram, which plots the risk proximity itself computed (``risk`` in the
replay/step lines) against the observed rate, per band.

    python benchmarks/calibrate.py --replay benchmarks/out/replay.jsonl \
        --steps benchmarks/out/steps.jsonl --semantic 4 --write --json
    python benchmarks/calibrate.py --replay R --steps S --plot benchmarks/reliability.svg
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

TABLE_PATH = os.path.join(HERE, "..", "proximity", "calibration_table.py")
EXECUTABLE_CHANNELS = ("symbol",)
# git's own merge is the definition of a textual collision: its classes keep their observed
# rate and take all the credit for the collisions they are present at
AUTHORITATIVE = ("conflict",)
BANDS = (0.0, 0.05, 0.15, 0.35, 0.5, 0.7, 0.9, 1.0000001)
Key = tuple[str, str]


@dataclass(frozen=True)
class Obs:
    kinds: dict[str, tuple[str, ...]]  # channel -> evidence classes present
    label: bool
    source: str  # replay | steps | semantic | nearmiss
    repo: str = ""
    risk: float | None = None  # the risk proximity computed, when recorded
    weight: float = 1.0  # the steps of one pair share one unit: they are not independent


# -- observations ---------------------------------------------------------------------------

def _read(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def from_replay(rows: Iterable[dict[str, Any]]) -> list[Obs]:
    return [Obs({c: tuple(k) for c, k in r["kinds"].items()}, bool(r["conflict"]), "replay",
                r["repo"], r.get("risk")) for r in rows if "error" not in r]


def from_steps(rows: Iterable[dict[str, Any]]) -> list[Obs]:
    rows = list(rows)
    last: dict[str, int] = {}
    for r in rows:
        last[r["id"]] = max(last.get(r["id"], -1), r["step"])
    return [Obs({c: tuple(k) for c, k in r["kinds"].items()}, bool(r["conflict_later"]),
                "steps", r["repo"], r.get("risk"), 1.0 / (last[r["id"]] + 1)) for r in rows]


def _label(r: dict[str, Any]) -> bool | None:
    if isinstance(r.get("collision"), bool):
        return bool(r["collision"])
    lab = r.get("label")
    if lab in ("collision", "textual", "breaking", "incompatible"):
        return True
    if lab in ("clean", "compatible"):
        return False
    return None


def from_labelled(rows: Iterable[dict[str, Any]], source: str) -> list[Obs]:
    out = []
    for r in rows:
        lab = _label(r)
        if lab is None:
            continue
        kinds: dict[str, set[str]] = defaultdict(set)
        for c, ks in (r.get("kinds") or {}).items():
            kinds[c].update(ks)
        for f in r.get("findings") or []:
            if f.get("score", 1) > 0 and f.get("channel") not in (None, "error"):
                kinds[f["channel"]].add(f.get("kind") or value_bin(float(f.get("score", 0))))
        out.append(Obs({c: tuple(sorted(k)) for c, k in kinds.items()}, lab, source,
                       str(r.get("repo", source))))
    return out


def value_bin(v: float) -> str:
    import replay

    return replay.value_bin(v)


def semantic_obs(variants: int) -> list[Obs]:
    """Run the generated corpus (labels by merging and running) and keep the scan's kinds."""
    import semantic as sem

    from proximity.snapshot import workspace
    from proximity.tcas import pipeline
    from proximity.views import report

    last: dict[str, Any] = {}

    def scan(main: str) -> dict[str, Any]:
        ctx = workspace.open_context(main)
        try:
            last["scan"] = report.scan_json(pipeline.run_scan(ctx))
            return last["scan"]
        finally:
            ctx.close()

    rows = []
    langs = ["python"] + (["javascript"] if shutil.which("node") else [])
    for lang in langs:
        for case in sem.cases(lang, variants):
            sem.evaluate(case, scan)
            pair = next(p for p in last["scan"]["pairs"] if {p["a"], p["b"]} == {"wa", "wb"})
            rows.append({"label": case.label, "findings": pair["findings"],
                         "repo": f"semantic-{lang}", "kind": case.kind})
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    with open(os.path.join(HERE, "out", "semantic-kinds.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)  # reusable with --labelled
    return from_labelled(rows, "semantic")


# -- fitting ----------------------------------------------------------------------------------

def _order(kind: str) -> tuple[str, float] | None:
    """(chain, position): classes of one chain must not increase with position."""
    fixed = {"touch": 0, "touch-merged": 1, "near": 2, "near-far": 3, "same-file": 4}
    if kind in fixed:
        return "overlap-approach", fixed[kind]
    if kind in ("fn-near", "fn-far"):
        return "approach-fn", {"fn-near": 0, "fn-far": 1}[kind]
    m = re.fullmatch(r"b(\d+)", kind)
    if m:
        return "tree", -float(m.group(1))  # b4 = nearest in the tree
    m = re.fullmatch(r"import-(\d+)", kind)
    if m:
        return "import", float(m.group(1))
    m = re.fullmatch(r"bin:([0-9.]+)", kind)
    if m:
        return "bin", -float(m.group(1))  # higher raw value -> higher probability
    return None


def pav(values: list[float], weights: list[float]) -> list[float]:
    """Non-increasing least-squares fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [value, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks.pop()
            wt = w1 + w2
            blocks.append([(v1 * w1 + v2 * w2) / wt if wt else (v1 + v2) / 2, wt, n1 + n2])
    out: list[float] = []
    for v, _, n in blocks:
        out.extend([v] * int(n))
    return out


def monotone(p: dict[Key, float], n: dict[Key, float]) -> dict[Key, float]:
    chains: dict[tuple[str, str], list[tuple[float, Key]]] = defaultdict(list)
    for key in p:
        o = _order(key[1])
        if o is not None:
            chains[(key[0], o[0])].append((o[1], key))
    out = dict(p)
    for members in chains.values():
        members.sort()
        keys = [k for _, k in members]
        fitted = pav([p[k] for k in keys], [n.get(k, 0.0) + 1.0 for k in keys])
        out.update(zip(keys, fitted, strict=True))
    return out


def _active(o: Obs, p: dict[Key, float]) -> list[Key]:
    """Per channel, the strongest class present (what the channel's value becomes)."""
    out = []
    for c, ks in o.kinds.items():
        known = [(c, k) for k in ks if (c, k) in p]
        if known:
            out.append(max(known, key=lambda key: p[key]))
    return out


def fit(obs: Sequence[Obs], strength: float = 4.0, rounds: int = 60
        ) -> tuple[dict[Key, float], dict[Key, dict[str, float]]]:
    """EM for the noisy-OR over channels; returns probabilities and per-class counts."""
    executable = {(c, k) for o in obs if o.source in ("semantic", "nearmiss")
                  for c, ks in o.kinds.items() if c in EXECUTABLE_CHANNELS for k in ks}

    has_steps = any(o.source == "steps" for o in obs)

    def counts_here(o: Obs, key: Key) -> bool:
        """Which observations may move a class: executable labels for symbol classes that
        have them; for the rest, the step replays (live pairs with a future: "this or a
        later step"), or the final merges where there are no step replays."""
        if key in executable:
            return o.source in ("semantic", "nearmiss")
        return o.source == "steps" or (o.source == "replay" and not has_steps)

    def counts_marginal(o: Obs, key: Key) -> bool:
        """The first estimate, and the final one of classes the fit cannot move (seen only
        where git's merge decided: the stand-ins for when it cannot run): every source."""
        return counts_here(o, key) or (o.source == "replay" and key not in executable)

    real = [o for o in obs if o.source == "steps"] or [
        o for o in obs if o.source == "replay"] or list(obs)
    # the prior: how often a pair with no exact-conflict evidence collides (now or later)
    quiet = [o for o in real if not any(c in AUTHORITATIVE for c in o.kinds)] or real
    base = sum(o.weight * o.label for o in quiet) / max(1e-9, sum(o.weight for o in quiet))
    exe = [o for o in obs if o.source in ("semantic", "nearmiss")]
    exe_base = sum(o.label for o in exe) / len(exe) if exe else base

    def prior(key: Key) -> tuple[float, float]:
        """Beta prior centred on the base rate of the population the class is fitted on."""
        m = exe_base if key in executable else base
        return strength * m, strength * (1 - m)

    stats: dict[Key, dict[str, float]] = defaultdict(lambda: {"n": 0.0, "k": 0.0})
    first: dict[Key, dict[str, float]] = defaultdict(lambda: {"n": 0.0, "k": 0.0})
    for o in obs:
        for c, ks in o.kinds.items():
            for k in ks:
                for table, counts in ((stats, counts_here), (first, counts_marginal)):
                    if counts(o, (c, k)):
                        table[(c, k)]["n"] += o.weight
                        table[(c, k)]["k"] += o.weight * o.label
    # classes the fit cannot move report the counts of their first (marginal) estimate
    for key, s in first.items():
        if stats[key]["n"] == 0:
            stats[key] = dict(s)
    # git's merge defines a textual collision: its class is its observed rate, unsmoothed
    p = {key: s["k"] / s["n"] if key[0] in AUTHORITATIVE and s["n"] else
         (s["k"] + prior(key)[0]) / (s["n"] + sum(prior(key))) for key, s in first.items()}
    for _ in range(rounds):
        num: dict[Key, float] = defaultdict(float)
        den: dict[Key, float] = defaultdict(float)
        for o in obs:
            act = _active(o, p)
            if not act:
                continue
            keep = math.prod(1 - p[k] for k in act)
            total = max(1e-9, 1 - keep)
            if any(c in AUTHORITATIVE for c, _ in act):
                continue  # git's merge decided this pair: the other evidence tells nothing
            for key in act:
                if not counts_here(o, key) or key[0] in AUTHORITATIVE:
                    continue
                den[key] += o.weight
                if o.label:
                    num[key] += o.weight * min(1.0, p[key] / total)
        new = {key: (num[key] + prior(key)[0]) / (den[key] + sum(prior(key)))
               if den[key] and key[0] not in AUTHORITATIVE else p[key] for key in p}
        new = monotone(new, {k: v["n"] for k, v in stats.items()})
        if max(abs(new[k] - p[k]) for k in p) < 1e-6:
            p = new
            break
        p = new
    return p, {k: dict(v) for k, v in stats.items()}


def predict(o: Obs, p: dict[Key, float]) -> float:
    return 1 - math.prod(1 - p[k] for k in _active(o, p))


# -- reliability --------------------------------------------------------------------------------

def reliability(pairs: Iterable[tuple[float, bool]]) -> list[dict[str, Any]]:
    rows = []
    data = list(pairs)
    for lo, hi in itertools.pairwise(BANDS):
        xs = [(r, y) for r, y in data if lo <= r < hi]
        if xs:
            rows.append({"band": [lo, min(hi, 1.0)], "n": len(xs),
                         "mean_risk": round(sum(r for r, _ in xs) / len(xs), 4),
                         "observed": round(sum(y for _, y in xs) / len(xs), 4),
                         "collisions": sum(y for _, y in xs)})
    return rows


def svg(panels: list[tuple[str, list[dict[str, Any]]]]) -> str:
    w, h, pad = 420, 400, 56
    body = []
    for i, (title, rows) in enumerate(panels):
        x0 = i * (w + 20)

        def px(v: float, x0: int = x0) -> float:
            return x0 + pad + v * (w - 2 * pad)

        def py(v: float) -> float:
            return h - pad - v * (h - 2 * pad)

        body += [f'<text x="{x0 + w / 2}" y="24" text-anchor="middle" font-size="14">'
                 f'{title}</text>',
                 f'<rect x="{px(0)}" y="{py(1)}" width="{px(1) - px(0)}" '
                 f'height="{py(0) - py(1)}" fill="none" stroke="#333"/>',
                 f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}" stroke="#aaa" '
                 'stroke-dasharray="4,4"/>']
        for t in (0.0, 0.25, 0.5, 0.75, 1.0):
            body += [f'<text x="{px(t)}" y="{py(0) + 16}" text-anchor="middle" '
                     f'font-size="11">{t:g}</text>',
                     f'<text x="{px(0) - 6}" y="{py(t) + 4}" text-anchor="end" '
                     f'font-size="11">{t:g}</text>']
        body.append(f'<text x="{x0 + w / 2}" y="{h - 14}" text-anchor="middle" font-size="12">'
                    'predicted risk R (mean per band)</text>')
        body.append(f'<text x="{x0 + 14}" y="{h / 2}" font-size="12" transform="rotate(-90 '
                    f'{x0 + 14} {h / 2})" text-anchor="middle">observed collision rate</text>')
        for tau, name in ((0.35, "TA"), (0.70, "RA")):
            body.append(f'<line x1="{px(tau)}" y1="{py(0)}" x2="{px(tau)}" y2="{py(1)}" '
                        f'stroke="#f0c0c0"/><text x="{px(tau) + 3}" y="{py(1) + 12}" '
                        f'font-size="10" fill="#c00">{name}</text>')
        pts = []
        for r in rows:
            x, y = px(r["mean_risk"]), py(r["observed"])
            rad = 3 + 2.5 * math.log10(1 + r["n"])
            pts.append(f"{x},{y}")
            body.append(f'<circle cx="{x}" cy="{y}" r="{rad:.1f}" fill="#1f77b4" '
                        'fill-opacity="0.6"/>')
            body.append(f'<text x="{x + rad + 2}" y="{y - 3}" font-size="10">n={r["n"]}'
                        '</text>')
        if pts:
            body.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#1f77b4"/>')
    total_w = len(panels) * (w + 20)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{h}" '
            f'font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>'
            f'{"".join(body)}</svg>')


def write_plot(panels: list[tuple[str, list[dict[str, Any]]]], path: str) -> list[str]:
    text = svg(panels)
    svg_path = path.rsplit(".", 1)[0] + ".svg"
    with open(svg_path, "w") as f:
        f.write(text)
    written = [svg_path]
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe:
        png = svg_path[:-4] + ".png"
        with tempfile.TemporaryDirectory() as prof:
            proc = subprocess.run(
                [exe, "--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--hide-scrollbars",
                 f"--user-data-dir={prof}", f"--window-size={len(panels) * 440},400",
                 f"--screenshot={os.path.abspath(png)}", "file://" + os.path.abspath(svg_path)],
                capture_output=True)
        if proc.returncode == 0:
            written.append(png)
    return written


# -- the table ----------------------------------------------------------------------------------

MIN_SUPPORT = 5.0  # weighted observations below which a class keeps its channel's prior


def table_source(p: dict[Key, float], stats: dict[Key, dict[str, float]]) -> str:
    by_channel: dict[str, dict[str, float]] = defaultdict(dict)
    for (c, k), v in sorted(p.items()):
        if k.startswith("bin:") or stats.get((c, k), {"n": 0.0})["n"] < MIN_SUPPORT:
            continue  # bins are reported, never written (channels look classes up); too
            # little support: the channel's own prior stands
        by_channel[c][k] = round(v, 4)
    lines = ['"""Generated by benchmarks/calibrate.py: channel -> evidence class -> collision '
             'probability."""', "", "from __future__ import annotations", "",
             "# counts: observations the class was fitted on, weighted (the steps of one pair",
             "# weigh one); classes with less than MIN_SUPPORT keep their channel's prior",
             "TABLE: dict[str, dict[str, float]] = {"]
    for c in sorted(by_channel):
        lines.append(f"    {json.dumps(c)}: {{")
        for k, v in sorted(by_channel[c].items(), key=lambda kv: -kv[1]):
            s = stats.get((c, k), {"n": 0, "k": 0})
            lines.append(f"        {json.dumps(k)}: {v},  # collided {s['k']:.1f} of {s['n']:.1f}")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _blocks(text: str) -> dict[str, list[str]]:
    """channel -> its lines in a generated table (``    "name": {`` ... ``    },``)."""
    out: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        m = re.fullmatch(r'    "([^"]+)": \{', line)
        if m:
            name = m.group(1)
            out[name] = []
        if name:
            out[name].append(line)
            if line == "    },":
                name = ""
    return out


def splice(old: str, new: str, channels: Sequence[str]) -> str:
    """The table ``old`` with only ``channels`` taken from ``new`` (the rest, comments
    included, as it was)."""
    blocks = _blocks(old)
    fresh = _blocks(new)
    for c in channels:
        blocks.pop(c, None)
        if c in fresh:
            blocks[c] = fresh[c]
    head = old[:old.index("TABLE: dict[str, dict[str, float]] = {")].splitlines()
    body = [line for c in sorted(blocks) for line in blocks[c]]
    return "\n".join([*head, "TABLE: dict[str, dict[str, float]] = {", *body, "}"]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    import replay

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replay", action="append", default=[], help="replay.py --out lines")
    ap.add_argument("--steps", action="append", default=[], help="steps.py --out lines")
    ap.add_argument("--semantic", type=int, default=0, help="semantic corpus variants (0: off)")
    ap.add_argument("--nearmiss", default=os.path.join(HERE, "out", "nearmiss.jsonl"))
    ap.add_argument("--labelled", action="append", default=[],
                    help="executable-labelled lines (e.g. out/semantic-kinds.jsonl of a "
                         "previous --semantic run)")
    ap.add_argument("--strength", type=float, default=4.0, help="Beta prior strength")
    ap.add_argument("--write", action="store_true", help="regenerate calibration_table.py")
    ap.add_argument("--only", action="append", default=[], metavar="CHANNEL",
                    help="with --write: rewrite only these channels' classes and keep the rest "
                         "of the table (a new channel fitted on new replays, without refitting "
                         "classes whose data did not change)")
    ap.add_argument("--plot", help="reliability diagram path (.svg; a .png beside it)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    obs: list[Obs] = []
    for path in args.replay:
        obs += from_replay(_read(path))
    for path in args.steps:
        obs += from_steps(_read(path))
    fit_obs = [o for o in obs if o.repo in replay.FIT]
    held = [o for o in obs if o.repo not in replay.FIT]
    if args.semantic:
        fit_obs += semantic_obs(args.semantic)
    for path in args.labelled:
        fit_obs += from_labelled(_read(path), "semantic")
    if args.nearmiss and os.path.exists(args.nearmiss):
        fit_obs += from_labelled(_read(args.nearmiss), "nearmiss")
    p, stats = fit(fit_obs, args.strength)
    out: dict[str, Any] = {
        "fit_repos": list(replay.FIT),
        "held_out_repos": sorted({o.repo for o in held}),
        "observations": {"fit": len(fit_obs), "held_out": len(held)},
        "sources": {s: sum(o.source == s for o in fit_obs)
                    for s in sorted({o.source for o in fit_obs})},
        "table": {f"{c}/{k}": {"p": round(v, 4), "n": round(stats[(c, k)]["n"], 1),
                               "collided": round(stats[(c, k)]["k"], 1),
                               "raw_rate": round(stats[(c, k)]["k"] / stats[(c, k)]["n"], 4)
                               if stats[(c, k)]["n"] else None}
                  for (c, k), v in sorted(p.items())},
        "unconverted_channels": sorted({c for (c, k) in p if k.startswith("bin:")}),
        "reliability_model_held_out": reliability((predict(o, p), o.label) for o in held),
        "reliability_scan_held_out": reliability((o.risk, o.label) for o in held
                                                 if o.risk is not None),
        "reliability_scan_fit": reliability((o.risk, o.label) for o in fit_obs
                                            if o.risk is not None),
    }
    if args.write:
        text = table_source(p, stats)
        if args.only:
            with open(TABLE_PATH) as f:
                text = splice(f.read(), text, args.only)
        with open(TABLE_PATH, "w") as f:
            f.write(text)
        out["written"] = os.path.relpath(TABLE_PATH)
    if args.plot:
        out["plot"] = write_plot(
            [("held-out: risk proximity computed", out["reliability_scan_held_out"]),
             ("held-out: fitted table (noisy-OR)", out["reliability_model_held_out"])],
            args.plot)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        print(f"fit on {out['fit_repos']} ({out['observations']['fit']} observations: "
              f"{out['sources']}); held out {out['held_out_repos']}")
        print(f"{'channel/kind':34}{'p':>8}{'n':>7}{'coll':>6}{'raw':>8}")
        for name, r in out["table"].items():
            print(f"{name:34}{r['p']:>8}{r['n']:>7}{r['collided']:>6}{r['raw_rate']!s:>8}")
        if out["unconverted_channels"]:
            print("binned by raw value (no Finding.kind yet):", out["unconverted_channels"])
        for title in ("reliability_scan_held_out", "reliability_model_held_out"):
            print(title)
            for r in out[title]:
                print(f"  R in [{r['band'][0]:.2f},{r['band'][1]:.2f}) n={r['n']:5} "
                      f"mean R={r['mean_risk']:.3f} observed={r['observed']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
