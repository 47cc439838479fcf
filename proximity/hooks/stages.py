"""One hook stage, run: the in-process hook and the resident service both call
:func:`run_stage`, so both record, keep retention, deliver the inbox, judge and decide the
block alike. They differ only in the :class:`Airspace` they pass: the worktrees read now
(:class:`LiveAirspace`), or the service's warm snapshots.

snapshot  record this worktree as one event, compact the ledger every GC_EVERY-th event,
          take this worktree's undelivered messages.
warn      pre-commit: judge (record, scan this worktree's pairs, fire the triggers), print
          the advisories and the messages; block only with ``block_commit`` and an RA that
          says this worktree yields.
guard     pre-push: judge what is pushed; block when an RA says its worktree must yield,
          unless PROXIMITY_ALLOW=1.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, NamedTuple, Protocol

from proximity.config import disarms
from proximity.errors import LedgerError
from proximity.safetext import text
from proximity.snapshot import delivery, journal, recorder
from proximity.snapshot.agents import live_agents
from proximity.views import messages

if TYPE_CHECKING:
    from proximity.hooks.gate import Verdict
    from proximity.ledger import Event
    from proximity.model import Agent
    from proximity.protocol import HookRequest
    from proximity.snapshot.workspace import Context


class Stage(NamedTuple):
    """What one hook asks of the stage runner, read from its request (thin.hook_request's
    message: the in-process hook and the service build it from the same one). ``record``:
    False when someone else records this very event (the service began it); ``deliver``:
    False when nobody waits for the lines (the messages stay for the next hook). (Named
    tuples, not frozen dataclasses, here: a tenth of the cost to define, on every hook.)"""

    stage: str  # snapshot, warn or guard
    kind: str  # the ledger event it records (inputs.kind_of)
    index_file: str | None = None  # the index a commit is being made from
    # guard: (ref, commit, the remote's commit there before: zeros for a new ref, the
    # remote's ref) pushed
    pushed: tuple[tuple[str, str, str, str], ...] | None = None
    allow: bool = False  # PROXIMITY_ALLOW=1
    unstash: str | None = None  # the hook host's patch of stashed edits (stash.py)
    rid: str | None = None  # the request id the event is recorded under
    remote: str = ""  # guard: the remote pushed to (named in what a landing tells)
    record: bool = True
    deliver: bool = True

    @classmethod
    def of(cls, msg: HookRequest, record: bool = True, deliver: bool = True) -> Stage:
        pushed = msg.get("pushed") if msg["stage"] == "guard" else None
        return cls(msg["stage"], msg["kind"],
                   index_file=msg.get("index") if msg["stage"] != "guard" else None,
                   pushed=tuple((ref, sha, old, to) for ref, sha, old, to in pushed)
                   if pushed is not None else None,
                   allow=msg.get("allow") is True, unstash=_patch(msg.get("unstash")),
                   rid=msg.get("rid"), remote=msg.get("remote") or "", record=record,
                   deliver=deliver)


class StageOutcome(NamedTuple):
    """What a stage prints (stderr lines, in order), whether it blocks, and (snapshot)
    whether an event was recorded (False: none could be; nothing was taken either)."""

    lines: tuple[str, ...] = ()
    block: bool = False
    recorded: bool = True


class Airspace(Protocol):
    """The live state a hook path gives the stage runner."""

    @property
    def in_hook(self) -> bool:
        """Whether a hook's own process judges (a first import graph is then built in
        the background, not while git waits)."""
        ...

    def this(self, stage: Stage) -> recorder.Snap | None:
        """This worktree's state to record, as read from its files (from the index file
        the stage names, when it does); None: it cannot be read."""
        ...

    def agents(self, index: str | None) -> tuple[list[Agent], list[str]]:
        """Every live worktree as an agent (this one read from ``index`` when given),
        and the ids of the retired ones."""
        ...

    def live(self) -> set[str]:
        """The ids of the live worktrees (what retention keeps)."""
        ...


class LiveAirspace:
    """The in-process hook's airspace: every worktree read from its files now."""

    in_hook = True

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def this(self, stage: Stage) -> recorder.Snap | None:
        return recorder.snapshot_here(self.ctx, stage.index_file)

    def agents(self, index: str | None) -> tuple[list[Agent], list[str]]:
        return live_agents(self.ctx.repo, {self.ctx.here: index} if index else None)

    def live(self) -> set[str]:
        return {w.id for w in self.ctx.repo.worktrees() if not w.prunable}


def says_config(stage: str) -> bool:
    """Whether a hook of ``stage`` says its config's warnings: where it judges (a
    commit's pre-commit, a push), once a git command, in process and through the service
    alike; never the snapshots around them."""
    return stage != "snapshot"


def run_stage(ctx: Context, stage: Stage, air: Airspace) -> StageOutcome:
    """Run one hook stage for the worktree ``ctx.here``."""
    if stage.stage == "snapshot":
        return _snapshot(ctx, stage, air)
    return _judged(ctx, stage, air)


def _snapshot(ctx: Context, stage: Stage, air: Airspace) -> StageOutcome:
    if not stage.record:  # the service records this very event: the messages only
        return StageOutcome(tuple(inbox_lines(ctx)))
    snap = air.this(stage)
    ev = recorder.record(ctx, stage.kind, recorder.unstashed(ctx, snap, stage.unstash),
                         stage.rid) if snap is not None else None
    if ev is None:
        off = ctx.repo.store.off()  # (a full disk: the snapshot went to a scratch store)
        return StageOutcome((recording_off_line("snapshot", off),) if off else (),
                            recorded=False)
    journal.settle_pending(ctx.repo.common, stage.rid)
    _retention(ctx, ev, air)
    return StageOutcome(tuple(recorder.queued_note(ev)
                              + (inbox_lines(ctx) if stage.deliver else [])))


def _retention(ctx: Context, ev: Event, air: Airspace) -> None:
    """Compact the ledger with every GC_EVERY-th event recorded. An event the busy ledger
    queued in its spool has no place in the ledger yet (seq 0): it is not one of them
    (``0 % GC_EVERY == 0`` ran retention on the very ledger just found busy)."""
    if ctx.ledger is not None and ev.seq > 0 and ev.seq % recorder.GC_EVERY == 0:
        ctx.ledger.gc(ctx.cfg.retain_events, air.live())


def _judged(ctx: Context, stage: Stage, air: Airspace) -> StageOutcome:
    # lazy: judging loads the scan engine; the snapshot stages never judge
    from proximity.hooks import gate

    verdict = gate.judge(ctx, stage.stage, stage.kind, stage.index_file,
                         list(stage.pushed) if stage.pushed is not None else None,
                         air.agents, in_hook=air.in_hook, record=stage.record,
                         unstash=stage.unstash, rid=stage.rid, remote=stage.remote,
                         allow=stage.allow)
    if stage.record:
        journal.settle_pending(ctx.repo.common, stage.rid)
    if verdict.graph_deferred:
        gate.warm_up(ctx)
    lines, block = outcome(ctx, stage, verdict)
    off = ctx.repo.store.off()
    if off and not ctx.recording_off:  # (a ledger that cannot be written said so already)
        lines.insert(0, recording_off_line(stage.stage, off))
    return StageOutcome(tuple(lines), block)


def recording_off_line(stage: str, why: str) -> str:
    """The one line of a hook that judges but records nothing (a ledger that can be read
    but not written; snapshots that went to a scratch store for want of room)."""
    if stage == "snapshot":
        return f"proximity: warning: recording is off: {why}"
    what = "push" if stage == "guard" else "commit"
    return (f"proximity: warning: recording is off for this {what}, the guard still judges "
            f"from what it can read: {why}")


def outcome(ctx: Context, stage: Stage, verdict: Verdict) -> tuple[list[str], bool]:
    """What a judging hook prints (stderr lines, in order) and whether it blocks, from its
    verdict; takes this worktree's undelivered messages."""
    lines = list(verdict.notes)
    if verdict.nothing:
        lines.append("proximity: nothing to judge in this push (a deletion, a tag, commits "
                     "the remote has, or commits that leave its files as they are); guard "
                     "passes.")
        return lines + inbox_lines(ctx), False
    if verdict.graph_deferred:
        lines.append("proximity: first run: building the import graph in the background; "
                     "the dependency channel is unknown until it is ready.")
    lines += inbox_lines(ctx, set(verdict.posted))
    lines += verdict.texts
    for other, branch, why in verdict.unjudged:
        on = f" (branch {text(branch)})" if branch else ""
        lines.append(f"proximity: the push guard is OFF for this push against worktree "
                     f"{text(other)!r}{on}: its state could not be read: {text(why)}")
    off = disarms(ctx.cfg) if stage.stage == "guard" else None
    if off is not None:
        # (a committed file cannot disarm it, config.policy refuses that: only the
        # person's own git config can, and it is never silent)
        lines.append(f"proximity: the push guard is OFF for this push: git config sets {off}; "
                     "unset those proximity.* keys to turn it on again")
    lines += [f"proximity: {words}" for words, _ra in verdict.breaks]
    # (breaks are judged only of a push no advisory blocks already: gate.judge)
    if any(ra for _, ra in verdict.breaks):
        if stage.allow:
            lines.append("proximity: PROXIMITY_ALLOW=1 set: letting this through despite "
                         "the call that no longer binds.")
            return lines, False
        lines.append("proximity: push blocked: it lands a call that no longer binds (git "
                     "merges it cleanly; the program breaks). Make the call fit the new "
                     "definition first, or override with PROXIMITY_ALLOW=1 git push (or "
                     "--no-verify).")
        return lines, True
    if not verdict.must_yield or not (
            stage.stage == "guard" or (stage.stage == "warn" and ctx.cfg.block_commit)):
        return lines, False
    if stage.allow:
        lines.append("proximity: PROXIMITY_ALLOW=1 set: letting this through despite the "
                     "advisory.")
        return lines, False
    what = "push" if stage.stage == "guard" else "commit"
    who = verdict.yielding
    subject = "this worktree" if who is None or who == ctx.here else (
        f"worktree {text(who)!r}, whose work this push carries,")
    lines.append(f"proximity: {what} blocked: {subject} must yield to "
                 f"{', '.join(repr(text(x)) for x in verdict.must_yield)}. "
                 f"Move your change away from their lines, or coordinate and override with "
                 f"PROXIMITY_ALLOW=1 git {what} (or --no-verify).")
    return lines, True


def inbox_lines(ctx: Context, shown: set[int] | None = None) -> list[str]:
    """This worktree's undelivered messages, rendered, taken from the ledger (so shown
    once); ``shown``: ids this run already printed as advisories (marked delivered
    without repeating them)."""
    if ctx.ledger is None:
        return []
    try:
        taken = delivery.take(ctx)
    except LedgerError:  # busy, or open read-only: they stay undelivered for the next hook
        return []
    return [messages.render(m) for m in taken if m["id"] not in (shown or set())]


def _patch(path: object) -> str | None:
    """The hook host's patch of stashed edits a hook names (stash.host_patch): an
    absolute path to a regular file, else nothing (it is read by `git apply --cached`
    into a temporary index, never run or written)."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    try:
        return path if stat.S_ISREG(os.stat(path).st_mode) else None
    except (OSError, ValueError):
        return None
