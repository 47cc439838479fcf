"""JavaScript/TypeScript, Go and Rust definitions, imports and references (tree-sitter).

Same plain data as ``pysyms.analyse``: ``defs`` (module- and class-level only; a Go method
is ``Type.Name``, a Rust associated function ``Type.name``), ``binds`` (imports, ``require``,
Go import specs, Rust ``mod``/``use``), ``refs`` (dotted chains with their call shape) and,
for JS/TS, ``exports`` (``export {a as old}``) and ``dynamic`` (``export * from``). A tree
with a syntax error or conflict markers is ``None``: unknown. Imported lazily (tree-sitter).
"""

from __future__ import annotations

import json
import re
from typing import Any

from proximity import parsers
from proximity.pysyms import h

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
                           "aliases": {}}
    _defs(lang, root, "", out)
    _binds(lang, root, out)
    _refs(root, out["refs"])
    return out


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
    return {"js": shape, "rest": rest}


def _fn_def(lang: str, node: Any, kind: str) -> list[Any]:
    body = node.child_by_field_name("body")
    if lang in JS:
        params: dict[str, Any] = _js_params(node)
        sig = json.dumps(params)
    else:
        parts = [node.child_by_field_name(f) for f in ("parameters", "result", "return_type")]
        sig = " ".join(parsers.text(p) for p in parts if p is not None)
        params = {"sig": h(sig)}
    return [kind, h(sig), h(parsers.text(body) if body is not None else ""),
            *_span(node), params]


def _add(out: dict[str, Any], name: Any, value: list[Any], prefix: str = "") -> None:
    if name is not None:
        out["defs"][prefix + parsers.text(name)] = value


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
            types = [n for n in _walk(recv) if n.type == "type_identifier"] if recv else []
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


def _walk(node: Any) -> list[Any]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def _str(node: Any) -> str:
    return parsers.text(node).strip("'\"`")


def _bind(out: dict[str, Any], local: Any, kind: str, module: str, name: str, line_of: Any,
          type_only: bool = False) -> None:
    loc = parsers.text(local) if not isinstance(local, str) else local
    line = line_of.start_point[0] + 1
    out["binds"].append([loc, kind, module, 0, name, line, type_only])
    out["refs"].append([[loc], line, None, type_only])


def _binds(lang: str, root: Any, out: dict[str, Any]) -> None:
    for n in _walk(root):
        t = n.type
        if t == "import_statement":
            src = n.child_by_field_name("source")
            if src is None:
                continue
            spec = _str(src)
            type_only = any(c.type == "type" for c in n.children)
            for c in _walk(n):
                if c.type == "import_clause":
                    for x in c.named_children:
                        if x.type == "identifier":
                            _bind(out, x, "from", spec, "default", x, type_only)
                elif c.type == "namespace_import":
                    ids = [x for x in c.named_children if x.type == "identifier"]
                    if ids:
                        _bind(out, ids[0], "mod", spec, "", c, type_only)
                elif c.type == "import_specifier":
                    nm, al = c.child_by_field_name("name"), c.child_by_field_name("alias")
                    spec_type = type_only or any(x.type == "type" for x in c.children)
                    if nm is not None:
                        _bind(out, al or nm, "from", spec, parsers.text(nm), c, spec_type)
        elif t == "variable_declarator" and lang in JS:
            v, nm = n.child_by_field_name("value"), n.child_by_field_name("name")
            fn = v.child_by_field_name("function") if v is not None and \
                v.type == "call_expression" else None
            args = v.child_by_field_name("arguments") if fn is not None else None
            if fn is None or parsers.text(fn) != "require" or args is None or \
                    not args.named_children or args.named_children[0].type != "string":
                continue
            spec = _str(args.named_children[0])
            if nm is not None and nm.type == "identifier":
                _bind(out, nm, "mod", spec, "", n)
            elif nm is not None and nm.type == "object_pattern":
                for p in nm.named_children:
                    if p.type == "shorthand_property_identifier_pattern":
                        _bind(out, p, "from", spec, parsers.text(p), p)
                    elif p.type == "pair_pattern":
                        k, val = p.child_by_field_name("key"), p.child_by_field_name("value")
                        if k is not None and val is not None:
                            _bind(out, val, "from", spec, parsers.text(k), p)
        elif t == "export_statement":
            if n.child_by_field_name("source") is not None and any(
                    c.type == "*" for c in n.children):
                out["dynamic"] = True
            for c in _walk(n):
                if c.type == "export_specifier":
                    nm = c.child_by_field_name("name")
                    al = c.child_by_field_name("alias") or nm
                    if al is not None and nm is not None:
                        out["exports"].append(parsers.text(al))
                        out["aliases"][parsers.text(al)] = parsers.text(nm)
        elif t == "import_spec":  # Go
            path = _str(n.child_by_field_name("path"))
            nm = n.child_by_field_name("name")
            parts = path.split("/")
            default = parts[-2] if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]) \
                else parts[-1]
            local = parsers.text(nm) if nm is not None else default.replace("-", "_")
            if local not in ("_", "."):
                _bind(out, local, "mod", path, "", n)
        elif t == "mod_item" and n.child_by_field_name("body") is None:
            nm = n.child_by_field_name("name")
            if nm is not None:
                _bind(out, nm, "mod", parsers.text(nm), "", n)
        elif t == "use_declaration":
            arg = n.child_by_field_name("argument")
            if arg is not None:
                _use(out, arg, "", n)


def _use(out: dict[str, Any], node: Any, prefix: str, decl: Any) -> None:
    t = node.type
    join = (prefix + "::") if prefix else ""
    if t in ("identifier", "scoped_identifier", "crate", "self", "super"):
        path = join + re.sub(r"\s+", "", parsers.text(node))
        _bind(out, path.rsplit("::", 1)[-1], "use", path, "", decl)
    elif t == "use_as_clause":
        p, al = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if p is not None and al is not None:
            _bind(out, al, "use", join + re.sub(r"\s+", "", parsers.text(p)), "", decl)
    elif t == "scoped_use_list":
        p, lst = node.child_by_field_name("path"), node.child_by_field_name("list")
        base = join + re.sub(r"\s+", "", parsers.text(p)) if p is not None else prefix
        if lst is not None:
            _use(out, lst, base, decl)
    elif t == "use_list":
        for c in node.named_children:
            _use(out, c, prefix, decl)


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
    return [*(base if base is not None else ["?"]), parsers.text(leaf)]


def _refs(root: Any, refs: list[Any]) -> None:
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, fld = stack.pop()
        t = node.type
        if t in SKIP_NODES:
            continue
        if t == "call_expression":
            fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
            c = chain(fn) if fn is not None else None
            if c is not None and args is not None:
                named = [a for a in args.named_children if a.type != "comment"]
                spread = any(a.type in ("spread_element", "variadic_argument") for a in named)
                refs.append([c, fn.end_point[0] + 1, [len(named), [], spread, False], False])
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
        stack.extend((c, node.field_name_for_child(i) or "")
                     for i, c in enumerate(node.children))
