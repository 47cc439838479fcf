"""Resolving what a file imports (as written) to paths in the repository: each language's
resolver (``Language.resolver``), over one set of paths and the module roots the
languages' manifests declare. External packages resolve to nothing."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Mapping

from proximity.analysis.languages import registry
from proximity.analysis.languages.base import Record, Resolve

Roots = dict[str, dict[str, str]]  # language name -> directory -> the import path it declares


class Resolver:
    """Maps import records to repository paths for one set of files."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = set(paths)
        self.roots: Roots = {}
        self._by_tag: dict[str, Resolve] = {}  # built on a language's first record

    def set_roots(self, roots: Mapping[str, Mapping[str, str]]) -> None:
        self.roots = {name: dict(dirs) for name, dirs in roots.items()}
        self._by_tag.clear()

    def set_go_mods(self, mods: Mapping[str, str]) -> None:
        """The roots of the one language whose manifests declare them (the name the
        import-graph tests call)."""
        self.set_roots({"go": mods})

    def resolve(self, src: str, rec: Record) -> list[str]:
        fn = self._by_tag.get(rec[0])
        if fn is None:
            lang = registry.tagged(rec[0])
            if lang is None:
                return []
            fn = self._by_tag[rec[0]] = lang.resolver(self.paths, self.roots.get(lang.name, {}))
        return fn(src, rec)


def manifest_names() -> set[str]:
    """The file names that declare module roots (each language's manifest): a change of
    one may change how every file's imports resolve."""
    return {lang.manifest.file for lang in registry.LANGUAGES if lang.manifest}


def roots(files: Mapping[str, str], read: Callable[[str], bytes]) -> Roots:
    """language -> directory -> the import path its manifest there declares (a ``files``
    path -> blob id; ``read`` a blob)."""
    manifests = {lang.manifest.file: lang for lang in registry.LANGUAGES if lang.manifest}
    out: Roots = {}
    for p, oid in files.items():
        lang = manifests.get(posixpath.basename(p))
        if lang is None or lang.manifest is None:
            continue
        root = lang.manifest.root_of(read(oid))
        if root is not None:
            out.setdefault(lang.name, {})[posixpath.dirname(p)] = root
    return out
