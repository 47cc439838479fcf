"""The service's one worker thread: hook requests first, then background rescans of the
worktrees whose files changed, in quiet moments; what the watcher reported, read as jobs."""

from __future__ import annotations

import os
import queue
import sys
import time
from typing import TYPE_CHECKING

from proximity.protocol import HOOK
from proximity.service import fswatch
from proximity.service.cookies import EARLY_COOKIE, Cookies, drop_old_notes
from proximity.service.state import Job
from proximity.service.warm import WarmAirspace
from proximity.snapshot import journal, recorder

if TYPE_CHECKING:
    from proximity.protocol import Answer, HookAnswer, ScanAnswer


QUIET = 2.0  # seconds without a hook request before background rescans run

FILES_QUIET = 0.5  # seconds without a file event before they run (a commit follows its add)

BUSY = 0.2  # a request that finds a background job running longer is refused at once


class Scheduler(Cookies):
    """The one worker thread: requests first, background rescans in quiet moments."""

    def _on_files(self, paths: set[str]) -> None:
        """Watcher thread: hand the batch to the worker (which asks git about ignores);
        then release the sync cookies it carries (everything before them is pending)."""
        cookies = {p for p in paths if fswatch.COOKIE in p}
        paths = paths - cookies
        self.last_active = time.monotonic()
        if paths:
            self.last_file_event = self.last_active
        self.file_events += len(paths)
        with self.pending_lock:
            first = not self.pending and bool(paths)
            self.pending |= paths
            for p in cookies:
                name = os.path.basename(p)
                ev = self.cookies.get(name)
                if ev is not None:
                    ev.set()
                elif EARLY_COOKIE.fullmatch(name):
                    self._early(name, p)
        # a post-commit note only now: the batch's file changes are pending first, so
        # the commit it records is not taken from a warm state they have made stale (a
        # host that put unstaged edits back just before git ran the post-commit hook)
        for p in cookies:
            self._posted(p)
        if first:
            self.put(Job("files"), 2)

    def _on_watching(self) -> None:
        """Watcher thread: new roots are watched; what changed while they were not is
        found by re-reading every worktree once (not on the first start: the baseline
        reads them after the watches are in place)."""
        self.rewatched += 1
        if self.rewatched > 1:
            self.put(Job("rewatch"), 1)

    def _files(self) -> set[str]:
        """The worktrees the pending file events concern (ignored paths left out)."""
        assert self.air is not None
        with self.pending_lock:
            paths, self.pending = self.pending, set()
        roots = self.air.watch_roots()
        by_wt: dict[str, list[str]] = {}
        for p in paths:
            wid = fswatch.owner(p, roots)
            if wid is not None:
                by_wt.setdefault(wid, []).append(os.path.relpath(p, roots[wid]))
        ids = set()
        for wid, rels in by_wt.items():
            self.air.note_files(wid, rels)
            if self.air.in_snapshot(wid, rels):
                ids.add(wid)  # a file its state holds: no need to ask git about ignores
                continue
            try:
                skip = fswatch.ignored(roots[wid], rels)
            except Exception:
                skip = set()
            if any(r not in skip for r in rels):
                ids.add(wid)
        return ids

    def _work(self) -> None:
        try:
            air = WarmAirspace(self.common)
            air.agents_now()  # learns the worktrees (their paths are the roots)
            started = air.watch_roots()
            self.watcher.start([*started.values()])
            self.watcher.watching.wait(10.0)
            air.dirty |= set(air.paths)
            air.baseline()
            # what a killed service left unrecorded: its post-commit notes, its hooks'
            # pending events
            posts = drop_old_notes(self.common)
            recorder.replay_pending(self.common)
            self.air = air
            if posts:
                with self.pending_lock:
                    self.posts[:0] = posts
                self.put(Job("posts"), 0)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"
            print(f"proximity service: cannot start: {self.error}", file=sys.stderr)
            if os.environ.get("PROXIMITY_DEBUG"):
                import traceback

                traceback.print_exc()
            self.stop.set()
            return
        # the roots the watcher was started on: a worktree the baseline (or any job) found
        # since is watched from the next turn of this loop
        roots_seen = started
        replayed = time.monotonic()
        while not self.stop.is_set():
            roots = self.air.watch_roots()
            if roots != roots_seen:
                roots_seen = roots
                self.watcher.set_roots(fswatch.top_roots(roots.values()))
            try:
                prio, seq, job = self.jobs.get(timeout=0.5)
            except queue.Empty:
                if self.early_seen:
                    with self.pending_lock:
                        self._prune_early()
                if time.monotonic() - replayed > recorder.PENDING_AGE:
                    replayed = time.monotonic()
                    recorder.replay_pending(self.common)
                continue
            if job.op == "quit":
                break
            if job.abandoned:
                continue
            rid = job.request.get("rid") if job.request is not None else None
            if prio == 0 and rid is not None and not journal.claim(self.common, rid):
                # the client gave up waiting and does this job in process
                job.answer = {"ok": True, "fallback": "taken by the client"}
                job.done.set()
                continue
            now = time.monotonic()
            if prio > 0 and (now - self.last_request < QUIET
                             or now - self.last_file_event < FILES_QUIET):
                # hooks are running (a rebase, a switch), or files are being saved (a
                # commit may follow at once): hooks never queue behind background
                # rescans; those wait for a quiet moment, merged into one
                self.jobs.put((prio, seq, job))
                if self.request_ready.wait(0.02):  # a hook's request came: at once
                    self.request_ready.clear()
                continue
            self.working = True
            self.background_since = time.monotonic() if prio > 0 else None
            try:
                t0 = time.perf_counter()
                job.answer = self._background(job) if prio > 0 else self._do(job)
                stage = job.request["stage"] if job.request and job.request["op"] == HOOK \
                    else ""
                what = f"{job.op}:{stage}" if prio == 0 else "background"
                self.last_ms[what] = round((time.perf_counter() - t0) * 1000, 1)
            except Exception as e:  # one bad request never takes the service down
                job.answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                if os.environ.get("PROXIMITY_DEBUG"):
                    import traceback

                    traceback.print_exc()
            self.working = False
            self.background_since = None
            job.done.set()
            if prio == 0 and self.air.policy_stale():
                self.put(Job("policy"), 1)  # read again after the hooks (reload_policy)
        self._take_left_notes()

    def _watch_gaps(self) -> None:
        """Worker thread: after the watcher restarted (new roots, an error), what changed
        meanwhile is unknown: no snapshot may start from the paths it reported."""
        assert self.air is not None
        if self.rewatched != self.rewatch_seen or not self.watcher.watching.is_set() \
                or self.watcher.error:
            self.rewatch_seen = self.rewatched
            self.air.forget_files()
            self.air.dirty |= set(self.air.paths)  # and no kept state is known current
        # a worktree no watch covers yet (found since the watcher started: its roots are
        # set at the next turn) says nothing when it changes: it is read again (else a
        # worktree added while the service started was never watched, and a commit there
        # was judged on the state it had when added)
        for wid, path in self.air.paths.items():
            if not fswatch.covered(path, self.watcher.active):
                self.air.dirty.add(wid)

    def _take_left_notes(self) -> None:
        """Stopping: the commits that post-commit notes told of (queued, or on disk and not
        yet seen by the watcher) are recorded before the service goes. A note is durable
        (the next hook would record it), but a stopped service writes what it holds: one
        who counts the ledger after `service stop` finds every commit."""
        if self.air is None:
            return
        left = drop_old_notes(self.common)
        with self.pending_lock:
            self.posts += [n for n in left if n not in self.posts]
        try:
            self._take_posts()
        except Exception as e:  # the notes stay on disk for the next taker
            print(f"proximity service: commits left for the next hook: {e}",
                  file=sys.stderr)

    def _background(self, first: Job) -> Answer:
        """Every queued background job at once: re-snapshot what changed, rescan the
        pairs of the worktrees concerned, send the messages of rising advisories."""
        assert self.air is not None
        self._watch_gaps()
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
            agent = str(job.msg.get("agent") or "")
            if job.op == "files":
                dirty |= self._files()
            elif job.op == "touched" and agent:
                dirty.add(agent)
            elif job.op == "rescan" and agent:
                rescan.add(agent)
            elif job.op == "policy":
                self.air.reload_policy()
            elif job.op == "rewatch":
                dirty |= set(self.air.paths)
                self.air.forget_files()
        self.air.dirty |= dirty
        self.air.changed(dirty | rescan, dirty=False)
        for job in jobs[1:]:
            job.done.set()
        return {"ok": True}

    def _do(self, job: Job) -> Answer:
        assert self.air is not None
        req = job.request
        # a verdict may trust the warm state of a worktree only once every change made
        # before this request has been reported (then no pending event names it)
        if not self.watcher.watching.is_set() or self.watcher.error:
            # no watcher (too many directories for inotify, a vanished root): nothing
            # tells which worktree changed, so every one is read again
            self.air.dirty |= set(self.air.paths)
        self._watch_gaps()
        if req is not None and req["op"] == HOOK:
            req["synced"] = req["stage"] != "snapshot" and self.sync(early=req.get("cookie"))
        # siblings' saves the watcher reported but no rescan has taken yet: read now
        for wid in self._files():
            self.air.dirty.add(wid)
            self.put(Job("rescan", {"agent": wid}), 1)  # their messages, later
        self._take_posts()
        if req is None:  # (posts: taken just now)
            return {"ok": True}
        if req["op"] == HOOK:
            # (recorded: the stage runner settled the hook's pending note)
            answer: HookAnswer = self.air.hook(req, self._settled())
            self.answered["hook" if "fallback" not in answer else "hook_fallback"] += 1
            if req["kind"] == "pre-commit" and "fallback" not in answer:
                note = self.post_note(req["agent"])
                if note is not None:
                    answer["post"] = note
            if req["stage"] == "snapshot" and "fallback" not in answer:
                # then its pairs, and any rise's messages
                self.put(Job("rescan", {"agent": req["agent"]}), 1)
            answer["ok"] = True
            return answer
        scan: ScanAnswer = {"ok": True, "scan": self.air.scan(req)}
        return scan
