"""Whose work a pushed commit is: the guard judges what is pushed, each pushed commit
standing in for the lines of work it carries, as that commit's state: right-of-way belongs
to the work, not to the checkout that holds it. A branch checked out in a worktree is that
worktree's work, unless what the push brings the remote is other worktrees' commits (the
main checkout that merged a finished lane pushes it as that lane's); a branch checked out
nowhere is the one worktree whose own commits it carries; else the pushing worktree's."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from proximity import gitio
from proximity.errors import LedgerError
from proximity.model import Agent

if TYPE_CHECKING:
    from proximity.snapshot import workspace


def whose_work(ctx: workspace.Context, agents: list[Agent], me: Agent, ref: str, sha: str,
               old: str = "") -> list[Agent]:
    """The worktrees a pushed (ref, commit) stands in for, each judged as that commit
    (``me``: the pushing worktree; ``old``: the remote's commit the push replaces, empty
    or zeros when it has none there). More than one when the push lands several lines of
    work at once (a checkout that merged both sides): judged on the merge, as each."""
    holder = owner(agents, ref)
    if holder is None and ref == "HEAD" and me.branch:
        holder = me  # (`git push origin HEAD:x` on a branch: that branch's work)
    if holder is None:
        return [carrier(ctx, agents, me, sha) or me]
    landed = landing(ctx, agents, holder, sha, old)
    if not landed:
        return [holder]
    if own_work(ctx, sha, old, landed):
        return [holder, *landed]  # its own commits beside theirs: judged as both
    return landed


def landing(ctx: workspace.Context, agents: list[Agent], holder: Agent, sha: str, old: str
            ) -> list[Agent]:
    """The other local worktrees whose work a push of ``holder``'s branch lands: each one's
    HEAD is in the pushed history and not in what the remote had (``old``); the deepest
    ones (a worktree built on another's finished work stands for both). None when the
    remote had no such ref (what it has is not known: the branch is its holder's)."""
    if not old or set(old) == {"0"}:
        return []
    repo = ctx.repo
    found = [a for a in agents
             if a.id != holder.id and not a.remote and a.error is None and a.head
             and repo.is_ancestor(a.head, sha)
             and not repo.is_ancestor(a.head, old)] or removed(ctx, agents, sha, old)
    return [a for a in found
            if not any(b is not a and b.head != a.head
                       and repo.is_ancestor(str(a.head), str(b.head)) for b in found)]


def removed(ctx: workspace.Context, agents: list[Agent], sha: str, old: str) -> list[Agent]:
    """Lines of work whose worktree is gone before they land (an agent's worktree removed
    once it finished, its branch merged later): each local stream of the ledger that no
    worktree is now, whose last recorded HEAD the pushed history brings the remote. The
    push is judged as that work, so the right-of-way it held stays its (the landing was
    judged as the checkout's own work, and told to yield to the side that yielded)."""
    if ctx.ledger is None:
        return []
    here = {a.id for a in agents}
    try:
        streams = ctx.ledger.streams()
        lasts = {sid: ctx.ledger.last_event(sid) for sid, info in streams.items()
                 if sid not in here and info["machine"] in ("", None, ctx.cfg.machine_id)}
    except LedgerError:
        return []
    repo = ctx.repo
    return [Agent(sid, str(streams[sid]["path"] or ""), ev.branch, ev.head,
                  started=streams[sid]["first_seq"])
            for sid, ev in sorted(lasts.items())
            if ev is not None and ev.head and repo.is_ancestor(ev.head, sha)
            and not repo.is_ancestor(ev.head, old)]


def own_work(ctx: workspace.Context, sha: str, old: str, landed: list[Agent]) -> bool:
    """Whether the pushed history has a commit of its own beside the landed worktrees'
    work: one, not a merge, that neither the remote (``old``) nor any of them has. (The
    merge commits that join them are the landing itself: judged on the merge.)"""
    heads = [str(a.head) for a in landed]
    out = gitio.git(["rev-list", "--no-merges", "-n", "1", sha, "--not", old, *heads],
                    cwd=ctx.repo.here, ok=(0, 128))
    return out.returncode != 0 or bool(out.stdout.strip())


def owner(agents: list[Agent], ref: str) -> Agent | None:
    """The local worktree that has the pushed branch checked out (its work, whoever
    pushes it: right-of-way is that worktree's), if one does."""
    if not ref.startswith("refs/heads/"):
        return None
    branch = ref.removeprefix("refs/heads/")
    return next((a for a in agents if a.branch == branch and not a.remote and a.error is None),
                None)


def carrier(ctx: workspace.Context, agents: list[Agent], me: Agent, sha: str) -> Agent | None:
    """For a pushed branch checked out nowhere (a copy of another worktree's branch, or one
    built on it): the one local worktree whose own commits it carries -- its HEAD is in
    the pushed history and not in the pushing worktree's (any, from a detached checkout,
    whose HEAD is nobody's line of work) -- the deepest such when their heads line up;
    None when none does or unrelated ones do. (Without it, `git branch copy
    feat/b; git push origin copy` pushed the commits that must yield, judged as the pushing
    worktree.)"""
    repo = ctx.repo
    found = []
    for a in agents:
        if a.id == me.id or a.remote or a.error is not None or not a.head or not a.branch:
            continue  # (a detached checkout holds no line of work of its own)
        if me.branch and me.head and repo.is_ancestor(a.head, me.head):
            continue  # history the pusher's own line of work has too: nobody's own here
        if repo.is_ancestor(a.head, sha):
            found.append(a)
    deepest = [a for a in found
               if not any(b is not a and b.head != a.head
                          and repo.is_ancestor(str(a.head), str(b.head)) for b in found)]
    return deepest[0] if len(deepest) == 1 else None


def pushed_state(ctx: workspace.Context, me: Agent, ref: str, sha: str) -> Agent:
    """This worktree as a pushed commit: its tree, on that commit, as the snapshot commit
    of (tree, commit) -- content-addressed, so a push of the state already judged (the
    warm snapshot after the commit, or the one recorded at it) is that very state and its
    pairs' channel results are found by their key instead of computed again (git's merge
    of two states is the same from the snapshot commit as from the commit: same tree,
    same merge bases). Right-of-way is still computed from this HEAD."""
    # (a push of HEAD, or of a commit by name, is the worktree's branch: "HEAD" is none)
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else me.branch
    tree = ctx.repo.commit_tree(sha)
    if me.error is None and me.head == sha and me.tree == tree and me.snapshot:
        return replace(me, branch=branch)
    return replace(me, head=sha, snapshot=ctx.repo.snapshot_commit(tree, sha), tree=tree,
                   branch=branch, error=None)
