"""Cookies: how the service knows its watcher has caught up. A file made in the cookies
directory comes back through the watcher after every change made before it (one inotify
queue keeps the order), as git's fsmonitor daemon does; a hook script makes one before its
request, and a post-commit hook leaves a note there that records its commit without
starting Python."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from typing import TYPE_CHECKING

from proximity import layout
from proximity.protocol import HOOK
from proximity.service import fswatch
from proximity.service.state import Job, ServiceState
from proximity.snapshot import recorder

if TYPE_CHECKING:
    from proximity.protocol import HookRequest, PostNote

SYNC_TIMEOUT = 0.25  # seconds a hook waits for the watcher to catch up (service.sync)

EARLY_COOKIE = re.compile(r"sync-h[0-9]{1,10}")  # a hook script's cookie (proximity-hook)

EARLY_WAIT = 0.05  # for it to come back; then a cookie of the service's own

EARLY_KEEP = 10.0  # seconds a cookie back before its request is kept for it

POST_PREFIX = "post-commit-"  # a post-commit hook's note in the cookies directory


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
        for part in (layout.ECM, "cookies"):
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


def drop_old_notes(common: str) -> list[str]:
    """Hook scripts' sync cookies left for an earlier service (one that died before taking
    them) go; its post-commit notes stay, returned: commits still to record."""
    d = layout.cookies_dir(common)
    posts: list[str] = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(d)):
            if name.startswith(POST_PREFIX):
                posts.append(name)
            elif EARLY_COOKIE.fullmatch(name):
                _remove(common, name)
    return posts


class _Cue(threading.Event):
    """A cookie's event that also sets a shared one: one wait for whichever of two
    cookies comes back first, and afterwards which it was."""

    def __init__(self, either: threading.Event) -> None:
        super().__init__()
        self.either = either

    def set(self) -> None:
        super().set()
        self.either.set()


class Cookies(ServiceState):
    """Sync cookies and post-commit notes: files the watcher brings back in order."""

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
        if not name.startswith(POST_PREFIX) or not os.path.isdir(path) \
                or os.path.islink(path):
            return  # (its deletion once taken is reported too)
        if self.air is None:
            return  # (the worker takes the notes it finds when it is ready)
        self.last_request = time.monotonic()
        with self.pending_lock:  # the worker maps the git dir's name to its worktree
            self.posts.append(name)
        self.put(Job("posts"), 0)  # taken by then by any verdict that synced after it

    def _take_posts(self) -> None:
        """Worker thread: record the commits post-commit notes told of, in their order,
        before the request at hand (a push right after its commit finds it recorded)."""
        assert self.air is not None
        with self.pending_lock:
            posts, self.posts = self.posts, []
        for name in dict.fromkeys(posts):  # one commit, one record (a note is only a cue)
            admin, sha = recorder.post_note_parts(name)
            agent = self.air.agent_of_admin(admin)
            if agent is None:  # its worktree removed right after the commit
                try:
                    if sha is not None:
                        recorder.record_departed(self.air.ctx, recorder.note_agent(admin), sha)
                except Exception:
                    continue  # the note stays for the next taker
                _remove(self.common, name)
                continue
            wt = next((w for w in self.air._worktrees() if w.id == agent), None)
            try:
                if sha is not None and wt is not None and wt.head != sha:
                    # newer commits came before anyone took the note: its commit as
                    # history first, then the present below
                    recorder.record_superseded(self.air.ctx_for(agent), sha, wt)
            except Exception:
                continue  # the note stays for the next taker
            if self.air.commit_recorded(agent):
                _remove(self.common, name)
                continue
            msg: HookRequest = {"op": HOOK, "stage": "snapshot", "kind": "commit",
                                "agent": agent, "index": None, "later": True}
            try:
                answer = self.air.hook(msg, self._settled())
            except Exception:
                continue  # as a failed hook request: the note stays for the next taker
            if "fallback" not in answer:
                _remove(self.common, name)  # recorded: only now does the note go
                self.answered["hook"] += 1
                self.put(Job("rescan", {"agent": agent}), 1)

    def post_note(self, agent: str) -> PostNote | None:
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
        d = layout.cookies_dir(self.common)
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
        change before the hook is then reported, usually by the time it asks). Not back
        within EARLY_WAIT (it may never come: made where no watch was), a cookie of the
        service's own follows, and whichever comes back first answers: a watcher late
        under load brings the hook's cookie first, being first in its queue."""
        d = self._cookies()
        if d is None:
            return False
        either = threading.Event()
        hooks: _Cue | None = None
        if isinstance(early, str) and EARLY_COOKIE.fullmatch(early):
            hooks = _Cue(either)
            with self.pending_lock:
                got = self.early_seen.pop(early, None)
                # that very file (not an older one of the same name)
                seen = got is not None and got[1] == _ident(os.path.join(d, early))
                if not seen:
                    self.cookies[early] = hooks
            if seen or hooks.wait(EARLY_WAIT):
                self._forget(early)
                self.early_syncs += 1
                return True
        name = f"sync-{os.getpid()}-{next(self.seq)}"
        with self.pending_lock:
            self.cookies[name] = _Cue(either)
        try:
            fd = _cookies_fd(self.common)
            if fd is None:
                return False
            try:  # a new file, never through a link, never over anything, never blocking
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                 | os.O_NONBLOCK, 0o600, dir_fd=fd))
            finally:
                os.close(fd)
            back = either.wait(timeout)
            if hooks is not None and hooks.is_set():
                self.early_syncs += 1
            return back
        except OSError:
            return False
        finally:
            self._forget(name)
            if isinstance(early, str) and hooks is not None:
                self._forget(early)

    def _forget(self, name: str) -> None:
        """A cookie waited for no longer: unregistered, its file removed."""
        with self.pending_lock:
            self.cookies.pop(name, None)
        _remove(self.common, name)
