"""Symbol channel: a read/write hazard at a distance.

For each changed file, compare the definitions in the base blob and the new blob: a symbol
is ``removed``, changed in ``signature``, in ``value`` (module-level constants), or only in
``body``. Then collect the identifiers used in the *added* lines of the other side. A hit is
one side changing the interface of a symbol that the other side's new code uses:

* removed / signature / value change used by the other side: 1.0
* a definition in the same file that uses such a changed symbol (``indirect``: the
  behaviour of ``total()`` changes when the constant it reads does): 0.5
* body-only change used by the other side: 0.2 (behaviour may shift; callers still fit)
* both only reading a symbol: 0

damped by how the two files relate (same file or an import between them: 1.0; two hops: 0.6;
same directory: 0.8; unrelated: 0.25, a name coincidence is likely) and, unless an import
ties the two files, for ambient names (``get``, ``run``, ``__init__``…) that occur
everywhere (x0.3).

Definitions and identifier positions are cached per blob id, so a scan re-parses only
blobs it has not seen.
"""

from __future__ import annotations

import ast
import hashlib
import posixpath
import warnings
from collections.abc import Callable
from typing import Any

from proximity import intervals, parsers
from proximity.model import FileChange, Finding, WorkingSet

AMBIENT = frozenset((
    "__init__", "__call__", "__repr__", "__str__", "__eq__", "__hash__", "self", "cls", "this",
    "get", "set", "run", "main", "init", "new", "New", "String", "Error", "close", "open",
    "read", "write", "start", "stop", "name", "value", "data", "key", "id", "type", "len", "str",
    "int", "list", "dict", "print", "super", "test", "setUp", "tearDown", "err", "ctx", "fmt",
    "log", "Ok", "Some", "None", "Err", "Vec", "map",
))
FORMAT = "s2"  # bump when analysis changes, so cached results of older versions are unused
INTERFACE = {"removed": 1.0, "signature": 1.0, "value": 1.0, "indirect": 0.5, "body": 0.2}

TS_DEFS = {
    "javascript": ("function_declaration", "generator_function_declaration", "class_declaration",
                   "method_definition", "variable_declarator"),
    "typescript": ("function_declaration", "class_declaration", "method_definition",
                   "variable_declarator", "interface_declaration", "type_alias_declaration",
                   "enum_declaration", "abstract_class_declaration", "method_signature"),
    "go": ("function_declaration", "method_declaration", "type_spec", "const_spec", "var_spec"),
    "rust": ("function_item", "struct_item", "enum_item", "const_item", "static_item",
             "trait_item", "type_item", "function_signature_item"),
}
TS_DEFS["tsx"] = TS_DEFS["typescript"]
IDENT_TYPES = frozenset(("identifier", "property_identifier", "field_identifier",
                         "type_identifier", "shorthand_property_identifier",
                         "shorthand_property_identifier_pattern", "package_identifier"))

Defs = dict[str, list[Any]]  # name -> [kind, signature hash, body hash, first, last line]
Idents = list[tuple[str, int]]  # (name, 1-based line)


def _h(s: str) -> str:
    return hashlib.blake2b(" ".join(s.split()).encode(), digest_size=8).hexdigest()


def _py(data: bytes) -> tuple[Defs, Idents]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(data)
    defs: Defs = {}
    for node in tree.body:
        _py_def(node, "", defs)
    idents: Idents = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            idents.append((n.id, n.lineno))
        elif isinstance(n, ast.Attribute):
            idents.append((n.attr, getattr(n, "end_lineno", n.lineno) or n.lineno))
        elif isinstance(n, ast.ImportFrom):
            idents.extend((a.name, n.lineno) for a in n.names)
        elif isinstance(n, ast.keyword) and n.arg:
            idents.append((n.arg, n.value.lineno))
    return defs, idents


def _py_def(node: ast.AST, prefix: str, defs: Defs) -> None:
    span = [getattr(node, "lineno", 0), getattr(node, "end_lineno", 0) or 0]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        sig = ast.unparse(node.args) + "->" + (ast.unparse(node.returns) if node.returns else "")
        sig += "|" + ",".join(ast.unparse(d) for d in node.decorator_list)
        defs[prefix + node.name] = ["function", _h(sig),
                                    _h(ast.dump(ast.Module(node.body, []))), *span]
    elif isinstance(node, ast.ClassDef):
        bases = ",".join(ast.unparse(b) for b in node.bases)
        defs[prefix + node.name] = ["class", _h(bases), _h(ast.dump(node)), *span]
        for child in node.body:
            _py_def(child, prefix + node.name + ".", defs)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not prefix:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = ast.unparse(node.value) if node.value is not None else ""
        for t in targets:
            if isinstance(t, ast.Name):
                defs[t.id] = ["constant", _h(value), _h(value), *span]


def _ts(lang: str, data: bytes) -> tuple[Defs, Idents]:
    tree = parsers.parse(lang, data)
    defs: Defs = {}
    idents: Idents = []
    wanted = TS_DEFS[lang]
    stack = [(tree.root_node, "")]
    while stack:
        node, prefix = stack.pop()
        t = node.type
        if t in IDENT_TYPES:
            idents.append((parsers.text(node), node.start_point[0] + 1))
        name_prefix = prefix
        if t in wanted:
            name_node = node.child_by_field_name("name")
            if name_node is not None and name_node.type in IDENT_TYPES | {"identifier"}:
                name = parsers.text(name_node)
                body = node.child_by_field_name("body") or node.child_by_field_name("value")
                full = parsers.text(node)
                span = [node.start_point[0] + 1, node.end_point[0] + 1]
                if body is not None:
                    sig = full[: body.start_byte - node.start_byte]
                    kind = "function" if "function" in t or "method" in t else "symbol"
                    if t in ("variable_declarator", "const_spec", "var_spec", "const_item",
                             "static_item"):
                        kind, sig = "constant", full
                        if t == "variable_declarator" and body.type in (
                                "arrow_function", "function_expression", "function"):
                            kind = "function"  # const f = (a, b) => …: a function
                            sig = full[: body.start_byte - node.start_byte] + _params(body)
                    defs[prefix + name] = [kind, _h(sig), _h(parsers.text(body)), *span]
                else:
                    defs[prefix + name] = ["symbol", _h(full), _h(full), *span]
                if "class" in t or t in ("struct_item", "trait_item", "impl_item"):
                    name_prefix = prefix + name + "."
        stack.extend((c, name_prefix) for c in node.children)
    return defs, idents


def _params(fn: Any) -> str:
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    return parsers.text(params) if params is not None else ""


def analyse(path: str, data: bytes) -> dict[str, Any]:
    lang = parsers.language_of(path)
    if lang is None or b"\0" in data[:8000]:
        return {"defs": {}, "idents": []}
    try:
        defs, idents = _py(data) if lang == "python" else _ts(lang, data)
    except (SyntaxError, ValueError, RecursionError):
        try:
            defs, idents = _ts("python", data) if lang == "python" else ({}, [])
        except Exception:
            defs, idents = {}, []
    return {"defs": defs, "idents": [list(x) for x in idents]}


def _get(cache: dict[str, Any], read: Callable[[str], bytes], path: str, oid: str
         ) -> dict[str, Any]:
    if not oid:
        return {"defs": {}, "idents": []}
    key = f"{FORMAT}:{parsers.language_of(path)}:{oid}"
    hit = cache.get(key)
    if hit is None:
        hit = analyse(path, read(oid))
        cache[key] = hit
    return hit


# Per-change results depend only on the change (blob ids are content addresses), so they
# are shared by every pair a scan compares: one computation per agent and file, not per pair.
_MEMO: dict[tuple[str, FileChange], Any] = {}
_MEMO_MAX = 50_000


def _memo(kind: str, fc: FileChange, compute: Callable[[], Any]) -> Any:
    key = (kind, fc)
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) > _MEMO_MAX:
            _MEMO.clear()
        hit = _MEMO[key] = compute()
    return hit


def changed_defs(fc: FileChange, read: Callable[[str], bytes], cache: dict[str, Any]
                 ) -> dict[str, str]:
    """qualified name -> how it changed (removed | signature | value | body | indirect)."""
    if fc.kind != "text" or parsers.language_of(fc.path) is None:
        return {}
    return _memo("defs", fc, lambda: _changed_defs(fc, read, cache))  # type: ignore[no-any-return]


def _changed_defs(fc: FileChange, read: Callable[[str], bytes], cache: dict[str, Any]
                  ) -> dict[str, str]:
    old = _get(cache, read, fc.path, fc.old_oid)["defs"]
    new_info = _get(cache, read, fc.dest, fc.new_oid)
    new = new_info["defs"]
    out: dict[str, str] = {}
    for name, (kind, sig, body, *_) in old.items():
        if name not in new:
            out[name] = "removed"
        elif new[name][1] != sig:
            out[name] = "value" if kind == "constant" else "signature"
        elif new[name][2] != body:
            out[name] = "body"
    # one level of propagation inside the file: a definition whose body reads a symbol
    # whose interface changed behaves differently too (total() reads RATE)
    hard = {q.rsplit(".", 1)[-1] for q, how in out.items() if how != "body"}
    if hard:
        for name, (_, _, _, *span) in new.items():
            if name in out or len(span) < 2:
                continue
            lo, hi = span
            if any(n in hard and lo <= line <= hi and n != name.rsplit(".", 1)[-1]
                   for n, line in new_info["idents"]):
                out[name] = "indirect"
    return out


def uses(fc: FileChange, read: Callable[[str], bytes], cache: dict[str, Any]
         ) -> dict[str, int]:
    """identifier -> first line where the added lines of this change use it."""
    if fc.kind != "text" or not fc.new_oid or parsers.language_of(fc.dest) is None:
        return {}
    return _memo("uses", fc, lambda: _uses(fc, read, cache))  # type: ignore[no-any-return]


def _uses(fc: FileChange, read: Callable[[str], bytes], cache: dict[str, Any]
          ) -> dict[str, int]:
    idents = _get(cache, read, fc.dest, fc.new_oid)["idents"]
    spans = intervals.pad(r for r in fc.new_ranges if r[1] >= r[0])
    out: dict[str, int] = {}
    if fc.status == "A":
        spans = [(0, 10**12)]
    for name, line in idents:
        for lo, hi in spans:
            if lo < line < hi:
                out.setdefault(name, line)
                break
    return out


def _relation(graph: Any, f: str, g: str) -> float:
    if f == g:
        return 1.0
    if graph is not None and (graph.imports(f, g) or graph.imports(g, f)):
        return 1.0
    if posixpath.dirname(f) == posixpath.dirname(g):
        return 0.8
    if graph is not None and graph.neighbors(f) & graph.neighbors(g):
        return 0.6
    return 0.25


def _one_way(read: Callable[[str], bytes], writer: WorkingSet, reader: WorkingSet,
             cache: dict[str, Any], graph: Any) -> list[Finding]:
    changed: dict[str, list[tuple[str, str, str]]] = {}
    for fc in writer.files.values():
        for qual, how in changed_defs(fc, read, cache).items():
            short = qual.rsplit(".", 1)[-1]
            changed.setdefault(short, []).append((qual, how, fc.dest))
    if not changed:
        return []
    found: list[Finding] = []
    for fc in reader.files.values():
        own = set(changed_defs(fc, read, cache)) if fc.status != "A" else set()
        for name, line in uses(fc, read, cache).items():
            for qual, how, where in changed.get(name, ()):
                if qual in own and where == fc.dest:
                    continue
                rel = _relation(graph, where, fc.dest)
                s = INTERFACE[how] * rel
                if rel < 1.0 and (name in AMBIENT or len(name) <= 2):
                    s *= 0.3  # a common name, and no import ties the two files: coincidence?
                s *= writer.weight(where) * reader.weight(fc.dest)
                found.append(Finding(
                    "symbol", s, where, fc.dest, (), ((line, line),),
                    f"{qual} ({how} change) in {where} is used by new code at "
                    f"{fc.dest}:{line}"))
    return found


def channel(read: Callable[[str], bytes], a: WorkingSet, b: WorkingSet,
            cache: dict[str, Any], graph: Any = None) -> tuple[float, list[Finding]]:
    findings = _one_way(read, a, b, cache, graph)
    findings += [f.swapped() for f in _one_way(read, b, a, cache, graph)]
    findings.sort(key=lambda f: -f.score)
    return (findings[0].score if findings else 0.0), findings[:5]
