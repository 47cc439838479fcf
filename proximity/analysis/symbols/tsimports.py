"""Imports as the symbol channel needs them, from a tree-sitter tree (JS/TS, Go, Rust).

Each imported name becomes a binding ``[local, kind, module, 0, name, line, type_only]``
(``kind`` "from" for a named or default import, "mod" for a namespace, ``require``, Go
package or Rust ``mod``, "use" for a Rust ``use`` path) and a reference at the import's
line (importing a name that is gone is a use of it). JS/TS ``export {a as b}`` records an
export alias, ``export * from`` makes every name resolve (``dynamic``); both, from another
module, are ``reexports`` (``[offered name, module, its name there]``, ``*`` for all), as
are Rust ``pub use`` paths (the module as a ``::`` path).
"""

from __future__ import annotations

import re
from typing import Any

from proximity.analysis import parsers

JS = ("javascript", "typescript", "tsx")


def walk(node: Any) -> list[Any]:
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


QUERIES = {
    "javascript": "(import_statement) @n (export_statement) @n "
                  "(variable_declarator value: (call_expression)) @n",
    "go": "(import_spec) @n",
    "rust": "(mod_item) @n (use_declaration) @n",
}
QUERIES["typescript"] = QUERIES["tsx"] = QUERIES["javascript"]


def binds(lang: str, root: Any, out: dict[str, Any]) -> None:
    nodes = parsers.captures(lang, QUERIES[lang], root).get("n", [])
    for n in sorted(nodes, key=lambda x: x.start_byte):
        t = n.type
        if t == "import_statement":
            src = n.child_by_field_name("source")
            if src is None:
                continue
            spec = _str(src)
            type_only = any(c.type == "type" for c in n.children)
            for c in walk(n):
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
            src = n.child_by_field_name("source")
            if src is not None and any(c.type == "*" for c in n.children):
                out["dynamic"] = True
                out["reexports"].append(["*", _str(src), "*"])
            for c in walk(n):
                if c.type == "export_specifier":
                    nm = c.child_by_field_name("name")
                    al = c.child_by_field_name("alias") or nm
                    if al is not None and nm is not None:
                        out["exports"].append(parsers.text(al))
                        out["aliases"][parsers.text(al)] = parsers.text(nm)
                        if src is not None:  # export { name as alias } from 'module'
                            out["reexports"].append([parsers.text(al), _str(src),
                                                     parsers.text(nm)])
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
                # `pub use` (any visibility): the module offers the names it brings in
                offers = any(c.type == "visibility_modifier" for c in n.children)
                _use(out, arg, "", n, offers)


def _use(out: dict[str, Any], node: Any, prefix: str, decl: Any, offers: bool) -> None:
    t = node.type
    join = (prefix + "::") if prefix else ""
    if t in ("identifier", "scoped_identifier", "crate", "self", "super"):
        path = join + re.sub(r"\s+", "", parsers.text(node))
        local = path.rsplit("::", 1)[-1]
        _bind(out, local, "use", path, "", decl)
        if offers:
            _offer(out, local, path)
    elif t == "use_as_clause":
        p, al = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if p is not None and al is not None:
            path = join + re.sub(r"\s+", "", parsers.text(p))
            _bind(out, al, "use", path, "", decl)
            if offers:
                _offer(out, parsers.text(al), path)
    elif t == "use_wildcard":
        path = join + re.sub(r"\s+", "", parsers.text(node)).removesuffix("::*")
        if offers and path:
            out["reexports"].append(["*", path, "*"])
    elif t == "scoped_use_list":
        p, lst = node.child_by_field_name("path"), node.child_by_field_name("list")
        base = join + re.sub(r"\s+", "", parsers.text(p)) if p is not None else prefix
        if lst is not None:
            _use(out, lst, base, decl, offers)
    elif t == "use_list":
        for c in node.named_children:
            _use(out, c, prefix, decl, offers)


def _offer(out: dict[str, Any], local: str, path: str) -> None:
    """``pub use PATH [as LOCAL]``: the module offers that item of another module."""
    if "::" in path:
        out["reexports"].append([local, *path.rsplit("::", 1)])
