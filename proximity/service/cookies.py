"""Cookies: how the service knows its watcher has caught up. A file made in the cookies
directory comes back through the watcher after every change made before it (one inotify
queue keeps the order), as git's fsmonitor daemon does; a hook script makes one before its
request, and a post-commit hook leaves a note there that records its commit without
starting Python."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
import time
from typing import TYPE_CHECKING

from proximity import layout, owned
from proximity.service import fswatch

if TYPE_CHECKING:
    from proximity.protocol import PostNote
    from proximity.service.state import ServiceState

SYNC_TIMEOUT = 0.25  # seconds a hook waits for the watcher to catch up (service.sync)

# a hook script's cookie (proximity-hook): sync-h<pid>, then which gate it opens and the
# worktree's admin name (its git dir under worktrees/; none: the main checkout) when the
# script knows them: a hint to start the verdict while the hook's interpreter starts
EARLY_COOKIE = re.compile(r"sync-h[0-9]{1,10}(?:-([cp])(?:-([0-9A-Za-z_][0-9A-Za-z._-]{0,39}))?)?")

GATES = {"c": "pre-commit", "p": "pre-push"}  # a cookie's hint -> the hook it comes from

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


def remove(common: str, name: str) -> bool:
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
                remove(common, name)
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


def post_note_name(path: str) -> str | None:
    """The name of a post-commit hook's note (see Cookies.post_note) at ``path``, or None:
    not a note (its deletion once taken is reported too)."""
    name = os.path.basename(path)
    if not name.startswith(POST_PREFIX) or not os.path.isdir(path) or os.path.islink(path):
        return None
    return name


class Cookies:
    """Sync cookies and post-commit notes: files the watcher brings back in order. The
    cookies this service waits for and the hook scripts' cookies back before their
    request are kept under the state's lock, which the watcher thread holds as it hands
    them over."""

    def __init__(self, state: ServiceState, watcher: fswatch.Watcher) -> None:
        self.state, self.watcher = state, watcher
        self.waiting: dict[str, threading.Event] = {}  # name -> set when it comes back
        # hook scripts' cookies back before their request: name -> (when, file identity)
        self.early_seen: dict[str, tuple[float, tuple[int, int, int]]] = {}
        self.early_syncs = 0  # requests synced by their hook script's cookie
        self.names = itertools.count()
        common = state.common
        with contextlib.suppress(OSError):  # watched (inside the main checkout) from the start
            owned.private_dir(layout.ecm_dir(common))
            os.makedirs(layout.cookies_dir(common), exist_ok=True)

    def seen(self, name: str, path: str) -> tuple[str, str] | None:
        """Watcher thread, under the state's lock: a cookie came back (or went). A hook
        script's cookie that came back naming its gate: (the hook, the worktree's admin
        name or "" for the main checkout), so its verdict can start ahead."""
        ev = self.waiting.get(name)
        if ev is not None:
            ev.set()
            return None
        m = EARLY_COOKIE.fullmatch(name)
        if m is None or not self._early(name, path) or m.group(1) is None:
            return None
        return GATES[m.group(1)], m.group(2) or ""

    def _early(self, name: str, path: str) -> bool:
        """A hook script's cookie came back before its request (kept a while for it, by
        the file's identity; older ones are dropped with their files), or went
        (forgotten); whether it came back."""
        ident = _ident(path)
        if ident is None:
            self.early_seen.pop(name, None)
            return False
        self.early_seen[name] = (time.monotonic(), ident)
        self.prune_early()
        return True

    def prune_early(self) -> None:
        """Under the state's lock: hook scripts' cookies no request came for (a hook that
        judged in process, PROXIMITY_SERVICE=0) go after EARLY_KEEP, with their files."""
        now = time.monotonic()
        for old, (t, _i) in list(self.early_seen.items()):
            if now - t > EARLY_KEEP or len(self.early_seen) > 64:
                del self.early_seen[old]
                remove(self.state.common, old)

    def unreported(self) -> list[str]:
        """Watcher thread, new watches in place: what was made in the cookies directory
        while they were being replaced was reported by nobody. The post-commit notes
        there (paths: commits to record; one recorded already is found so); hook
        scripts' cookies no one saw are removed (what came before them is not known to
        be reported: their requests sync by a cookie of the service's own)."""
        d = layout.cookies_dir(self.state.common)
        try:
            names = sorted(os.listdir(d))
        except OSError:
            return []
        notes = []
        with self.state.lock:
            for name in names:
                if name.startswith(POST_PREFIX):
                    notes.append(os.path.join(d, name))
                elif (EARLY_COOKIE.fullmatch(name) and name not in self.early_seen
                      and name not in self.waiting):
                    remove(self.state.common, name)
        return notes

    def post_note(self, roots: dict[str, str], agent: str) -> PostNote | None:
        """What a pre-commit's thin client leaves for the post-commit hook that follows:
        this process's pid, so that hook records the commit by a file in the cookies
        directory without starting Python (hooks/proximity-hook); None when the watcher
        would not see that file (no watcher, a cookies directory that is a link or
        outside every watched worktree: ``roots``) or ``agent`` is no watched worktree."""
        if self.directory(roots) is None or agent not in roots:
            return None
        return {"pid": os.getpid()}

    def directory(self, roots: dict[str, str]) -> str | None:
        """The cookies directory when the watcher sees files made there (sync cookies,
        post-commit notes): watching, no error, a real directory (neither it nor ``ecm``
        a link) inside a watched worktree (``roots``: id -> directory); else None."""
        d = layout.cookies_dir(self.state.common)
        if (not self.watcher.watching.is_set() or self.watcher.error or not os.path.isdir(d)
                or os.path.islink(d) or os.path.islink(os.path.dirname(d))
                or fswatch.owner(os.path.realpath(d), roots) is None):
            return None
        return d

    def sync(self, roots: dict[str, str], timeout: float = SYNC_TIMEOUT,
             early: object = None) -> bool:
        """Whether the watcher has reported every file change made before now: a cookie
        file written where it watches comes back through it after them (one inotify
        queue keeps the order), as git's fsmonitor daemon does. False: not watching, or
        not in time (the caller then snapshots instead of trusting the warm state).
        ``roots``: the watched worktrees. ``early``: the name of a cookie the hook script
        made before its request (every change before the hook is then reported, usually
        by the time it asks). Not back within EARLY_WAIT (it may never come: made where
        no watch was), a cookie of the service's own follows, and whichever comes back
        first answers: a watcher late under load brings the hook's cookie first, being
        first in its queue."""
        d = self.directory(roots)
        if d is None:
            return False
        either = threading.Event()
        hooks: _Cue | None = None
        lock = self.state.lock
        if isinstance(early, str) and EARLY_COOKIE.fullmatch(early):
            hooks = _Cue(either)
            with lock:
                got = self.early_seen.pop(early, None)
                # that very file (not an older one of the same name)
                seen = got is not None and got[1] == _ident(os.path.join(d, early))
                if not seen:
                    self.waiting[early] = hooks
            if seen or hooks.wait(EARLY_WAIT):
                self.forget(early)
                self.early_syncs += 1
                return True
        name = f"sync-{os.getpid()}-{next(self.names)}"
        with lock:
            self.waiting[name] = _Cue(either)
        try:
            fd = _cookies_fd(self.state.common)
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
            self.forget(name)
            if isinstance(early, str) and hooks is not None:
                self.forget(early)

    def forget(self, name: str) -> None:
        """A cookie waited for no longer: unregistered, its file removed."""
        with self.state.lock:
            self.waiting.pop(name, None)
        remove(self.state.common, name)
