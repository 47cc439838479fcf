"""JavaScript and TypeScript (with their JSX dialects), read with tree-sitter.

Imports are ``["js", specifier]``: ``import``, ``export … from``, ``require`` and
``import()`` of a string. A relative specifier resolves with extension and ``index``
lookup (a TypeScript import of "./x.js" means x.ts); a package name is external. An index
module offers its directory's names (``export {a as b} from``, ``export * from``). A call
binds when it passes every required parameter (TypeScript: and no more than declared); a
JavaScript call that leaves out a parameter the body never dereferences still runs (the
value is ``undefined``): a soft break.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from proximity.analysis import parsers
from proximity.analysis.languages import base
from proximity.analysis.symbols import jslang, reexports, tslang
from proximity.analysis.symbols.calls import moved_index

TAG = "js"
EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
INDEX = ("index.ts", "index.tsx", "index.js", "index.mjs", "index.cjs", "index.jsx")


def _plain() -> object:
    import tree_sitter_javascript

    return tree_sitter_javascript.language()


def _typed() -> object:
    import tree_sitter_typescript

    return tree_sitter_typescript.language_typescript()


def _typed_markup() -> object:
    import tree_sitter_typescript

    return tree_sitter_typescript.language_tsx()


GRAMMARS = {"javascript": parsers.Grammar("javascript", _plain),
            "typescript": parsers.Grammar("typescript", _typed),
            "tsx": parsers.Grammar("tsx", _typed_markup)}

IMPORTS = """
(import_statement source: (string) @s)
(export_statement source: (string) @s)
(call_expression function: (identifier) @f arguments: (arguments . (string) @s))
(call_expression function: (import) arguments: (arguments . (string) @s))
"""


def imports(dialect: str, data: bytes) -> list[base.Record]:
    grammar = GRAMMARS[dialect]
    tree = parsers.parse(grammar, data)
    caps = parsers.captures(grammar, IMPORTS, tree.root_node)
    fnames = {(n.start_byte, n.end_byte) for n in caps.get("f", [])}
    out: list[base.Record] = []
    for node in caps.get("s", []):
        call = node.parent.parent if node.parent is not None else None
        if call is not None and call.type == "call_expression":
            fn = call.child_by_field_name("function")
            if fn is not None and fn.type == "identifier" and (
                parsers.text(fn) != "require" or (fn.start_byte, fn.end_byte) not in fnames
            ):
                continue
        out.append([TAG, parsers.text(node).strip().strip("'\"`")])
    return out


def resolver(paths: AbstractSet[str], roots: Mapping[str, str]) -> base.Resolve:
    def resolve(src: str, rec: base.Record) -> list[str]:
        spec = rec[1]
        if not spec.startswith("."):
            return []
        stem = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
        cands = [stem]
        base, ext = posixpath.splitext(stem)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            cands += [base + e for e in EXTS]  # TS imports "./x.js" meaning x.ts
        cands += [stem + e for e in EXTS] + [f"{stem}/index{e}" for e in EXTS]
        for c in cands:
            if c in paths:
                return [c]
        return []

    return resolve


def analyse(dialect: str, data: bytes) -> base.Facts | None:
    return tslang.analyse(GRAMMARS[dialect], jslang.SYNTAX, data)


# -- calls -------------------------------------------------------------------------------------

def _binds_call(params: base.Params, call: base.Call, typed: bool) -> str | None:
    if call[2]:
        return None
    shape = params["js"]
    need = max((i + 1 for i, (_, req) in enumerate(shape) if req), default=0)
    if call[0] < need:
        missing = [n for n, req in shape[call[0]:] if req]
        if not typed and "deref" in params and not set(missing) & set(params["deref"]):
            # undefined is passed; a body that never dereferences the parameter
            # (`limit > 0`, `if (x)`) does not throw for it (such a merge runs clean)
            return base.SOFT + f"'{missing[0]}' is not passed (undefined there)"
        return f"missing required '{shape[call[0]][0]}'"
    if typed and call[0] > len(shape) and not params["rest"]:
        return f"{call[0]} arguments, at most {len(shape)} accepted"
    return ""


def binding(dialect: str, old: base.Params, new: base.Params, call: base.Call,
            via_class: bool, qual: str) -> base.Binding:
    typed = dialect != "javascript"
    why, before = _binds_call(new, call, typed), _binds_call(old, call, typed)
    if why == "" and before == "":
        # a call whose i-th argument now lands in another, still existing, parameter
        po, pn = [n for n, _ in old["js"]], [n for n, _ in new["js"]]
        i = moved_index(po, pn, call[0], set(pn))
        why = "" if i is None else f"argument {i + 1} now goes to '{pn[i]}', not '{po[i]}'"
    parts = [n + ("" if req else "?") for n, req in new["js"]]
    return why, before, f"{qual}({', '.join(parts + (['...rest'] if new['rest'] else []))})"


# -- reading through imports, and what an index module offers --------------------------------

def through(rd: base.Lookup, rec: base.Bind, chain: list[str]) -> tuple[str, list[str]] | None:
    _local, kind, module, _level, name = rec[:5]
    p = rd.first([TAG, module])
    if not p:
        return None
    return (p, [name, *chain[1:]]) if kind == "from" else (p, chain[1:])


def parents(path: str, paths: AbstractSet[str]) -> list[str]:
    """The index modules of the directories holding ``path``, nearest first."""
    return reexports.packages_above(path, paths, INDEX)


def offered(rd: base.Lookup, facts: base.Facts, path: str, names: dict[str, str],
            base_facts: base.FactsOf) -> dict[str, str]:
    """The names an index module offers from ``path`` (``export { a as b } from``,
    ``export * from``) -> their names in the changed file."""
    return reexports.recorded(facts, names, lambda spec: rd.first([TAG, spec]) == path)


LANGUAGE = base.Language(
    name="javascript", title="JavaScript/TypeScript", tag=TAG,
    dialects={".js": "javascript", ".jsx": "javascript", ".mjs": "javascript",
              ".cjs": "javascript", ".ts": "typescript", ".mts": "typescript",
              ".cts": "typescript", ".tsx": "tsx"},
    grammars=GRAMMARS, imports=imports, resolver=resolver, analyse=analyse,
    through=through, binding=binding, package_file="index", constructor="constructor",
    modifiers=("export", "default", "async"),
    definers=("function", "class", "interface", "type", "enum"), declarers=("const", "let", "var"),
    reexports=base.Reexports(parents, offered),
)
