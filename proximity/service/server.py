"""The resident airspace service: one process per repository, for all its worktrees.

Started on demand (client.start) and detached; one instance per repository (an flock on
``<common>/ecm/service.lock``); it answers newline-delimited JSON on a Unix socket
(layout.socket_path, mode 0600) and exits after an idle period. It watches every
worktree's files, keeps each worktree's snapshot warm (re-snapshotting only the worktree
that changed), and rescans that worktree's pairs at once: when a pair's advisory rises
because of a saved file, the TCAS messages go out then, not at the next commit.

Requests (``{"v": 1, "op": ...}``): ``ping``, ``status``, ``shutdown``, ``touched`` (a hook
says a worktree changed), ``scan`` (the ``scan --json`` document), ``check`` (`proximity
check`) and ``hook`` (everything a hook does: record, judge by the very functions the
in-process hook uses, take the inbox, decide the block); their shapes are in protocol.py.
The warm state itself lives in warm.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from proximity import gitio, knobs, layout, owned
from proximity.protocol import TURNED_AWAY
from proximity.service import client, fswatch, stamp
from proximity.service.cookies import Cookies
from proximity.service.dispatch import READ_TIMEOUT, Dispatch
from proximity.service.scheduler import Scheduler
from proximity.service.state import Job, ServiceState
from proximity.snapshot import journal

if TYPE_CHECKING:
    from proximity.service.warm import WarmAirspace

IDLE_SECONDS = 900.0  # PROXIMITY_SERVICE_IDLE overrides
# connections served at once: each may hold a request of up to MAX_MESSAGE bytes for up
# to READ_TIMEOUT seconds, so this bounds the memory and threads clients can make it spend
MAX_CONNECTIONS = 16


def idle_seconds() -> float:
    return knobs.service_idle(IDLE_SECONDS)


def lock_path(common: str) -> str:
    return layout.service_lock(common)


def state_path(common: str) -> str:
    return layout.service_state(common)


def _bind(common: str, path: str) -> socket.socket:
    """Bind the socket, replacing a stale one (we hold the lock: nobody serves on it), in
    a directory of ours only (owned.private_dir refuses one another user made first)."""
    owned.private_dir(os.path.dirname(path))
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


def _node(path: str) -> tuple[int, int] | None:
    """A path's (device, inode), None when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _worktree_dirs(common: str) -> list[str]:
    try:
        return sorted(os.listdir(os.path.join(common, "worktrees")))
    except OSError:
        return []


def run(common: str, idle: float | None = None) -> int:
    """Serve this repository until idle, shut down, or killed; 0 also when another
    instance already serves it (the lock decides who does)."""
    import fcntl

    stamp.code_stamp()  # the code as it is now, before anything else is loaded
    os.umask(0o077)  # all it writes (its state, indexes, claims) is this user's only
    os.environ.pop("PROXIMITY_SKIP", None)  # a skipped command's child serves everyone
    common = os.path.realpath(common)
    try:
        owned.private_dir(layout.ecm_dir(common))
    except OSError as e:
        print(f"proximity service: refusing {layout.ecm_dir(common)}: {e}", file=sys.stderr)
        return 1
    lock = open(lock_path(common), "a+")  # noqa: SIM115 -- held for the process lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0
    # the sole service now: what a killed one (or a killed hook) left in its index
    # directory goes, its writer being gone
    gitio.sweep_scratch(layout.ecm_dir(common))
    path = layout.socket_path(common)
    try:
        srv = _bind(common, path)
    except OSError as e:
        print(f"proximity service: cannot listen on {path}: {e}", file=sys.stderr)
        lock.close()
        return 1
    ino = os.stat(path).st_ino
    svc = Service(common, idle if idle is not None else idle_seconds())
    with contextlib.suppress(OSError), open(state_path(common), "w") as fh:
        json.dump({"pid": os.getpid(), "socket": path, "started": svc.state.started,
                   "common": common}, fh)
    signal.signal(signal.SIGTERM, lambda *_: svc.state.stop.set())
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


class Service:
    """Socket, watcher and one worker thread, composed of parts that each own their own
    attributes: the shared ``state``, the ``watcher``, the ``cookies`` it brings back, the
    ``scheduler`` (the worker, which owns the warm airspace) and the ``dispatch`` of each
    connection's requests."""

    def __init__(self, common: str, idle: float) -> None:
        self.state = ServiceState(common, idle)
        self.watcher = fswatch.Watcher(self._on_files, self._on_watching)
        self.cookies = Cookies(self.state, self.watcher)
        self.scheduler = Scheduler(self.state, self.watcher, self.cookies)
        self.dispatch = Dispatch(self.state, self.scheduler, self.watcher, self.cookies)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    @property
    def air(self) -> WarmAirspace | None:
        """The warm airspace, once the worker has made it."""
        return self.scheduler.air

    # (the watcher is made before the worker it reports to: it calls back through these)
    def _on_files(self, paths: set[str]) -> None:
        self.scheduler.on_files(paths)

    def _on_watching(self) -> None:
        self.scheduler.on_watching()

    def _take(self, conn: socket.socket) -> None:
        """A new connection: served on its own thread when it is this user's and a slot is
        free; else closed at once (the client then judges in process)."""
        turned_away = self.state.turned_away
        if client.peer_uid(conn) != os.getuid():
            turned_away["other_user"] += 1
            conn.close()
            return
        if not self.slots.acquire(blocking=False):
            turned_away["too_many"] += 1
            with contextlib.suppress(OSError):
                conn.setblocking(False)  # (a fresh socket's buffer takes a line: never waits)
                conn.send(TURNED_AWAY)
            conn.close()
            return
        conn.settimeout(READ_TIMEOUT)

        def serve() -> None:
            try:
                self.dispatch.serve(conn)
            finally:
                self.slots.release()

        try:
            threading.Thread(target=serve, daemon=True).start()
        except RuntimeError:  # no thread to be had
            self.slots.release()
            conn.close()

    # -- the socket ---------------------------------------------------------------------
    def serve(self, srv: socket.socket, sock: str | None = None) -> None:
        """Answer requests until idle, stopped, or no longer this repository's service:
        its common dir gone or replaced (deleted and made again at the same path), or its
        socket file gone or another's (nobody can reach it then)."""
        st = self.state
        worker = threading.Thread(target=self.scheduler.work, name="airspace", daemon=True)
        worker.start()
        srv.settimeout(0.5)
        mine = _node(st.common), _node(sock) if sock else None
        listing = _worktree_dirs(st.common)
        swept = time.monotonic()
        while not st.stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                conn = None
            except OSError:
                break
            if conn is not None:
                self._take(conn)
                continue
            if time.monotonic() - st.last_active > st.idle:
                break
            if _node(st.common) != mine[0] or (sock and _node(sock) != mine[1]):
                break  # (a repository made again at the same path is another one)
            if time.monotonic() - swept > 60.0:
                swept = time.monotonic()
                journal.forget_claims(st.common)
            now = _worktree_dirs(st.common)
            if now != listing:  # a worktree was added or removed
                listing = now
                self.scheduler.put(Job("worktrees"), 1)
        st.stop.set()
        srv.close()  # new clients are refused at once and judge in process
        self.scheduler.put(Job("quit"), -1)
        self.watcher.stop()
        worker.join(timeout=5.0)
