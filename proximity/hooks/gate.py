"""What the commit and push gates (pre-commit, pre-push) judge: record this worktree, scan
its pairs (each pushed commit standing in for the worktree whose work it is), fire the
triggers, and say who must yield to whom, as a :class:`Verdict`. The stage runner
(stages.py) calls it for both hook paths, the in-process hook and the resident service;
this module loads the scan engine, so the snapshot stages never import it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from proximity.agents import calls, decision
from proximity.analysis import hunks
from proximity.errors import FatalError, LedgerError
from proximity.gitio import MAIN_ID
from proximity.hooks import departing
from proximity.hooks.pushed import owner, pushed_state, whose_work
from proximity.model import Agent
from proximity.safetext import text
from proximity.snapshot import recorder, workspace
from proximity.tcas import actions, pipeline
from proximity.views import report

if TYPE_CHECKING:
    from proximity.model import Scan

# the live agents (and the retired ids) with this worktree read from the index given, if any
AgentsOf = Callable[[str | None], tuple[list["Agent"], list[str]]]


@dataclass(frozen=True)
class Verdict:
    """What a hook's judging found. ``nothing``: the push carries no work to judge
    (deletions, tags, commits the remote has); ``notes``: lines about recording (a busy
    ledger queued the event); ``texts``: the advisories involving the judged worktree;
    ``yielding``: that worktree (the pushing one, or the one whose work the push
    carries); ``must_yield``: the worktrees it must yield to; ``posted``: ids of the
    messages this judging sent this worktree (shown as advisories already);
    ``graph_deferred``: the import graph is being built (its channel unknown this time);
    ``unjudged``: (guard) the siblings whose state could not be read, as (id, branch,
    why): pairs not judged, so the guard is off against them."""
    nothing: bool = False
    notes: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    yielding: str | None = None
    must_yield: tuple[str, ...] = ()
    posted: frozenset[int] = frozenset()
    graph_deferred: bool = False
    unjudged: tuple[tuple[str, str | None, str], ...] = ()
    # (guard) the calls a landing leaves unbound on the branch it lands on: (words, an RA)
    breaks: tuple[tuple[str, bool], ...] = ()


def judge(ctx: workspace.Context, stage: str, kind: str, override: str | None,
          pushed: Sequence[tuple[str, str, str, str]] | None, agents_of: AgentsOf,
          in_hook: bool = True, record: bool = True, unstash: str | None = None,
          rid: str | None = None, remote: str = "", allow: bool = False) -> Verdict:
    """Record this worktree, scan its pairs (each pushed commit standing in for the lines
    of work it carries: pushed.whose_work), fire the triggers.
    ``agents_of(override)``: the live agents, as the caller keeps them (the in-process
    hook snapshots every worktree now; the service keeps them warm). ``record=False``:
    judge without recording this worktree (someone else records this very event).
    ``unstash``: the patch of unstaged edits the hook host holds out of this worktree
    (stash.py). ``allow``: a push that must yield goes on (PROXIMITY_ALLOW=1): the sides
    it was told to yield to are told that it lands over them."""
    agents, retired = agents_of(override)
    agents = unstashed(ctx, agents, unstash)
    me = next((a for a in agents if a.id == ctx.here), None)
    notes: list[str] = []
    if me is not None and me.error is None and me.unread is None and record \
            and not ctx.repo.store.off():  # (a scratch store's objects go with this process)
        notes = recorder.queued_note(recorder.record(ctx, kind, recorder.Snap(
            me.id, me.path, me.branch, me.head, me.snapshot, me.tree), rid))
    # each run: (whose state the pushed commit stands for, the agents); a branch checked
    # out in a worktree is that worktree's work, whoever pushes it
    runs: list[tuple[str, list[Agent]]] = [(ctx.here, agents)]
    # (a worktree whose work lands, the ref it lands as, the remote's ref, the pushed commit)
    lands: list[tuple[Agent, str, str, str]] = []
    onto_trunk: list[tuple[str, str, str, str]] = []  # pushes onto the integration branch
    if me is not None and pushed is not None:
        runs = []
        trunk = ctx.repo.trunk_of(remote)
        for ref, sha, old, to in pushed:
            if brings_nothing(ctx, sha, old):
                continue
            held = owner(agents, to) if to else None
            if to and (to == trunk or (held is not None and held.id == MAIN_ID)):
                onto_trunk.append((ref, sha, old, to))
            holder = owner(agents, ref)
            # pushed onto a branch another local checkout holds (`git push origin a:main`
            # from a): its work lands there, as when that checkout merges and pushes it
            onto = held if to != ref else None
            for line in whose_work(ctx, agents, me, ref, sha, old):
                state = pushed_state(ctx, line, ref, sha)
                run = [state if a.id == line.id else a for a in agents]
                if all(a.id != line.id for a in agents):  # (its worktree is gone: removed)
                    run.append(state)
                runs.append((line.id, run))
                if holder is not None and line.id != holder.id:
                    lands.append((line, ref, to, sha))
                elif onto is not None and line.id != onto.id:
                    lands.append((line, to, to, sha))
                elif to and to == trunk and (to != f"refs/heads/{line.branch or ''}"
                                             or line.id == MAIN_ID):
                    # onto the remote's trunk, which no checkout holds here now (the
                    # main checkout detached, or on another branch), or the main
                    # checkout's own work pushed there: it lands
                    lands.append((line, to, to, sha))
        if not runs:
            return Verdict(nothing=True, notes=tuple(notes))
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
    left = departing.departed(ctx.repo, result.agents, result.involving(who), who)
    if left:  # (read half deleted: no collision, and nobody to tell)
        result = replace(result, agents=[a for a in result.agents if a.id not in left],
                         pairs=[p for p in result.pairs if p.a not in left and p.b not in left])
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
    unjudged = tuple((a.id, a.branch, a.error) for a in result.agents
                     if a.error is not None and a.id != who and stage == "guard")
    if lands and (not must_yield or (allow and stage == "guard")):
        # (overridden: the work it yielded to is now the side whose lines the trunk
        # contradicts; landed work holds, so they are told to rebase onto it)
        # (must_yield is empty unless the push was allowed past it)
        posted += landed(ctx, lands, [r for _, r in results], remote, over=must_yield)
    # (a push already blocked for the work it must yield to needs no more reasons: the
    # calls are judged when it may land)
    here = me.branch if me is not None else None
    breaks = () if must_yield else tuple(b for push in onto_trunk
                                         for b in unbound(ctx, *push, here=here))
    return Verdict(notes=tuple(notes), texts=tuple(texts), yielding=who,
                   must_yield=tuple(must_yield), breaks=breaks,
                   posted=frozenset(int(m["id"]) for m in posted
                                    if m["recipient"] == ctx.here),
                   graph_deferred=result.graph_deferred, unjudged=unjudged)


def unbound(ctx: workspace.Context, ref: str, sha: str, old: str, to: str,
            here: str | None = None) -> list[tuple[str, bool]]:
    """What a push onto the integration branch (``to``: the remote's trunk, or the branch
    the main checkout holds) leaves unbound there, as (words, an RA): git's merge of the
    remote's commit (``old``) and the pushed one judged by the scan's symbol channel, as
    `check --merge` judges a merge -- chiefly a call the trunk has that the pushed change
    breaks (a `git pull --rebase`, then a push: git merges cleanly, the program breaks).
    After a rebase the trunk's own change is history the push has: the calls the branch
    wrote before it (its reflog's tip then) are judged against the trunk's change since
    its old base, where the pushed commit still makes them (calls.still_unbound). Nothing
    when the remote's commit is not here (not fetched) or the symbol evidence cannot be
    read: the pairs still judge. ``here``: the pushing worktree's branch (what a push of
    HEAD pushes; the service judging it runs in another checkout)."""
    if not old or set(old) == {"0"}:
        return []
    what = (f"landing {text(ref.removeprefix('refs/heads/'))} on "
            f"{text(to.removeprefix('refs/heads/'))}")
    try:  # (the remote's commit not fetched: KeyError)
        remote = Agent("remote", "", None, old, old, ctx.repo.commit_tree(old))
        found = calls.unbound_between(ctx.repo, remote, ref, sha, what)
        branch = ref if ref.startswith("refs/heads/") else (
            f"refs/heads/{here}" if ref == "HEAD" and here else None)
        before = calls.rebased_from(ctx.repo, branch, sha, old) if branch else None
        if before is not None:
            found += calls.still_unbound(ctx.repo, remote, ref, before, sha, what)
    except (KeyError, ValueError, FatalError):
        return []
    return list({c.detail: (c.detail, c.level == decision.RA) for c in found}.values())


def warm_up(ctx: workspace.Context) -> None:
    """After a verdict whose import graph was deferred (``graph_deferred``): the graph
    built by a scan in the background, as the engine starts it."""
    pipeline.warm_up(ctx)


def landed(ctx: workspace.Context, lands: list[tuple[Agent, str, str, str]],
           scans: list[Scan], remote: str = "", over: Sequence[str] = ()
           ) -> list[dict[str, object]]:
    """Tell every worktree that yields to a line of work this push lands (the standing
    advice, this judging's, or a wait cycle's order, which ends here) that it lands: the
    yield ends once they rebase onto it; and each of ``over`` (the sides this push was
    told to yield to, overridden) that it lands over their lines. Each message names the
    remote's ref and the pushed commit: it is delivered once the push shows, and once
    (snapshot.delivery). Returns the messages posted."""
    if ctx.ledger is None:
        return []
    try:
        standing = ctx.ledger.standing_yields()
    except LedgerError:
        standing = []
    posted: list[dict[str, object]] = []
    for line, ref, to, sha in lands:
        waiting = {told for told, holder, _ in standing if holder == line.id}
        waiting |= {p.yielding for r in scans for p in r.involving(line.id)
                    if p.advisory == "resolution" and p.yielding and p.yielding != line.id}
        # the members a wait cycle's order told to wait for this work (agents/cycles.py)
        with contextlib.suppress(LedgerError):
            waiting |= set(ctx.ledger.end_orders(line.id))
        for y in sorted((waiting | set(over)) - {line.id, ctx.here}):
            msg: dict[str, object] = {
                "type": "landed", "from": line.id, "to": y, "branch": line.branch,
                "onto": ref.removeprefix("refs/heads/"), "by": ctx.here}
            if y in over:
                msg["over"] = True
                # (its HOLD COURSE to them, unread, would contradict this)
                with contextlib.suppress(LedgerError):
                    ctx.ledger.withdraw((), [(y, line.id)])
            if remote:
                msg.update(remote=remote, dest=to, sha=sha)
            try:
                mid = ctx.ledger.post(y, line.id, "landed", msg, 0.0, 0.0, 0.0)
            except LedgerError:
                continue
            if mid is not None:
                posted.append({**msg, "id": mid, "recipient": y})
    return posted


def brings_nothing(ctx: workspace.Context, sha: str, old: str) -> bool:
    """Whether a pushed commit brings no line the remote lacks: its tree is the one the
    remote's ref has (a merge commit of work that landed already, pushed after it)."""
    if not old or set(old) == {"0"}:
        return False
    try:
        return ctx.repo.commit_tree(sha) == ctx.repo.commit_tree(old)
    except (KeyError, ValueError):  # the remote's commit is not here (not fetched)
        return False


def unstashed(ctx: workspace.Context, agents: list[Agent], patch: str | None) -> list[Agent]:
    """The agents with this worktree as its user has it: the unstaged edits its hook host
    holds out while hooks run (``patch``, stash.py) put back on the state read from its
    files (that state as it is when the patch does not apply)."""
    me = next((a for a in agents if a.id == ctx.here), None)
    if not patch or me is None or me.error is not None or me.unread or not me.tree:
        return agents
    tree = ctx.repo.tree_with_patch(me.tree, patch, ctx.repo.at(me.path))
    if not tree or tree == me.tree:
        return agents
    back = replace(me, tree=tree, snapshot=ctx.repo.snapshot_commit(tree, me.head))
    return [back if a.id == ctx.here else a for a in agents]
