"""Rust, read with tree-sitter.

Imports are ``["rs", "mod", name]`` for a ``mod name;`` item (its file beside the module,
or in the module's directory) and ``["rs", "use", path]`` for a ``use`` path
(``crate::``, ``self::``, ``super::``, or the 2018 form: a submodule's name). An
associated function is ``Type.name``. A parent module offers the names its ``pub use``
brings in: ``crate::util::parse`` reaches ``parse`` of ``src/util/text.rs`` through
``pub use self::text::parse`` in ``src/util/mod.rs``. A call binds by its parameter types
in order and its result (``symbols/calls.py``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from proximity.analysis import parsers
from proximity.analysis.languages import base
from proximity.analysis.symbols import reexports, tslang
from proximity.analysis.symbols.calls import typed_binding
from proximity.analysis.symbols.tsimports import bind
from proximity.analysis.symbols.tslang import CONSTANT, FUNCTION, SYMBOL

if TYPE_CHECKING:  # tree-sitter loads with the first grammar, not with this module
    from tree_sitter import Node

TAG = "rs"
ROOTS = ("lib.rs", "main.rs")  # a crate's root module
DIRECTORY_FILES = ("mod", "lib", "main")  # stems of a file that is its directory's module


def _grammar() -> object:
    import tree_sitter_rust

    return tree_sitter_rust.language()


GRAMMAR = parsers.Grammar("rust", _grammar)
IMPORTS = """
(mod_item name: (identifier) @m !body)
(use_declaration argument: (_) @u)
"""


def imports(dialect: str, data: bytes) -> list[base.Record]:
    tree = parsers.parse(GRAMMAR, data)
    caps = parsers.captures(GRAMMAR, IMPORTS, tree.root_node)
    out: list[base.Record] = [[TAG, "mod", parsers.text(n)] for n in caps.get("m", [])]
    for n in caps.get("u", []):
        path = re.sub(r"\s+", "", parsers.text(n)).split("{")[0].rstrip(":")
        out.append([TAG, "use", path.split(" as ")[0]])
    return out


def resolver(paths: AbstractSet[str], roots: Mapping[str, str]) -> base.Resolve:
    def resolve(src: str, rec: base.Record) -> list[str]:
        kind, path = rec[1], rec[2]
        d = posixpath.dirname(src)
        stem = posixpath.basename(src)[:-3]
        if kind == "mod":
            base = d if stem in DIRECTORY_FILES else posixpath.join(d, stem)
            for c in (f"{base}/{path}.rs", f"{base}/{path}/mod.rs"):
                if c in paths:
                    return [c]
            return []
        parts = [p for p in path.split("::") if p]
        if not parts:
            return []
        if parts[0] == "crate":
            root = d
            while root and posixpath.basename(root) != "src":
                root = posixpath.dirname(root)
            base, parts = (root or d), parts[1:]
        elif parts[0] in ("super", "self"):
            is_root = stem in DIRECTORY_FILES  # the file is its directory's module
            if parts[0] == "self":
                base = d if is_root else posixpath.join(d, stem)
            else:
                base = posixpath.dirname(d) if is_root else d
            parts = parts[1:]
        else:
            return []
        for k in range(len(parts), 0, -1):
            stem_path = posixpath.join(base, *parts[:k])
            for c in (f"{stem_path}.rs", f"{stem_path}/mod.rs"):
                if c in paths:
                    return [c]
        return []

    return resolve


# -- definitions and imports -------------------------------------------------------------------

def _implemented(defs: tslang.Defs, node: Node, prefix: str) -> None:
    """``impl T { fn f() }`` defines ``T.f``; a trait is a definition and holds its own."""
    name = node.child_by_field_name("name")
    owner = node.child_by_field_name("type") if node.type == "impl_item" else name
    if node.type == "trait_item":
        defs.add(name, tslang.entry(SYMBOL, node), prefix)
    body = node.child_by_field_name("body")
    if owner is not None and body is not None:
        defs.walk(body, parsers.text(owner).split("<")[0] + ".")


def _params(node: Node) -> tuple[str, base.Params]:
    return tslang.typed_params(node, "return_type")


def _binds(grammar: parsers.Grammar, root: Node, out: base.Facts) -> None:
    """``mod name;`` binds the module; ``use`` binds each path's last name (or alias);
    ``pub use`` (any visibility) also offers it."""
    query = "(mod_item) @n (use_declaration) @n"
    for n in sorted(parsers.captures(grammar, query, root).get("n", []),
                    key=lambda x: x.start_byte):
        if n.type == "mod_item" and n.child_by_field_name("body") is None:
            nm = n.child_by_field_name("name")
            if nm is not None:
                bind(out, nm, "mod", parsers.text(nm), "", n)
        elif n.type == "use_declaration":
            arg = n.child_by_field_name("argument")
            if arg is not None:
                offers = any(c.type == "visibility_modifier" for c in n.children)
                _use(out, arg, "", n, offers)


def _squashed(node: Node) -> str:
    return re.sub(r"\s+", "", parsers.text(node))


def _use(out: base.Facts, node: Node, prefix: str, decl: Node, offers: bool) -> None:
    t = node.type
    join = (prefix + "::") if prefix else ""
    if t in ("identifier", "scoped_identifier", "crate", "self", "super"):
        path = join + _squashed(node)
        local = path.rsplit("::", 1)[-1]
        bind(out, local, "use", path, "", decl)
        if offers:
            _offer(out, local, path)
    elif t == "use_as_clause":
        p, al = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if p is not None and al is not None:
            path = join + _squashed(p)
            bind(out, al, "use", path, "", decl)
            if offers:
                _offer(out, parsers.text(al), path)
    elif t == "use_wildcard":
        path = join + _squashed(node).removesuffix("::*")
        if offers and path:
            out["reexports"].append(["*", path, "*"])
    elif t == "scoped_use_list":
        p, lst = node.child_by_field_name("path"), node.child_by_field_name("list")
        base = join + _squashed(p) if p is not None else prefix
        if lst is not None:
            _use(out, lst, base, decl, offers)
    elif t == "use_list":
        for c in node.named_children:
            _use(out, c, prefix, decl, offers)


def _offer(out: base.Facts, local: str, path: str) -> None:
    """``pub use PATH [as LOCAL]``: the module offers that item of another module."""
    if "::" in path:
        out["reexports"].append([local, *path.rsplit("::", 1)])


SYNTAX = tslang.Syntax(
    leaves=frozenset(("crate", "field_identifier", "identifier", "self", "super",
                      "type_identifier")),
    links={"field_expression": ("value", "field"), "scoped_identifier": ("path", "name")},
    calls={"call_expression": "function"},
    spreads=frozenset(), numbers=frozenset(("float_literal", "integer_literal")),
    skip_fields=frozenset(("alias", "name", "parameters", "pattern", "return_type", "type")),
    skip_nodes=frozenset(("closure_parameters", "mod_item", "parameters", "type_arguments",
                          "use_declaration")),
    defs={"function_item": FUNCTION, "function_signature_item": FUNCTION,
          "const_item": CONSTANT, "static_item": CONSTANT, "struct_item": SYMBOL,
          "enum_item": SYMBOL, "type_item": SYMBOL},
    readers={"impl_item": _implemented, "trait_item": _implemented},
    params=_params, binds=_binds,
)


def analyse(dialect: str, data: bytes) -> base.Facts | None:
    return tslang.analyse(GRAMMAR, SYNTAX, data)


# -- reading paths -----------------------------------------------------------------------------

def use_path(rd: base.Lookup, module: str) -> base.Target | None:
    """A ``use`` path (``crate::a::b``, ``self::x``, or the 2018 form ``x::y``, a
    submodule's name) -> (the file of its module, the names left in it)."""
    parts = module.split("::")
    if parts[0] not in ("crate", "self", "super"):
        parts = ["self", *parts]
    return _path(rd, parts)


def _path(rd: base.Lookup, parts: list[str]) -> base.Target | None:
    """``crate::a::b::name`` -> (the file of module a::b, ("name",))."""
    for k in range(len(parts), 1, -1):
        p = rd.first([TAG, "use", "::".join(parts[:k])])
        stem = posixpath.basename(p)[:-3] if p else ""
        if p and (stem == parts[k - 1] or (stem == "mod" and posixpath.basename(
                posixpath.dirname(p)) == parts[k - 1])):
            return p, tuple(parts[k:]), False
    return None


def through(rd: base.Lookup, rec: base.Bind, chain: list[str]) -> tuple[str, list[str]] | None:
    kind, module = rec[1], rec[2]
    rest = chain[1:]
    if kind == "mod":
        p = rd.first([TAG, "mod", module])
        while p and len(rest) >= 2:  # util::fmt::pad -> src/util/fmt.rs, pad
            deeper = rd.resolve(p, [TAG, "mod", rest[0]])
            if not deeper:
                break
            p, rest = deeper[0], rest[1:]
        return (p, rest) if p else None
    got = use_path(rd, module)
    if got is None:
        return None
    return got[0], [*got[1], *rest]


def scope(rd: base.Lookup, chain: list[str]) -> base.Target | None:
    """``crate::…``, ``self::…``, ``super::…`` are paths; anything else, the file's own."""
    if chain[0] in ("crate", "self", "super"):
        return _path(rd, chain)
    return base.file_scope(rd, chain)


def parents(path: str, paths: AbstractSet[str]) -> list[str]:
    """The files of the modules that hold the module file ``path``, nearest first:
    ``src/util/text.rs`` -> ``src/util/mod.rs`` (or ``src/util.rs``) -> ``src/lib.rs``."""
    out: list[str] = []
    cur = path
    for _ in range(8):
        base = posixpath.basename(cur)
        if base in ROOTS:
            break
        d = posixpath.dirname(cur)
        if base == "mod.rs":
            d = posixpath.dirname(d)  # the module is its directory: its parent holds it
        pre = f"{d}/" if d else ""
        parent = next((c for c in (f"{pre}mod.rs", f"{d}.rs" if d else "",
                                   *(pre + r for r in ROOTS))
                       if c and c != cur and c in paths), None)
        if parent is None:
            break
        out.append(parent)
        cur = parent
    return out


def offered(rd: base.Lookup, facts: base.Facts, path: str, names: dict[str, str],
            base_facts: base.FactsOf) -> dict[str, str]:
    """The names a module offers from the module file ``path`` by ``pub use``
    (``pub use self::text::{parse as p}``, ``pub use text::*``) -> their names there."""
    def is_path(module: str) -> bool:
        got = use_path(rd, module)
        return got is not None and got[0] == path and not got[1]

    return reexports.recorded(facts, names, is_path)


LANGUAGE = base.Language(
    name="rust", title="Rust", tag=TAG, dialects={".rs": "rust"}, grammars={"rust": GRAMMAR},
    imports=imports, resolver=resolver, analyse=analyse, through=through,
    binding=typed_binding, scope=scope, package_file="mod",
    modifiers=(r"pub(?:\([^)]*\))?", "async"),
    definers=("fn", "struct", "enum", "trait", "type"), declarers=("const", "static"),
    reexports=base.Reexports(parents, offered),
)
