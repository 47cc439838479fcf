"""What a source file imports, as written (unresolved), per language.

Records are plain lists so they can be cached per blob id: ``["py", module, level, names]``,
``["js", specifier]``, ``["go", import path]``, ``["rs", "mod", name]`` / ``["rs", "use", path]``.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from proximity.analysis import parsers

Record = list[Any]
FORMAT = "i1"  # bump when extraction changes, so cached records of older versions are unused

JS_QUERY = """
(import_statement source: (string) @s)
(export_statement source: (string) @s)
(call_expression function: (identifier) @f arguments: (arguments . (string) @s))
(call_expression function: (import) arguments: (arguments . (string) @s))
"""
GO_QUERY = "(import_spec path: (_) @s)"
RS_QUERY = """
(mod_item name: (identifier) @m !body)
(use_declaration argument: (_) @u)
"""
PY_FALLBACK = re.compile(
    rb"^\s*(?:from\s+(\.*)([\w.]*)\s+import\s+([\w*, ()]+)|import\s+([\w., ]+))", re.M)


def extract(path: str, data: bytes) -> list[Record]:
    lang = parsers.language_of(path)
    if lang is None or b"\0" in data[:8000] or parsers.generated(data):
        return []
    if lang == "python":
        return _python(data)
    if lang in ("javascript", "typescript", "tsx"):
        return _js(lang, data)
    if lang == "go":
        return _go(data)
    if lang == "rust":
        return _rust(data)
    return []


def _python(data: bytes) -> list[Record]:
    out: list[Record] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        for m in PY_FALLBACK.finditer(data):
            if m.group(4):
                for mod in m.group(4).decode(errors="replace").split(","):
                    out.append(["py", mod.split(" as ")[0].strip(), 0, []])
            else:
                names = [n.strip().split(" as ")[0] for n in
                         m.group(3).decode(errors="replace").strip("() ").split(",")]
                out.append(["py", m.group(2).decode(errors="replace"), len(m.group(1)),
                            [n for n in names if n]])
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(["py", alias.name, 0, []] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append(["py", node.module or "", node.level, [a.name for a in node.names]])
    return out


def _strip(s: str) -> str:
    return s.strip().strip("'\"`")


def _js(lang: str, data: bytes) -> list[Record]:
    tree = parsers.parse(lang, data)
    caps = parsers.captures(lang, JS_QUERY, tree.root_node)
    fnames = {(n.start_byte, n.end_byte) for n in caps.get("f", [])}
    out: list[Record] = []
    for node in caps.get("s", []):
        call = node.parent.parent if node.parent is not None else None
        if call is not None and call.type == "call_expression":
            fn = call.child_by_field_name("function")
            if fn is not None and fn.type == "identifier" and (
                parsers.text(fn) != "require" or (fn.start_byte, fn.end_byte) not in fnames
            ):
                continue
        out.append(["js", _strip(parsers.text(node))])
    return out


def _go(data: bytes) -> list[Record]:
    tree = parsers.parse("go", data)
    return [["go", _strip(parsers.text(n))] for n in
            parsers.captures("go", GO_QUERY, tree.root_node).get("s", [])]


def _rust(data: bytes) -> list[Record]:
    tree = parsers.parse("rust", data)
    caps = parsers.captures("rust", RS_QUERY, tree.root_node)
    out: list[Record] = [["rs", "mod", parsers.text(n)] for n in caps.get("m", [])]
    for n in caps.get("u", []):
        path = re.sub(r"\s+", "", parsers.text(n)).split("{")[0].rstrip(":")
        out.append(["rs", "use", path.split(" as ")[0]])
    return out
