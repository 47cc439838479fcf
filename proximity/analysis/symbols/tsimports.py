"""Imports as the symbol channel needs them, from a tree-sitter tree: the helpers every
language's reading of its import statements shares.

Each imported name becomes a binding ``[local, kind, module, 0, name, line, type_only]``
(``kind`` "from" for a name taken from a module, "mod" for a module or namespace bound as
a whole, "use" for a path naming an item) and a reference at the import's line (importing a
name that is gone is a use of it). A module that offers another module's names records
``reexports`` (``[offered name, module, its name there]``, ``*`` for all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proximity.analysis import parsers
from proximity.analysis.languages.base import Facts

if TYPE_CHECKING:  # tree-sitter loads with the first grammar, not with this module
    from tree_sitter import Node


def walk(node: Node) -> list[Node]:
    """Every node under ``node`` (itself included), in source order."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def unquote(node: Node) -> str:
    """A string literal's text without its quotes."""
    return parsers.text(node).strip("'\"`")


def bind(out: Facts, local: Node | str, kind: str, module: str, name: str, line_of: Node,
         type_only: bool = False) -> None:
    """Record one imported name (``local``: its node, or the name itself)."""
    loc = parsers.text(local) if not isinstance(local, str) else local
    line = line_of.start_point[0] + 1
    out["binds"].append([loc, kind, module, 0, name, line, type_only])
    out["refs"].append([[loc], line, None, type_only])
