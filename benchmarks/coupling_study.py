"""Which evidence available strictly before the first conflict separates pairs that will conflict?

Reads ``steps.py --out`` lines (commit-by-commit replays with their labels) and, for every
step, what each side changed so far (``git diff --name-only base tip``, base = the two tips'
merge base) and how those files relate in the repository's history strictly before the base
(the last ``--window`` non-merge commits reachable from the base's parents, commits touching
more than ``--max-files`` files skipped). Candidates (as calibrated on real merges):

* ``common``: both sides changed the same file (the baseline);
* ``couple``: logical coupling (Zimmermann et al.): a file x one side changed co-changed
  with a file y the other side changed in >= ``sup`` history commits, and the confidence
  conf(x -> y) = co(x, y) / n(x) >= c; ``reach`` is the same with y not yet changed by x's
  side (x's side is likely to go and touch y);
* ``hot``: a side changed one of the ``k`` most frequently changed files of the window (alone:
  present whatever the other side does), ``hot-reach``: and the other side changed a file x
  with conf(x -> hot file) >= c;
* ``dir``: a directory other than the root holds files of both sides (``dir-d2``: at depth
  >= 2, ``parent``: the files' own directories, ``parent-diff``: ... and not a common file);
* ``files>=N`` / ``each side>=N files`` / ``one side>=N files``: how much the sides changed;
* OR / AND of two candidates and logistic rules (``VARIANTS``: history only, common + sizes,
  all, all + the scan's R), each with its threshold chosen on FIT repositories only.

Also the ceiling of coupling: at the step before the first conflict, had both sides already
changed a file that then conflicts, or one side, and does the other side's work co-change with
it?

Reported per candidate, fit / held out (``replay.FIT``), in ``steps.summary()`` semantics:
``early`` = share of eligible conflicting pairs (first conflict not at step 0) where it is
present strictly before the first conflicting step; ``never`` = share of the steps of
never-conflicting pairs where it is present; ``rate`` = among not-yet-conflicting steps, the
share whose pair conflicts at a later step (steps of a pair weigh one pair).

    python benchmarks/coupling_study.py STEPS.jsonl --git-dir click=DIR ... [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Any

FIT = ("click", "werkzeug", "marshmallow", "express", "gin")  # as benchmarks/replay.py
Row = dict[str, Any]
Feat = dict[str, Any]


def git(gd: str, args: list[str], stdin: str | None = None, ok: tuple[int, ...] = (0,)) -> str:
    p = subprocess.run(["git", "--git-dir", gd, *args], input=stdin, capture_output=True,
                       text=True, check=False)
    return p.stdout if p.returncode in ok else ""


class History:
    """One repository: merge bases, changed files and the co-change history, cached."""

    def __init__(self, gd: str, max_files: int) -> None:
        self.gd, self.max_files = gd, max_files
        self.files: dict[str, tuple[str, ...]] = {}  # commit -> paths (non-merge commits)
        self._mb: dict[tuple[str, str], str] = {}
        self._diff: dict[tuple[str, str], frozenset[str]] = {}
        self._win: dict[tuple[str, int], list[str]] = {}

    def load(self, bases: Iterable[str]) -> None:
        """Every non-merge commit reachable from the bases, with its paths (one git log)."""
        out = git(self.gd, ["log", "--no-merges", "--no-renames", "--name-only",
                            "--format=%x01%H", "--stdin"], "\n".join(sorted(set(bases))) + "\n")
        for block in out.split("\x01")[1:]:
            lines = [ln for ln in block.split("\n") if ln]
            self.files[lines[0]] = tuple(lines[1:])

    def merge_base(self, a: str, b: str) -> str:
        if (a, b) not in self._mb:
            self._mb[(a, b)] = git(self.gd, ["merge-base", a, b]).strip()
        return self._mb[(a, b)]

    def changed(self, base: str, tip: str) -> frozenset[str]:
        if (base, tip) not in self._diff:
            out = git(self.gd, ["diff", "--no-renames", "--name-only", base, tip])
            self._diff[(base, tip)] = frozenset(ln for ln in out.split("\n") if ln)
        return self._diff[(base, tip)]

    def window_commits(self, base: str, window: int) -> list[str]:
        """The last ``window`` non-merge commits strictly before base, small ones only."""
        if (base, window) not in self._win:
            out = git(self.gd, ["rev-list", "--no-merges", f"--max-count={window}",
                                f"{base}^@"])
            cs = [c for c in out.split() if c in self.files]
            self._win[(base, window)] = [c for c in cs
                                         if 0 < len(self.files[c]) <= self.max_files]
        return self._win[(base, window)]


class Coupling:
    """Counts over one window: n(x) for every path, co(x, y) for paths of interest."""

    def __init__(self, hist: History, base: str, window: int, interest: set[str]) -> None:
        self.n: Counter[str] = Counter()
        self.co: Counter[tuple[str, str]] = Counter()
        commits = hist.window_commits(base, window)
        self.size = len(commits)
        for c in commits:
            fs = hist.files[c]
            self.n.update(fs)
            mine = sorted(interest.intersection(fs))
            for x, y in combinations(mine, 2):
                self.co[(x, y)] += 1
        self.rank = {f: i for i, (f, _) in enumerate(self.n.most_common())}

    def sup(self, x: str, y: str) -> int:
        return self.co[(x, y) if x < y else (y, x)]

    def conf(self, x: str, y: str) -> float:
        """conf(x -> y): in the commits that changed x, the share that also changed y."""
        return self.sup(x, y) / self.n[x] if self.n[x] else 0.0


def dirs(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def step_features(cp: Coupling, fa: frozenset[str], fb: frozenset[str]) -> Feat:
    """Plain facts of one step: the best coupling in each sense, hot files, directories."""
    common = fa & fb
    best: dict[str, tuple[float, int, str, str]] = {}

    def keep(key: str, c: float, s: int, x: str, y: str) -> None:
        if (c, s) > best.get(key, (0.0, 0, "", ""))[:2]:
            best[key] = (c, s, x, y)

    # couplings by support threshold: any direction between a file of one side and a different
    # file of the other ("couple"), towards a file the source side has not touched ("reach"),
    # the same without the window's 3 most changed files ("reachnh"), and the lift
    # co(x, y) * N / (n(x) n(y)), which a file changed in every commit cannot inflate
    for src, dst in ((fa, fb), (fb, fa)):
        for x in src:
            if not cp.n[x]:
                continue
            for y in dst:
                if x == y:
                    continue
                s = cp.sup(x, y)
                if s < 2:
                    continue
                c = s / cp.n[x]
                nohot = cp.rank.get(x, 10**9) >= 3 and cp.rank.get(y, 10**9) >= 3
                for ms in (2, 3, 5):
                    if s >= ms:
                        keep(f"couple{ms}", c, s, x, y)
                        if y not in src:
                            keep(f"reach{ms}", c, s, x, y)
                            if nohot:
                                keep(f"reachnh{ms}", c, s, x, y)
                if s >= 3:
                    keep("lift3", s * cp.size / (cp.n[x] * cp.n[y]), s, x, y)
    hot: dict[int, bool] = {}
    hot_reach: dict[int, float] = {}
    for k in (1, 3, 10):
        hs = {f for f in fa | fb if cp.rank.get(f, 10**9) < k}
        hot[k] = bool(hs)
        r = 0.0
        for h in hs:  # the other side, which has not touched h, changed a file coupled to it
            other = fb if h in fa and h not in fb else fa if h in fb and h not in fa else None
            if other is None:
                continue
            for x in other:
                if cp.n[x] and cp.sup(x, h) >= 2:
                    r = max(r, cp.conf(x, h))
        hot_reach[k] = r
    da = {d for f in fa for d in dirs(f)}
    db = {d for f in fb for d in dirs(f)}
    shared = da & db
    pa = {d[-1] for f in fa if (d := dirs(f))}
    pb = {d[-1] for f in fb if (d := dirs(f))}
    pa_only = {d[-1] for f in fa - common if (d := dirs(f))}
    pb_only = {d[-1] for f in fb - common if (d := dirs(f))}
    return {
        "common": bool(common), "ncommon": len(common),
        "best": {k: [round(v[0], 3), v[1], v[2], v[3]] for k, v in best.items()},
        "hot": hot, "hot_reach": hot_reach,
        "depth": max((d.count("/") + 1 for d in shared), default=0),
        "parent": bool(pa & pb), "parent_diff": bool(pa_only & pb_only),
        "nfiles": len(fa | fb), "na": len(fa), "nb": len(fb), "window": cp.size,
    }


Test = Callable[[Feat], bool]


def _conf(f: Feat, key: str) -> float:
    got = f["best"].get(key)
    return float(got[0]) if got else 0.0


def at_least(key: str, c: float) -> Test:
    """The best coupling of kind ``key`` (confidence, or lift for ``lift3``) is >= c."""
    return lambda f: _conf(f, key) >= c


def hot_reach(k: int, c: float) -> Test:
    return lambda f: bool(f["hot_reach"][str(k)] >= c)


def hot_top(k: int) -> Test:
    return lambda f: bool(f["hot"][str(k)])


def either(tx: Test, ty: Test) -> Test:
    return lambda f: tx(f) or ty(f)


def both(tx: Test, ty: Test) -> Test:
    return lambda f: tx(f) and ty(f)


def p_at_least(t: float) -> Test:
    return lambda f: bool(f["p"] >= t)


def candidates() -> dict[str, Test]:
    out: dict[str, Test] = {
        "common": lambda f: f["common"],
        "dir": lambda f: f["depth"] >= 1,
        "dir-d2": lambda f: f["depth"] >= 2,
        "parent": lambda f: f["parent"],
        "parent-diff": lambda f: f["parent_diff"],
        "files>=10": lambda f: f["nfiles"] >= 10,
        "files>=30": lambda f: f["nfiles"] >= 30,
        "each side>=3 files": lambda f: min(f["na"], f["nb"]) >= 3,
        "one side>=20 files": lambda f: max(f["na"], f["nb"]) >= 20,
    }
    for ms in (2, 3, 5):
        for c in (0.05, 0.1, 0.2, 0.3, 0.5):
            out[f"couple s{ms} c{c}"] = at_least(f"couple{ms}", c)
            out[f"reach s{ms} c{c}"] = at_least(f"reach{ms}", c)
            out[f"reach-nohot s{ms} c{c}"] = at_least(f"reachnh{ms}", c)
    for lift in (2, 5, 10, 20):
        out[f"lift s3 >= {lift}"] = at_least("lift3", lift)
    for k in (1, 3, 10):
        out[f"hot top{k}"] = hot_top(k)
        for c in (0.1, 0.3, 0.5):
            out[f"hot-reach top{k} c{c}"] = hot_reach(k, c)
    return out


def pairs_of(rows: Iterable[Row]) -> dict[str, list[Row]]:
    pairs: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        pairs[r["id"]].append(r)
    for ss in pairs.values():
        ss.sort(key=lambda r: r["step"])
    return pairs


def measure(pairs: dict[str, list[Row]], marks: dict[str, list[bool]]) -> dict[str, Any]:
    """early / never / rate of one candidate (marks: per pair, per step, present or not),
    in the semantics of ``steps.summary()`` (early, never) and approach_study (rate)."""
    early = elig = never_n = never_hit = 0
    rk = rn = 0.0
    for pid, ss in pairs.items():
        m = marks[pid]
        first = next((i for i, r in enumerate(ss) if r["conflict_now"]), None)
        w = 1.0 / len(ss)
        for r, hit in zip(ss, m, strict=True):
            if hit and not r["conflict_now"]:
                rn += w
                rk += w * r["conflict_later"]
        if first is None:
            never_n += len(ss)
            never_hit += sum(m)
        elif first > 0:
            elig += 1
            early += any(m[:first])
    return {"early": round(early / elig, 3) if elig else None,
            "never": round(never_hit / never_n, 3) if never_n else None,
            "rate": round(rk / rn, 3) if rn else None, "n": round(rn, 1),
            "eligible": elig, "never_steps": never_n}


VECTOR = ["bias", "common", "log1p ncommon", "couple2", "reach2", "reach3", "reach-nohot2",
          "log1p lift3", "hot top3", "hot-reach top3", "depth/4", "parent-diff", "log1p files",
          "scan R", "size min", "size max"]


# logistic variants: which inputs of VECTOR each uses (ablation: is it coupling or size?)
VARIANTS = {
    "logistic, history + files": list(range(13)),
    "logistic, all + scan R": list(range(16)),
    "logistic, common + sizes only": [0, 1, 2, 12, 14, 15],
    "logistic, history only": [0, 3, 4, 5, 6, 7, 8, 9],
}


def vector(f: Feat, use: list[int]) -> list[float]:
    """Inputs of the logistic rule (each in [0, 1] or a log count), the ``use`` ones."""
    full = [1.0, float(f["common"]), math.log1p(f["ncommon"]), _conf(f, "couple2"),
            _conf(f, "reach2"), _conf(f, "reach3"), _conf(f, "reachnh2"),
            math.log1p(_conf(f, "lift3")), float(f["hot"]["3"]),
            f["hot_reach"]["3"], min(f["depth"], 4) / 4, float(f["parent_diff"]),
            math.log1p(f["nfiles"]), f["risk"], math.log1p(min(f["na"], f["nb"])),
            math.log1p(max(f["na"], f["nb"]))]
    return [full[i] for i in use]


def fit_logistic(xs: list[list[float]], ys: list[float], ws: list[float],
                 l2: float = 1.0, iters: int = 300) -> list[float]:
    """Weighted L2 logistic regression by Newton's method (pure Python, a dozen inputs)."""
    d = len(xs[0])
    beta = [0.0] * d
    for _ in range(iters):
        g = [-l2 * b for b in beta]
        g[0] += l2 * beta[0]
        h = [[0.0] * d for _ in range(d)]
        for i in range(d):
            h[i][i] = l2 if i else 1e-6
        for x, y, w in zip(xs, ys, ws, strict=True):
            p = sigmoid(sum(b * v for b, v in zip(beta, x, strict=True)))
            for i in range(d):
                g[i] += w * (y - p) * x[i]
                for j in range(i, d):
                    h[i][j] += w * p * (1 - p) * x[i] * x[j]
        for i in range(d):
            for j in range(i):
                h[i][j] = h[j][i]
        step = _solve(h, g)
        beta = [b + s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-8:
            break
    return beta


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [[*row, v] for row, v in zip(a, b, strict=True)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-12:
            continue
        for r in range(n):
            if r != c:
                k = m[r][c] / m[c][c]
                m[r] = [u - k * v for u, v in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] if abs(m[i][i]) > 1e-12 else 0.0 for i in range(n)]


def tabulate(parts: dict[str, dict[str, list[Row]]], t: Test) -> dict[str, Any]:
    return {part: measure(ps, {p: [t(r["feat"]) for r in ss] for p, ss in ps.items()})
            for part, ps in parts.items()}


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


def choose(fit: dict[str, list[Row]], tests: dict[str, Test], cap: float) -> tuple[str, float]:
    """The candidate with the highest FIT early among those with FIT never <= cap."""
    best = ("", -1.0)
    for name, t in tests.items():
        got = measure(fit, {p: [t(r["feat"]) for r in ss] for p, ss in fit.items()})
        if got["never"] is not None and got["never"] <= cap and got["early"] > best[1]:
            best = (name, got["early"])
    return best


def diagnose(pairs: dict[str, list[Row]], hists: dict[str, History],
             window: int) -> dict[str, Any]:
    """Eligible conflicting pairs, at the step just before the first conflict: had both sides
    already changed a file that then conflicts; if only one side had, does the other side's
    work so far co-change with it (best conf(x -> file) over the other side's files, support
    >= 2)? This bounds what coupling can name: the file a pair will conflict on."""
    out: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for ss in pairs.values():
        first = next((i for i, r in enumerate(ss) if r["conflict_now"]), None)
        if not first:
            continue
        h = hists[ss[0]["repo"]]
        hit, prev = ss[first], ss[first - 1]
        got = git(h.gd, ["merge-tree", "--write-tree", "--name-only", hit["a"], hit["b"]],
                  ok=(0, 1))
        lines = got.split("\n")[1:]
        paths = set(lines[:lines.index("")] if "" in lines else lines)
        files.update(p.rsplit("/", 1)[-1] for p in paths)
        b = h.merge_base(prev["a"], prev["b"])
        fa, fb = h.changed(b, prev["a"]), h.changed(b, prev["b"])
        cp = Coupling(h, b, window, set(fa | fb | paths))
        best, state = 0.0, "neither side had changed it"
        for p in paths:
            if p in fa and p in fb:
                state = "both sides had changed it"
                break
            other = fb if p in fa else fa if p in fb else None
            if other is None:
                continue
            state = "one side had changed it"
            best = max([best, *(cp.conf(x, p) for x in other if cp.sup(x, p) >= 2)])
        if state == "one side had changed it":
            state += ", other side coupled >= 0.2" if best >= 0.2 else ", other side not"
        out[state] += 1
        out["eligible"] += 1
    return {"states": dict(out), "conflict_file_names": dict(files.most_common(8))}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps")
    ap.add_argument("--git-dir", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--window", type=int, action="append",
                    help="history window in commits (repeatable; default 500 and 1000)")
    ap.add_argument("--max-files", type=int, default=30)
    ap.add_argument("--cap", type=float, default=0.30, help="never-steps cap for rule choice")
    ap.add_argument("--features", help="write the per-step features here (JSON lines)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    windows = args.window or [500, 1000]
    dirs_ = dict(s.split("=", 1) for s in args.git_dir)
    with open(args.steps) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    missing = sorted({r["repo"] for r in rows} - set(dirs_))
    if missing:
        print(f"no --git-dir for {', '.join(missing)}: their steps are left out", file=sys.stderr)
        rows = [r for r in rows if r["repo"] in dirs_]
    pairs = pairs_of(rows)
    by_repo: dict[str, list[str]] = defaultdict(list)
    for pid, ss in pairs.items():
        by_repo[ss[0]["repo"]].append(pid)
    feats: dict[int, dict[tuple[str, str], Feat]] = {w: {} for w in windows}
    hists: dict[str, History] = {}
    for repo, pids in sorted(by_repo.items()):
        h = hists[repo] = History(dirs_[repo], args.max_files)
        steps = [(r, h.merge_base(r["a"], r["b"])) for p in pids for r in pairs[p]]
        h.load(b for _, b in steps if b)
        for p in pids:
            changed = [(r, b, h.changed(b, r["a"]) if b else frozenset(),
                        h.changed(b, r["b"]) if b else frozenset())
                       for r, b in steps if r["id"] == p]
            interest: set[str] = set().union(*(fa | fb for _, _, fa, fb in changed))
            for w in windows:
                cps: dict[str, Coupling] = {}
                for r, b, fa, fb in changed:
                    if b not in cps:
                        cps[b] = Coupling(h, b, w, interest)
                    feat = step_features(cps[b], fa, fb)
                    feat["hot"] = {str(k): v for k, v in feat["hot"].items()}
                    feat["hot_reach"] = {str(k): v for k, v in feat["hot_reach"].items()}
                    feats[w][(r["a"], r["b"])] = feat
    if args.features:
        with open(args.features, "w") as f:
            for w in windows:
                for r in rows:
                    f.write(json.dumps({"window": w, "id": r["id"], "step": r["step"],
                                        **feats[w][(r["a"], r["b"])]}) + "\n")
    tests = candidates()
    report: dict[str, Any] = {"windows": {}}
    for w in windows:
        for r in rows:
            r["feat"] = feats[w][(r["a"], r["b"])]
        fit = {p: ss for p, ss in pairs.items() if ss[0]["repo"] in FIT}
        held = {p: ss for p, ss in pairs.items() if ss[0]["repo"] not in FIT}
        parts = {"fit": fit, "held_out": held, "overall": pairs}
        table: dict[str, dict[str, Any]] = {}

        for r in rows:
            r["feat"]["advisory"], r["feat"]["risk"] = r["advisory"], r["risk"]
        table["every step (base rate)"] = tabulate(parts, lambda f: True)
        table["scan warns (TA or RA)"] = tabulate(parts, lambda f: f["advisory"] != "clear")
        for name, t in tests.items():
            table[name] = tabulate(parts, t)
        # two-candidate OR / AND rules, chosen on FIT only (never <= cap on FIT)
        base_names = [n for n in tests if not n.startswith("couple s5")]
        combos: dict[str, Test] = {}
        for x, y in combinations(base_names, 2):
            combos[f"{x} OR {y}"] = either(tests[x], tests[y])
            combos[f"{x} AND {y}"] = both(tests[x], tests[y])
        for pool, label in ((tests, "best single"), (combos, "best OR/AND")):
            name, _ = choose(fit, pool, args.cap)
            if name:
                table[f"{label} on FIT: {name}"] = tabulate(parts, pool[name])
        # logistic on FIT steps that do not conflict yet: target conflict_later, pair weight;
        # the threshold is the FIT one with the most early warnings at FIT never <= cap
        betas = {}
        for label, use in VARIANTS.items():
            xs, ys, ws = [], [], []
            for ss in fit.values():
                for r in ss:
                    if not r["conflict_now"]:
                        xs.append(vector(r["feat"], use))
                        ys.append(float(r["conflict_later"]))
                        ws.append(1.0 / len(ss))
            if not xs:  # no FIT repository among the steps: nothing to fit
                continue
            beta = betas[label] = fit_logistic(xs, ys, ws)
            for r in rows:
                z = sum(b * v for b, v in zip(beta, vector(r["feat"], use), strict=True))
                r["feat"]["p"] = sigmoid(z)
            lg: dict[str, Test] = {f"p>={t:.3f}": p_at_least(t)
                                   for t in sorted({round(r["feat"]["p"], 3)
                                                    for ss in fit.values() for r in ss})}
            name, _ = choose(fit, lg, args.cap)
            if name:
                table[f"{label} on FIT: {name}"] = tabulate(parts, lg[name])
        report["windows"][str(w)] = {
            "table": table,
            "logit": {label: {VECTOR[i]: round(b, 3) for i, b in zip(use, betas[label],
                                                                   strict=True)}
                      for label, use in VARIANTS.items() if label in betas},
            "ceiling": {part: diagnose(ps, hists, w) for part, ps in parts.items()}}
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return 0
    for w, res in report["windows"].items():
        print(f"== window {w} commits (max {args.max_files} files)")
        for label, coef in res["logit"].items():
            print(f"  {label}: {coef}")
        print(f"{'candidate':58}{'early fit/held/all':>22}{'never fit/held/all':>22}"
              f"{'rate fit/held':>16}")
        for name, got in res["table"].items():
            e = "/".join(_pct(got[p]["early"]) for p in ("fit", "held_out", "overall"))
            n = "/".join(_pct(got[p]["never"]) for p in ("fit", "held_out", "overall"))
            rt = "/".join(str(got[p]["rate"]) for p in ("fit", "held_out"))
            print(f"{name[:58]:58}{e:>22}{n:>22}{rt:>16}")
        for part, d in res["ceiling"].items():
            print(f"ceiling {part}: {d}")
    return 0


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
