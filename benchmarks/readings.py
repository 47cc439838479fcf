"""What the analysis reads of real repositories, file by file: two versions compared.

    python benchmarks/readings.py --out new.json REPO_GITDIR...
    python benchmarks/readings.py --code /tmp/code-old --out old.json REPO_GITDIR...
    python benchmarks/readings.py --compare old.json new.json

For every source file of each repository's HEAD tree: its dialect, its import records and
the repository paths each resolves to, a digest of its facts (definitions, bindings,
references), its module name, the files standing for the modules above it, the target
of every reference it makes and every target its imports reach; and the repository's
import graph. ``--compare`` counts the files whose readings differ (import records as a
set: their order carries no meaning). Fetched code is read from the given git dirs;
nothing is written but ``--out``. ``--code DIR`` imports proximity from DIR (``git
archive REV proximity`` extracted there), a version from before the languages' registry
included.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from nearmiss import use_code  # noqa: E402

PACKAGE = "dir:"  # how a directory namespace is written as a target in this dump


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True,
                          check=True).stdout


def digest(x: object) -> str:
    return hashlib.blake2b(json.dumps(x, sort_keys=True).encode(), digest_size=10).hexdigest()


def as_written(target: Any) -> Any:
    """A target with a directory namespace in one spelling (versions differ in its prefix)."""
    if isinstance(target, str):
        return PACKAGE + target.split(":", 1)[1] if target.startswith("go:") else target
    if isinstance(target, tuple):
        return (as_written(target[0]), *target[1:])
    return target


def read_repo(gitdir: str) -> dict[str, Any]:
    from proximity.analysis import depgraph, imports
    from proximity.analysis.symbols import reads, writes

    try:
        from proximity.analysis.languages import registry

        def dialect_of(path: str) -> str | None:
            return registry.dialect_of(path)

        def above(path: str, paths: set[str], dialect: str) -> list[str] | None:
            offers = registry.language(dialect).reexports
            return offers.parents(path, paths) if offers is not None else None
    except ImportError:  # a version before the registry
        from proximity.analysis import parsers
        from proximity.analysis.symbols import reexports

        def dialect_of(path: str) -> str | None:
            got: str | None = parsers.language_of(path)
            return got

        def above(path: str, paths: set[str], dialect: str) -> list[str] | None:
            if dialect == "go":
                return None
            got: list[str] = reexports.packages_above(path, paths, dialect)
            return got

    files = {}
    for line in git(gitdir, "ls-tree", "-r", "HEAD").decode().splitlines():
        meta, path = line.split("\t", 1)
        if meta.split()[1] == "blob":
            files[path] = meta.split()[2]
    blobs: dict[str, bytes] = {}

    def read(oid: str) -> bytes:
        if oid not in blobs:
            blobs[oid] = git(gitdir, "cat-file", "blob", oid)
        return blobs[oid]

    graph, resolver = depgraph.build(files, read, {})
    rows: dict[str, Any] = {}
    for path, oid in sorted(files.items()):
        dialect = dialect_of(path)
        if dialect is None:
            continue
        data = read(oid)
        recs = imports.extract(path, data)
        facts = writes.analyse(path, data)
        row: dict[str, Any] = {
            "dialect": dialect, "facts": digest(facts), "module": writes._module_name(path),
            "imports": sorted(json.dumps([r, resolver.resolve(path, r)]) for r in recs),
            "above": above(path, resolver.paths, dialect)}
        if facts is not None:
            rd = reads.Reader(path, dialect, facts, resolver)
            row["targets"] = digest([as_written(rd.target_of(c)) for c, *_ in facts["refs"]])
            # the file's own directory: always there for a directory namespace, and put in
            # for every other file too by versions before the registry (where no target of
            # such a file can be a directory)
            own = PACKAGE + os.path.dirname(path)
            row["imported"] = sorted(t for t in map(as_written, rd.imported()) if t != own)
        rows[path] = row
    return {"rows": rows, "edges": sorted(graph.g.edges)}


def compare(a: dict[str, Any], b: dict[str, Any]) -> tuple[int, list[str]]:
    """(files compared, the files or graphs that differ)."""
    n, differ = 0, []
    for repo in sorted(set(a) | set(b)):
        ra, rb = a.get(repo, {}), b.get(repo, {})
        if ra.get("edges") != rb.get("edges"):
            differ.append(f"{repo}: import graph")
        rows_a, rows_b = ra.get("rows", {}), rb.get("rows", {})
        for path in sorted(set(rows_a) | set(rows_b)):
            n += 1
            if rows_a.get(path) != rows_b.get(path):
                x, y = rows_a.get(path) or {}, rows_b.get(path) or {}
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                differ.append(f"{repo}: {path} ({', '.join(keys)})")
    return n, differ


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repos", nargs="*", metavar="REPO_GITDIR")
    ap.add_argument("--out", help="write the readings here (JSON)")
    ap.add_argument("--code", metavar="DIR", help="import proximity from DIR")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two readings to compare")
    args = ap.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as fa, open(args.compare[1]) as fb:
            n, differ = compare(json.load(fa), json.load(fb))
        print(f"{n} files compared, {len(differ)} differ")
        for line in differ[:40]:
            print("  " + line)
        return 0
    if not args.repos or not args.out:
        ap.error("give --out and at least one REPO_GITDIR (or --compare A B)")
    if args.code:
        use_code(args.code)
    result = {os.path.basename(os.path.dirname(os.path.abspath(d))) or d: read_repo(d)
              for d in args.repos}
    with open(args.out, "w") as f:
        json.dump(result, f, sort_keys=True)
    print(args.out, {k: len(v["rows"]) for k, v in result.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
