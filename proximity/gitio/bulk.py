"""Untracked files in bulk: beyond a count, a snapshot summarizes them by directory
instead of hashing them one by one.

A worktree with 30,000 untracked files (a build's output nobody ignored, a vendored tree)
made every snapshot hash and every channel read 30,000 new files: seconds per commit, and
a resident service hundreds of MiB larger. Past ``UNTRACKED_MAX`` files, the largest groups
-- an untracked directory (no tracked file under it) or, for loose files beside tracked
ones, their directory -- are left out of the snapshot and named, with their counts, as a
summary; the rest is hashed as ever. What a snapshot holds of tracked files is never
summarized, so a sibling's edit of the same lines is found all the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

UNTRACKED_MAX = 1000  # untracked files a snapshot hashes one by one; beyond: summarized


def group_of(path: str, tracked_dirs: set[str]) -> str:
    """The directory that stands for an untracked ``path`` in a summary: its outermost
    directory holding no tracked file, else the directory it sits in ("" : the top)."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d not in tracked_dirs:
            return d
    return "/".join(parts[:-1])


def dirs_of(paths: Iterable[str]) -> set[str]:
    """Every directory that holds one of ``paths`` (at any depth)."""
    out: set[str] = set()
    for p in paths:
        i = p.rfind("/")
        while i > 0:
            d = p[:i]
            if d in out:
                break
            out.add(d)
            i = p.rfind("/", 0, i)
    return out


def summarize(untracked: Iterable[str], tracked: Iterable[str], most: int = UNTRACKED_MAX
              ) -> dict[str, int]:
    """The groups (directory -> untracked files in it) left out of a snapshot so that at
    most ``most`` untracked files remain to hash: the largest groups first (ties by
    name, so every reader summarizes alike). Empty when there are no more than ``most``."""
    files = list(untracked)
    if len(files) <= most:
        return {}
    tracked_dirs = dirs_of(tracked)
    sizes = Counter(group_of(p, tracked_dirs) for p in files)
    out: dict[str, int] = {}
    left = len(files)
    for d, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        if left <= most:
            break
        out[d] = n
        left -= n
    return out


def under(path: str, groups: Mapping[str, int]) -> bool:
    """Whether ``path`` lies in one of the summarized ``groups``. A group that is a
    directory beside tracked files holds only its loose untracked files: the caller
    asks about untracked paths."""
    if "" in groups:
        return True
    i = path.rfind("/")
    while i > 0:
        if path[:i] in groups:
            return True
        i = path.rfind("/", 0, i)
    return False


def summary_text(groups: Mapping[str, int]) -> str:
    """"30000 untracked files in gen/ (and 2 more directories)": for reports."""
    if not groups:
        return ""
    total = sum(groups.values())
    top = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
    names = ", ".join(f"{d or '.'}/ ({n})" for d, n in top[:3])
    more = f" and {len(top) - 3} more directories" if len(top) > 3 else ""
    return f"{total} untracked files summarized, not read one by one: {names}{more}"
