"""The symbol channel alone on real merges: how often does it fire on clean ones?

Each case of a merge-history file (``../shared/eval/*.jsonl`` format, see its README) is
replayed as two working sets (base -> first parent, base -> second parent) from a clone of
the repository, and the symbol channel is computed exactly as a scan does (the import graph
and resolver of the base tree). Reported per label (git's merge conflicted or was clean):
the channel's value in bands, the evidence classes found, and the time per case. With
``--before REV`` the symbol channel of the project at REV (e.g. an older version)
is run on the same cases for comparison.

    python benchmarks/symbol_real.py ../shared/eval/flask.jsonl /path/to/flask.git
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from proximity import gitio
from proximity.analysis import depgraph
from proximity.analysis.symbols import hazard
from proximity.model import WorkingSet

BANDS = ("unknown", "0", "<0.35", "0.35-0.7", ">=0.7")


def band(v: float | None) -> str:
    if v is None:
        return "unknown"
    if v <= 0:
        return "0"
    return "<0.35" if v < 0.35 else ("0.35-0.7" if v < 0.7 else ">=0.7")


def old_channel(rev: str) -> Any:
    src = subprocess.run(["git", "show", f"{rev}:proximity/symbols.py"], capture_output=True,
                         text=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("symbols_before", f.name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.channel


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases")
    ap.add_argument("git_dir")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--before", metavar="REV", help="also run the symbol channel at REV")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    before = old_channel(args.before) if args.before else None
    tmp = tempfile.mkdtemp(prefix="proximity-symreal-")
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", args.git_dir, tmp],
                   check=True)
    repo = gitio.Repo(tmp)
    with open(args.cases) as fh:
        cases = [json.loads(line) for line in fh]
    if args.limit:
        cases = cases[: args.limit]
    bands: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    graphs: dict[str, Any] = {}
    imports_cache: dict[str, Any] = {}
    cache: dict[str, Any] = {}
    seconds = 0.0
    examples: list[str] = []
    for c in cases:
        label = "conflict" if c["conflict"] else "clean"
        try:
            base = repo.commit_tree(c["base"])
            ta, tb = repo.commit_tree(c["a"]["commit"]), repo.commit_tree(c["b"]["commit"])
        except Exception:
            bands[label]["missing"] += 1
            continue
        if base not in graphs:
            files = repo.files(base)
            graphs.clear()
            graphs[base] = depgraph.build(files, repo.blob, imports_cache)
        graph, resolver = graphs[base]
        wa = WorkingSet({fc.dest: fc for fc in repo.changes(base, ta, 2_000_000)})
        wb = WorkingSet({fc.dest: fc for fc in repo.changes(base, tb, 2_000_000)})
        view = depgraph.View(graph, [])
        t0 = time.perf_counter()
        v, found = hazard.channel(repo.blob, wa, wb, cache, view, resolver)
        seconds += time.perf_counter() - t0
        bands[label][band(v)] += 1
        for f in found[:1]:
            kinds[label][f.kind] += 1
            if label == "clean" and f.score >= 0.35 and len(examples) < 8:
                examples.append(f"{c['id']}: {f.detail}")
        if before is not None:
            bv, _ = before(repo.blob, wa, wb, {}, view)
            bands[label + " (before)"][band(bv)] += 1
    out = {"cases": len(cases), "bands": {k: dict(v) for k, v in bands.items()},
           "top_kinds": {k: dict(v) for k, v in kinds.items()},
           "ms_per_case": round(1000 * seconds / max(1, len(cases)), 2),
           "clean_ra_examples": examples}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{len(cases)} cases from {args.cases}; symbol channel {out['ms_per_case']} ms/case")
    print(f"{'label':20} " + " ".join(f"{b:>9}" for b in BANDS) + "   share >=0.7")
    for label, cnt in sorted(bands.items()):
        n = sum(cnt[b] for b in BANDS)
        print(f"{label:20} " + " ".join(f"{cnt[b]:9}" for b in BANDS)
              + f"   {cnt['>=0.7'] / max(1, n):.3f}")
    print("strongest finding's class:", json.dumps(out["top_kinds"]))
    for e in examples:
        print("  clean, >=0.35:", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
