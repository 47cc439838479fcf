"""`proximity hook STAGE`: what git hooks (plain or via pre-commit) run.

snapshot  post-checkout, post-commit, post-merge, post-rewrite: record, deliver inbox.
warn      pre-commit: print advisories that involve this worktree (blocks only with
          ``block_commit = true`` and an RA that says this worktree yields).
guard     pre-push: exit 1 when an RA says this worktree must yield, unless
          PROXIMITY_ALLOW=1.

Every stage fails open: an internal error prints a warning and exits 0, because the tool
must never break git. The only non-zero exit is the deliberate block (1, or the code the hook
script asks for in PROXIMITY_BLOCKED_EXIT so it can tell a block from a Python that failed).
A hook waits at most WAIT_BUDGET seconds in total for a busy ledger; an event that cannot
be written in time is queued in the ledger's spool and recorded by the next writer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from proximity.errors import FatalError
from proximity.hooks.inputs import STAGE as STAGE
from proximity.hooks.inputs import ZERO as ZERO
from proximity.hooks.inputs import blocked_exit as blocked_exit
from proximity.hooks.inputs import kind_of as _kind
from proximity.hooks.inputs import pushed_refs as pushed_refs
from proximity.hooks.inputs import read_stdin as _read_stdin
from proximity.snapshot import recorder, workspace

if TYPE_CHECKING:
    import argparse

    from proximity.model import Agent
    from proximity.tcas.engine import Scan


def err(msg: str) -> None:
    print(msg, file=sys.stderr)


def inbox_lines(ctx: workspace.Context, shown: set[int] | None = None) -> list[str]:
    """This worktree's undelivered messages, rendered, taken from the ledger (so shown
    once); ``shown``: ids this run already printed as advisories (marked delivered
    without repeating them)."""
    if ctx.ledger is None:
        return []
    from proximity.errors import LedgerBusy

    try:
        taken = ctx.ledger.take(ctx.here)
    except LedgerBusy:
        return []  # they stay undelivered: the next hook shows them
    msgs = [m for m in taken if m["id"] not in (shown or set())]
    if not msgs:
        return []
    from proximity.tcas import actions

    return [actions.render(m) for m in msgs]


def deliver(ctx: workspace.Context, shown: set[int] | None = None) -> None:
    """Print this worktree's undelivered messages, once."""
    for line in inbox_lines(ctx, shown):
        err(line)


GC_EVERY = 1000  # events; retention runs in the hook that records the 1000th


WAIT_BUDGET = 2.0  # seconds a hook may wait, in total, for a busy ledger


QUEUED = ("proximity: warning: the ledger is busy (another process holds it); this event "
          "is queued and the next hook records it")


def queued_note(ev: object) -> list[str]:
    """The warning for an event the busy ledger spooled (seq 0), if it was."""
    return [QUEUED] if getattr(ev, "seq", None) == 0 else []


def queued(ev: object) -> None:
    for line in queued_note(ev):
        err(line)


def snapshot(ctx: workspace.Context, kind: str, service: bool = True,
             record: bool = True) -> None:
    """``service=False``: the thin client asked the service already; ``record=False``:
    the service took this event (a request the client gave up on) and records it."""
    from proximity.hooks import stash

    unstash = stash.host_patch(os.environ)
    if not record or (service and _service_records(ctx, kind, unstash)):
        deliver(ctx)
        return
    ev = recorder.record_here(ctx, kind, recorder.index_override(), unstash=unstash)
    queued(ev)
    deliver(ctx)
    if ev is not None and ctx.ledger is not None and ev.seq and ev.seq % GC_EVERY == 0:
        live = {w.id for w in ctx.repo.worktrees() if not w.prunable}
        ctx.ledger.gc(ctx.cfg.retain_events, live)


def _service_records(ctx: workspace.Context, kind: str, unstash: str | None) -> bool:
    """The resident service records this worktree (it knows what changed: the work is
    proportional to the change); False: absent or busy (it is started for next time)."""
    from proximity.service import client

    return client.record(ctx.repo.common, ctx.here, kind, recorder.index_override(), unstash)


def judge(ctx: workspace.Context, stage: str, kind: str, override: str | None,
          pushed: list[tuple[str, str]] | None,
          agents_of: Callable[[str | None], tuple[list[Agent], list[str]]] | None = None,
          in_hook: bool = True, record: bool = True, unstash: str | None = None
          ) -> dict[str, Any]:
    """Record this worktree, scan its pairs (each pushed commit standing in for it, or for
    the worktree that has the pushed branch checked out), fire
    the triggers; the verdict as plain data. The in-process hook and the resident service
    both call this, so both paths judge alike. ``agents_of(override)``: the live agents
    (default: snapshot every worktree now). ``record=False``: judge without recording
    this worktree (someone else records this very event). ``unstash``: the patch of
    unstaged edits the hook host holds out of this worktree (stash.py)."""

    from proximity.analysis import hunks
    from proximity.tcas import actions
    from proximity.tcas.engine import live_agents
    from proximity.views import report

    if agents_of is None:
        agents, retired = live_agents(ctx.repo, {ctx.here: override} if override else None)
    else:
        agents, retired = agents_of(override)
    agents = unstashed(ctx, agents, unstash)
    me = next((a for a in agents if a.id == ctx.here), None)
    notes: list[str] = []
    if me is not None and me.error is None and record:
        notes = queued_note(recorder.record(ctx, kind, recorder.Snap(
            me.id, me.path, me.branch, me.head, me.snapshot, me.tree)))
    # each run: (whose state the pushed commit stands for, the agents); a branch checked
    # out in a worktree is that worktree's work, whoever pushes it
    runs: list[tuple[str, list[Agent]]] = [(ctx.here, agents)]
    if me is not None and pushed is not None:
        runs = []
        for ref, sha in pushed:
            owner = _owner(agents, ref) or _carrier(ctx, agents, me, sha) or me
            runs.append((owner.id, [_pushed_state(ctx, owner, ref, sha) if a.id == owner.id
                                    else a for a in agents]))
        if not runs:
            return {"nothing": True, "notes": notes}
    results = [(who, workspace.run_scan(ctx, focus=who, agents=run, retired=retired,
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
    return {"nothing": False, "notes": notes, "texts": texts, "must_yield": must_yield,
            "yielding": who,
            "posted": [m["id"] for m in posted if m["recipient"] == ctx.here],
            "graph_deferred": result.graph_deferred,
            "pairs": [report.pair_json(p) for p in result.pairs]}


def unstashed(ctx: workspace.Context, agents: list[Agent], patch: str | None) -> list[Agent]:
    """The agents with this worktree as its user has it: the unstaged edits its hook host
    holds out while hooks run (``patch``, stash.py) put back on the state read from its
    files (that state as it is when the patch does not apply)."""
    from dataclasses import replace

    me = next((a for a in agents if a.id == ctx.here), None)
    if not patch or me is None or me.error is not None or not me.tree:
        return agents
    tree = ctx.repo.tree_with_patch(me.tree, patch, me.path)
    if not tree or tree == me.tree:
        return agents
    back = replace(me, tree=tree, snapshot=ctx.repo.snapshot_commit(tree, me.head))
    return [back if a.id == ctx.here else a for a in agents]


def _owner(agents: list[Agent], ref: str) -> Agent | None:
    """The local worktree that has the pushed branch checked out (its work, whoever
    pushes it: right-of-way is that worktree's), if one does."""
    if not ref.startswith("refs/heads/"):
        return None
    branch = ref.removeprefix("refs/heads/")
    return next((a for a in agents if a.branch == branch and not a.remote and a.error is None),
                None)


def _carrier(ctx: workspace.Context, agents: list[Agent], me: Agent, sha: str) -> Agent | None:
    """For a pushed branch checked out nowhere (a copy of another worktree's branch, or one
    built on it): the one local worktree whose own commits it carries -- its HEAD is in
    the pushed history and not in the pushing worktree's -- the deepest such when their
    heads line up; None when none does or unrelated ones do. (retrial15: `git branch copy
    feat/b; git push origin copy` pushed the commits that must yield, judged as the pushing
    worktree.)"""
    repo = ctx.repo
    found = []
    for a in agents:
        if a.id == me.id or a.remote or a.error is not None or not a.head:
            continue
        if me.head and repo.is_ancestor(a.head, me.head):
            continue  # history the pusher has too: nobody's own work here
        if repo.is_ancestor(a.head, sha):
            found.append(a)
    deepest = [a for a in found
               if not any(b is not a and b.head != a.head
                          and repo.is_ancestor(str(a.head), str(b.head)) for b in found)]
    return deepest[0] if len(deepest) == 1 else None


def _pushed_state(ctx: workspace.Context, me: Agent, ref: str, sha: str) -> Agent:
    """This worktree as a pushed commit: its tree, on that commit, as the snapshot commit
    of (tree, commit) -- content-addressed, so a push of the state already judged (the
    warm snapshot after the commit, or the one recorded at it) is that very state and its
    pairs' channel results are found by their key instead of computed again (git's merge
    of two states is the same from the snapshot commit as from the commit: same tree,
    same merge bases). Right-of-way is still computed from this HEAD."""
    from dataclasses import replace

    branch = ref.removeprefix("refs/heads/") or me.branch
    tree = ctx.repo.commit_tree(sha)
    if me.error is None and me.head == sha and me.tree == tree and me.snapshot:
        return replace(me, branch=branch)
    return replace(me, head=sha, snapshot=ctx.repo.snapshot_commit(tree, sha), tree=tree,
                   branch=branch, error=None)


def _ask_service(ctx: workspace.Context, stage: str, kind: str, override: str | None,
                 pushed: list[tuple[str, str]] | None, unstash: str | None
                 ) -> dict[str, Any] | None:
    """The resident service's verdict, or None (absent, busy, broken: judge in process)."""
    from proximity.service import client

    return client.judge(ctx.repo.common, ctx.here, stage, kind, override, pushed, unstash)


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
    must_yield = verdict["must_yield"]
    if not must_yield or not (stage == "guard" or (stage == "warn" and ctx.cfg.block_commit)):
        return lines, False
    if allow:
        lines.append("proximity: PROXIMITY_ALLOW=1 set: letting this through despite the "
                     "advisory.")
        return lines, False
    from proximity.remote.untrusted import text

    what = "push" if stage == "guard" else "commit"
    who = verdict.get("yielding")
    subject = "this worktree" if not isinstance(who, str) or who == ctx.here else (
        f"worktree {text(who)!r}, whose work this push carries,")
    lines.append(f"proximity: {what} blocked: {subject} must yield to "
                 f"{', '.join(repr(text(x)) for x in must_yield)}. "
                 f"Move your change away from their lines, or coordinate and override with "
                 f"PROXIMITY_ALLOW=1 git {what} (or --no-verify).")
    return lines, True


def check(ctx: workspace.Context, stage: str, kind: str, stdin: str | None = None,
          service: bool = True, record: bool = True) -> int:
    """Record, scan the pairs involving this worktree, fire triggers, print advisories.

    The guard judges what is pushed, not the worktree it runs in: each pushed commit
    stands in for this worktree against the live siblings; a push that carries no work
    (deletion, tag, a commit the remote has) is never blocked. The resident service
    answers when it can (``service=False``: the thin client asked it already); otherwise
    the same judgement runs in process. ``stdin``: the pushed refs, when already read.
    """
    from proximity.hooks import inputs, stash

    if stage == "guard" and ctx.cfg.sync:
        from proximity.remote import sharing

        try:
            sharing.sync(ctx, None)
        except FatalError as e:
            err(f"proximity: warning: sync skipped: {e}")
    override = recorder.index_override() if stage == "warn" else None
    pushed = pushed_refs(stdin if stdin is not None else _read_stdin(), dict(os.environ)) \
        if stage == "guard" else None
    unstash = stash.host_patch(os.environ)
    verdict = _ask_service(ctx, stage, kind, override, pushed, unstash) \
        if service and record else None
    if verdict is None:
        verdict = judge(ctx, stage, kind, override, pushed, record=record, unstash=unstash)
    if verdict["graph_deferred"]:
        workspace.warm_up(ctx)
    lines, block = outcome(ctx, stage, verdict, inputs.allowed())
    for line in lines:
        err(line)
    return 1 if block else 0


def run(args: argparse.Namespace, stdin: str | None = None, service: bool = True,
        record: bool = True) -> int:
    """The in-process hook. The thin client (thin.py) passes what it read and learnt:
    ``stdin`` (pushed refs), ``service=False`` (it asked the service already) and
    ``record=False`` (the service took this very event and records it)."""
    stage = STAGE.get(args.stage, args.stage)
    kind = _kind(args.stage, list(args.args))
    if os.environ.get("PROXIMITY_SKIP") == "1":
        return 0
    from proximity import ledger

    ledger.wait_budget(WAIT_BUDGET)
    try:
        ctx = workspace.open_context(os.getcwd(), check_git=stage != "snapshot")
    except FatalError as e:
        err(f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:  # never break git
        err(f"proximity: warning: internal error {type(e).__name__}: {e} (hook skipped)")
        return 0
    try:
        if ctx.ledger_error:
            err(f"proximity: warning: {ctx.ledger_error} (advisories need the ledger; "
                "see `proximity doctor`)")
            if stage != "guard":
                return 0
        if stage == "snapshot":
            snapshot(ctx, kind, service, record)
            return 0
        return blocked_exit() if check(ctx, stage, kind, stdin, service, record) else 0
    except FatalError as e:
        err(f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:
        err(f"proximity: warning: internal error {type(e).__name__}: {e} (hook skipped; "
            "git goes on)")
        if os.environ.get("PROXIMITY_DEBUG"):
            import traceback

            traceback.print_exc()
        return 0
    finally:
        ctx.close()
