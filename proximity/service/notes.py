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


# a note a job could not take (a worktree listing in flux, a failed read) is taken again
# after these waits, one after another, before the replay of old notes would find it
RETRIES = (0.25, 0.5, 1.0, 2.0, 4.0)


class PostNotes:
    """The notes seen and not taken yet (git dir names, in order), under the state's
    lock; ``put``: hands the worker a job."""

    def __init__(self, state: ServiceState, put: Callable[[Job, int], None]) -> None:
        self.state, self.put = state, put
        self.names: list[str] = []
        self.retries = 0  # notes taken again since the last time none was left (see due)
        self.failed_at = 0.0  # when a take left notes, or a job failed before its take

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

    def due(self, now: float) -> bool:
        """Worker thread, between jobs: whether notes a job could not take (or never
        reached: it failed before them) are to be taken again now, after each of RETRIES
        in turn. The last commit of a burst has no later job to take its note; without
        this it waited for the replay of old notes, and a push right after found it
        unrecorded."""
        with self.state.lock:
            if not self.names:
                self.retries, self.failed_at = 0, 0.0
                return False
        if not self.failed_at or self.retries >= len(RETRIES) or \
                now - self.failed_at < RETRIES[self.retries]:
            return False
        self.retries += 1
        self.failed_at = now
        return True

    def failed(self) -> None:
        """Worker thread: a job failed (before its take, perhaps): the notes it would have
        taken are due again (see due)."""
        self.failed_at = time.monotonic()

    def take(self, air: WarmAirspace, settled: Callable[[], bool]) -> None:
        """Worker thread: record the commits the notes told of, in their order, before the
        request at hand (a push right after its commit finds it recorded). ``settled``:
        whether no file event waits to be read (Changes.settled). A note not taken stays,
        on disk and here, to be taken again (due)."""
        with self.state.lock:
            names, self.names = self.names, []
        todo = list(dict.fromkeys(names))  # one commit, one record (a note is only a cue)
        left: list[str] = []
        try:
            while todo:
                name = todo[0]
                if not self._take(air, settled, name):
                    left.append(name)
                todo.pop(0)
        finally:  # (an error stops the loop: the rest stays with the ones not taken)
            left += todo
            self.failed_at = time.monotonic() if left else 0.0
            if left and self.retries < len(RETRIES):
                with self.state.lock:
                    self.names[:0] = [n for n in left if n not in self.names]
            # (past the last retry they stay on disk alone, for the replay of old notes:
            # not read again by every request meanwhile)

    def _take(self, air: WarmAirspace, settled: Callable[[], bool], name: str) -> bool:
        """One note: its commit recorded (or found recorded) and the note removed; False:
        it stays for the next taker."""
        common = self.state.common
        admin, sha = recorder.post_note_parts(name)
        agent = air.agent_of_admin(admin)
        if agent is None:  # its worktree removed right after the commit
            try:
                if sha is not None:
                    recorder.record_departed(air.ctx, recorder.note_agent(admin), sha)
            except Exception:
                return False
            remove(common, name)
            return True
        try:
            if sha is not None:  # newer commits came before anyone took the note: its
                air.overtaken(agent, sha)  # commit as history first, the present below
        except Exception:
            return False
        if air.commit_recorded(agent):
            remove(common, name)
            return True
        msg: HookRequest = {"op": HOOK, "stage": "snapshot", "kind": "commit",
                            "agent": agent, "index": None, "later": True,
                            "synced": True}
        try:
            answer = air.hook(msg, settled())
        except Exception:
            return False  # as a failed hook request
        try:
            # (HEAD moved on while the commit was read: the event recorded is the next
            # commit's, and this one's goes in as history)
            kept = "fallback" not in answer and (
                sha is None or recorder.record_overtaken(air.ctx_for(agent), sha))
        except Exception:
            kept = False
        if not kept:
            return False
        remove(common, name)  # recorded: only now does the note go
        self.state.answered["hook"] += 1
        self.put(Job("rescan", agent), 1)
        return True

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
