"""What one side's new code refers to (the reader's half of the symbol channel).

A reference is a dotted chain as written (``lib.area``, ``Cls.meth``, ``shop.Price``,
``util::parse``). It resolves through the file's own imports, by the project's resolver, to
the definition it names: ``(target, qual)`` where the target is a repository path (or, for
a language whose directory is one namespace, the directory: ``base.PACKAGE`` + its path)
and ``qual`` the definition's qualified name there. A name the file defines itself
resolves to the file. A method reached through a receiver of unknown type (``obj.meth()``)
resolves to ``?``: the channel counts it only when the file imports the module that
defines such a method. Nothing resolves by a bare name match across files. How an import
reaches its module, and what a name no import binds means, is the file's language's.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from proximity.analysis.languages import registry
from proximity.analysis.languages.base import (
    UNKNOWN,
    Bind,
    Facts,
    Language,
    Record,
    Target,
    namespace_of,
)
from proximity.analysis.resolve import Resolver

__all__ = ["UNKNOWN", "Reader"]


@dataclass
class Reader:
    """Resolution of one reader file's references (memoised module look-ups); what a
    language's hooks see of it is ``base.Lookup``."""

    src: str
    lang: str  # the file's dialect
    facts: Facts
    resolver: Resolver
    _mods: dict[tuple[str, ...], str] = field(default_factory=dict)
    _imported: set[str] | None = None
    language: Language = field(init=False)

    def __post_init__(self) -> None:
        self.language = registry.language(self.lang)

    @property
    def paths(self) -> AbstractSet[str]:
        return self.resolver.paths

    def target_of(self, chain: list[str]) -> Target | None:
        """(target, qual, reached through a class name) for a chain, or None."""
        root = chain[0]
        bound = False
        for rec in reversed(self.facts["binds"]):
            if rec[0] == root:
                bound = True
                got = self.through(rec, chain)
                if got is not None:
                    return got[0], tuple(got[1]), False
        if bound:
            return None  # an import from outside the repository (os.path, fmt, react)
        return self.language.scope(self, chain)

    def imported(self) -> set[str]:
        """Every target this file's imports resolve to (and its own namespace)."""
        if self._imported is None:
            out = {self.src, namespace_of(self.language, self.src)}
            also = self.language.also_imports
            for rec in self.facts["binds"]:
                got = self.through(rec, [rec[0]])
                if got is not None:
                    out.add(got[0])
                    mod = also(self, rec) if also is not None else ""
                    if mod:
                        out.add(mod)
            self._imported = out
        return self._imported

    def through(self, rec: Bind, chain: list[str]) -> tuple[str, list[str]] | None:
        return self.language.through(self, rec, chain)

    def first(self, rec: Record) -> str:
        key = tuple(str(x) for x in rec)
        if key not in self._mods:
            got = self.resolver.resolve(self.src, rec)
            self._mods[key] = got[0] if got else ""
        return self._mods[key]

    def resolve(self, src: str, rec: Record) -> list[str]:
        return self.resolver.resolve(src, rec)
