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
from typing import TYPE_CHECKING

from proximity import knobs, ledger, thin
from proximity.errors import FatalError
from proximity.hooks import inputs, stash
from proximity.hooks.inbox import inbox_lines
from proximity.hooks.inputs import STAGE as STAGE
from proximity.hooks.inputs import ZERO as ZERO
from proximity.hooks.inputs import blocked_exit as blocked_exit
from proximity.hooks.inputs import kind_of as _kind
from proximity.hooks.inputs import pushed_refs as pushed_refs
from proximity.hooks.inputs import read_stdin as _read_stdin
from proximity.service import client
from proximity.snapshot import journal, recorder, workspace

if TYPE_CHECKING:
    import argparse


def err(msg: str) -> None:
    print(msg, file=sys.stderr)


def deliver(ctx: workspace.Context, shown: set[int] | None = None) -> None:
    """Print this worktree's undelivered messages, once."""
    for line in inbox_lines(ctx, shown):
        err(line)


WAIT_BUDGET = 2.0  # seconds a hook may wait, in total, for a busy ledger


def queued(ev: object) -> None:
    for line in recorder.queued_note(ev):
        err(line)


def snapshot(ctx: workspace.Context, kind: str, service: bool = True,
             record: bool = True, rid: str | None = None) -> None:
    """``service=False``: the thin client asked the service already; ``record=False``:
    the service took this event (a request the client gave up on) and records it;
    ``rid``: the request id to record it under."""
    if service and record:
        done, record, rid = _ask_service(ctx, "snapshot", kind, None)
        if done is not None:
            return
    if not record:
        deliver(ctx)
        return
    ev = recorder.record_here(ctx, kind, inputs.index_override(),
                              unstash=stash.host_patch(os.environ), rid=rid)
    if ev is not None:
        journal.settle_pending(ctx.repo.common, rid)
    queued(ev)
    deliver(ctx)
    if ev is not None and ctx.ledger is not None and ev.seq and ev.seq % recorder.GC_EVERY == 0:
        live = {w.id for w in ctx.repo.worktrees() if not w.prunable}
        ctx.ledger.gc(ctx.cfg.retain_events, live)


def _ask_service(ctx: workspace.Context, stage: str, kind: str,
                 pushed: list[tuple[str, str]] | None
                 ) -> tuple[bool | None, bool, str | None]:
    """The hook done by the resident service, asked as the thin client asks it (it knows
    what changed: the work is proportional to the change), its lines printed: whether it
    blocks, or None (absent, busy, a case it leaves: do the hook here; it is started for
    next time); and whether this process records the event (False: the service began
    recording it); and the request's id (the event's, whoever records it)."""
    msg = thin.hook_request(stage, ctx.here, kind, pushed)
    answer, record = client.hook(ctx.repo.common, msg)
    if answer is None:
        return None, record, msg.get("rid")
    for line in answer["lines"]:
        err(line)
    return answer.get("block") is True, False, msg.get("rid")


def check(ctx: workspace.Context, stage: str, kind: str, stdin: str | None = None,
          service: bool = True, record: bool = True, rid: str | None = None) -> int:
    """Record, scan the pairs involving this worktree, fire triggers, print advisories.

    The guard judges what is pushed, not the worktree it runs in: each pushed commit
    stands in for this worktree against the live siblings; a push that carries no work
    (deletion, tag, a commit the remote has) is never blocked. The resident service
    answers when it can (``service=False``: the thin client asked it already); otherwise
    the same judgement runs in process. ``stdin``: the pushed refs, when already read.
    """
    # lazy: judging loads the scan engine; the snapshot stages never judge
    from proximity.hooks.verdict import judge, outcome
    from proximity.tcas import pipeline

    syncs = stage == "guard" and ctx.cfg.sync
    if syncs:
        # lazy: only a pre-push with sync on talks to the remote
        from proximity.remote import sharing

        try:
            sharing.sync(ctx, None)
        except FatalError as e:
            err(f"proximity: warning: sync skipped: {e}")
    override = inputs.index_override() if stage == "warn" else None
    pushed = pushed_refs(stdin if stdin is not None else _read_stdin(), dict(os.environ)) \
        if stage == "guard" else None
    if service and record and not syncs:  # (with sync on the service leaves the push here)
        blocks, record, rid = _ask_service(ctx, stage, kind, pushed)
        if blocks is not None:
            return 1 if blocks else 0
    verdict = judge(ctx, stage, kind, override, pushed, record=record,
                    unstash=stash.host_patch(os.environ), rid=rid)
    if record:
        journal.settle_pending(ctx.repo.common, rid)
    if verdict["graph_deferred"]:
        pipeline.warm_up(ctx)
    lines, block = outcome(ctx, stage, verdict, inputs.allowed())
    for line in lines:
        err(line)
    return 1 if block else 0


def recording_off_line(stage: str, why: str) -> str:
    """The one line of a hook whose ledger can be read but not written."""
    if stage == "snapshot":
        return f"proximity: warning: recording is off: {why}"
    what = "push" if stage == "guard" else "commit"
    return (f"proximity: warning: recording is off for this {what}, the guard still judges "
            f"from what it can read: {why}")


def off_line(stage: str, why: str) -> str:
    """The one line of a pre-push guard that could not judge: never silently off."""
    return (f"proximity: the push guard is OFF for this push: {why}; fix that (see "
            "`proximity doctor`), then push again")


def run(args: argparse.Namespace, stdin: str | None = None, service: bool = True,
        record: bool = True, rid: str | None = None) -> int:
    """The in-process hook. The thin client (thin.py) passes what it read and learnt:
    ``stdin`` (pushed refs), ``service=False`` (it asked the service already) and
    ``record=False`` (the service took this very event and records it)."""
    stage = STAGE.get(args.stage, args.stage)
    kind = _kind(args.stage, list(args.args))
    if knobs.skip():
        return 0
    ledger.wait_budget(WAIT_BUDGET)
    try:
        ctx = workspace.open_context(os.getcwd(), check_git=stage != "snapshot",
                                     strict=False)
    except FatalError as e:
        err(off_line(stage, str(e)) if stage == "guard" else
            f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:  # never break git
        err(off_line(stage, f"internal error {type(e).__name__}: {e}") if stage == "guard"
            else f"proximity: warning: internal error {type(e).__name__}: {e} (hook "
            "skipped; git goes on)")
        return 0
    try:
        if ctx.ledger_error and stage == "guard":
            # the guard judges without the ledger (who yields is then decided without its
            # history): say what is off, not that the guard is
            err(recording_off_line(stage, ctx.ledger_error))
        elif ctx.ledger_error:
            err(f"proximity: warning: {ctx.ledger_error} (advisories need the ledger; "
                "see `proximity doctor`)")
            return 0
        if ctx.recording_off:
            if stage != "warn":
                # once per commit: its post-commit, which records the commit, says it (and
                # runs under --no-verify too); the pre-commit judges without a word of it
                err(recording_off_line(stage, ctx.recording_off))
            if stage == "snapshot":
                return 0
            record = False  # (judged here, in process: nothing is recorded)
        if stage == "snapshot":
            snapshot(ctx, kind, service, record, rid)
            code = 0
        else:
            code = blocked_exit() if check(ctx, stage, kind, stdin, service, record, rid) \
                else 0
        # events a killed or stopped service took and never recorded
        recorder.replay_pending(ctx.repo.common)
        return code
    except FatalError as e:
        err(off_line(stage, str(e)) if stage == "guard" else
            f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:
        err(off_line(stage, f"internal error {type(e).__name__}: {e}") if stage == "guard"
            else f"proximity: warning: internal error {type(e).__name__}: {e} (hook "
            "skipped; git goes on)")
        if os.environ.get("PROXIMITY_DEBUG"):
            import traceback

            traceback.print_exc()
        return 0
    finally:
        ctx.close()
