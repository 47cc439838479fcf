"""Lazy tree-sitter access: grammars load on first use, never at import time."""

from __future__ import annotations

import os
import threading
from functools import cache
from typing import Any

LANGS = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust",
}


def language_of(path: str) -> str | None:
    return LANGS.get(os.path.splitext(path)[1].lower())


@cache
def language(name: str) -> Any:
    from tree_sitter import Language

    if name == "python":
        import tree_sitter_python

        return Language(tree_sitter_python.language())
    if name == "javascript":
        import tree_sitter_javascript

        return Language(tree_sitter_javascript.language())
    if name in ("typescript", "tsx"):
        import tree_sitter_typescript as ts

        return Language(ts.language_tsx() if name == "tsx" else ts.language_typescript())
    if name == "go":
        import tree_sitter_go

        return Language(tree_sitter_go.language())
    if name == "rust":
        import tree_sitter_rust

        return Language(tree_sitter_rust.language())
    raise KeyError(name)


_PARSERS = threading.local()


def parser(name: str) -> Any:
    """A parser for ``name``, one per thread (a parser is not safe to share: the
    resident service answers checks on connection threads while its worker scans)."""
    mine: dict[str, Any] | None = getattr(_PARSERS, "by_name", None)
    if mine is None:
        mine = _PARSERS.by_name = {}
    if name not in mine:
        from tree_sitter import Parser

        mine[name] = Parser(language(name))
    return mine[name]


@cache
def query(name: str, source: str) -> Any:
    from tree_sitter import Query

    return Query(language(name), source)


def captures(name: str, source: str, node: Any) -> dict[str, list[Any]]:
    from tree_sitter import QueryCursor

    result: dict[str, list[Any]] = QueryCursor(query(name, source)).captures(node)
    return result


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
    import re

    return re.search(rb"[^\n]{%d}" % (LONG_LINE + 1), data) is not None


def parse(name: str, data: bytes) -> Any:
    """A syntax tree of ``data``; an empty one for generated or minified code."""
    return parser(name).parse(b"" if generated(data) else data)


def text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "replace")
