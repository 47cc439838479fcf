"""Python: read with the standard library's ``ast`` (``symbols/pylang.py``), calls bound by
Python's own rules (``symbols/pycalls.py``).

Imports are ``["py", module, level, names]``; a module resolves by its dotted name against
every possible source root (the shallowest wins), a relative import from the importing
file's package. A package's ``__init__.py`` offers what it imports by name and what it
star-imports.
"""

from __future__ import annotations

import ast
import posixpath
import re
import warnings
from collections import defaultdict
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from proximity.analysis import parsers
from proximity.analysis.languages import base
from proximity.analysis.symbols import pycalls, pylang, reexports

TAG = "py"
FALLBACK = re.compile(
    rb"^\s*(?:from\s+(\.*)([\w.]*)\s+import\s+([\w*, ()]+)|import\s+([\w., ]+))", re.M)


def _grammar() -> object:
    import tree_sitter_python

    return tree_sitter_python.language()


def imports(dialect: str, data: bytes) -> list[base.Record]:
    """What the file imports; a file ``ast`` cannot read (Python 2) by a line scanner."""
    out: list[base.Record] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        for m in FALLBACK.finditer(data):
            if m.group(4):
                for mod in m.group(4).decode(errors="replace").split(","):
                    out.append([TAG, mod.split(" as ")[0].strip(), 0, []])
            else:
                names = [n.strip().split(" as ")[0] for n in
                         m.group(3).decode(errors="replace").strip("() ").split(",")]
                out.append([TAG, m.group(2).decode(errors="replace"), len(m.group(1)),
                            [n for n in names if n]])
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend([TAG, alias.name, 0, []] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append([TAG, node.module or "", node.level, [a.name for a in node.names]])
    return out


def resolver(paths: AbstractSet[str], roots: Mapping[str, str]) -> base.Resolve:
    by_last: dict[str, list[tuple[str, str]]] = defaultdict(list)  # last name -> (mod, path)
    for p in paths:
        if p.endswith(".py") or p.endswith(".pyi"):
            mod = p[: p.rindex(".")]
            if mod.endswith("__init__"):
                mod = mod[:-8].rstrip("/")
            if mod:
                by_last[mod[mod.rfind("/") + 1:]].append(("/" + mod, p))

    def absolute(dotted: str) -> list[str]:
        """Paths whose module name ends with ``dotted``; the shallowest source root wins."""
        want = "/" + dotted.replace(".", "/")
        cands = sorted((m.count("/"), p) for m, p in by_last.get(dotted.rsplit(".", 1)[-1], ())
                       if m.endswith(want))
        if not cands:
            return []
        return [p for depth, p in cands if depth == cands[0][0]][:3]

    def resolve(src: str, rec: base.Record) -> list[str]:
        module, level, names = rec[1], int(rec[2]), rec[3]
        if level:
            base = posixpath.dirname(src)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            stem = posixpath.join(base, *module.split(".")) if module else base
            out = []
            for n in names or [""]:
                for cand in (f"{stem}/{n}.py", f"{stem}/{n}/__init__.py"):
                    if n and cand in paths:
                        out.append(cand)
                        break
                else:
                    for cand in (f"{stem}.py", f"{stem}/__init__.py"):
                        if cand in paths:
                            out.append(cand)
                            break
            return sorted(set(out))
        out = []
        for n in names:
            if n != "*":
                out.extend(absolute(f"{module}.{n}"))
        if not out:
            out = absolute(module)
        return sorted(set(out))

    return resolve


def analyse(dialect: str, data: bytes) -> base.Facts | None:
    return pylang.analyse(data)


def binding(dialect: str, old: base.Params, new: base.Params, call: base.Call,
            via_class: bool, qual: str) -> base.Binding:
    if "supplied" in new or "supplied" in old:
        # a decorator supplies the arguments (SUPPLIERS): whether the call binds is the
        # decorator's business, unknown here
        return None, None, f"{pycalls.signature(qual, new)} (decorated by " \
            f"@{new.get('supplied') or old.get('supplied')})"
    why = pycalls.binds(new, call, via_class)
    before = pycalls.binds(old, call, via_class)
    if why == "" and before == "":
        why = pycalls.moved_positional(old, new, call, via_class)
    return why, before, pycalls.signature(qual, new)


# -- reading a file's references through its imports ---------------------------------------

def _module(rd: base.Lookup, module: str, level: int) -> str:
    p = rd.first([TAG, module, level, []])
    if p and not level and not _rooted(p, module, rd.paths):
        return ""  # `import logging` is the standard library, not pkg/logging.py
    return p


def _rooted(path: str, dotted: str, paths: AbstractSet[str]) -> bool:
    """Is ``path`` the module ``dotted`` from a source root (not a package's submodule)?"""
    mod = path.rsplit(".", 1)[0]
    if mod.endswith("/__init__"):
        mod = mod[: -len("/__init__")]
    parts = mod.split("/")
    prefix = parts[: len(parts) - (dotted.count(".") + 1)]
    return not prefix or "/".join(prefix) + "/__init__.py" not in paths


def _from(rd: base.Lookup, module: str, level: int, name: str) -> tuple[str, bool] | None:
    """``from module import name``: (the submodule ``name``, True) or (the module, False)."""
    mod = _module(rd, module, level)
    sub = rd.first([TAG, module, level, [name]])
    if sub and sub != mod and (sub.endswith(f"/{name}.py") or sub == f"{name}.py"
                               or sub.endswith(f"/{name}/__init__.py")):
        return sub, True
    return (mod, False) if mod else None


def through(rd: base.Lookup, rec: base.Bind, chain: list[str]) -> tuple[str, list[str]] | None:
    _local, kind, module, level, name = rec[:5]
    rest = chain[1:]
    if kind == "from":
        sub = _from(rd, module, level, name)
        if sub is None:
            return None
        path, is_module = sub
        return (path, rest) if is_module else (path, [name, *rest])
    mparts = module.split(".")
    parts = (mparts + rest) if not name else chain
    floor = len(mparts) if not name else 1
    for k in range(min(len(parts), len(mparts) + 1), floor - 1, -1):
        p = _module(rd, ".".join(parts[:k]), 0)
        if p:
            return p, parts[k:]
    return None


def also_imports(rd: base.Lookup, rec: base.Bind) -> str:
    """``from m import x`` imports the module ``m`` as well as ``x``."""
    return _module(rd, rec[2], rec[3]) if rec[1] == "from" else ""


def keeps_moved(merged: base.FactsOf, rd: base.Lookup, facts: base.Facts, local: str) -> bool:
    """Whether ``local``, bound by ``from pkg import name`` to a submodule that moved, is
    still a name of the merged ``pkg/__init__.py`` (``from . import new as name``): Python
    takes the package's attribute before it looks for a submodule, so the import holds."""
    rec = next((r for r in reversed(facts["binds"]) if r[0] == local), None)
    if rec is None or rec[1] != "from":
        return False
    init = _module(rd, rec[2], rec[3])
    got = merged(init) if init.endswith("__init__.py") else None
    if got is None:
        return False
    name = rec[4]
    return name in got["defs"] or name in got["exports"] or any(
        b[0] == name for b in got["binds"])


# -- what a package offers of its modules' names -----------------------------------------------

def parents(path: str, paths: AbstractSet[str]) -> list[str]:
    """The ``__init__.py`` of the packages holding ``path``, nearest first."""
    return reexports.packages_above(path, paths, ("__init__.py",))


def offered(rd: base.Lookup, facts: base.Facts, path: str, names: dict[str, str],
            base_facts: base.FactsOf) -> dict[str, str]:
    """The names a package's ``__init__.py`` offers from the module ``path``: what it
    imports by name (``from .config import Settings [as S]``), and what a star import of
    the module takes (its ``__all__``, else its public names) -> their names in the
    changed file."""
    out: dict[str, str] = {}
    for rec in facts["binds"]:
        if rec[1] != "from":
            continue
        got = rd.through(rec, [rec[0]])
        if got is not None and got[0] == path and got[1] and got[1][0] in names:
            out[rec[0]] = names[got[1][0]]
    starred = (base_facts(path) or {}).get("all") if facts.get("stars") else None
    for mod, level, line in facts.get("stars", ()):
        for nm in names:
            if nm in out or (nm.startswith("_") if starred is None else nm not in starred):
                continue
            # resolved as `from mod import nm` would be: the star's module must be path
            got = rd.through([nm, "from", mod, level, nm, line, False], [nm])
            if got is not None and got[0] == path and got[1] == [nm]:
                out[nm] = names[nm]
    return out


LANGUAGE = base.Language(
    name="python", title="Python", tag=TAG,
    dialects={".py": "python", ".pyi": "python"},
    grammars={"python": parsers.Grammar("python", _grammar)},
    imports=imports, resolver=resolver, analyse=analyse, through=through, binding=binding,
    package_file="__init__", constructor="__init__",
    modifiers=("async",), definers=("def", "class"),
    reexports=base.Reexports(parents, offered), also_imports=also_imports, keeps_moved=keeps_moved,
)
