"""Definitions, imports and references from a tree-sitter tree, for any grammar a language
describes with a ``Syntax`` (its node types and fields, and its own readings where the
shape of a definition is its own).

Same plain data as ``pylang.analyse``: ``defs`` (module- and class-level only; a method
reached through its type is ``Type.name``), ``binds`` and ``exports``/``reexports`` (the
language's ``binds``), ``refs`` (dotted chains with their call shape), ``aliases`` (an
exported name -> its definition) and ``dynamic`` (a module that offers every name). A tree
with a syntax error or conflict markers is ``None``: unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from proximity.analysis import parsers
from proximity.analysis.languages.base import Def, Facts, Params, Ref
from proximity.analysis.parsers import Grammar
from proximity.analysis.symbols.common import h

if TYPE_CHECKING:  # tree-sitter loads with the first grammar, not with this module
    from tree_sitter import Node

MARKERS = re.compile(rb"^(<<<<<<<|>>>>>>>)( |$)", re.M)

# what a definition's node is, for the walker (``Syntax.defs``)
FUNCTION = "function"  # a method inside a type, a function at the top
METHOD = "method"
CLASS = "class"  # a class: its body holds its methods
GROUP = "group"  # a declaration holding several: each is read as a definition
CONSTANT = "constant"
SYMBOL = "symbol"  # a named type, interface, field...: changed when its text changes


class Syntax(NamedTuple):
    """What one language's grammar calls the things the analysis reads."""

    leaves: frozenset[str]  # node types that start a chain: `a` of `a.b`
    links: Mapping[str, tuple[str, str]]  # node type of `a.b` -> (field of a, field of b)
    calls: Mapping[str, str]  # node type of a call -> the field of what it calls
    spreads: frozenset[str]  # an argument that passes any number of them
    numbers: frozenset[str]  # number literals (a constant that takes any numeric type)
    skip_fields: frozenset[str]  # fields whose identifiers are not uses (a name defined)
    skip_nodes: frozenset[str]  # subtrees that hold no use (imports, comments, strings)
    defs: Mapping[str, str]  # node type -> what it defines (FUNCTION, CLASS...)
    # node type -> the language's own reading of such a definition (it adds to ``out``)
    readers: Mapping[str, Callable[[Defs, Node, str], None]]
    params: Callable[[Node], tuple[str, Params]]  # function -> (signature text, params)
    binds: Callable[[Grammar, Node, Facts], None]  # imports -> binds, refs, exports...
    # (root, refs) -> more refs: method uses through instances of a class
    instances: Callable[[Node, list[Ref]], list[Ref]] | None = None
    new: str = ""  # node type of `new C()`: a chain may go on through C's instance


def analyse(grammar: Grammar, syntax: Syntax, data: bytes) -> Facts | None:
    try:
        return _analyse(grammar, syntax, data)
    except Exception:  # a grammar surprise must not stop a hook: this file is unknown
        return None


def _analyse(grammar: Grammar, syntax: Syntax, data: bytes) -> Facts | None:
    if MARKERS.search(data):
        return None
    tree = parsers.parse(grammar, data)
    root = tree.root_node
    if root.has_error:
        return None
    out: Facts = {"defs": {}, "binds": [], "refs": [], "exports": [], "dynamic": False,
                  "aliases": {}, "reexports": []}
    Defs(syntax, out).walk(root, "")
    syntax.binds(grammar, root, out)
    _refs(syntax, root, out["refs"])
    if syntax.instances is not None:
        out["refs"].extend(syntax.instances(root, out["refs"]))
    return out


def span(node: Node) -> list[int]:
    return [node.start_point[0] + 1, node.end_point[0] + 1]


def entry(kind: str, node: Node) -> Def:
    """A definition whose text is its signature and its body (a type, a constant)."""
    text = parsers.text(node)
    return [kind, h(text), h(text), *span(node), None]


class Defs:
    """The walk over a tree's module- and class-level definitions into ``out["defs"]``."""

    def __init__(self, syntax: Syntax, out: Facts) -> None:
        self.syntax, self.out = syntax, out

    def walk(self, node: Node, prefix: str) -> None:
        for c in node.named_children:
            t = c.type
            reader = self.syntax.readers.get(t)
            if reader is not None:
                reader(self, c, prefix)
                continue
            role = self.syntax.defs.get(t)
            name = c.child_by_field_name("name")
            if role == FUNCTION:
                self.add(name, self.function(c, METHOD if prefix else FUNCTION), prefix)
            elif role == METHOD:
                self.add(name, self.function(c, METHOD), prefix)
            elif role == CLASS:
                self.add(name, entry(CLASS, c), prefix)
                body = c.child_by_field_name("body")
                if name is not None and body is not None:
                    self.walk(body, prefix + parsers.text(name) + ".")
            elif role == GROUP:
                self.walk(c, prefix)
            elif role == CONSTANT:
                self.add(name, entry(CONSTANT, c), prefix)
            elif role == SYMBOL and name is not None:
                self.add(name, entry(SYMBOL, c), prefix)

    def function(self, node: Node, kind: str) -> Def:
        body = node.child_by_field_name("body")
        sig, params = self.syntax.params(node)
        return [kind, h(sig), h(parsers.text(body) if body is not None else ""),
                *span(node), params]

    def add(self, name: Node | None, value: Def, prefix: str = "") -> None:
        if name is None:
            return
        ident = parsers.text(name)
        if ident == "_":  # the blank identifier (`var _ I = (*T)(nil)`) defines nothing
            return
        self.out["defs"][prefix + ident] = value


def required(node: Node, field: str) -> Node:
    """A field the grammar always fills; a tree without it is not one this reading
    knows (``analyse`` then calls the file unknown)."""
    got = node.child_by_field_name(field)
    if got is None:
        raise ValueError(f"{node.type} without {field}")
    return got


def typed_params(node: Node, result_field: str) -> tuple[str, Params]:
    """A statically typed function's signature: the parameter types in order (names left
    out: a renamed parameter changes no call), a trailing variadic's type, and the
    result (in ``result_field``)."""
    parts = [node.child_by_field_name(f) for f in ("parameters", result_field)]
    sig = " ".join(parsers.text(p) for p in parts if p is not None)
    params = node.child_by_field_name("parameters")
    result = node.child_by_field_name(result_field)
    types: list[str] = []
    variadic = None
    for c in params.named_children if params is not None else ():
        t = c.type
        if t == "comment":
            continue
        ty = c.child_by_field_name("type")
        if t == "variadic_parameter_declaration":
            variadic = squeezed(ty) if ty is not None else "?"
        elif t == "parameter_declaration":  # `a, b int` is two parameters
            names = [x for x in c.named_children if x.type == "identifier"]
            types.extend([squeezed(ty) if ty is not None else "?"] * max(1, len(names)))
        else:  # `pattern: Type` (its type), a receiver, anything else as written
            types.append(squeezed(ty if ty is not None and t == "parameter" else c))
    return sig, {"sig": h(sig), "types": types, "variadic": variadic,
                 "result": squeezed(result) if result is not None else ""}


def squeezed(node: Node) -> str:
    """A node's text with its runs of whitespace made one space."""
    return " ".join(parsers.text(node).split())


def chain(syntax: Syntax, node: Node) -> list[str] | None:
    t = node.type
    if t in syntax.leaves:
        return [parsers.text(node)]
    pair = syntax.links.get(t)
    if pair is None:
        return None
    base_node, leaf = node.child_by_field_name(pair[0]), node.child_by_field_name(pair[1])
    if leaf is None:
        return None
    base = chain(syntax, base_node) if base_node is not None else None
    if base is None and base_node is not None and base_node.type == syntax.new:
        # ``new C().m``: a method of C's instance
        ctor = base_node.child_by_field_name("constructor")
        made = chain(syntax, ctor) if ctor is not None else None
        base = made if made is not None and "?" not in made else None
    return [*(base if base is not None else ["?"]), parsers.text(leaf)]


def _refs(syntax: Syntax, root: Node, refs: list[Ref]) -> None:
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, fld = stack.pop()
        t = node.type
        if t in syntax.skip_nodes:
            continue
        if t in syntax.calls:
            fn = node.child_by_field_name(syntax.calls[t])
            args = node.child_by_field_name("arguments")
            c = chain(syntax, fn) if fn is not None else None
            if fn is not None and c is not None and args is not None:
                named = [a for a in args.named_children if a.type != "comment"]
                spread = any(a.type in syntax.spreads for a in named)
                constants = ["num" if x.type in syntax.numbers else "" for x in named]
                refs.append([c, fn.end_point[0] + 1, [len(named), [], spread, False, constants],
                             False])
                if "?" in c:
                    stack.append((fn, "function"))
                stack.append((args, "arguments"))
                continue
        elif t in syntax.links:
            c = chain(syntax, node)
            if c is not None:
                refs.append([c, node.end_point[0] + 1, None, False])
                if c[0] != "?":
                    continue
        elif t == "identifier":
            if fld not in syntax.skip_fields:
                refs.append([[parsers.text(node)], node.start_point[0] + 1, None, False])
            continue
        field = node.field_name_for_named_child
        stack.extend((c, field(i) or "") for i, c in enumerate(node.named_children))
