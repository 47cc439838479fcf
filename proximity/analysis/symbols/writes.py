"""What one side changed, definition by definition (the writer's half of the symbol channel).

Each blob is analysed once (by blob id, in the ledger cache) into plain data, by its
language (``Language.analyse``). A blob that does not parse (a half-typed line, leftover
conflict markers) is ``None``: unknown, never "everything removed".

Comparing a file's base blob with its new blob gives, per qualified definition, how it
changed: ``removed`` (and no alias, re-export or module ``__getattr__`` keeps the name
resolving), ``signature`` (its parameters), ``value`` (a module constant), ``body``, or
``indirect`` (its body reads a constant of the file whose value changed). A module file
renamed or deleted is a ``moved`` module unless a shim stays at its old path (not in a
language whose directory is one namespace: there a definition moves between files).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from proximity.analysis.languages import registry
from proximity.analysis.languages.base import Def, Facts
from proximity.model import FileChange, WorkingSet

FORMAT = "s12"  # bump when analysis changes, so cached results of older versions are unused


def analyse(path: str, data: bytes) -> Facts | None:
    dialect = registry.dialect_of(path)
    if dialect is None or b"\0" in data[:8000]:
        return None
    return registry.language(dialect).analyse(dialect, data)


def _per_directory(dialect: str | None) -> bool:
    """Whether the dialect's language makes a directory one namespace."""
    return dialect is not None and registry.language(dialect).namespace == "directory"


def facts(cache: dict[str, Facts], read: Callable[[str], bytes], path: str, oid: str
          ) -> Facts | None:
    """The analysis of one blob (``None``: it does not parse); an empty blob id is empty."""
    if not oid:
        return {"defs": {}, "binds": [], "refs": [], "exports": [], "dynamic": False}
    key = f"{FORMAT}:{registry.dialect_of(path)}:{oid}"
    hit = cache.get(key)
    if hit is None:
        got = analyse(path, read(oid))
        hit = {"bad": True} if got is None else got
        cache[key] = hit
    return None if hit.get("bad") else hit


@dataclass
class Changed:
    """One definition the writer changed."""
    qual: str
    how: str  # removed | signature | value | body | indirect
    old: Def  # the base definition
    new: Def | None
    reads: tuple[str, ...] = ()  # for indirect: the changed definitions it reads


@dataclass
class WriterFile:
    path: str  # the path definitions are reached through (the new path)
    lang: str  # its dialect
    unknown: bool = False  # the base or the new blob does not parse
    changed: dict[str, Changed] = field(default_factory=dict)
    old_defs: dict[str, Def] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # exported name -> definition
    moved_from: str = ""  # a module renamed or deleted: its old path
    moved_to: str = ""  # "" for a deletion


def _resolves(name: str, new: Facts) -> bool:
    """Does a top-level ``name`` still resolve in the module (alias, re-export, __getattr__)?"""
    exports = new.get("exports") or []
    return name in new["defs"] or name in exports or bool(new.get("dynamic"))


def compare(old: Facts, new: Facts) -> dict[str, Changed]:
    out: dict[str, Changed] = {}
    nd = new["defs"]
    for qual, od in old["defs"].items():
        nw = nd.get(qual)
        top = "." not in qual
        if nw is None:
            if top and _resolves(qual, new):
                continue
            if not top and nd.get(qual.rsplit(".", 1)[0], [""])[0] != "class":
                continue  # the class went too (or is an alias now): judged as the class
            out[qual] = Changed(qual, "removed", od, None)
        elif nw[0] == "alias" and od[0] != "alias":
            continue  # old = new: the name still resolves to a definition
        elif od[0] in ("constant", "alias"):
            if nw[1] != od[1]:
                out[qual] = Changed(qual, "value", od, nw)
        elif od[0] in ("function", "method"):
            if nw[1] != od[1]:
                out[qual] = Changed(qual, "signature", od, nw)
            elif nw[2] != od[2]:
                out[qual] = Changed(qual, "body", od, nw)
        elif nw[1] != od[1] or nw[2] != od[2]:
            out[qual] = Changed(qual, "body", od, nw)
    # one level inside the file: a definition whose body reads a constant whose value
    # changed behaves differently too (total() reads RATE); callers of a changed signature
    # in the same file are the writer's own to fix (and a compatible change is no change)
    hard = {q for q, c in out.items() if c.how == "value" and "." not in q}
    if hard:
        reads: dict[str, set[str]] = {}
        spans = [(q, d[3], d[4]) for q, d in nd.items() if q not in out]
        for chain, line, _call, _to in new["refs"]:
            if chain[0] not in hard:
                continue
            for q, lo, hi in spans:
                if lo <= line <= hi and q.split(".")[0] != chain[0]:
                    reads.setdefault(q, set()).add(chain[0])
        for q, names in reads.items():
            if q in old["defs"]:
                out[q] = Changed(q, "indirect", old["defs"][q], nd[q], tuple(sorted(names)))
    return out


def writer_files(ws: WorkingSet, read: Callable[[str], bytes], cache: dict[str, Facts]
                 ) -> list[WriterFile]:
    out = []
    for fc in ws.files.values():
        lang = registry.dialect_of(fc.path) or registry.dialect_of(fc.dest)
        if fc.kind != "text" or lang is None:
            continue
        wf = WriterFile(fc.dest, lang)
        if fc.status in ("R", "D") and not _per_directory(lang) and not (
                fc.status == "R" and _module_name(fc.path) == _module_name(fc.dest)):
            shim = ws.files.get(fc.path)
            if shim is None or shim is fc or shim.status == "D":
                wf.moved_from, wf.moved_to = fc.path, (fc.dest if fc.status == "R" else "")
        if fc.status not in ("A", "D") and registry.dialect_of(fc.dest) == lang:
            got = _memo("w", fc, functools.partial(_compare_blobs, fc, read, cache))
            if got is None:
                wf.unknown = True
            else:
                wf.old_defs, wf.changed, wf.aliases = got
        elif fc.status == "D" and _per_directory(lang):
            old = facts(cache, read, fc.path, fc.old_oid)
            if old is None:
                wf.unknown = True
            else:
                wf.path = fc.path
                wf.old_defs = old["defs"]
                wf.changed = {q: Changed(q, "removed", d, None) for q, d in old["defs"].items()}
        out.append(wf)
    return _packages(ws, out, read, cache)


def _module_name(path: str) -> str:
    """The name a module file is imported by: ``pkg/log`` for the module file
    ``pkg/log.x`` and for the file standing for the directory ``pkg/log/`` (in any
    language: ``registry.directory_modules``) alike."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    for name in registry.directory_modules():
        tail = "/" + name
        if stem.endswith(tail):
            return stem[: -len(tail)]
    return stem


def _dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _packages(ws: WorkingSet, files: list[WriterFile], read: Callable[[str], bytes],
              cache: dict[str, Facts]) -> list[WriterFile]:
    """A language whose package is a directory: a definition that left one changed file
    for another of the same package did not go anywhere: judged on its definition in the
    new file (unchanged: no change; new parameters: a signature change there)."""
    new_defs: dict[str, dict[str, tuple[str, Def]]] = {}
    for fc in ws.files.values():
        if fc.kind != "text" or fc.status == "D" or \
                not _per_directory(registry.dialect_of(fc.dest)):
            continue
        got = facts(cache, read, fc.dest, fc.new_oid)
        for q, d in (got or {}).get("defs", {}).items():
            new_defs.setdefault(_dir(fc.dest), {})[q] = (fc.dest, d)
    out = []
    for wf in files:
        moved = {q: ch for q, ch in wf.changed.items() if ch.how == "removed"
                 and _per_directory(wf.lang) and q in new_defs.get(_dir(wf.path), {})}
        if not moved:
            out.append(wf)
            continue
        kept = {q: ch for q, ch in wf.changed.items() if q not in moved}
        out.append(WriterFile(wf.path, wf.lang, wf.unknown, kept, wf.old_defs, wf.aliases))
        for q, ch in moved.items():
            where, nd = new_defs[_dir(wf.path)][q]
            if ch.old[0] in ("function", "method") and nd[1] != ch.old[1]:
                out.append(WriterFile(where, wf.lang, False,
                                      {q: Changed(q, "signature", ch.old, nd)},
                                      {q: ch.old}))
    return out


def _compare_blobs(fc: FileChange, read: Callable[[str], bytes], cache: dict[str, Facts]
                   ) -> tuple[dict[str, Def], dict[str, Changed], dict[str, str]] | None:
    old = facts(cache, read, fc.path, fc.old_oid)
    new = facts(cache, read, fc.dest, fc.new_oid)
    if old is None or new is None:
        return None
    return old["defs"], compare(old, new), old.get("aliases") or {}


# Per-change results depend only on the change (blob ids are content addresses) and, for a
# move, on whether the same side keeps a shim; shared by every pair a scan compares.
Compared = tuple[dict[str, Def], dict[str, Changed], dict[str, str]] | None
_MEMO: dict[tuple[str, FileChange], Compared] = {}
_MEMO_MAX = 50_000


def _memo(kind: str, fc: FileChange, compute: Callable[[], Compared]) -> Compared:
    key = (kind, fc)
    if key not in _MEMO:
        if len(_MEMO) > _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = compute()
    return _MEMO[key]
