"""Who is flying: every live worktree's working state as an agent (its snapshot tree and the
content-addressed snapshot commit over its HEAD), and the worktrees git marks prunable."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from proximity import gitio
from proximity.errors import FatalError
from proximity.model import Agent


def live_agents(repo: gitio.Repo, index_override: Mapping[str, str] | None = None,
                known: MutableMapping[str, Any] | None = None) -> tuple[list[Agent], list[str]]:
    """Snapshot every live worktree (in parallel: it is git's work, not Python's). One
    that git is still populating is not in the airspace yet (not retired either): half
    written, it looks like a worktree that deleted every file not written yet."""
    from concurrent.futures import ThreadPoolExecutor

    live = []
    retired: list[str] = []
    for wt in repo.worktrees():
        if not wt.populating:
            (retired.append(wt.id) if wt.prunable else live.append(wt))

    def tree_of(wt: gitio.WorktreeInfo) -> str | Exception:
        try:
            return readable(repo, wt, repo.snapshot_tree(wt, (index_override or {}).get(wt.id)))
        except (FatalError, OSError) as e:
            return e

    workers = min(8, max(1, len(live)), (os.cpu_count() or 2) * 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(tree_of, wt) for wt in live]
        repo.pg  # noqa: B018 -- load libgit2 while git works in the threads
        trees = [f.result() for f in futures]
    out = []
    for wt, tree in zip(live, trees, strict=True):
        if isinstance(tree, Exception):
            out.append(committed_only(repo, wt, tree))
            continue
        # snapshot commits are content-addressed: the same (tree, head) has one id; a
        # cached id whose object `git gc` removed is made again
        key = f"snap:{tree}:{wt.head}"
        snap = (known or {}).get(key)
        if not snap or not repo.has_object(snap):
            snap = repo.snapshot_commit(tree, wt.head)
            if known is not None:
                known[key] = snap
        out.append(Agent(wt.id, wt.path, wt.branch, wt.head, snap, tree,
                         subject=repo.subject(wt.head),
                         operation=gitio.operation_in_progress(wt.admin) if wt.admin else None,
                         summarized=summarized(repo, wt.id)))
    return out, retired


def readable(repo: gitio.Repo, wt: gitio.WorktreeInfo, tree: str) -> str | Exception:
    """``tree``, or (an object of it libgit2 would wedge on: gitio/loose.py) why it is
    not read: the worktree is then judged on its commits, saying so."""
    why = repo.unreadable(tree, wt.head)
    return FatalError(why) if why else tree


def summarized(repo: gitio.Repo, wid: str) -> tuple[tuple[str, int], ...]:
    """The untracked groups the worktree's last snapshot left out (gitio/bulk.py)."""
    return tuple(sorted((repo.summaries.get(wid) or {}).items()))


def committed_only(repo: gitio.Repo, wt: gitio.WorktreeInfo, why: Exception) -> Agent:
    """A worktree whose live state could not be snapshotted, judged on the work it
    committed (its HEAD), saying what was not read: never "clear" for want of a
    snapshot. Unreadable (``error``) only when it has no commit or that fails too."""
    if wt.head:
        try:
            return Agent(wt.id, wt.path, wt.branch, wt.head, wt.head,
                         repo.commit_tree(wt.head), subject=repo.subject(wt.head),
                         unread=str(why),
                         operation=gitio.operation_in_progress(wt.admin) if wt.admin
                         else None)
        except (FatalError, OSError, KeyError, ValueError):
            pass
    return Agent(wt.id, wt.path, wt.branch, wt.head, error=str(why))
