"""The hook's verdict: what a pre-commit or pre-push judges and what it prints.

Record this worktree, scan its pairs (each pushed commit standing in for the worktree whose
work it is), fire the triggers, and turn the verdict into the lines a hook prints and
whether it blocks. The in-process hook (``proximity hook``) and the resident service both
call these functions, so both paths judge and print alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from proximity.analysis import hunks
from proximity.config import disarms
from proximity.hooks.inbox import inbox_lines
from proximity.hooks.pushed import pushed_state, whose_work
from proximity.safetext import text
from proximity.snapshot import recorder, workspace
from proximity.snapshot.agents import live_agents
from proximity.tcas import actions, pipeline
from proximity.views import report

if TYPE_CHECKING:
    from proximity.model import Agent, Scan




def judge(ctx: workspace.Context, stage: str, kind: str, override: str | None,
          pushed: list[tuple[str, str]] | None,
          agents_of: Callable[[str | None], tuple[list[Agent], list[str]]] | None = None,
          in_hook: bool = True, record: bool = True, unstash: str | None = None,
          rid: str | None = None) -> dict[str, Any]:
    """Record this worktree, scan its pairs (each pushed commit standing in for it, or for
    the worktree that has the pushed branch checked out), fire
    the triggers; the verdict as plain data. The in-process hook and the resident service
    both call this, so both paths judge alike. ``agents_of(override)``: the live agents
    (default: snapshot every worktree now). ``record=False``: judge without recording
    this worktree (someone else records this very event). ``unstash``: the patch of
    unstaged edits the hook host holds out of this worktree (stash.py)."""

    if agents_of is None:
        agents, retired = live_agents(ctx.repo, {ctx.here: override} if override else None)
    else:
        agents, retired = agents_of(override)
    agents = unstashed(ctx, agents, unstash)
    me = next((a for a in agents if a.id == ctx.here), None)
    notes: list[str] = []
    if me is not None and me.error is None and record:
        notes = recorder.queued_note(recorder.record(ctx, kind, recorder.Snap(
            me.id, me.path, me.branch, me.head, me.snapshot, me.tree), rid))
    # each run: (whose state the pushed commit stands for, the agents); a branch checked
    # out in a worktree is that worktree's work, whoever pushes it
    runs: list[tuple[str, list[Agent]]] = [(ctx.here, agents)]
    if me is not None and pushed is not None:
        runs = []
        for ref, sha in pushed:
            owner = whose_work(ctx, agents, me, ref, sha)
            runs.append((owner.id, [pushed_state(ctx, owner, ref, sha) if a.id == owner.id
                                    else a for a in agents]))
        if not runs:
            return {"nothing": True, "notes": notes}
    results = [(who, pipeline.run_scan(ctx, focus=who, agents=run, retired=retired,
                                      in_hook=in_hook, record=i == 0,
                                      remote=stage == "guard"))
               for i, (who, run) in enumerate(runs)]

    def weight(run: tuple[str, Scan]) -> tuple[bool, float]:  # one that must yield decides
        who, r = run
        mine = r.involving(who)
        return (any(p.advisory == "resolution" and p.yielding == who for p in mine),
                max((p.risk for p in mine), default=0.0))

    who, result = max(results, key=weight)
    posted = actions.fire(ctx, result)
    by_id = {a.id: a for a in result.agents}
    texts, must_yield = [], []
    for p in result.involving(who):
        if p.advisory == "clear" and not p.escalated:
            continue
        other = by_id.get(p.b if p.a == who else p.a)
        texts.append(report.advisory_text(p, who, by_id,
                                          hunks.of_pair(ctx.repo, p, other)))
        if p.advisory == "resolution" and p.yielding == who:
            must_yield.append(p.b if p.a == who else p.a)
    # a sibling whose state could not be read is a pair not judged: the guard is off
    # against it, and says so (it would otherwise pass as clear)
    unjudged = [[a.id, a.branch, a.error] for a in result.agents
                if a.error is not None and a.id != who and stage == "guard"]
    return {"nothing": False, "notes": notes, "texts": texts, "must_yield": must_yield,
            "yielding": who, "unjudged": unjudged,
            "posted": [m["id"] for m in posted if m["recipient"] == ctx.here],
            "graph_deferred": result.graph_deferred,
            "pairs": [report.pair_json(p) for p in result.pairs]}


def unstashed(ctx: workspace.Context, agents: list[Agent], patch: str | None) -> list[Agent]:
    """The agents with this worktree as its user has it: the unstaged edits its hook host
    holds out while hooks run (``patch``, stash.py) put back on the state read from its
    files (that state as it is when the patch does not apply)."""
    me = next((a for a in agents if a.id == ctx.here), None)
    if not patch or me is None or me.error is not None or not me.tree:
        return agents
    tree = ctx.repo.tree_with_patch(me.tree, patch, me.path)
    if not tree or tree == me.tree:
        return agents
    back = replace(me, tree=tree, snapshot=ctx.repo.snapshot_commit(tree, me.head))
    return [back if a.id == ctx.here else a for a in agents]


def outcome(ctx: workspace.Context, stage: str, verdict: dict[str, Any], allow: bool
            ) -> tuple[list[str], bool]:
    """What a deciding hook prints (stderr lines, in order) and whether it blocks, from
    its verdict; takes this worktree's undelivered messages. The in-process hook and the
    resident service both call this, so both print alike. ``allow``: PROXIMITY_ALLOW=1."""
    lines = list(verdict.get("notes") or [])
    if verdict["nothing"]:
        lines.append("proximity: nothing to judge in this push (deletion, tag, or commits "
                     "the remote has); guard passes.")
        return lines + inbox_lines(ctx), False
    if verdict["graph_deferred"]:
        lines.append("proximity: first run: building the import graph in the background; "
                     "the dependency channel is unknown until it is ready.")
    lines += inbox_lines(ctx, set(verdict["posted"]))
    lines += verdict["texts"]
    for other, branch, why in verdict.get("unjudged") or ():
        on = f" (branch {text(branch)})" if branch else ""
        lines.append(f"proximity: the push guard is OFF for this push against worktree "
                     f"{text(other)!r}{on}: its state could not be read: {text(why)}")
    off = disarms(ctx.cfg) if stage == "guard" else None
    if off is not None:
        # (a committed file cannot disarm it, config.policy refuses that: only the
        # person's own git config can, and it is never silent)
        lines.append(f"proximity: the push guard is OFF for this push: git config sets {off}; "
                     "unset those proximity.* keys to turn it on again")
    must_yield = verdict["must_yield"]
    if not must_yield or not (stage == "guard" or (stage == "warn" and ctx.cfg.block_commit)):
        return lines, False
    if allow:
        lines.append("proximity: PROXIMITY_ALLOW=1 set: letting this through despite the "
                     "advisory.")
        return lines, False
    what = "push" if stage == "guard" else "commit"
    who = verdict.get("yielding")
    subject = "this worktree" if not isinstance(who, str) or who == ctx.here else (
        f"worktree {text(who)!r}, whose work this push carries,")
    lines.append(f"proximity: {what} blocked: {subject} must yield to "
                 f"{', '.join(repr(text(x)) for x in must_yield)}. "
                 f"Move your change away from their lines, or coordinate and override with "
                 f"PROXIMITY_ALLOW=1 git {what} (or --no-verify).")
    return lines, True
