"""The service's one worker thread: hook requests first, then background rescans of the
worktrees whose files changed, in quiet moments; what the watcher reported (its
``changes``) read as jobs. The worker owns the warm airspace (``air``, once its baseline
is done)."""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import sys
import threading
import time
from typing import TYPE_CHECKING

from proximity.errors import DamagedObject
from proximity.protocol import HOOK
from proximity.service import fswatch
from proximity.service.changes import Changes
from proximity.service.notes import PostNotes
from proximity.service.state import Job
from proximity.service.warm import WarmAirspace
from proximity.snapshot import journal, recorder

if TYPE_CHECKING:
    from proximity.protocol import Answer, HookAnswer, ScanAnswer
    from proximity.service.cookies import Cookies
    from proximity.service.state import ServiceState


QUIET = 2.0  # seconds without a hook request before background rescans run

FILES_QUIET = 0.5  # seconds without a file event before they run (a commit follows its add)

BUSY = 0.2  # a request that finds a background job running longer is refused at once

# at most this often, before a job, the repository's loose objects are audited (a new
# one cut short is a crash's or a bad copy's: rare, and never this service's own write)
AUDIT_EVERY = 1.0

AHEAD = "ahead"  # a verdict's reading started when its hook script's cookie comes back


class Scheduler:
    """The one worker thread: requests first, background rescans in quiet moments. What
    the watcher thread hands it (pending paths, post-commit notes) is kept under the
    state's lock."""

    def __init__(self, state: ServiceState, watcher: fswatch.Watcher,
                 cookies: Cookies) -> None:
        self.state, self.watcher, self.cookies = state, watcher, cookies
        self.air: WarmAirspace | None = None  # the warm airspace, once its baseline is done
        self.jobs: queue.PriorityQueue[tuple[int, int, Job]] = queue.PriorityQueue()
        self.seq = itertools.count()
        self.request_ready = threading.Event()
        self.changes = Changes(state, watcher)
        self.notes = PostNotes(state, self.put)
        self.ahead: set[tuple[str, str]] = set()  # (gate, admin) of queued AHEAD jobs
        self.read_ahead = 0  # AHEAD jobs run
        self.working = False
        self.background_since: float | None = None  # when the running background job began
        self.audited = 0.0  # when the loose objects were last found whole

    def put(self, job: Job, priority: int) -> None:
        self.jobs.put((priority, next(self.seq), job))
        if priority == 0:
            self.request_ready.set()  # a worker waiting for a quiet moment takes it now

    def busy(self) -> bool:
        return self.working or not self.jobs.empty() or bool(self.changes.pending)

    # -- the watcher's thread -----------------------------------------------------------
    def on_files(self, paths: set[str]) -> None:
        """Watcher thread: hand the batch to the worker (which asks git about ignores);
        then release the sync cookies it carries (everything before them is pending)."""
        st = self.state
        cookies = {p for p in paths if fswatch.COOKIE in p}
        paths = paths - cookies
        st.last_active = time.monotonic()
        if paths:
            st.last_file_event = st.last_active
        st.file_events += len(paths)
        with st.lock:
            first = self.changes.add(paths)
            hints = {h for p in cookies
                     if (h := self.cookies.seen(os.path.basename(p), p)) is not None}
            hints -= self.ahead
            self.ahead |= hints
        for gate, admin in sorted(hints):
            # a gate's hook script has started its interpreter: what its verdict reads is
            # read now, beside it (the request then finds it warm)
            self.put(Job(AHEAD, admin, gate), 0)
        # a post-commit note only now: the batch's file changes are pending first, so
        # the commit it records is not taken from a warm state they have made stale (a
        # host that put unstaged edits back just before git ran the post-commit hook)
        if self.air is not None:  # (the worker takes the notes it finds when it is ready)
            for p in cookies:
                self.notes.seen(p)
        if first:
            self.put(Job("files"), 2)

    def on_watching(self) -> None:
        """Watcher thread: new roots are watched; what changed while they were not is
        found by re-reading every worktree once (not on the first start: the baseline
        reads them after the watches are in place)."""
        if self.changes.rewatch():
            self.put(Job("rewatch"), 1)
            if self.air is not None:  # (a commit made meanwhile is recorded now, not
                for path in self.cookies.unreported():  # by the replay of old notes)
                    self.notes.seen(path)

    # -- the worker's thread ------------------------------------------------------------
    def _start(self) -> dict[str, str] | None:
        """Warm the airspace (snapshots, caches, the import graph) with the watches in
        place, and take what a killed service left unrecorded: its post-commit notes, its
        hooks' pending events. The roots the watcher was started on; None: it could not
        start (the service stops)."""
        st = self.state
        try:
            air = WarmAirspace(st.common)
            air.snapshots.agents_now()  # learns the worktrees (their paths are the roots)
            started = air.snapshots.watch_roots()
            self.watcher.start([*started.values()])
            self.watcher.watching.wait(10.0)
            air.snapshots.dirty |= set(air.snapshots.paths)
            air.baseline()
            self.notes.found()
            recorder.replay_pending(st.common)
            self.air = air
            return started
        except Exception as e:
            st.error = f"{type(e).__name__}: {e}"
            print(f"proximity service: cannot start: {st.error}", file=sys.stderr)
            if os.environ.get("PROXIMITY_DEBUG"):
                import traceback

                traceback.print_exc()
            st.stop.set()
            return None

    def work(self) -> None:
        """The worker thread: requests first, background rescans in quiet moments."""
        st = self.state
        started = self._start()
        if started is None or self.air is None:
            return
        # the roots the watcher was started on: a worktree the baseline (or any job) found
        # since is watched from the next turn of this loop
        roots_seen = started
        replayed = time.monotonic()
        while not st.stop.is_set():
            roots = self.air.snapshots.watch_roots()
            if roots != roots_seen:
                roots_seen = roots
                self.watcher.set_roots(fswatch.top_roots(roots.values()))
            if self.notes.due(time.monotonic()):
                self.put(Job("posts"), 0)  # (a job could not take them: again, now)
            try:
                prio, seq, job = self.jobs.get(timeout=0.5)
            except queue.Empty:
                if self.cookies.early_seen:
                    with st.lock:
                        self.cookies.prune_early()
                if time.monotonic() - replayed > recorder.PENDING_AGE:
                    replayed = time.monotonic()
                    recorder.replay_pending(st.common)
                continue
            if job.op == "quit":
                break
            if job.abandoned:
                continue
            rid = job.request.get("rid") if job.request is not None else None
            if prio == 0 and rid is not None and not journal.claim(st.common, rid):
                # the client gave up waiting and does this job in process
                job.answer = {"ok": True, "fallback": "taken by the client"}
                job.done.set()
                continue
            now = time.monotonic()
            if prio > 0 and (now - st.last_request < QUIET
                             or now - st.last_file_event < FILES_QUIET):
                # hooks are running (a rebase, a switch), or files are being saved (a
                # commit may follow at once): hooks never queue behind background
                # rescans; those wait for a quiet moment, merged into one
                self.jobs.put((prio, seq, job))
                if self.request_ready.wait(0.02):  # a hook's request came: at once
                    self.request_ready.clear()
                continue
            self._run(prio, job)
            if prio == 0 and self.air.policy_stale():
                self.put(Job("policy"), 1)  # read again after the hooks (reload_policy)
        self.notes.stopping(self.air, self.changes.settled)

    def _run(self, prio: int, job: Job) -> None:
        """One job (a request, or every queued background job at once), timed; its
        answer set and its waiter woken."""
        self.working = True
        self.background_since = time.monotonic() if prio > 0 else None
        try:
            t0 = time.perf_counter()
            if self.air is not None and time.monotonic() - self.audited > AUDIT_EVERY:
                # a loose object libgit2 would wedge on fails this job, saying which,
                # before anything reads: the hook then judges in process, and says so
                try:
                    unreached = self.air.ctx.repo.check_loose()
                except DamagedObject as e:
                    self.state.damaged = str(e)
                    raise
                self.state.damaged = None
                if not unreached:  # (one no commit reaches yet: every job, as a commit
                    self.audited = time.monotonic()  # may reach it any moment)
            with self.air.snapshots.one_listing() if self.air is not None \
                    else contextlib.nullcontext():
                job.answer = self._background(job) if prio > 0 else self._do(job)
            stage = job.request["stage"] if job.request and job.request["op"] == HOOK \
                else job.gate
            what = f"{job.op}:{stage}" if prio == 0 else "background"
            self.state.last_ms[what] = round((time.perf_counter() - t0) * 1000, 1)
        except Exception as e:  # one bad request never takes the service down
            job.answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            self.notes.failed()
            if os.environ.get("PROXIMITY_DEBUG"):
                import traceback

                traceback.print_exc()
        self.working = False
        self.background_since = None
        job.done.set()

    def _background(self, first: Job) -> Answer:
        """Every queued background job at once: re-snapshot what changed, rescan the
        pairs of the worktrees concerned, send the messages of rising advisories."""
        assert self.air is not None
        snaps = self.air.snapshots
        self.changes.gaps(snaps)
        jobs, keep = [first], []
        while True:
            try:
                item = self.jobs.get_nowait()
            except queue.Empty:
                break
            (jobs.append(item[2]) if item[0] > 0 and item[2].op != "quit"
             else keep.append(item))
        for item in keep:
            self.jobs.put(item)
        dirty: set[str] = set()
        rescan: set[str] = set()
        for job in jobs:
            if job.op == "files":
                dirty |= self.changes.worktrees(snaps)
            elif job.op == "touched" and job.agent:
                dirty.add(job.agent)
            elif job.op == "rescan" and job.agent:
                rescan.add(job.agent)
            elif job.op == "policy":
                self.air.reload_policy()
            elif job.op == "rewatch":
                dirty |= set(snaps.paths)
                snaps.forget_files()
        snaps.dirty |= dirty
        self.air.changed(dirty | rescan, dirty=False)
        for job in jobs[1:]:
            job.done.set()
        return {"ok": True}

    def _do(self, job: Job) -> Answer:
        assert self.air is not None
        snaps = self.air.snapshots
        req = job.request
        # a verdict may trust the warm state of a worktree only once every change made
        # before this request has been reported (then no pending event names it)
        if not self.watcher.watching.is_set() or self.watcher.error:
            # no watcher (too many directories for inotify, a vanished root): nothing
            # tells which worktree changed, so every one is read again
            snaps.dirty |= set(snaps.paths)
        self.changes.gaps(snaps)
        if req is not None and req["op"] == HOOK:
            req["synced"] = req["stage"] != "snapshot" and self.cookies.sync(
                snaps.watch_roots(), early=req.get("cookie"))
        # siblings' saves the watcher reported but no rescan has taken yet: read now
        for wid in self.changes.worktrees(snaps):
            snaps.dirty.add(wid)
            self.put(Job("rescan", wid), 1)  # their messages, later
        self.notes.take(self.air, self.changes.settled)
        if job.op == AHEAD:
            with self.state.lock:
                self.ahead.discard((job.gate, job.agent))
            self.read_ahead += self.air.ahead(job.gate, job.agent)
            return {"ok": True}
        if req is None:  # (posts: taken just now)
            return {"ok": True}
        if req["op"] == HOOK:
            answer: HookAnswer = self.air.hook(req, self.changes.settled())
            fell = "fallback" in answer  # (recorded: the stage runner settled its note)
            self.state.answered["hook" if not fell else "hook_fallback"] += 1
            if req["kind"] == "pre-commit" and not fell:
                note = self.cookies.post_note(snaps.watch_roots(), req["agent"])
                if note is not None:
                    answer["post"] = note
            if req["stage"] == "snapshot" and not fell:
                # then its pairs, and any rise's messages
                self.put(Job("rescan", req["agent"]), 1)
            answer["ok"] = True
            return answer
        scan: ScanAnswer = {"ok": True, "scan": self.air.scan(req)}
        return scan
