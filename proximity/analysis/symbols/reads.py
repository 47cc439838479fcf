"""What one side's new code refers to (the reader's half of the symbol channel).

A reference is a dotted chain as written (``lib.area``, ``Cls.meth``, ``shop.Price``,
``util::parse``). It resolves through the file's own imports, by the project's resolver, to
the definition it names: ``(target, qual)`` where the target is a repository path (a Go
package directory as ``go:<dir>``) and ``qual`` the definition's qualified name there. A name
the file defines itself resolves to the file (for Go: to its package). A method reached
through a receiver of unknown type (``obj.meth()``) resolves to ``?``: the channel counts it
only when the file imports the module that defines such a method. Nothing resolves by a bare
name match across files.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from proximity.analysis.resolve import Resolver

UNKNOWN = "?"


@dataclass
class Reader:
    """Resolution of one reader file's references (memoised module look-ups)."""

    src: str
    lang: str
    facts: dict[str, Any]
    resolver: Resolver
    _mods: dict[tuple[Any, ...], str] = field(default_factory=dict)
    _imported: set[str] | None = None

    def target_of(self, chain: list[str]) -> tuple[str, tuple[str, ...], bool] | None:
        """(target, qual, reached through a class name) for a chain, or None."""
        root = chain[0]
        bound = False
        for rec in reversed(self.facts["binds"]):
            if rec[0] == root:
                bound = True
                got = self._through(rec, chain)
                if got is not None:
                    return got[0], tuple(got[1]), False
        if bound:
            return None  # an import from outside the repository (os.path, fmt, react)
        if self.lang == "go":
            if len(chain) == 1:
                return "go:" + posixpath.dirname(self.src), (root,), False
        elif self.lang == "rust" and root in ("crate", "self", "super"):
            return self._rust_path(chain)
        elif root in self.facts["defs"] and (
                len(chain) == 1 or self.facts["defs"][root][0] not in ("constant", "alias")):
            via_class = len(chain) > 1 and self.facts["defs"][root][0] == "class"
            return self.src, tuple(chain), via_class
        if len(chain) >= 2:
            return UNKNOWN, (chain[-1],), False
        return None

    def imported(self) -> set[str]:
        """Every target this file's imports resolve to (itself and, for Go, its package)."""
        if self._imported is None:
            out = {self.src, "go:" + posixpath.dirname(self.src)}
            for rec in self.facts["binds"]:
                got = self._through(rec, [rec[0]])
                if got is not None:
                    out.add(got[0])
                    if rec[1] == "from" and self.lang == "python":
                        mod = self._py_mod(rec[2], rec[3])
                        if mod:
                            out.add(mod)
            self._imported = out
        return self._imported

    # -- per language ------------------------------------------------------------------------

    def _through(self, rec: list[Any], chain: list[str]) -> tuple[str, list[str]] | None:
        _local, kind, module, level, name = rec[:5]
        rest = chain[1:]
        if self.lang == "python":
            if kind == "from":
                sub = self._py_from(module, level, name)
                if sub is None:
                    return None
                path, is_module = sub
                return (path, rest) if is_module else (path, [name, *rest])
            mparts = module.split(".")
            parts = (mparts + rest) if not name else chain
            floor = len(mparts) if not name else 1
            for k in range(min(len(parts), len(mparts) + 1), floor - 1, -1):
                p = self._py_mod(".".join(parts[:k]), 0)
                if p:
                    return p, parts[k:]
            return None
        if self.lang in ("javascript", "typescript", "tsx"):
            p = self._first(["js", module])
            if not p:
                return None
            return (p, [name, *rest]) if kind == "from" else (p, rest)
        if self.lang == "go":
            p = self._first(["go", module])
            return ("go:" + posixpath.dirname(p), rest) if p else None
        if self.lang == "rust":
            if kind == "mod":
                p = self._first(["rs", "mod", module])
                while p and len(rest) >= 2:  # util::fmt::pad -> src/util/fmt.rs, pad
                    deeper = self.resolver.resolve(p, ["rs", "mod", rest[0]])
                    if not deeper:
                        break
                    p, rest = deeper[0], rest[1:]
                return (p, rest) if p else None
            got = self.rust_use(module)
            if got is None:
                return None
            return got[0], [*got[1], *rest]
        return None

    def _first(self, rec: list[Any]) -> str:
        key = tuple(str(x) for x in rec)
        if key not in self._mods:
            got = self.resolver.resolve(self.src, rec)
            self._mods[key] = got[0] if got else ""
        return self._mods[key]

    def _py_mod(self, module: str, level: int) -> str:
        p = self._first(["py", module, level, []])
        if p and not level and not _rooted(p, module, self.resolver.paths):
            return ""  # `import logging` is the standard library, not pkg/logging.py
        return p

    def _py_from(self, module: str, level: int, name: str) -> tuple[str, bool] | None:
        mod = self._py_mod(module, level)
        sub = self._first(["py", module, level, [name]])
        if sub and sub != mod and (sub.endswith(f"/{name}.py") or sub == f"{name}.py"
                                   or sub.endswith(f"/{name}/__init__.py")):
            return sub, True
        return (mod, False) if mod else None

    def rust_use(self, module: str) -> tuple[str, tuple[str, ...], bool] | None:
        """A ``use`` path (``crate::a::b``, ``self::x``, or the 2018 form ``x::y``, a
        submodule's name) -> (the file of its module, the names left in it)."""
        parts = module.split("::")
        if parts[0] not in ("crate", "self", "super"):
            parts = ["self", *parts]
        return self._rust_path(parts)

    def _rust_path(self, parts: list[str]) -> tuple[str, tuple[str, ...], bool] | None:
        """``crate::a::b::name`` -> (the file of module a::b, ("name",))."""
        for k in range(len(parts), 1, -1):
            p = self._first(["rs", "use", "::".join(parts[:k])])
            stem = posixpath.basename(p)[:-3] if p else ""
            if p and (stem == parts[k - 1] or (stem == "mod" and posixpath.basename(
                    posixpath.dirname(p)) == parts[k - 1])):
                return p, tuple(parts[k:]), False
        return None


def _rooted(path: str, dotted: str, paths: set[str]) -> bool:
    """Is ``path`` the module ``dotted`` from a source root (not a package's submodule)?"""
    mod = path.rsplit(".", 1)[0]
    if mod.endswith("/__init__"):
        mod = mod[: -len("/__init__")]
    parts = mod.split("/")
    prefix = parts[: len(parts) - (dotted.count(".") + 1)]
    return not prefix or "/".join(prefix) + "/__init__.py" not in paths
