"""What a package offers of a module's names: Python ``__init__.py`` imports and star
imports (with the module's ``__all__``), JavaScript/TypeScript index modules' ``export {…}
from`` and ``export * from``. The symbol channel follows a use of ``pkg.Settings`` through
them to the changed ``Settings`` of ``pkg/config.py`` (hazard._Writer.reexported). Rust
parent modules' ``pub use`` the same way: ``crate::util::parse`` reaches ``parse`` of
``src/util/text.rs`` through ``pub use self::text::parse`` in ``src/util/mod.rs``."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from proximity.analysis.symbols.reads import Reader


def js_offered(rd: Reader, facts: dict[str, Any], path: str, names: dict[str, str]
               ) -> dict[str, str]:
    """The names an index module offers from ``path`` (``export { a as b } from``,
    ``export * from``) -> their names in the changed file."""
    return _offered(facts, names, lambda spec: rd._first(["js", spec]) == path)


def rs_offered(rd: Reader, facts: dict[str, Any], path: str, names: dict[str, str]
               ) -> dict[str, str]:
    """The names a Rust module offers from the module file ``path`` by ``pub use``
    (``pub use self::text::{parse as p}``, ``pub use text::*``) -> their names there."""
    def is_path(module: str) -> bool:
        got = rd.rust_use(module)
        return got is not None and got[0] == path and not got[1]

    return _offered(facts, names, is_path)


def _offered(facts: dict[str, Any], names: dict[str, str], is_path: Callable[[str], bool]
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


def py_offered(rd: Reader, facts: dict[str, Any], path: str, names: dict[str, str],
                module: dict[str, Any] | None) -> dict[str, str]:
    """The names a package's ``__init__.py`` offers from the module ``path``: what it
    imports by name (``from .config import Settings [as S]``), and what a star import of
    the module takes (its ``__all__``, else its public names) -> their names in the
    changed file. ``module`` is the base facts of ``path``."""
    offered: dict[str, str] = {}
    for rec in facts["binds"]:
        if rec[1] != "from":
            continue
        got = rd._through(rec, [rec[0]])
        if got is not None and got[0] == path and got[1] and got[1][0] in names:
            offered[rec[0]] = names[got[1][0]]
    starred = (module or {}).get("all")
    for mod, level, line in facts.get("stars", ()):
        for nm in names:
            if nm in offered or (nm.startswith("_") if starred is None else nm not in starred):
                continue
            # resolved as `from mod import nm` would be: the star's module must be path
            got = rd._through([nm, "from", mod, level, nm, line, False], [nm])
            if got is not None and got[0] == path and got[1] == [nm]:
                offered[nm] = names[nm]
    return offered


INDEX = ("index.ts", "index.tsx", "index.js", "index.mjs", "index.cjs", "index.jsx")


def packages_above(path: str, paths: set[str], lang: str = "python") -> list[str]:
    """The files that stand for the directories holding ``path``, nearest first: their
    ``__init__.py`` (Python) or ``index`` module (JavaScript/TypeScript); Rust: the
    parent modules' files up to the crate root."""
    if lang == "rust":
        return rust_parents(path, paths)
    names = ("__init__.py",) if lang == "python" else INDEX
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


RUST_ROOTS = ("lib.rs", "main.rs")


def rust_parents(path: str, paths: set[str]) -> list[str]:
    """The files of the modules that hold the Rust module file ``path``, nearest first:
    ``src/util/text.rs`` -> ``src/util/mod.rs`` (or ``src/util.rs``) -> ``src/lib.rs``."""
    out: list[str] = []
    cur = path
    for _ in range(8):
        base = posixpath.basename(cur)
        if base in RUST_ROOTS:
            break
        d = posixpath.dirname(cur)
        if base == "mod.rs":
            d = posixpath.dirname(d)  # the module is its directory: its parent holds it
        pre = f"{d}/" if d else ""
        parent = next((c for c in (f"{pre}mod.rs", f"{d}.rs" if d else "",
                                   *(pre + r for r in RUST_ROOTS))
                       if c and c != cur and c in paths), None)
        if parent is None:
            break
        out.append(parent)
        cur = parent
    return out
