"""JavaScript/TypeScript, Go and Rust definitions, imports and references (tree-sitter).

Same plain data as ``pylang.analyse``: ``defs`` (module- and class-level only; a Go method
is ``Type.Name``, a Rust associated function ``Type.name``), ``binds`` (imports, ``require``,
Go import specs, Rust ``mod``/``use``), ``refs`` (dotted chains with their call shape) and,
for JS/TS, ``exports`` (``export {a as old}``) and ``dynamic`` (``export * from``). A tree
with a syntax error or conflict markers is ``None``: unknown. Imported lazily (tree-sitter).
"""

from __future__ import annotations

import json
import re
from typing import Any

from proximity.analysis import parsers
from proximity.analysis.symbols import tsimports
from proximity.analysis.symbols.pylang import as_class_uses, h

MARKERS = re.compile(rb"^(<<<<<<<|>>>>>>>)( |$)", re.M)
CHAIN_LEAVES = frozenset(("identifier", "this", "self", "crate", "super", "package_identifier",
                          "type_identifier", "field_identifier", "property_identifier"))
SKIP_FIELDS = frozenset(("name", "alias", "pattern", "key", "label", "parameters",
                         "parameter", "receiver", "type", "return_type", "result"))
SKIP_NODES = frozenset(("import_statement", "import_declaration", "package_clause",
                        "use_declaration", "mod_item", "export_clause", "comment",
                        "type_annotation", "type_arguments", "string", "template_string",
                        "formal_parameters", "parameters", "parameter_list",
                        "closure_parameters"))
JS = ("javascript", "typescript", "tsx")


def analyse(lang: str, data: bytes) -> dict[str, Any] | None:
    if MARKERS.search(data):
        return None
    tree = parsers.parse(lang, data)
    root = tree.root_node
    if root.has_error:
        return None
    out: dict[str, Any] = {"defs": {}, "binds": [], "refs": [], "exports": [], "dynamic": False,
                           "aliases": {}, "reexports": []}
    _defs(lang, root, "", out)
    tsimports.binds(lang, root, out)
    _refs(root, out["refs"])
    if lang in JS:
        out["refs"].extend(_through_instances(root, out["refs"]))
    return out


def _through_instances(root: Any, refs: list[Any]) -> list[Any]:
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
        cls, target = (chain(ctor) if ctor is not None else None), chain(key)
        if cls and "?" not in cls and target and (
                len(target) == 1 or (len(target) == 2 and target[0] == "this")):
            made[tuple(target)] = cls
    return as_class_uses(refs, made)


def _span(node: Any) -> list[int]:
    return [node.start_point[0] + 1, node.end_point[0] + 1]


def _js_params(fn: Any) -> dict[str, Any]:
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    shape: list[list[Any]] = []
    rest = False
    if params is not None and params.type != "formal_parameters":
        return {"js": [[parsers.text(params), True]], "rest": False}
    for c in params.named_children if params is not None else ():
        t = c.type
        pat = c.child_by_field_name("pattern") if t.endswith("_parameter") else c
        if t == "comment" or (pat is not None and pat.type == "this"):
            continue
        if t == "rest_pattern" or (pat is not None and pat.type == "rest_pattern"):
            rest = True
        elif t == "assignment_pattern":
            shape.append([parsers.text(c.child_by_field_name("left")), False])
        elif t == "optional_parameter":
            shape.append([parsers.text(pat), False])
        elif t == "required_parameter":
            shape.append([parsers.text(pat), c.child_by_field_name("value") is None])
        else:
            shape.append([parsers.text(c), True])
    return {"js": shape, "rest": rest, "deref": _dereferenced(fn, {n for n, _ in shape})}


# where an identifier is dereferenced: undefined there throws (``p.x``, ``p[i]``, ``p()``,
# ``...p``, ``for (x of p)``); anywhere else (``p > 0``, ``if (p)``, ``p ?? d``) it does not
_DEREF = {"member_expression": "object", "subscript_expression": "object",
          "call_expression": "function", "for_in_statement": "right"}


def _dereferenced(fn: Any, names: set[str]) -> list[str]:
    """The parameters (of ``names``) the function's body dereferences somewhere."""
    body = fn.child_by_field_name("body")
    if body is None or not names:
        return []
    out = set()
    for n in tsimports.walk(body):
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


# number literals: untyped constants in Go (in Rust, inferred) that take any numeric type
_NUMBERS = frozenset(("int_literal", "integer_literal", "float_literal", "imaginary_literal",
                      "rune_literal"))


def _constant(arg: Any) -> str:
    """"num" for an argument that is a number literal (symbols._constants_fit), else ""."""
    return "num" if arg.type in _NUMBERS else ""


def _squeezed(node: Any) -> str:
    """A node's text with its runs of whitespace made one space."""
    return " ".join(parsers.text(node).split())


def _native_params(lang: str, node: Any) -> dict[str, Any]:
    """Go and Rust: the parameter types in order (names left out: a renamed parameter
    changes no call), a trailing variadic's type, and the result."""
    params = node.child_by_field_name("parameters")
    result = node.child_by_field_name("result" if lang == "go" else "return_type")
    types: list[str] = []
    variadic = None
    for c in params.named_children if params is not None else ():
        t = c.type
        if t == "comment":
            continue
        ty = c.child_by_field_name("type")
        if t == "variadic_parameter_declaration":
            variadic = _squeezed(ty) if ty is not None else "?"
        elif t == "parameter_declaration":  # Go: `a, b int` is two parameters
            names = [x for x in c.named_children if x.type == "identifier"]
            types.extend([_squeezed(ty) if ty is not None else "?"] * max(1, len(names)))
        else:  # Rust's `pattern: Type` (its type), `self`, anything else as written
            types.append(_squeezed(ty if ty is not None and t == "parameter" else c))
    return {"types": types, "variadic": variadic,
            "result": _squeezed(result) if result is not None else ""}


def _fn_def(lang: str, node: Any, kind: str) -> list[Any]:
    body = node.child_by_field_name("body")
    if lang in JS:
        params: dict[str, Any] = _js_params(node)
        sig = json.dumps({"js": params["js"], "rest": params["rest"]})  # deref: the body's
    else:
        parts = [node.child_by_field_name(f) for f in ("parameters", "result", "return_type")]
        sig = " ".join(parsers.text(p) for p in parts if p is not None)
        params = {"sig": h(sig)}
        if lang in ("go", "rust"):
            params.update(_native_params(lang, node))
    return [kind, h(sig), h(parsers.text(body) if body is not None else ""),
            *_span(node), params]


def _add(out: dict[str, Any], name: Any, value: list[Any], prefix: str = "") -> None:
    if name is None:
        return
    ident = parsers.text(name)
    if ident == "_":  # Go's blank identifier (`var _ I = (*T)(nil)`) defines nothing
        return
    out["defs"][prefix + ident] = value


def _defs(lang: str, node: Any, prefix: str, out: dict[str, Any]) -> None:
    for c in node.named_children:
        t = c.type
        name = c.child_by_field_name("name")
        if t == "export_statement":
            _defs(lang, c, prefix, out)
            if any(x.type == "default" for x in c.children):  # export default foo / f() {}
                decl = c.child_by_field_name("declaration") or c.child_by_field_name("value")
                nm = decl.child_by_field_name("name") if decl is not None and \
                    decl.type != "identifier" else decl
                if nm is not None:
                    out["aliases"]["default"] = parsers.text(nm)
        elif t in ("function_declaration", "generator_function_declaration",
                   "function_item", "function_signature_item"):
            _add(out, name, _fn_def(lang, c, "method" if prefix else "function"), prefix)
        elif t == "method_definition":
            _add(out, name, _fn_def(lang, c, "method"), prefix)
        elif t == "method_declaration":  # Go: func (r *T) Name(...)
            recv = c.child_by_field_name("receiver")
            types = [n for n in tsimports.walk(recv) if n.type == "type_identifier"] if recv else []
            pre = parsers.text(types[0]) + "." if types else ""
            _add(out, name, _fn_def(lang, c, "method"), pre)
        elif t in ("class_declaration", "abstract_class_declaration", "class"):
            text = parsers.text(c)
            _add(out, name, ["class", h(text), h(text), *_span(c), None], prefix)
            body = c.child_by_field_name("body")
            if name is not None and body is not None:
                _defs(lang, body, prefix + parsers.text(name) + ".", out)
        elif t in ("lexical_declaration", "variable_declaration"):
            for d in c.named_children:
                if d.type == "variable_declarator":
                    _declarator(lang, d, prefix, out)
        elif t in ("impl_item", "trait_item"):
            owner = c.child_by_field_name("type") if t == "impl_item" else name
            if t == "trait_item":
                text = parsers.text(c)
                _add(out, name, ["symbol", h(text), h(text), *_span(c), None], prefix)
            body = c.child_by_field_name("body")
            if owner is not None and body is not None:
                _defs(lang, body, parsers.text(owner).split("<")[0] + ".", out)
        elif t in ("type_declaration", "const_declaration", "var_declaration"):
            _defs(lang, c, prefix, out)
        elif t in ("const_spec", "var_spec", "const_item", "static_item"):
            text = parsers.text(c)
            _add(out, name, ["constant", h(text), h(text), *_span(c), None], prefix)
        elif name is not None and t in (
                "interface_declaration", "type_alias_declaration", "enum_declaration",
                "type_spec", "struct_item", "enum_item", "type_item",
                "public_field_definition", "field_definition"):
            text = parsers.text(c)
            _add(out, name, ["symbol", h(text), h(text), *_span(c), None], prefix)


def _declarator(lang: str, d: Any, prefix: str, out: dict[str, Any]) -> None:
    name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
    if name is None or name.type != "identifier":
        return
    text = parsers.text(value) if value is not None else ""
    if value is not None and value.type in ("arrow_function", "function_expression",
                                            "function"):
        fn = _fn_def(lang, value, "function")
        fn[3:5] = _span(d)
        out["defs"][prefix + parsers.text(name)] = fn
    elif value is not None and value.type in ("identifier", "member_expression"):
        out["defs"][prefix + parsers.text(name)] = ["alias", h(text), h(text), *_span(d), None]
    else:
        out["defs"][prefix + parsers.text(name)] = ["constant", h(text), h(text), *_span(d),
                                                    None]


def chain(node: Any) -> list[str] | None:
    t = node.type
    if t in CHAIN_LEAVES:
        return [parsers.text(node)]
    pair = {"member_expression": ("object", "property"), "selector_expression":
            ("operand", "field"), "field_expression": ("value", "field"),
            "scoped_identifier": ("path", "name")}.get(t)
    if pair is None:
        return None
    base_node, leaf = node.child_by_field_name(pair[0]), node.child_by_field_name(pair[1])
    if leaf is None:
        return None
    base = chain(base_node) if base_node is not None else None
    if base is None and base_node is not None and base_node.type == "new_expression":
        # ``new C().m``: a method of C's instance
        ctor = base_node.child_by_field_name("constructor")
        made = chain(ctor) if ctor is not None else None
        base = made if made is not None and "?" not in made else None
    return [*(base if base is not None else ["?"]), parsers.text(leaf)]


def _refs(root: Any, refs: list[Any]) -> None:
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, fld = stack.pop()
        t = node.type
        if t in SKIP_NODES:
            continue
        if t in ("call_expression", "new_expression"):
            fn = node.child_by_field_name("function" if t == "call_expression" else "constructor")
            args = node.child_by_field_name("arguments")
            c = chain(fn) if fn is not None else None
            if c is not None and args is not None:
                named = [a for a in args.named_children if a.type != "comment"]
                spread = any(a.type in ("spread_element", "variadic_argument") for a in named)
                refs.append([c, fn.end_point[0] + 1,
                             [len(named), [], spread, False, [_constant(x) for x in named]],
                             False])
                if "?" in c:
                    stack.append((fn, "function"))
                stack.append((args, "arguments"))
                continue
        elif t in ("member_expression", "selector_expression", "field_expression",
                   "scoped_identifier"):
            c = chain(node)
            if c is not None:
                refs.append([c, node.end_point[0] + 1, None, False])
                if c[0] != "?":
                    continue
        elif t == "identifier":
            if fld not in SKIP_FIELDS:
                refs.append([[parsers.text(node)], node.start_point[0] + 1, None, False])
            continue
        field = node.field_name_for_named_child
        stack.extend((c, field(i) or "") for i, c in enumerate(node.named_children))
