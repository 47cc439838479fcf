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

from proximity import gitfiles, knobs, ledger, thin
from proximity.errors import DamagedObject, FatalError
from proximity.gitio import loose
from proximity.hooks import stages
from proximity.hooks.inputs import HookCall, blocked_exit, pushed_refs, read_stdin
from proximity.hooks.stages import recording_off_line
from proximity.service import client
from proximity.snapshot import recorder, workspace

if TYPE_CHECKING:
    pass


def err(msg: str) -> None:
    print(msg, file=sys.stderr)


WAIT_BUDGET = 2.0  # seconds a hook may wait, in total, for a busy ledger


def run_here(ctx: workspace.Context, call: HookCall, record: bool) -> int:
    """Run the stage: asked of the resident service when the thin client did not ask it
    already, else here, by the same stage runner the service uses; 1 when it blocks.
    ``record=False``: this process records nothing (the service took this very event, or
    the ledger is read-only).

    The guard judges what is pushed, not the worktree it runs in; with sync on it syncs
    first and judges here. What the thin client asked is judged here alike, under the
    same request id."""
    stage = call.stage
    syncs = stage == "guard" and ctx.cfg.sync
    if syncs:
        # lazy: only a pre-push with sync on talks to the remote
        from proximity.remote import sharing

        try:
            sharing.sync(ctx, None)
        except FatalError as e:
            err(f"proximity: warning: sync skipped: {e}")
    msg = call.request
    if msg is None:
        pushed = pushed_refs(call.stdin if call.stdin is not None else read_stdin(),
                             dict(os.environ)) if stage == "guard" else None
        msg = thin.hook_request(stage, ctx.here, call.kind(), pushed,
                                call.args[0] if call.args else "")
        if record and not syncs:  # (with sync on the service leaves the push here)
            head = gitfiles.head_commit(ctx.repo.gitdir, ctx.repo.common) \
                if msg["kind"] == "commit" else None
            answer, record = client.hook(ctx.repo.common, msg, head=head)
            if answer is not None:
                for line in answer["lines"]:
                    err(line)
                return 1 if answer.get("block") is True and stage != "snapshot" else 0
    done = stages.run_stage(ctx, stages.Stage.of(msg, record), stages.LiveAirspace(ctx))
    for line in done.lines:
        err(line)
    return 1 if done.block else 0


def off_line(stage: str, why: str) -> str:
    """The one line of a pre-push guard that could not judge: never silently off."""
    return (f"proximity: the push guard is OFF for this push: {why}; fix that (see "
            "`proximity doctor`), then push again")


def run(call: HookCall) -> int:
    """The in-process hook, handed what the thin client (thin.py) read and learnt. Its
    budget for waiting on a busy ledger ends with it: a process that goes on (a test's, an
    embedding tool's) waits for the ledger again as any command does."""
    if knobs.skip():
        return 0
    ledger.wait_budget(WAIT_BUDGET)
    try:
        return _run(call)
    finally:
        ledger.wait_budget(None)


def _run(call: HookCall) -> int:
    stage = call.stage
    if call.request is not None:  # (the service did not answer it: loose.Audit.distrust)
        loose.AUDIT.distrust()
    try:
        ctx = workspace.open_context(os.getcwd(), check_git=stage != "snapshot",
                                     strict=False, say=stages.says_config(stage))
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
        record = call.record
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
        code = blocked_exit() if run_here(ctx, call, record) else 0
        # events a killed or stopped service took and never recorded
        recorder.replay_pending(ctx.repo.common)
        return code
    except FatalError as e:
        why = str(e)
        if isinstance(e, DamagedObject) and call.request is not None and \
                client.end_wedged(ctx.repo.common):
            why += "; the service, wedged on it, was ended"
        err(off_line(stage, why) if stage == "guard" else
            f"proximity: warning: {why} (hook skipped; git goes on)")
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
