"""What a module offers of another module's names: the helpers every language's reading
of its re-exports shares. The symbol channel follows a use of ``pkg.Settings`` through
them to the changed ``Settings`` of ``pkg/config.py`` (hazard._Writer.reexported); each
language says which files stand for the modules above a file and what one of them offers
(``Language.reexports``)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

from proximity.analysis.languages.base import Facts


def recorded(facts: Facts, names: dict[str, str], is_path: Callable[[str], bool]
             ) -> dict[str, str]:
    """A module's recorded re-exports (``[offered name, module, its name there]``, ``*``
    for every name) of the changed file's ``names``, the module resolved by ``is_path``."""
    offered: dict[str, str] = {}
    for local, module, name in facts.get("reexports", ()):
        if not is_path(module):
            continue
        for nm in (names if name == "*" else [name]):
            if nm in names:
                offered[nm if local == "*" else local] = names[nm]
    return offered


def packages_above(path: str, paths: AbstractSet[str], names: Sequence[str]) -> list[str]:
    """The files (the first of ``names`` each directory has) that stand for the
    directories holding ``path``, nearest first; a file that stands for its own directory
    starts from the directory above."""
    out = []
    d = posixpath.dirname(path)
    if posixpath.basename(path) in names:
        d = posixpath.dirname(d)
    while d:
        for name in names:
            init = f"{d}/{name}"
            if init in paths and init != path:
                out.append(init)
                break
        d = posixpath.dirname(d)
    return out
