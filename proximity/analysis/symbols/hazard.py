"""The symbol hazard: a changed definition that the other side's new code still uses (a
read/write hazard at a distance).

One side (the writer) changes definitions (``symbols.writes``); the other side's *new* code (its
added lines, or the whole of a file it added) refers to some of them, resolved through its
own imports by the project's resolver (``reads``). Only a reference that resolves to the
changed definition counts; a bare name that happens to match never does. Each hit has an
evidence class, and its value is the calibrated probability of that class
(``calibration.probability("symbol", kind, default)``), held at full weight for as long as
both live trees have it (a fact of both trees, no recency decay):

* ``incompatible-call``: a signature changed and a call in the other side's new code no
  longer binds, by its language's rules (``Language.binding``: keywords and defaults,
  required parameters, parameter and result types -- a renamed parameter, or a variadic
  one added, changes no call). A call that still binds, or a reference that is not a
  call, is compatible: no finding. A call whose arguments cannot be counted (unpacked into
  it) cannot be checked: ``body-used``;
* ``missing-arg``: a call leaves out a new parameter that arrives as an undefined value
  the body never dereferences (it runs, maybe differently): traffic, not a block;
* ``removed-used``: the definition is gone and no alias, re-export or module ``__getattr__``
  keeps its name resolving;
* ``module-moved``: a module file renamed or deleted, imported at its old path;
* ``incompatible-method-call``: as above, for ``obj.meth(...)`` on a receiver of unknown type
  in a file that imports the module defining ``meth``;
* ``value-used``, ``indirect`` (a definition that reads a changed one), ``body-used``.

Type-only uses (annotations, imports for type checking only) are not collisions unless
the definition is removed. A file that does not parse is unknown: when the
channel found nothing and such a file mattered, its value is ``None``, never 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from proximity import calibration
from proximity.analysis import intervals
from proximity.analysis.depgraph import Imports
from proximity.analysis.languages import registry
from proximity.analysis.languages.base import (
    SOFT,
    UNKNOWN,
    Call,
    Def,
    Facts,
    FactsOf,
    namespace_of,
)
from proximity.analysis.resolve import Resolver
from proximity.analysis.symbols import writes
from proximity.analysis.symbols.binding import binding
from proximity.analysis.symbols.reads import Reader
from proximity.analysis.symbols.writes import Changed, WriterFile
from proximity.model import FileChange, Finding, WorkingSet

FORMAT = writes.FORMAT
DEFAULTS = {"incompatible-call": 0.9, "removed-used": 0.9, "module-moved": 0.9,
            "incompatible-method-call": 0.6, "value-used": 0.5, "missing-arg": 0.45,
            "indirect": 0.4,
            "body-used": 0.12}
# method names too common to tie a receiver of unknown type to one class
AMBIENT = frozenset((
    "get", "set", "run", "main", "init", "new", "close", "open", "read", "write", "start",
    "stop", "update", "append", "add", "remove", "pop", "keys", "values", "items", "copy",
    "clear", "format", "join", "split", "call", "apply", "send", "String", "Error", "len",
    "log", "info", "debug", "warn", "warning", "error", "push", "map", "filter", "forEach",
    "then", "catch", "toString", "replace", "strip", "lower", "upper", "encode", "decode",
    "sort", "extend", "insert", "index", "count", "find", "match", "test", "exec", "reduce",
    "slice", "trim", "Close", "Write", "Read", "Len", "Get", "Set", "Run", "Start", "Stop",
))


def _target(wf: WriterFile) -> str:
    return namespace_of(registry.language(wf.lang), wf.path)


def _lookup(wf: WriterFile, qual: tuple[str, ...]) -> tuple[str, bool] | None:
    """The longest prefix of ``qual`` that names a base definition of the file."""
    if qual and qual[0] not in wf.old_defs and qual[0] in wf.aliases:
        qual = (wf.aliases[qual[0]], *qual[1:])  # export default area / export {a as b}
    for k in range(len(qual), 0, -1):
        q = ".".join(qual[:k])
        if q in wf.old_defs or q in wf.changed:
            return q, k == len(qual)
    return None


def evaluate(ch: Changed, wf: WriterFile, call: Call | None, exact: bool,
             via_class: bool, unknown_receiver: bool, type_only: bool, at: str
             ) -> tuple[str, str] | None:
    """(evidence class, detail) for one reference to one changed definition, or None."""
    where = wf.path
    if type_only:
        if ch.how != "removed":
            return None
        return "indirect", f"{ch.qual} was removed from {where}; {at} uses it as a type only"
    if ch.how == "removed":
        kind = "incompatible-method-call" if unknown_receiver else "removed-used"
        return kind, (f"{ch.qual} was removed from {where} (no alias or re-export keeps the "
                      f"name); new code at {at} uses it")
    if ch.how == "signature":
        if call is None or not exact:
            return None  # passed as a value: still there, nothing to bind
        why, before, sig = binding(ch, wf, call, via_class)
        if why is None:  # (the call's shape: arguments, keywords, *args, **kwargs, …)
            how = ("passes *args/**kwargs" if call[2] or call[3]
                   else "binds to what the decorator made of it")
            return "body-used", (f"{sig} in {where} (signature changed): the call at {at} "
                                 f"{how}, so whether it still binds is unknown")
        if why == "" or (before is not None and before != ""):
            return None  # still binds (or never did: not this change's doing)
        if why.startswith(SOFT):
            return "missing-arg", (f"{sig} in {where} (signature changed): the call at {at} "
                                   f"still runs, but {why[len(SOFT):]}")
        kind = "incompatible-method-call" if unknown_receiver else "incompatible-call"
        recv = " (a method call on a receiver of unknown type)" if unknown_receiver else ""
        verb = "passes its arguments to other parameters" if "now goes to" in why \
            else "no longer binds"
        return kind, (f"{sig} in {where} (signature changed): the call at {at}{recv} "
                      f"{verb} ({why})")
    if unknown_receiver:
        return None
    if ch.how == "value":
        return "value-used", f"{ch.qual} in {where} changed value; new code at {at} reads it"
    if ch.how == "indirect":
        return "indirect", (f"{ch.qual} in {where} reads {', '.join(ch.reads)}, whose "
                            f"value changed (indirect); new code at {at} uses it")
    return "body-used", (f"{ch.qual} in {where}: body changed (callers still fit); "
                         f"new code at {at} uses it")


class _Writer:
    """One side's changes, indexed for look-up by resolved target."""

    def __init__(self, ws: WorkingSet, read: Callable[[str], bytes],
                 cache: dict[str, Facts]) -> None:
        self.ws = ws
        self.files = writes.writer_files(ws, read, cache)
        self.by_target: dict[str, list[WriterFile]] = {}  # a package directory: its files
        for wf in self.files:
            if wf.changed:
                self.by_target.setdefault(_target(wf), []).append(wf)
        self.moved = {wf.moved_from: wf for wf in self.files if wf.moved_from}
        # (package file, name it offers) -> (the changed file, its name there): see
        # reexported
        self.alias: dict[tuple[str, str], tuple[WriterFile, str]] = {}
        self.unknown = [wf.path for wf in self.files if wf.unknown]
        self.methods: dict[str, list[tuple[Changed, WriterFile]]] = {}
        self.shorts: set[str] = set()
        for wf in self.files:
            for q, ch in wf.changed.items():
                parts = q.split(".")
                self.shorts.update(parts)
                if len(parts) > 1 and ch.how in ("removed", "signature") and \
                        parts[-1] not in AMBIENT and not parts[-1].startswith("__"):
                    self.methods.setdefault(parts[-1], []).append((ch, wf))

    def __bool__(self) -> bool:
        return bool(self.by_target or self.moved)

    def reexported(self, base_facts: Merged | None, resolver: Resolver) -> None:
        """Names a package offers from a changed module (``from .config import Settings``
        in ``pkg/__init__.py``, ``export { Settings } from './config'`` or ``export *`` in
        ``pkg/index.ts``, through up to three packages; ``Language.reexports``): a use of
        ``pkg.Settings`` reaches the changed ``Settings`` of ``pkg/config.py``. Read from
        the base."""
        if base_facts is None:
            return
        # (a module, the changed file behind it, the names it offers -> the file's names,
        # how its language re-exports)
        todo = [(wf.path, wf, {q.split(".")[0]: q.split(".")[0] for q in wf.changed}, offers)
                for wf in self.files if wf.changed
                for offers in [registry.language(wf.lang).reexports] if offers is not None]
        for _ in range(3):
            nxt = []
            for path, wf, names, offers in todo:
                for init in offers.parents(path, resolver.paths):
                    facts = base_facts(init)
                    if facts is None:
                        continue
                    rd = Reader(init, wf.lang, facts, resolver)
                    offered = offers.offered(rd, facts, path, names, base_facts)
                    for here, there in offered.items():
                        self.alias[(init, here)] = (wf, there)
                        self.shorts.add(here)
                    if offered:
                        if wf not in self.by_target.get(init, []):
                            self.by_target.setdefault(init, []).append(wf)
                        nxt.append((init, wf, offered, offers))
            todo = nxt


def _spans(fc: FileChange) -> list[tuple[int, int]]:
    if fc.status == "A":
        return [(0, 10**12)]
    return intervals.pad(r for r in fc.new_ranges if r[1] >= r[0])


def _reader_files(ws: WorkingSet) -> list[tuple[FileChange, str]]:
    out = []
    for fc in ws.files.values():
        lang = registry.dialect_of(fc.dest)
        if fc.kind == "text" and fc.new_oid and fc.status != "D" and lang is not None:
            out.append((fc, lang))
    return out


def _still_used(merged: Merged | None, path: str, name: str) -> bool:
    """Whether the merged program's ``path`` still refers to ``name`` (True when there
    is no merged program to ask, or the file is not in it as such)."""
    if merged is None:
        return True
    got = merged(path)
    if got is None:
        return True
    return any(chain and chain[0] == name for chain, *_ in got["refs"])


def _keeps_moved(merged: Merged | None, rd: Reader, facts: Facts,
                 local: str) -> bool:
    """Whether an import of a module that moved still holds in the merged program (the
    language's ``keeps_moved``: a package that still binds the name)."""
    keeps = rd.language.keeps_moved
    return merged is not None and keeps is not None and keeps(merged, rd, facts, local)


def _one_way(read: Callable[[str], bytes], writer: WorkingSet, reader: WorkingSet,
             cache: dict[str, Facts], graph: Imports | None, resolver: Resolver,
             merged: Merged | None = None, base_facts: Merged | None = None
             ) -> tuple[list[Finding], bool]:
    """Findings of ``writer``'s changes used by ``reader``'s new code; and whether a file
    the answer depends on could not be analysed."""
    w = _Writer(writer, read, cache)
    w.reexported(base_facts, resolver)
    rfiles = _reader_files(reader)
    unknown = any(fc.dest == p or graph is None or graph.imports(fc.dest, p)
                  for p in w.unknown for fc, _ in rfiles)
    if not w:
        return [], unknown
    own = {wf.path: wf.changed for wf in writes.writer_files(reader, read, cache)}
    best: dict[tuple[str, str, str], Finding] = {}
    for fc, lang in rfiles:
        facts = writes.facts(cache, read, fc.dest, fc.new_oid)
        if facts is None:
            unknown = unknown or graph is None or fc.dest in w.by_target or any(
                graph.imports(fc.dest, wf.path) for wf in w.files)
            continue
        spans = _spans(fc)
        locals_ = {b[0] for b in facts["binds"]}
        rd = Reader(fc.dest, lang, facts, resolver)
        for chain, line, call, type_only in facts["refs"]:
            if not (w.shorts.intersection(chain) or chain[0] in locals_):
                continue
            if not any(lo < line < hi for lo, hi in spans):
                continue
            got = rd.target_of(chain)
            if got is None:
                continue
            target, qual, via_class = got
            if not _still_used(merged, fc.dest, chain[0]):
                continue  # git's merge leaves no such use: nothing breaks
            at = f"{fc.dest}:{line}"
            hits: list[tuple[Changed, WriterFile, bool, bool, Call | None]] = []
            if target == fc.dest and target in w.moved:
                # the file's own names: git carries the edit through the move, so they are
                # the moved file's names, read as an importer's are (C(...).m(): C's method)
                target, via_class = w.moved[target].path, False
            if target in w.moved:
                if _keeps_moved(merged, rd, facts, chain[0]):
                    continue  # `from pkg import mod`: pkg still binds the name after the merge
                wf = w.moved[target]
                to = f"renamed to {wf.moved_to}" if wf.moved_to else "deleted"
                _keep(best, Finding("symbol", _score("module-moved"),
                                    target, fc.dest, (), ((line, line),),
                                    f"module {target} was {to}; new code at {at} still "
                                    "imports it from its old path", kind="module-moved"))
                continue
            if target == UNKNOWN:
                for ch, wf in w.methods.get(qual[0], ()):
                    if registry.language(wf.lang) is rd.language and \
                            _target(wf) in rd.imported():
                        hits.append((ch, wf, True, True, call))
            else:
                for wf in w.by_target.get(target, ()):
                    q_here = qual
                    if target != _target(wf):  # a package's re-export of wf's name
                        got_alias = w.alias.get((target, qual[0])) if qual else None
                        if got_alias is None or got_alias[0] is not wf:
                            continue
                        q_here = (got_alias[1], *qual[1:])
                    found = _lookup(wf, q_here)
                    if found is None:
                        continue
                    q, exact = found
                    chg = wf.changed.get(q)
                    if exact and call is not None and wf.old_defs.get(q, [""])[0] == "class":
                        ctor = registry.language(wf.lang).constructor
                        init = wf.changed.get(f"{q}.{ctor}") if ctor else None
                        if init is not None and init.how == "signature":
                            chg, via_class = init, False
                    if chg is not None and not (fc.dest == wf.path
                                                and q in own.get(fc.dest, {})):
                        hits.append((chg, wf, exact, False, call))
            for ch, wf, exact, unknown_recv, c in hits:
                if len(chain) == 1 and _shadowed(chain[0], line, ch, facts, fc, writer, read,
                                                 cache):
                    continue
                got2 = evaluate(ch, wf, c, exact, via_class, unknown_recv,
                                bool(type_only or _type_only_bind(facts, chain[0])), at)
                if got2 is None:
                    continue
                kind, detail = got2
                span = (ch.new or ch.old)[3:5]
                _keep(best, Finding("symbol", _score(kind), wf.path,
                                    fc.dest, (tuple(span),), ((line, line),), detail,
                                    kind=kind), ch.qual)
    return list(best.values()), unknown


def _enclosing(defs: dict[str, Def], line: int) -> str | None:
    """The innermost definition of a file (module- or class-level) whose lines hold
    ``line``."""
    best = None
    for q, d in defs.items():
        if d[3] <= line <= d[4] and (best is None or d[3] >= defs[best][3]):
            best = q
    return best


def _shadowed(name: str, line: int, ch: Changed, facts: Facts, fc: FileChange,
              writer: WorkingSet, read: Callable[[str], bytes], cache: dict[str, Facts]
              ) -> bool:
    """Whether the use of the bare ``name`` at ``line`` of the reader's file may not reach
    the changed definition at all: the function around it takes a parameter of that name (in
    the reader's version), or -- for a removal -- the writer's own version of that function
    still uses the name, so there it is bound in the function (a parameter or a local now
    stands in for the removed definition: rtk:2397379bfac7) or the writer's code lost it
    by itself, not through this use."""
    q = _enclosing(facts["defs"], line)
    if q is None:
        return False
    params = facts["defs"][q][5]
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    if params is not None and word.search(json.dumps(params)):
        return True
    if ch.how != "removed":
        return False
    mine = writer.files.get(fc.path)  # the writer's version of the reader's file
    if mine is not None and mine.status == "D":
        return False
    path, oid = (mine.dest, mine.new_oid) if mine is not None else (fc.path, fc.old_oid)
    theirs = writes.facts(cache, read, path, oid) if oid else None
    d = theirs["defs"].get(q) if theirs is not None else None
    if theirs is None or d is None:
        return False
    return any(c[0] == name and d[3] <= ln <= d[4] for c, ln, _call, _t in theirs["refs"])


def _type_only_bind(facts: Facts, local: str) -> bool:
    recs = [b for b in facts["binds"] if b[0] == local]
    return bool(recs) and all(b[6] for b in recs)


def _score(kind: str) -> float:
    # a fact of both live trees: no recency decay (see proximity.channels)
    return calibration.probability("symbol", kind, DEFAULTS[kind])


def _keep(best: dict[tuple[str, str, str], Finding], f: Finding, qual: str = "") -> None:
    key = (f.path_a, qual, f.path_b)
    if key not in best or f.score > best[key].score:
        best[key] = f


Merged = FactsOf  # path -> the merged program's facts


def channel(read: Callable[[str], bytes], a: WorkingSet, b: WorkingSet,
            cache: dict[str, Facts], graph: Imports | None = None,
            resolver: Resolver | None = None,
            merged: Merged | None = None, base_facts: Merged | None = None
            ) -> tuple[float | None, list[Finding]]:
    """The symbol channel for one pair: the strongest finding both ways, or ``None`` when
    nothing was found and a file it needed did not parse. ``merged``: the facts of a file
    as git's clean merge of the two sides leaves it; a use the merged code no longer has
    (git's merge removed it, or carried the other side's edit through a rename) breaks
    nothing. ``base_facts``: the facts of a file in the pair's base (packages' re-exports
    are read there)."""
    if resolver is None:
        resolver = Resolver({p for ws in (a, b) for fc in ws.files.values() for p in fc.paths})
    fa, ua = _one_way(read, a, b, cache, graph, resolver, merged, base_facts)
    fb, ub = _one_way(read, b, a, cache, graph, resolver, merged, base_facts)
    findings = [x for x in fa + [f.swapped() for f in fb] if x.score > 0]
    findings.sort(key=lambda f: -f.score)
    if not findings:
        return (None if ua or ub else 0.0), []
    return findings[0].score, findings[:5]
