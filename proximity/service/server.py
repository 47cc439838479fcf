"""The resident airspace service: one process per repository, for all its worktrees.

Started on demand (client.start) and detached; one instance per repository (an flock on
``<common>/ecm/service.lock``); it answers newline-delimited JSON on a Unix socket
(client.socket_path, mode 0600) and exits after an idle period. It watches every
worktree's files, keeps each worktree's snapshot warm (re-snapshotting only the worktree
that changed), and rescans that worktree's pairs at once: when a pair's advisory rises
because of a saved file, the TCAS messages go out then, not at the next commit.

Requests (``{"v": 1, "op": ...}``): ``ping``, ``status``, ``shutdown``, ``touched`` (a hook
says a worktree changed), ``scan`` (the ``scan --json`` document) and ``judge`` (a hook's
verdict, computed by the very function the in-process hook uses), ``record`` (what a
snapshot hook records). The warm state itself lives in warm.py.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proximity.service import client

if TYPE_CHECKING:
    from proximity.service.warm import Airspace

IDLE_SECONDS = 900.0  # PROXIMITY_SERVICE_IDLE overrides
READ_TIMEOUT = 5.0
QUIET = 2.0  # seconds without a hook request before background rescans run
FILES_QUIET = 0.5  # seconds without a file event before they run (a commit follows its add)
SYNC_TIMEOUT = 0.25  # seconds a hook waits for the watcher to catch up (service.sync)
BUSY = 0.2  # a request that finds a background job running longer is refused at once


def idle_seconds() -> float:
    try:
        return float(os.environ.get("PROXIMITY_SERVICE_IDLE", IDLE_SECONDS))
    except ValueError:
        return IDLE_SECONDS


def lock_path(common: str) -> str:
    return os.path.join(client.ecm_dir(common), "service.lock")


def state_path(common: str) -> str:
    return os.path.join(client.ecm_dir(common), "service.json")


def service_state(common: str) -> dict[str, Any]:
    """What `doctor` and `proximity service status` report: running or not, where its
    socket is, and (when it answers) its own status."""
    sock = client.socket_path(common)
    out: dict[str, Any] = {"running": client._alive(common), "socket": sock,
                           "socket_exists": os.path.exists(sock),
                           "enabled": client.enabled()}
    try:
        with open(state_path(common)) as fh:
            out["recorded"] = json.load(fh)
    except (OSError, ValueError):
        out["recorded"] = None
    answer = client.request(common, {"op": "status"}, budget=1.0) if out["running"] else None
    out["status"] = answer.get("status") if answer else None
    out["stale_socket"] = out["socket_exists"] and not out["running"]
    return out


def _private_dir(path: str) -> None:
    """The runtime directory for a long-path socket: ours, and only ours (0700)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.chmod(path, 0o700)
        st = os.lstat(path)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise OSError(f"{path} is not a private directory")


def _bind(common: str, path: str) -> socket.socket:
    """Bind the socket, replacing a stale one (we hold the lock: nobody serves on it)."""
    if os.path.dirname(path) != client.ecm_dir(common):
        _private_dir(os.path.dirname(path))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        srv.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    srv.listen(64)
    return srv


@dataclass
class Job:
    op: str
    msg: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    answer: dict[str, Any] | None = None
    abandoned: bool = False


class Service:
    """Socket, watcher and one worker thread that owns the airspace."""

    def __init__(self, common: str, idle: float) -> None:
        self.common, self.idle = common, idle
        self.jobs: queue.PriorityQueue[tuple[int, int, Job]] = queue.PriorityQueue()
        self.seq = itertools.count()
        self.stop = threading.Event()
        self.last_active = time.monotonic()
        self.last_request = 0.0  # when the last hook request (scan, judge, record) came
        self.last_file_event = 0.0
        self.started = time.time()
        self.air: Airspace | None = None
        self.error: str | None = None
        self.requests = 0
        self.answered = dict.fromkeys(("hook", "hook_fallback", "check", "check_fallback"), 0)
        self.working = False
        self.background_since: float | None = None  # when the running background job began
        self.file_events = 0
        self.pending: set[str] = set()
        self.pending_lock = threading.Lock()
        self.request_ready = threading.Event()
        # hook scripts' cookies back before their request: name -> (when, file identity)
        self.early_seen: dict[str, tuple[float, tuple[int, int, int]]] = {}
        self.early_syncs = 0  # requests synced by their hook script's cookie
        self.cookies: dict[str, threading.Event] = {}
        self.posts: list[str] = []  # git dir names of post-commit notes not taken yet
        with contextlib.suppress(OSError):  # watched (inside the main checkout) from the start
            os.makedirs(os.path.join(client.ecm_dir(common), "cookies"), exist_ok=True)
        from proximity.service import fswatch

        self.code = client.code_stamp()  # the code this process runs (read at its start)
        self.watcher = fswatch.Watcher(self._on_files, self._on_watching)
        self.rewatched = 0
        self.rewatch_seen = 1  # the first watch is the baseline's
        self.last_ms: dict[str, float] = {}  # the last request of each kind took (ms)

    # -- threads ------------------------------------------------------------------------
    def put(self, job: Job, priority: int) -> None:
        self.jobs.put((priority, next(self.seq), job))
        if priority == 0:
            self.request_ready.set()  # a worker waiting for a quiet moment takes it now

    def _on_files(self, paths: set[str]) -> None:
        """Watcher thread: hand the batch to the worker (which asks git about ignores);
        then release the sync cookies it carries (everything before them is pending)."""
        from proximity.service import fswatch

        cookies = {p for p in paths if fswatch.COOKIE in p}
        paths = paths - cookies
        for p in cookies:
            self._posted(p)
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
        if first:
            self.put(Job("files"), 2)

    def _early(self, name: str, path: str) -> None:
        """Watcher thread, under pending_lock: a hook script's cookie came back before its
        request (kept a while for it, by the file's identity; older ones are dropped with
        their files), or went (forgotten)."""
        ident = _ident(path)
        if ident is None:
            self.early_seen.pop(name, None)
            return
        self.early_seen[name] = (time.monotonic(), ident)
        self._prune_early()

    def _prune_early(self) -> None:
        """Under pending_lock: hook scripts' cookies no request came for (a hook that
        judged in process, PROXIMITY_SERVICE=0) go after EARLY_KEEP, with their files."""
        now = time.monotonic()
        for old, (t, _i) in list(self.early_seen.items()):
            if now - t > EARLY_KEEP or len(self.early_seen) > 64:
                del self.early_seen[old]
                _remove(self.common, old)

    def _posted(self, path: str) -> None:
        """Watcher thread: a post-commit hook's note (see post_note), taken once: the
        commit is recorded as the thin client's post-commit request would have it (not
        waited for: its messages stay for the next hook)."""
        name = os.path.basename(path)
        if not name.startswith(POST_PREFIX):
            return
        if not _remove(self.common, name):
            return  # taken already (its deletion is reported too), or not ours to take
        if self.air is None:
            return
        self.last_request = time.monotonic()
        with self.pending_lock:  # the worker maps the git dir's name to its worktree
            self.posts.append(name[len(POST_PREFIX):].rsplit("-", 1)[0])
        self.put(Job("posts"), 0)  # taken by then by any verdict that synced after it

    def _take_posts(self) -> None:
        """Worker thread: record the commits post-commit notes told of, in their order,
        before the request at hand (a push right after its commit finds it recorded)."""
        assert self.air is not None
        with self.pending_lock:
            posts, self.posts = self.posts, []
        for admin in dict.fromkeys(posts):  # one commit, one record (a note is only a cue)
            agent = self.air.agent_of_admin(admin)
            if agent is None or self.air.commit_recorded(agent):
                continue
            msg = {"op": "hook", "stage": "snapshot", "kind": "commit", "agent": agent,
                   "index": None, "later": True}
            try:
                answer = self.air.hook(msg, self._settled())
            except Exception:
                continue  # as a failed hook request: the next verdict snapshots it anyway
            if "fallback" not in answer:
                self.answered["hook"] += 1
                self.put(Job("rescan", msg), 1)

    def post_note(self, agent: str) -> dict[str, Any] | None:
        """What a pre-commit's thin client leaves for the post-commit hook that follows:
        this process's pid, so that hook records the commit by a file in the cookies
        directory without starting Python (hooks/proximity-hook); None when the watcher
        would not see that file (no watcher, a cookies directory that is a link or
        outside every watched worktree)."""
        if self._cookies() is None or self.air is None or agent not in self.air.paths:
            return None
        return {"pid": os.getpid()}

    def _cookies(self) -> str | None:
        """The cookies directory when the watcher sees files made there (sync cookies,
        post-commit notes): watching, no error, a real directory (neither it nor ``ecm``
        a link) inside a watched worktree; else None."""
        from proximity.service import fswatch

        d = os.path.join(client.ecm_dir(self.common), "cookies")
        roots = self.air.watch_roots() if self.air is not None else {}
        if (not self.watcher.watching.is_set() or self.watcher.error or not os.path.isdir(d)
                or os.path.islink(d) or os.path.islink(os.path.dirname(d))
                or fswatch.owner(os.path.realpath(d), roots) is None):
            return None
        return d

    def _settled(self) -> bool:
        """No file event waits to be read, and the watcher is sound."""
        with self.pending_lock:
            settled = not self.pending
        return settled and self.watcher.watching.is_set() and not self.watcher.error

    def sync(self, timeout: float = SYNC_TIMEOUT, early: object = None) -> bool:
        """Whether the watcher has reported every file change made before now: a cookie
        file written where it watches comes back through it after them (one inotify
        queue keeps the order), as git's fsmonitor daemon does. False: not watching, or
        not in time (the caller then snapshots instead of trusting the warm state).
        ``early``: the name of a cookie the hook script made before its request (every
        change before the hook is then reported, usually by the time it asks)."""
        d = self._cookies()
        if d is None:
            return False
        if isinstance(early, str) and EARLY_COOKIE.fullmatch(early):
            ev = threading.Event()
            with self.pending_lock:
                got = self.early_seen.pop(early, None)
                # that very file (not an older one of the same name)
                seen = got is not None and got[1] == _ident(os.path.join(d, early))
                if not seen:
                    self.cookies[early] = ev
            try:
                if seen or ev.wait(EARLY_WAIT):
                    self.early_syncs += 1
                    return True
            finally:
                with self.pending_lock:
                    self.cookies.pop(early, None)
                _remove(self.common, early)
        name = f"sync-{os.getpid()}-{next(self.seq)}"
        ev = threading.Event()
        with self.pending_lock:
            self.cookies[name] = ev
        try:
            fd = _cookies_fd(self.common)
            if fd is None:
                return False
            try:  # a new file, never through a link, never over anything, never blocking
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                 | os.O_NONBLOCK, 0o600, dir_fd=fd))
            finally:
                os.close(fd)
            return ev.wait(timeout)
        except OSError:
            return False
        finally:
            with self.pending_lock:
                self.cookies.pop(name, None)
            _remove(self.common, name)

    def _on_watching(self) -> None:
        """Watcher thread: new roots are watched; what changed while they were not is
        found by re-reading every worktree once (not on the first start: the baseline
        reads them after the watches are in place)."""
        self.rewatched += 1
        if self.rewatched > 1:
            self.put(Job("rewatch"), 1)

    def _files(self) -> set[str]:
        """The worktrees the pending file events concern (ignored paths left out)."""
        from proximity.service import fswatch

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
        from proximity.service import fswatch

        try:
            from proximity.service.warm import Airspace

            air = Airspace(self.common)
            air.agents_now()  # learns the worktrees (their paths are the roots)
            started = air.watch_roots()
            self.watcher.start([*started.values()])
            self.watcher.watching.wait(10.0)
            air.dirty |= set(air.paths)
            air.baseline()
            _drop_old_notes(self.common)  # the baseline read those commits already
            self.air = air
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
                continue
            if job.op == "quit":
                break
            if job.abandoned:
                continue
            rid = job.msg.get("rid")
            if prio == 0 and isinstance(rid, str) and not client.claim(self.common, rid):
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
                what = f"{job.op}:{job.msg.get('stage', '')}" if prio == 0 else "background"
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

    def _watch_gaps(self) -> None:
        """Worker thread: after the watcher restarted (new roots, an error), what changed
        meanwhile is unknown: no snapshot may start from the paths it reported."""
        from proximity.service import fswatch

        assert self.air is not None
        if self.rewatched != self.rewatch_seen or not self.watcher.watching.is_set() \
                or self.watcher.error:
            self.rewatch_seen = self.rewatched
            self.air.forget_files()
            self.air.dirty |= set(self.air.paths)  # and no kept state is known current
        # a worktree no watch covers yet (found since the watcher started: its roots are
        # set at the next turn) says nothing when it changes: it is read again (trial15: a
        # worktree added while the service started was never watched, and a commit there
        # was judged on the state it had when added)
        for wid, path in self.air.paths.items():
            if not fswatch.covered(path, self.watcher.active):
                self.air.dirty.add(wid)

    def _background(self, first: Job) -> dict[str, Any]:
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

    def _do(self, job: Job) -> dict[str, Any]:
        assert self.air is not None
        # a verdict may trust the warm state of a worktree only once every change made
        # before this request has been reported (then no pending event names it)
        if not self.watcher.watching.is_set() or self.watcher.error:
            # no watcher (too many directories for inotify, a vanished root): nothing
            # tells which worktree changed, so every one is read again
            self.air.dirty |= set(self.air.paths)
        self._watch_gaps()
        synced = (job.op == "judge" or (job.op == "hook" and job.msg.get("stage") != "snapshot")
                  ) and self.sync(early=job.msg.get("cookie"))
        job.msg["synced"] = synced
        # siblings' saves the watcher reported but no rescan has taken yet: read now
        for wid in self._files():
            self.air.dirty.add(wid)
            self.put(Job("rescan", {"agent": wid}), 1)  # their messages, later
        self._take_posts()
        if job.op == "posts":
            return {"ok": True}
        if job.op == "record":
            done = self.air.record(job.msg, self._settled())
            self.put(Job("rescan", job.msg), 1)  # then its pairs, and any rise's messages
            return {"ok": True, "recorded": done is not None}
        if job.op == "hook":
            answer = self.air.hook(job.msg, self._settled())
            self.answered["hook" if "fallback" not in answer else "hook_fallback"] += 1
            if job.msg.get("kind") == "pre-commit" and "fallback" not in answer:
                note = self.post_note(str(job.msg.get("agent")))
                if note is not None:
                    answer["post"] = note
            if job.msg.get("stage") == "snapshot" and "fallback" not in answer:
                self.put(Job("rescan", job.msg), 1)  # then its pairs, and any rise's messages
            return {"ok": True, **answer}
        if job.op == "judge":
            return {"ok": True, "verdict": self.air.judge(job.msg)}
        if job.op == "scan":
            return {"ok": True, "scan": self.air.scan(job.msg)}
        return {"ok": False, "error": f"unknown job {job.op!r}"}

    # -- the socket ---------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        air = self.air
        return {"pid": os.getpid(), "common": self.common,
                "socket": client.socket_path(self.common), "started": self.started,
                "uptime": round(time.time() - self.started, 3), "idle_timeout": self.idle,
                "ready": air is not None, "error": self.error or self.watcher.error,
                "worktrees": sorted(air.paths) if air else [],
                "watching": list(self.watcher.roots), "requests": self.requests,
                "busy": self.working or not self.jobs.empty() or bool(self.pending),
                "file_events": self.file_events, "scans": air.scans if air else 0,
                "messages_sent": air.fired if air else 0,
                "last_scan_ms": round(air.last_scan_seconds * 1000, 1) if air else None,
                "rss_kb": _rss_kb(), "code": self.code, "answered": dict(self.answered),
                "git_calls": _git_calls(), "partial_snapshots": air.partials if air else 0,
                "early_syncs": self.early_syncs,
                "last_ms": dict(self.last_ms)}

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                msg = _read_request(conn)
                answer = self._answer(msg) if msg is not None else {
                    "ok": False, "error": "bad request"}
                if answer is not None:
                    conn.settimeout(READ_TIMEOUT)
                    reply = {"v": client.PROTOCOL, "code": self.code, **answer}
                    conn.sendall(client.marshal_reply(reply) if msg and msg.get("reply") ==
                                 "marshal" else json.dumps(reply).encode() + b"\n")
            except OSError:
                pass

    def _answer(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        self.requests += 1
        self.last_active = time.monotonic()
        op = msg.get("op")
        if msg.get("v") != client.PROTOCOL:
            return {"ok": False, "error": f"protocol {msg.get('v')!r} not spoken (want "
                    f"{client.PROTOCOL})"}
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "ready": self.air is not None}
        if op == "status":
            return {"ok": True, "status": self.status()}
        if op == "shutdown":
            self.stop.set()
            return {"ok": True}
        if msg.get("code") is not None and msg.get("code") != self.code:
            # a client of other code (an upgrade since this process started): this one
            # goes, the client judges in process, and its next hook starts the new code
            self.stop.set()
            return {"ok": False, "refused": True, "error": f"this service runs {self.code}, "
                    f"the client {msg.get('code')}: exiting"}
        if op == "touched":
            self.put(Job("touched", msg), 1)
            return {"ok": True}
        if op == "check":
            return self._check(msg)
        if op not in ("scan", "judge", "record", "hook"):
            return {"ok": False, "error": f"unknown op {op!r}"}
        self.last_request = time.monotonic()
        if (op == "hook" and msg.get("stage") == "snapshot" and self.air is not None
                and msg.get("agent") in self.air.paths
                and self._inbox_empty(str(msg.get("agent")))):
            # a snapshot hook with nothing to print does not wait for its record: the
            # worker takes it in order, so the next verdict sees it
            self.put(Job("hook", {**msg, "later": True}), 0)
            return {"ok": True, "lines": [], "block": False, "queued": True}
        since = self.background_since
        if op != "scan" and since is not None and self.last_request - since > BUSY:
            # a long rescan (a new import graph after main moved): no hook waits on it
            return {"ok": False, "refused": True, "error": "busy"}
        job = Job(str(op), msg)
        self.put(job, 0)
        budget = msg.get("budget")
        wait = float(budget) if isinstance(budget, (int, float)) else 30.0
        if not job.done.wait(max(0.0, min(wait, 600.0))):
            job.abandoned = True  # the client has gone to judge in process
            return None
        return job.answer

    def _inbox_empty(self, agent: str) -> bool:
        """Whether the worktree has no undelivered message (read-only, on this thread)."""
        import sqlite3

        from proximity.ledger import FILENAME

        path = os.path.join(client.ecm_dir(self.common), FILENAME)
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)
        except sqlite3.Error:
            return False
        try:
            return db.execute("SELECT 1 FROM inbox WHERE recipient=? AND delivered IS NULL "
                              "LIMIT 1", (agent,)).fetchone() is None
        except sqlite3.Error:
            return False
        finally:
            db.close()

    def _check(self, msg: dict[str, Any]) -> dict[str, Any]:
        """`proximity check` (its CLI, a harness's pre-edit hook) on this connection's own
        thread: it reads only git's answers about the paths asked, never the worker's
        state, so it never waits behind a rescan. Anything odd: the client checks in
        process."""
        from proximity.agents import checkops

        try:
            answer = checkops.answer(msg)
        except Exception as e:  # the in-process check says the same error its own way
            answer = {"fallback": f"{type(e).__name__}: {e}"}
        self.answered["check" if "fallback" not in answer else "check_fallback"] += 1
        return {"ok": True, **answer}

    def serve(self, srv: socket.socket, sock: str | None = None) -> None:
        """Answer requests until idle, stopped, or no longer this repository's service:
        its common dir gone or replaced (deleted and made again at the same path), or its
        socket file gone or another's (nobody can reach it then)."""
        worker = threading.Thread(target=self._work, name="airspace", daemon=True)
        worker.start()
        srv.settimeout(0.5)
        mine = _node(self.common), _node(sock) if sock else None
        listing = _worktree_dirs(self.common)
        swept = time.monotonic()
        while not self.stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                conn = None
            except OSError:
                break
            if conn is not None:
                conn.settimeout(READ_TIMEOUT)
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
                continue
            if time.monotonic() - self.last_active > self.idle:
                break
            if _node(self.common) != mine[0] or (sock and _node(sock) != mine[1]):
                break  # (trial15: a case repo made again at the same path kept it busy)
            if time.monotonic() - swept > 60.0:
                swept = time.monotonic()
                client.forget_claims(self.common)
            now = _worktree_dirs(self.common)
            if now != listing:  # a worktree was added or removed
                listing = now
                self.put(Job("worktrees"), 1)
        self.stop.set()
        srv.close()  # new clients are refused at once and judge in process
        self.put(Job("quit"), -1)
        self.watcher.stop()
        worker.join(timeout=5.0)


EARLY_COOKIE = re.compile(r"sync-h[0-9]{1,10}")  # a hook script's cookie (proximity-hook)
EARLY_WAIT = 0.05  # for it to come back; then a cookie of the service's own
EARLY_KEEP = 10.0  # seconds a cookie back before its request is kept for it
POST_PREFIX = "post-commit-"  # a post-commit hook's note in the cookies directory


def _node(path: str) -> tuple[int, int] | None:
    """A path's (device, inode), None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _ident(path: str) -> tuple[int, int, int] | None:
    """A file's identity (device, inode, change time); None when it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns


def _cookies_fd(common: str) -> int | None:
    """The cookies directory opened from the common dir one component at a time, never
    through a link (a link swapped in on the way fails the open); None: not there."""
    fds: list[int] = []
    try:
        fds.append(os.open(common, os.O_RDONLY | os.O_DIRECTORY))
        for part in (os.path.basename(client.ecm_dir(common)), "cookies"):
            fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                               dir_fd=fds[-1]))
        return fds.pop()
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _remove(common: str, name: str) -> bool:
    """Remove the cookie or note ``name`` (a file, a link itself, or an empty directory)
    from the cookies directory, reached without following links; whether it was there."""
    if "/" in name or name in ("", ".", ".."):
        return False
    fd = _cookies_fd(common)
    if fd is None:
        return False
    try:
        try:
            os.rmdir(name, dir_fd=fd)
        except NotADirectoryError:
            os.unlink(name, dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _drop_old_notes(common: str) -> None:
    """Post-commit notes and hook scripts' sync cookies left for an earlier service (one
    that died before taking them)."""
    d = os.path.join(client.ecm_dir(common), "cookies")
    with contextlib.suppress(OSError):
        for name in os.listdir(d):
            if name.startswith(POST_PREFIX) or EARLY_COOKIE.fullmatch(name):
                _remove(common, name)


def _worktree_dirs(common: str) -> list[str]:
    try:
        return sorted(os.listdir(os.path.join(common, "worktrees")))
    except OSError:
        return []


def _read_request(conn: socket.socket) -> dict[str, Any] | None:
    buf = bytearray()
    deadline = time.monotonic() + READ_TIMEOUT
    while b"\n" not in buf:
        if len(buf) > client.MAX_MESSAGE or time.monotonic() > deadline:
            return None
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    try:
        msg = json.loads(bytes(buf[:buf.index(b"\n")]))
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def _git_calls() -> dict[str, int]:
    """git subcommands this process ran, by name (what a verdict cost: tests read it)."""
    from proximity import gitio

    return dict(gitio.CALLS)


def _rss_kb() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def run(common: str, idle: float | None = None) -> int:
    """Serve this repository until idle, shut down, or killed; 0 also when another
    instance already serves it (the lock decides who does)."""
    import fcntl

    client.code_stamp()  # the code as it is now, before anything else is loaded
    os.environ.pop("PROXIMITY_SKIP", None)  # a skipped command's child serves everyone
    common = os.path.realpath(common)
    os.makedirs(client.ecm_dir(common), exist_ok=True)
    lock = open(lock_path(common), "a+")  # noqa: SIM115 -- held for the process lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0
    path = client.socket_path(common)
    try:
        srv = _bind(common, path)
    except OSError as e:
        print(f"proximity service: cannot listen on {path}: {e}", file=sys.stderr)
        lock.close()
        return 1
    ino = os.stat(path).st_ino
    svc = Service(common, idle if idle is not None else idle_seconds())
    with contextlib.suppress(OSError), open(state_path(common), "w") as fh:
        json.dump({"pid": os.getpid(), "socket": path, "started": svc.started,
                   "common": common}, fh)
    signal.signal(signal.SIGTERM, lambda *_: svc.stop.set())
    try:
        svc.serve(srv, path)
    finally:
        srv.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == ino:
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.unlink(state_path(common))
        lock.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m proximity.service COMMON_GIT_DIR", file=sys.stderr)
        return 2
    return run(args[0])

