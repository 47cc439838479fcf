"""Trees built in process, through libgit2: a tree with some paths changed, and what a path
names in a tree (what a snapshot of a few changed files builds: Repo.snapshot_overlay)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from proximity.gitio.base import _pygit2


def tree_kind(base: Any, parts: Sequence[str]) -> str | None:
    """What ``parts`` names in tree ``base``: "blob" (a file or link), "tree", "commit"
    (a submodule), None (nothing), or "blocked" (a parent is not a directory)."""
    tree = base
    for i, name in enumerate(parts):
        try:
            entry = tree[name]
        except KeyError:
            return None
        if i == len(parts) - 1:
            return {"blob": "blob", "tree": "tree", "commit": "commit"}.get(entry.type_str,
                                                                          "blocked")
        if entry.type_str != "tree":
            return "blocked"
        tree = entry
    return None


def in_nested_repo(root: str, base: Any, parts: Sequence[str]) -> bool:
    """Whether a new file sits in a directory the base does not have that holds a `.git`
    (`add -A` would record that repository, not the file)."""
    for i in range(len(parts) - 1, 0, -1):
        if tree_kind(base, parts[:i]) == "tree":
            return False
        if os.path.lexists(os.path.join(root, *parts[:i], ".git")):
            return True
    return False


def tree_with(pg: Any, tree: Any, changes: Mapping[tuple[str, ...], tuple[str, int] | None],
              wrote: list[str] | None = None) -> Any:
    """The id of ``tree`` (None: empty) with ``changes`` made (path parts -> (blob id,
    mode), or None to remove), written through libgit2; None when the result is empty
    (git writes no empty directories). ``wrote``: gets the id of every tree written."""
    pygit2 = _pygit2()
    tb = pg.TreeBuilder(tree) if tree is not None else pg.TreeBuilder()
    below: dict[str, dict[tuple[str, ...], tuple[str, int] | None]] = {}
    for parts, val in changes.items():
        if len(parts) > 1:
            below.setdefault(parts[0], {})[parts[1:]] = val
        elif val is None:
            if tb.get(parts[0]) is not None:
                tb.remove(parts[0])
        else:
            tb.insert(parts[0], pygit2.Oid(hex=val[0]), val[1])
    for name, sub in below.items():
        entry = tb.get(name)
        old = pg[entry.id] if entry is not None and entry.filemode == pygit2.GIT_FILEMODE_TREE \
            else None
        got = tree_with(pg, old, sub, wrote)
        if got is None:
            if entry is not None:
                tb.remove(name)
        else:
            tb.insert(name, got, pygit2.GIT_FILEMODE_TREE)
    if tree is not None and not changes:
        return tree.id
    if len(tb) == 0:
        return None
    # (never read back: a loose file of that id already there, cut short, is kept by
    # libgit2 as the object, and reading it wedges; its caller checks those it wrote)
    oid = tb.write()
    if wrote is not None:
        wrote.append(str(oid))
    return oid
