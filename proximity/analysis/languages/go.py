"""Go, read with tree-sitter.

A package is a directory: its files share one namespace, so a definition may move between
them without going anywhere, and a name the file does not import is its package's. Imports
are ``["go", import path]``; a path resolves through the module path each ``go.mod``
declares to the package directory's files (tests left out). A call binds by its
parameter types in order and its result (``symbols/calls.py``); a method is ``Type.Name``.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from proximity.analysis import parsers
from proximity.analysis.languages import base
from proximity.analysis.symbols import tslang
from proximity.analysis.symbols.calls import typed_binding
from proximity.analysis.symbols.tsimports import bind, unquote, walk
from proximity.analysis.symbols.tslang import CONSTANT, FUNCTION, GROUP, METHOD, SYMBOL

if TYPE_CHECKING:  # tree-sitter loads with the first grammar, not with this module
    from tree_sitter import Node

TAG = "go"


def _grammar() -> object:
    import tree_sitter_go

    return tree_sitter_go.language()


GRAMMAR = parsers.Grammar("go", _grammar)


def imports(dialect: str, data: bytes) -> list[base.Record]:
    tree = parsers.parse(GRAMMAR, data)
    return [[TAG, parsers.text(n).strip().strip("'\"`")] for n in
            parsers.captures(GRAMMAR, "(import_spec path: (_) @s)", tree.root_node).get("s", [])]


def module_path(data: bytes) -> str | None:
    """The module path a ``go.mod`` declares."""
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("module "):
            return line.split()[1].strip('"')
    return None


def resolver(paths: AbstractSet[str], roots: Mapping[str, str]) -> base.Resolve:
    dirs: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        if p.endswith(".go") and not p.endswith("_test.go"):
            dirs[posixpath.dirname(p)].append(p)
    longest_first = sorted(roots.items(), key=lambda kv: -len(kv[1]))

    def resolve(src: str, rec: base.Record) -> list[str]:
        path = rec[1]
        for root, mod in longest_first:
            if path == mod or path.startswith(mod + "/"):
                rel = path[len(mod):].lstrip("/")
                d = posixpath.join(root, rel) if root else rel
                return sorted(dirs.get(posixpath.normpath(d) if d else "", []))[:50]
        return []

    return resolve


def _method(defs: tslang.Defs, node: Node, prefix: str) -> None:
    """``func (r *T) Name(...)``: ``T.Name``."""
    recv = node.child_by_field_name("receiver")
    types = [n for n in walk(recv) if n.type == "type_identifier"] if recv is not None else []
    pre = parsers.text(types[0]) + "." if types else ""
    defs.add(node.child_by_field_name("name"), defs.function(node, METHOD), pre)


def _params(node: Node) -> tuple[str, base.Params]:
    return tslang.typed_params(node, "result")


def _binds(grammar: parsers.Grammar, root: Node, out: base.Facts) -> None:
    """Each import spec binds its package name (its alias, else the path's last part that
    is not a major version, ``-`` read as ``_``); ``_`` and ``.`` bind none."""
    for n in sorted(parsers.captures(grammar, "(import_spec) @n", root).get("n", []),
                    key=lambda x: x.start_byte):
        path = unquote(tslang.required(n, "path"))
        nm = n.child_by_field_name("name")
        parts = path.split("/")
        default = parts[-2] if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]) \
            else parts[-1]
        local = parsers.text(nm) if nm is not None else default.replace("-", "_")
        if local not in ("_", "."):
            bind(out, local, "mod", path, "", n)


SYNTAX = tslang.Syntax(
    leaves=frozenset(("field_identifier", "identifier", "package_identifier",
                      "type_identifier")),
    links={"selector_expression": ("operand", "field")},
    calls={"call_expression": "function"},
    spreads=frozenset(("variadic_argument",)),
    numbers=frozenset(("float_literal", "imaginary_literal", "int_literal", "rune_literal")),
    skip_fields=frozenset(("alias", "key", "label", "name", "parameters", "receiver",
                           "result", "type")),
    skip_nodes=frozenset(("comment", "import_declaration", "package_clause", "parameter_list",
                          "type_arguments")),
    defs={"function_declaration": FUNCTION, "type_declaration": GROUP,
          "const_declaration": GROUP, "var_declaration": GROUP, "const_spec": CONSTANT,
          "var_spec": CONSTANT, "type_spec": SYMBOL},
    readers={"method_declaration": _method},
    params=_params, binds=_binds,
)


def analyse(dialect: str, data: bytes) -> base.Facts | None:
    return tslang.analyse(GRAMMAR, SYNTAX, data)


def through(rd: base.Lookup, rec: base.Bind, chain: list[str]) -> tuple[str, list[str]] | None:
    p = rd.first([TAG, rec[2]])
    return (base.PACKAGE + posixpath.dirname(p), chain[1:]) if p else None


def scope(rd: base.Lookup, chain: list[str]) -> base.Target | None:
    """A bare name no import binds is its package's (any file of the directory)."""
    if len(chain) == 1:
        return base.PACKAGE + posixpath.dirname(rd.src), (chain[0],), False
    return base.receiver(chain)


LANGUAGE = base.Language(
    name="go", title="Go", tag=TAG, dialects={".go": "go"}, grammars={"go": GRAMMAR},
    imports=imports, resolver=resolver, analyse=analyse, through=through,
    binding=typed_binding, scope=scope, namespace="directory",
    manifest=base.Manifest("go.mod", module_path),
    definers=("func", "type"), declarers=("const", "var"),
)
