"""Real merges replayed as live worktree pairs, with the exact conflict channel on.

Each mined case (``mine.py`` format: ``../shared/eval/tools/README.md``) is one real merge:
two agents whose HEAD is the merge base and whose live state is P1's / P2's tree, scanned by
proximity's own pipeline (``engine.scan`` on two ``Agent`` objects). The snapshot commit of
an agent is the tip tree committed on the base, exactly what ``live_agents`` makes for a dirty
worktree at the base. Fetched repositories are never written: every case repository is a
scratch repository (``benchmarks/out/scratch``) borrowing the fetched objects (alternates).

A random sample is also set up as real worktrees (``materialize.py``, uncommitted mode) and
scanned with ``proximity scan --json`` in them; both paths must give the same advisory.

    python benchmarks/replay.py benchmarks/out/cases/*.jsonl --json
    python benchmarks/replay.py CASES... --git-dir flask=/path/flask.git --materialized 30
    python benchmarks/replay.py CASES... --limit 150 --out benchmarks/out/replay.jsonl

Reported per repository and overall: RA recall on real conflicts, RA rate on clean merges and
on clean merges that touch a common file, TA-or-RA rates. Criss-cross merges (more than one
merge base) are replayed but reported apart (``criss_cross``): git labels them through a
virtual merge base that two live worktrees at one base do not reproduce. ``--out`` keeps
one line per case (channels, evidence classes) for ``calibrate.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from proximity import config, gitio, model
from proximity.model import Agent, PairResult
from proximity.tcas import engine

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
# the shared mining tools: EVAL_TOOLS, else beside this checkout (../shared/eval/tools)
TOOLS = os.environ.get("EVAL_TOOLS") or os.path.join(HERE, "..", "..", "shared", "eval",
                                                     "tools")
FIT = ("click", "werkzeug", "marshmallow", "express", "gin")  # calibration is fitted here
SNAP_IDENT = {"GIT_AUTHOR_NAME": "replay", "GIT_AUTHOR_EMAIL": "replay@example.com",
              "GIT_COMMITTER_NAME": "replay", "GIT_COMMITTER_EMAIL": "replay@example.com",
              "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000"}


def load_cases(paths: Sequence[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in paths:
        with open(p) as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def git_dirs(paths: Sequence[str], extra: Sequence[str]) -> dict[str, str]:
    """repo name -> fetched git dir: ``repos.json`` beside the case files, then ``--git-dir``."""
    out: dict[str, str] = {}
    for p in paths:
        rj = os.path.join(os.path.dirname(os.path.abspath(p)), "repos.json")
        if os.path.exists(rj):
            with open(rj) as f:
                out.update({k: v["git_dir"] for k, v in json.load(f).items()})
    for spec in extra:
        name, _, path = spec.partition("=")
        out[name] = os.path.abspath(path)
    return out


class Source:
    """A scratch checkout borrowing one fetched repository's objects, opened by proximity."""

    def __init__(self, name: str, git_dir: str, root: str = os.path.join(OUT, "scratch")):
        self.name, self.git_dir = name, git_dir
        self.path = os.path.join(root, name)
        if not os.path.isdir(os.path.join(self.path, ".git")):
            os.makedirs(self.path, exist_ok=True)  # one per benchmark: runs never share it
            gitio.git(["init", "-q", self.path], cwd=root)
        alt = os.path.join(self.path, ".git", "objects", "info", "alternates")
        with open(alt, "w") as f:
            f.write(os.path.join(os.path.abspath(git_dir), "objects") + "\n")
        self.repo = gitio.Repo(self.path)
        self.cfg = config.Config()  # the defaults: a scratch checkout has no policy
        self.facts = model.Facts()  # parse caches shared by every case of the repository
        self.snaps: dict[tuple[str, str | None], str] = {}

    def tree(self, commit: str) -> str:
        return self.repo.commit_tree(commit)

    def snapshot(self, tree: str, head: str | None) -> str:
        key = (tree, head)
        if key not in self.snaps:
            args = ["commit-tree", tree, "-m", "proximity snapshot"]
            if head:
                args[2:2] = ["-p", head]
            env = {**os.environ, **SNAP_IDENT}
            self.snaps[key] = subprocess.run(
                ["git", *args], cwd=self.path, env=env, capture_output=True, check=True,
                text=True).stdout.strip()
        return self.snaps[key]

    def agent(self, name: str, head: str | None, tree: str) -> Agent:
        return Agent(name, os.path.join(self.path, name), f"eval/{name}", head,
                     self.snapshot(tree, head), tree)

    def pair(self, a: Agent, b: Agent) -> PairResult:
        # graph/pair caches hold one reference tree at a time; parse caches are kept
        self.facts.pair_cache.clear()
        result = engine.scan(self.repo, self.cfg, self.facts, agents=[a, b])
        return result.pairs[0]

    def tree_kind(self, base: str | None, a: Agent, b: Agent) -> str:
        """The tree channel's evidence class (it has no findings to carry one): from the
        paths each side touched since the pair's merge base."""
        from proximity.analysis import treeprox

        base = self.repo.merge_base(a.head, b.head) if base is None else base
        base_tree = self.tree(base) if base else gitio.EMPTY_TREE
        ta = set(self.repo.changed_paths(base_tree, a.tree or gitio.EMPTY_TREE))
        tb = set(self.repo.changed_paths(base_tree, b.tree or gitio.EMPTY_TREE))
        raw = treeprox.channel(ta, tb)
        return f"b{min(4, int(raw * 5))}" if raw > 0 else ""

    def conflicts(self, x: str, y: str) -> bool | None:
        paths = self.repo.merge_conflicts(x, y)
        return None if paths is None else bool(paths)


def kinds_of(p: PairResult, tree: str = "") -> dict[str, list[str]]:
    """channel -> evidence classes of its findings (``"bin:<lo>"`` where ``kind`` is empty,
    binned by the finding's own score so unconverted channels still calibrate); ``tree`` is
    the tree channel's class, which has no findings."""
    out: dict[str, set[str]] = defaultdict(set)
    if tree and p.channels.get("tree"):
        out["tree"].add(tree)
    for f in p.findings:
        if f.channel in ("error",) or f.score <= 0:
            continue
        out[f.channel].add(f.kind or value_bin(f.score))
    return {k: sorted(v) for k, v in out.items()}


def value_bin(v: float) -> str:
    edges = (0.05, 0.15, 0.35, 0.5, 0.7, 0.9)
    lo = max([0.0, *[e for e in edges if v >= e]])
    return f"bin:{lo:.2f}"


def touches_common(case: dict[str, Any]) -> bool:
    def paths(s: dict[str, Any]) -> set[str]:
        return set(s["files"]) | set((s.get("renames") or {}).values())
    return bool(paths(case["a"]) & paths(case["b"]))


def replay_case(src: Source, case: dict[str, Any]) -> dict[str, Any]:
    base = case["base"]
    a = src.agent("a", base, src.tree(case["a"]["commit"]))
    b = src.agent("b", base, src.tree(case["b"]["commit"]))
    p = src.pair(a, b)
    return {"id": case["id"], "repo": case["repo"], "kind": case.get("kind"),
            "conflict": bool(case["conflict"]), "common": touches_common(case),
            "merge_edited": bool(case.get("clean_but_merge_edited")),
            "bases": int(case.get("n_merge_bases") or 1),
            "advisory": p.advisory, "risk": round(p.risk, 4),
            "channels": {k: None if v is None else round(v, 4) for k, v in p.channels.items()},
            "kinds": kinds_of(p, src.tree_kind(base, a, b)),
            "top": [[f.channel, f.kind, round(f.score, 3), f.path_a, f.detail[:80]]
                    for f in p.findings[:4]]}


def rates(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    rows = list(rows)
    conf = [r for r in rows if r["conflict"]]
    clean = [r for r in rows if not r["conflict"]]
    common = [r for r in clean if r["common"]]

    def frac(xs: list[dict[str, Any]], advs: tuple[str, ...]) -> float | None:
        return round(sum(r["advisory"] in advs for r in xs) / len(xs), 4) if xs else None

    ra, ta = ("resolution",), ("traffic", "resolution")
    return {"n": len(rows), "conflicts": len(conf), "clean": len(clean),
            "clean_common": len(common),
            "ra_recall": frac(conf, ra), "ta_or_ra_recall": frac(conf, ta),
            "ra_clean": frac(clean, ra), "ra_clean_common": frac(common, ra),
            "ta_or_ra_clean": frac(clean, ta), "ta_or_ra_clean_common": frac(common, ta)}


def materialized_advisory(case: dict[str, Any], cases_dir: str, git_dir: str,
                          proximity: Sequence[str]) -> str | None:
    """Set the case up as real worktrees and run ``proximity scan --json`` in one of them."""
    tmp = tempfile.mkdtemp(prefix="replay-mat-")
    try:
        out = os.path.join(tmp, "case")
        subprocess.run([sys.executable, os.path.join(TOOLS, "materialize.py"), case["id"], out,
                        "--cases", cases_dir, "--git-dir", git_dir], check=True,
                       capture_output=True)
        proc = subprocess.run([*proximity, "scan", "--json"], cwd=os.path.join(out, "a"),
                              capture_output=True, text=True)
        data = json.loads(proc.stdout)
        for p in data["pairs"]:
            if {p["a"], p["b"]} == {"a", "b"}:
                return str(p["advisory"])
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", help="case files (mine.py format)")
    ap.add_argument("--git-dir", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--limit", type=int, default=0, help="newest N cases per repository")
    ap.add_argument("--materialized", type=int, default=30,
                    help="random cases also replayed as real worktrees (0: none)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", help="write one JSON line per case here")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    cases = load_cases(args.cases)
    dirs = git_dirs(args.cases, args.git_dir)
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cases:
        by_repo[c["repo"]].append(c)
    rows: list[dict[str, Any]] = []
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 -- written as we go
    for name, cs in sorted(by_repo.items()):
        if name not in dirs:
            print(f"skip {name}: no git dir (give --git-dir {name}=...)", file=sys.stderr)
            continue
        src = Source(name, dirs[name])
        for c in cs[:args.limit] if args.limit else cs:
            try:
                rows.append(replay_case(src, c))
            except Exception as e:  # a case the pipeline cannot replay is reported, not hidden
                rows.append({"id": c["id"], "repo": name, "error": repr(e)[:200]})
            if sink:
                sink.write(json.dumps(rows[-1]) + "\n")
                sink.flush()
        print(f"{name}: {len([r for r in rows if r['repo'] == name])} cases", file=sys.stderr)
    ok = [r for r in rows if "error" in r]
    # a criss-cross merge's label comes from git's virtual merge base, which two live
    # worktrees at one base cannot reproduce: replayed, reported apart, not in the rates
    crossed = [r for r in rows if "error" not in r and r.get("bases", 1) > 1]
    good = [r for r in rows if "error" not in r and r.get("bases", 1) <= 1]
    report: dict[str, Any] = {
        "overall": rates(good),
        "fit": rates(r for r in good if r["repo"] in FIT),
        "held_out": rates(r for r in good if r["repo"] not in FIT),
        "per_repo": {n: rates(r for r in good if r["repo"] == n)
                     for n in sorted({r["repo"] for r in good})},
        "errors": len(ok), "fit_repos": list(FIT),
        "criss_cross": [[r["id"], r["conflict"], r["advisory"]] for r in crossed],
        "missed_conflicts": [r["id"] for r in good
                             if r["conflict"] and r["advisory"] != "resolution"],
        "false_ra_examples": [[r["id"], r["top"][:2]] for r in good
                              if not r["conflict"] and r["advisory"] == "resolution"][:12],
    }
    if args.materialized:
        report["materialized"] = check_materialized(args, good, cases, dirs)
    if sink:
        sink.close()
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        print_report(report)
    return 0


def check_materialized(args: argparse.Namespace, good: list[dict[str, Any]],
                       cases: list[dict[str, Any]], dirs: dict[str, str]) -> dict[str, Any]:
    rnd = random.Random(args.seed)
    by_id = {c["id"]: c for c in cases}
    where = {c["id"]: p for p in args.cases for c in load_cases([p])}
    sample = rnd.sample(good, min(args.materialized, len(good)))
    exe = shutil.which("proximity", path=os.path.dirname(sys.executable))
    prox = [exe] if exe else [sys.executable, "-m", "proximity"]
    agree, diffs = 0, []
    for r in sample:
        c = by_id[r["id"]]
        with tempfile.TemporaryDirectory() as tmp:
            cases_dir = tmp
            with open(os.path.join(tmp, os.path.basename(where[r["id"]])), "w") as f:
                f.write(json.dumps(c) + "\n")
            try:
                adv = materialized_advisory(c, cases_dir, dirs[r["repo"]], prox)
            except (subprocess.CalledProcessError, ValueError, KeyError) as e:
                adv = f"error: {e!r}"[:120]
        if adv == r["advisory"]:
            agree += 1
        else:
            diffs.append([r["id"], r["advisory"], adv])
    return {"n": len(sample), "agree": agree, "disagreements": diffs}


def print_report(rep: dict[str, Any]) -> None:
    cols = ("n", "conflicts", "clean", "clean_common", "ra_recall", "ta_or_ra_recall",
            "ra_clean", "ra_clean_common", "ta_or_ra_clean", "ta_or_ra_clean_common")
    print(f"{'':14}" + "".join(f"{c[:14]:>15}" for c in cols))
    rows = [*rep["per_repo"].items(), ("FIT", rep["fit"]), ("HELD-OUT", rep["held_out"]),
            ("OVERALL", rep["overall"])]
    for name, r in rows:
        print(f"{name:14}" + "".join(f"{'-' if r[c] is None else r[c]!s:>15}" for c in cols))
    print(f"errors: {rep['errors']}; missed conflicts: {rep['missed_conflicts'][:10]}")
    print(f"criss-cross merges, reported apart: {len(rep['criss_cross'])}")
    for ex in rep["false_ra_examples"]:
        print("false RA:", ex)
    if "materialized" in rep:
        m = rep["materialized"]
        print(f"materialized worktrees: {m['agree']}/{m['n']} same advisory; "
              f"differ: {m['disagreements']}")


if __name__ == "__main__":
    raise SystemExit(main())
