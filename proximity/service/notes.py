"""Post-commit notes: a post-commit hook that knows the service tells it of its commit by a
directory made in the cookies directory (hooks/proximity-hook), without starting Python.
The watcher brings the note back in order after the commit's file changes; the worker
records the commit as the thin client's post-commit request would have it, and only then
does the note go (a note left behind is taken by the next service, or at its stop)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from proximity.protocol import HOOK
from proximity.service.cookies import drop_old_notes, post_note_name, remove
from proximity.service.state import Job
from proximity.snapshot import recorder

if TYPE_CHECKING:
    from proximity.protocol import HookRequest
    from proximity.service.state import ServiceState
    from proximity.service.warm import WarmAirspace


class PostNotes:
    """The notes seen and not taken yet (git dir names, in order), under the state's
    lock; ``put``: hands the worker a job."""

    def __init__(self, state: ServiceState, put: Callable[[Job, int], None]) -> None:
        self.state, self.put = state, put
        self.names: list[str] = []

    def seen(self, path: str) -> None:
        """Watcher thread: a note came (taken once; not waited for: the commit's
        messages stay for the next hook)."""
        name = post_note_name(path)
        if name is None:
            return
        self.state.last_request = time.monotonic()
        with self.state.lock:  # the worker maps the git dir's name to its worktree
            self.names.append(name)
        self.put(Job("posts"), 0)  # taken by then by any verdict that synced after it

    def found(self) -> None:
        """Starting: the notes an earlier service left (one killed before taking them)
        are taken first."""
        left = drop_old_notes(self.state.common)
        if left:
            with self.state.lock:
                self.names[:0] = left
            self.put(Job("posts"), 0)

    def take(self, air: WarmAirspace, settled: Callable[[], bool]) -> None:
        """Worker thread: record the commits the notes told of, in their order, before the
        request at hand (a push right after its commit finds it recorded). ``settled``:
        whether no file event waits to be read (Changes.settled)."""
        common = self.state.common
        with self.state.lock:
            names, self.names = self.names, []
        for name in dict.fromkeys(names):  # one commit, one record (a note is only a cue)
            admin, sha = recorder.post_note_parts(name)
            agent = air.agent_of_admin(admin)
            if agent is None:  # its worktree removed right after the commit
                try:
                    if sha is not None:
                        recorder.record_departed(air.ctx, recorder.note_agent(admin), sha)
                except Exception:
                    continue  # the note stays for the next taker
                remove(common, name)
                continue
            wt = next((w for w in air.snapshots.worktrees() if w.id == agent), None)
            try:
                if sha is not None and wt is not None and wt.head != sha:
                    # newer commits came before anyone took the note: its commit as
                    # history first, then the present below
                    recorder.record_superseded(air.ctx_for(agent), sha, wt)
            except Exception:
                continue  # the note stays for the next taker
            if air.commit_recorded(agent):
                remove(common, name)
                continue
            msg: HookRequest = {"op": HOOK, "stage": "snapshot", "kind": "commit",
                                "agent": agent, "index": None, "later": True,
                                "synced": True}
            try:
                answer = air.hook(msg, settled())
            except Exception:
                continue  # as a failed hook request: the note stays for the next taker
            try:
                # (HEAD moved on while the commit was read: the event recorded is the next
                # commit's, and this one's goes in as history)
                kept = "fallback" not in answer and (
                    sha is None or recorder.record_overtaken(air.ctx_for(agent), sha))
            except Exception:
                kept = False
            if kept:
                remove(common, name)  # recorded: only now does the note go
                self.state.answered["hook"] += 1
                self.put(Job("rescan", agent), 1)

    def stopping(self, air: WarmAirspace, settled: Callable[[], bool]) -> None:
        """Stopping: the commits that notes told of (queued, or on disk and not yet seen
        by the watcher) are recorded before the service goes. A note is durable (the next
        hook would record it), but a stopped service writes what it holds: one who counts
        the ledger after `service stop` finds every commit."""
        left = drop_old_notes(self.state.common)
        with self.state.lock:
            self.names += [n for n in left if n not in self.names]
        try:
            self.take(air, settled)
        except Exception as e:  # the notes stay on disk for the next taker
            print(f"proximity service: commits left for the next hook: {e}",
                  file=sys.stderr)
