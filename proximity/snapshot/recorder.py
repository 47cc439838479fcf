"""Recording this worktree's state as a ledger event: snapshot, clock tick, brief/debrief."""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from proximity import gitio
from proximity.errors import FatalError
from proximity.hooks.inputs import index_override as index_override
from proximity.ledger import Event
from proximity.snapshot.workspace import Context

GC_EVERY = 1000  # events; retention runs in the hook that records the 1000th


QUEUED = ("proximity: warning: the ledger is busy (another process holds it); this event "
          "is queued and the next hook records it")


def queued_note(ev: object) -> list[str]:
    """The warning for an event the busy ledger spooled (seq 0), if it was."""
    return [QUEUED] if getattr(ev, "seq", None) == 0 else []


class Snap(NamedTuple):
    """One worktree's recorded state (a light stand-in for model.Agent in the hook path)."""

    id: str
    path: str
    branch: str | None
    head: str | None
    snapshot: str | None
    tree: str | None

REF_PREFIX = "refs/ecm/local/"


def this_worktree(ctx: Context) -> gitio.WorktreeInfo:
    wt = ctx.repo.current()
    if wt.id != ctx.here:
        raise FatalError(f"worktree {ctx.here!r} does not match its git dir {wt.admin}")
    return wt


def snapshot_agent(ctx: Context, wt: gitio.WorktreeInfo, index_file: str | None = None,
                   commit: bool = True, unstash: str | None = None) -> Snap:
    """This worktree's live state; ``commit=False`` skips the snapshot commit (the
    post-* hooks record the tree; a scan makes the content-addressed commit when needed).
    ``unstash``: the patch of unstaged edits the hook host holds out (stash.py)."""
    tree = ctx.repo.snapshot_tree(wt, index_file)
    if unstash:
        tree = ctx.repo.tree_with_patch(tree, unstash, wt.path) or tree
    snap = ctx.repo.snapshot_commit(tree, wt.head) if commit else None
    return Snap(wt.id, wt.path, wt.branch, wt.head, snap, tree)


def _brief_source(ctx: Context, head: str | None) -> str | None:
    """The stream a new worktree branched from: same HEAD first, else an ancestor's."""
    if ctx.ledger is None or not head:
        return None
    best = None
    for ev in ctx.ledger.events(None, 200):
        if ev.stream == ctx.here or not ev.head:
            continue
        if ev.head == head:
            return ev.stream
        if best is None and ctx.repo.is_ancestor_cli(ev.head, head):
            best = ev.stream
    return best or None


def _debrief_sources(ctx: Context, head: str | None) -> list[str]:
    """Streams whose work a merge commit at ``head`` brought in (its non-first parents)."""
    if ctx.ledger is None or not head:
        return []
    parents = ctx.repo.parents_cli(head)
    if len(parents) < 2:
        return []
    out = []
    for stream in ctx.ledger.streams():
        if stream == ctx.here:
            continue
        last = ctx.ledger.last_event(stream)
        if last and last.head and any(ctx.repo.is_ancestor_cli(last.head, p)
                                      for p in parents[1:]):
            out.append(stream)
    return out


def record(ctx: Context, kind: str, agent: Snap) -> Event | None:
    """Store one event for this worktree and pin its snapshot under refs/ecm/."""
    if ctx.ledger is None or agent.tree is None:
        return None
    # files changed since HEAD only (committed work is identified by HEAD itself);
    # git plumbing only, so a snapshot hook never loads libgit2
    files = ctx.repo.changed_paths(agent.head or gitio.EMPTY_TREE, agent.tree)
    new_stream = ctx.ledger.last_event(ctx.here) is None
    brief = _brief_source(ctx, agent.head) if new_stream else None
    debrief = _debrief_sources(ctx, agent.head) if kind in ("merge", "commit") else []
    ev = ctx.ledger.record(ctx.here, kind, path=agent.path, head=agent.head,
                           branch=agent.branch, snapshot=agent.snapshot, tree=agent.tree,
                           files=files, brief_from=brief, debrief=debrief,
                           machine=ctx.cfg.machine_id, spool=True)
    if files or agent.snapshot:  # a clean worktree's tree is kept alive by HEAD itself
        with contextlib.suppress(FatalError):  # keeps the snapshot alive through `git gc`
            ctx.repo.pin(REF_PREFIX + gitio.safe_name(ctx.here), agent.snapshot or agent.tree)
    return ev


def record_here(ctx: Context, kind: str, index_file: str | None = None,
                commit: bool = False, unstash: str | None = None) -> Event | None:
    """Snapshot this worktree and record it as one event (what hooks and commands do)."""
    return record(ctx, kind, snapshot_agent(ctx, this_worktree(ctx), index_file, commit,
                                            unstash))
