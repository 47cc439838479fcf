"""What a process that answers many checks (the resident service, the editor's server)
learns once: parsed diffs of a worktree's file against a base blob, by the file's content (a
sibling's file is diffed once per state); base blobs and merge bases, by commit (they never
change); a sibling's recorded work against its base, by the two trees, and the uses it makes
of names, by the trees and the names. Each table is cleared past ENTRIES."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TypeVar

from proximity.agents import decision
from proximity.analysis import hunks

# (each worktree's staged moves are kept by its index file: filemerge.MOVES)
DIFFS: dict[tuple[str, str | None, str, bytes | None], hunks.FileDiff | None] = {}
DIFF_ENTRIES = 4096
BLOBS: dict[tuple[str | None, str], bytes | None] = {}
BASES: dict[tuple[str | None, str], str | None] = {}
TREE_DIFFS: dict[tuple[str | None, str], bytes] = {}
USES: dict[tuple[tuple[str | None, str], tuple[str, ...], str], tuple[decision.Use, ...]] = {}
ENTRIES = 2048
K = TypeVar("K")
V = TypeVar("V")
BLOB_BYTES = 1 << 20  # a larger blob is read again each time, not kept


def remember(table: dict[K, V], items: Mapping[K, V]) -> None:
    """Keep ``items`` in one of the tables above (a blob past BLOB_BYTES is not kept)."""
    if len(table) + len(items) > ENTRIES:
        table.clear()
    table.update({k: v for k, v in items.items()
                  if not isinstance(v, bytes) or len(v) <= BLOB_BYTES})


def diff_key(wpath: str, base: str | None, path: str, data: bytes | None
             ) -> tuple[str, str | None, str, bytes | None]:
    """What a parsed diff is kept by in DIFFS: the worktree, the base, the path, and the
    file's content by its digest."""
    return (wpath, base, path, None if data is None else hashlib.sha1(data).digest())
