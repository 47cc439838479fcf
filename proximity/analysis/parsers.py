"""Lazy tree-sitter access: a grammar loads on first use, never at import time, so a hook
that parses nothing pays nothing. Which grammar a file takes is the languages' business
(``analysis/languages``); this module only loads, parses and queries."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the types only: importing tree_sitter is what a hook must not pay for
    from tree_sitter import Language, Node, Parser, Query, Tree


class Grammar(NamedTuple):
    """One tree-sitter grammar: its name (a dialect, such as a language's variant with
    markup) and how to load it. ``load`` imports the grammar's package and returns its
    language pointer; it runs once, on the first parse."""

    name: str
    load: Callable[[], object]


@cache
def language(grammar: Grammar) -> Language:
    from tree_sitter import Language

    return Language(grammar.load())


_PARSERS = threading.local()


def parser(grammar: Grammar) -> Parser:
    """A parser for ``grammar``, one per thread (a parser is not safe to share: the
    resident service answers checks on connection threads while its worker scans)."""
    mine: dict[str, Parser] | None = getattr(_PARSERS, "by_name", None)
    if mine is None:
        mine = _PARSERS.by_name = {}
    if grammar.name not in mine:
        from tree_sitter import Parser

        mine[grammar.name] = Parser(language(grammar))
    return mine[grammar.name]


@cache
def query(grammar: Grammar, source: str) -> Query:
    from tree_sitter import Query

    return Query(language(grammar), source)


def captures(grammar: Grammar, source: str, node: Node) -> dict[str, list[Node]]:
    """Each capture's nodes, in source order (tree-sitter's own order is neither that nor
    the same from one process to the next, and the records made of them are cached)."""
    from tree_sitter import QueryCursor

    found = QueryCursor(query(grammar, source)).captures(node)
    return {name: sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte))
            for name, nodes in found.items()}


# Generated or minified sources are never parsed (a 50 MB one-line bundle took minutes and
# gigabytes): over this many bytes, or with any line longer than LONG_LINE, a file counts
# as "large". `configure` sets both from the config (large_bytes, long_line).
MAX_BYTES = 2_000_000
LONG_LINE = 5_000
STUB = b"proximity: large untracked file"


def configure(large_bytes: int, long_line: int) -> None:
    global MAX_BYTES, LONG_LINE
    MAX_BYTES, LONG_LINE = max(1, int(large_bytes)), max(1, int(long_line))


def generated(data: bytes) -> bool:
    """Too large or minified to parse (or proximity's own stub for a large file)."""
    if len(data) > MAX_BYTES or data.startswith(STUB):
        return True
    return re.search(rb"[^\n]{%d}" % (LONG_LINE + 1), data) is not None


def parse(grammar: Grammar, data: bytes) -> Tree:
    """A syntax tree of ``data``; an empty one for generated or minified code."""
    return parser(grammar).parse(b"" if generated(data) else data)


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")
