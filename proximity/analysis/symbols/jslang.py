"""How JavaScript and TypeScript code reads as the symbol channel's facts (the language
itself is ``languages/javascript.py``): definitions (``const f = () => …`` is a function,
``export default`` names a definition ``default``), each function's parameters (required
or not, and which ones its body dereferences), method uses through instances made with
``new``, and imports as bindings (named, default and namespace imports, ``require``, and
what ``export`` offers)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from proximity.analysis import parsers
from proximity.analysis.languages import base
from proximity.analysis.symbols import tslang
from proximity.analysis.symbols.common import as_class_uses, h
from proximity.analysis.symbols.tsimports import bind, unquote, walk
from proximity.analysis.symbols.tslang import CLASS, FUNCTION, METHOD, SYMBOL

if TYPE_CHECKING:  # tree-sitter loads with the first grammar, not with this module
    from tree_sitter import Node


def _exported(defs: tslang.Defs, node: Node, prefix: str) -> None:
    """``export …``: its definitions; ``export default foo`` names foo ``default``."""
    defs.walk(node, prefix)
    if any(x.type == "default" for x in node.children):
        decl = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        nm = decl.child_by_field_name("name") if decl is not None and \
            decl.type != "identifier" else decl
        if nm is not None:
            defs.out["aliases"]["default"] = parsers.text(nm)


def _declared(defs: tslang.Defs, node: Node, prefix: str) -> None:
    """``const f = () => …`` is a function, ``const g = f`` an alias, else a constant."""
    for d in node.named_children:
        if d.type != "variable_declarator":
            continue
        name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
        if name is None or name.type != "identifier":
            continue
        text = parsers.text(value) if value is not None else ""
        if value is not None and value.type in ("arrow_function", "function_expression",
                                                "function"):
            fn = defs.function(value, FUNCTION)
            fn[3:5] = tslang.span(d)
            defs.out["defs"][prefix + parsers.text(name)] = fn
        elif value is not None and value.type in ("identifier", "member_expression"):
            defs.out["defs"][prefix + parsers.text(name)] = \
                ["alias", h(text), h(text), *tslang.span(d), None]
        else:
            defs.out["defs"][prefix + parsers.text(name)] = \
                ["constant", h(text), h(text), *tslang.span(d), None]


def _params(fn: Node) -> tuple[str, base.Params]:
    """Each parameter as [name, required], a rest parameter, and the ones the body
    dereferences; the signature is the first two."""
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    shape: list[list[Any]] = []
    rest = False
    if params is not None and params.type != "formal_parameters":
        got: base.Params = {"js": [[parsers.text(params), True]], "rest": False}
    else:
        for c in params.named_children if params is not None else ():
            t = c.type
            pat = c.child_by_field_name("pattern") if t.endswith("_parameter") else c
            if t == "comment" or (pat is not None and pat.type == "this"):
                continue
            if t == "rest_pattern" or (pat is not None and pat.type == "rest_pattern"):
                rest = True
            elif t == "assignment_pattern":
                shape.append([parsers.text(tslang.required(c, "left")), False])
            elif t == "optional_parameter":
                shape.append([parsers.text(tslang.required(c, "pattern")), False])
            elif t == "required_parameter":
                shape.append([parsers.text(tslang.required(c, "pattern")),
                              c.child_by_field_name("value") is None])
            else:
                shape.append([parsers.text(c), True])
        got = {"js": shape, "rest": rest, "deref": _dereferenced(fn, {n for n, _ in shape})}
    return json.dumps({"js": got["js"], "rest": got["rest"]}), got  # deref: the body's


# where an identifier is dereferenced: undefined there throws (``p.x``, ``p[i]``, ``p()``,
# ``...p``, ``for (x of p)``); anywhere else (``p > 0``, ``if (p)``, ``p ?? d``) it does not
_DEREF = {"member_expression": "object", "subscript_expression": "object",
          "call_expression": "function", "for_in_statement": "right"}


def _dereferenced(fn: Node, names: set[str]) -> list[str]:
    """The parameters (of ``names``) the function's body dereferences somewhere."""
    body = fn.child_by_field_name("body")
    if body is None or not names:
        return []
    out = set()
    for n in walk(body):
        if n.type != "identifier" or parsers.text(n) not in names:
            continue
        p = n.parent
        if p is None:
            continue
        if p.type == "spread_element":
            out.add(parsers.text(n))
            continue
        fld = _DEREF.get(p.type)
        at = p.child_by_field_name(fld) if fld else None
        if at is not None and (at.start_byte, at.end_byte) == (n.start_byte, n.end_byte):
            out.add(parsers.text(n))
    return sorted(out)


def _instances(root: Node, refs: list[base.Ref]) -> list[base.Ref]:
    """Method uses through instances, as uses of the class's method: ``const x = new
    C()`` then ``x.m()``, ``this.a = new C()`` then ``this.a.m()`` (as pylang does)."""
    made: dict[tuple[str, ...], list[str]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type == "variable_declarator":
            key, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        elif node.type == "assignment_expression":
            key, value = node.child_by_field_name("left"), node.child_by_field_name("right")
        else:
            continue
        if key is None or value is None or value.type != "new_expression":
            continue
        ctor = value.child_by_field_name("constructor")
        cls, target = (tslang.chain(SYNTAX, ctor) if ctor is not None else None), \
            tslang.chain(SYNTAX, key)
        if cls and "?" not in cls and target and (
                len(target) == 1 or (len(target) == 2 and target[0] == "this")):
            made[tuple(target)] = cls
    return as_class_uses(refs, made)


# -- imports as bindings -----------------------------------------------------------------------

BINDS = ("(import_statement) @n (export_statement) @n "
         "(variable_declarator value: (call_expression)) @n")


def _binds(grammar: parsers.Grammar, root: Node, out: base.Facts) -> None:
    """Named, default and namespace imports, ``require``, and what ``export`` offers."""
    nodes = parsers.captures(grammar, BINDS, root).get("n", [])
    for n in sorted(nodes, key=lambda x: x.start_byte):
        if n.type == "import_statement":
            _imported(n, out)
        elif n.type == "variable_declarator":
            _required(n, out)
        elif n.type == "export_statement":
            _exports(n, out)


def _imported(n: Node, out: base.Facts) -> None:
    src = n.child_by_field_name("source")
    if src is None:
        return
    spec = unquote(src)
    type_only = any(c.type == "type" for c in n.children)
    for c in walk(n):
        if c.type == "import_clause":
            for x in c.named_children:
                if x.type == "identifier":
                    bind(out, x, "from", spec, "default", x, type_only)
        elif c.type == "namespace_import":
            ids = [x for x in c.named_children if x.type == "identifier"]
            if ids:
                bind(out, ids[0], "mod", spec, "", c, type_only)
        elif c.type == "import_specifier":
            nm, al = c.child_by_field_name("name"), c.child_by_field_name("alias")
            spec_type = type_only or any(x.type == "type" for x in c.children)
            if nm is not None:
                bind(out, al or nm, "from", spec, parsers.text(nm), c, spec_type)


def _required(n: Node, out: base.Facts) -> None:
    v, nm = n.child_by_field_name("value"), n.child_by_field_name("name")
    fn = v.child_by_field_name("function") if v is not None and \
        v.type == "call_expression" else None
    args = v.child_by_field_name("arguments") if v is not None and fn is not None else None
    if fn is None or parsers.text(fn) != "require" or args is None or \
            not args.named_children or args.named_children[0].type != "string":
        return
    spec = unquote(args.named_children[0])
    if nm is not None and nm.type == "identifier":
        bind(out, nm, "mod", spec, "", n)
    elif nm is not None and nm.type == "object_pattern":
        for p in nm.named_children:
            if p.type == "shorthand_property_identifier_pattern":
                bind(out, p, "from", spec, parsers.text(p), p)
            elif p.type == "pair_pattern":
                k, val = p.child_by_field_name("key"), p.child_by_field_name("value")
                if k is not None and val is not None:
                    bind(out, val, "from", spec, parsers.text(k), p)


def _exports(n: Node, out: base.Facts) -> None:
    """``export {a as b}`` (an alias), ``export … from`` (a re-export), ``export * from``
    (every name resolves)."""
    src = n.child_by_field_name("source")
    if src is not None and any(c.type == "*" for c in n.children):
        out["dynamic"] = True
        out["reexports"].append(["*", unquote(src), "*"])
    for c in walk(n):
        if c.type == "export_specifier":
            nm = c.child_by_field_name("name")
            al = c.child_by_field_name("alias") or nm
            if al is not None and nm is not None:
                out["exports"].append(parsers.text(al))
                out["aliases"][parsers.text(al)] = parsers.text(nm)
                if src is not None:  # export { name as alias } from 'module'
                    out["reexports"].append([parsers.text(al), unquote(src), parsers.text(nm)])


SYNTAX = tslang.Syntax(
    leaves=frozenset(("identifier", "property_identifier", "super", "this",
                      "type_identifier")),
    links={"member_expression": ("object", "property")},
    calls={"call_expression": "function", "new_expression": "constructor"},
    spreads=frozenset(("spread_element",)), numbers=frozenset(),
    skip_fields=frozenset(("alias", "key", "label", "name", "parameter", "parameters",
                           "pattern", "return_type", "type")),
    skip_nodes=frozenset(("comment", "export_clause", "formal_parameters", "import_statement",
                          "string", "template_string", "type_annotation", "type_arguments")),
    defs={"function_declaration": FUNCTION, "generator_function_declaration": FUNCTION,
          "method_definition": METHOD, "class_declaration": CLASS,
          "abstract_class_declaration": CLASS, "class": CLASS,
          "interface_declaration": SYMBOL, "type_alias_declaration": SYMBOL,
          "enum_declaration": SYMBOL, "public_field_definition": SYMBOL,
          "field_definition": SYMBOL},
    readers={"export_statement": _exported, "lexical_declaration": _declared,
             "variable_declaration": _declared},
    params=_params, binds=_binds, instances=_instances, new="new_expression",
)
