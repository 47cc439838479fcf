"""Lazy tree-sitter access: grammars load on first use, never at import time."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

LANGS = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust",
}


def language_of(path: str) -> str | None:
    return LANGS.get(os.path.splitext(path)[1].lower())


@lru_cache(maxsize=None)
def language(name: str) -> Any:
    from tree_sitter import Language

    if name == "python":
        import tree_sitter_python as mod

        return Language(mod.language())
    if name == "javascript":
        import tree_sitter_javascript as mod

        return Language(mod.language())
    if name in ("typescript", "tsx"):
        import tree_sitter_typescript as ts

        return Language(ts.language_tsx() if name == "tsx" else ts.language_typescript())
    if name == "go":
        import tree_sitter_go as mod

        return Language(mod.language())
    if name == "rust":
        import tree_sitter_rust as mod

        return Language(mod.language())
    raise KeyError(name)


@lru_cache(maxsize=None)
def parser(name: str) -> Any:
    from tree_sitter import Parser

    return Parser(language(name))


@lru_cache(maxsize=None)
def query(name: str, source: str) -> Any:
    from tree_sitter import Query

    return Query(language(name), source)


def captures(name: str, source: str, node: Any) -> dict[str, list[Any]]:
    from tree_sitter import QueryCursor

    result: dict[str, list[Any]] = QueryCursor(query(name, source)).captures(node)
    return result


def parse(name: str, data: bytes) -> Any:
    return parser(name).parse(data)


def text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "replace")
