"""Requests on the service's socket: newline-delimited JSON, one answer each; quick ones
answered on the connection's thread, the rest handed to the worker."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from proximity import gitio, layout
from proximity.agents import output, theirs
from proximity.agents.answer import answer as answer_check
from proximity.ledger import inbox
from proximity.protocol import (
    CHECK,
    HOOK,
    MARSHAL,
    MAX_MESSAGE,
    PING,
    PROTOCOL,
    SHUTDOWN,
    STAGES,
    STATUS,
    TOUCHED,
    WORKER_OPS,
)
from proximity.service import client
from proximity.service.scheduler import BUSY
from proximity.service.state import Job

if TYPE_CHECKING:
    from proximity.protocol import (
        Answer,
        CheckAnswer,
        CheckRequest,
        HookAnswer,
        HookRequest,
        PingAnswer,
        ScanRequest,
        ServiceStatus,
        StatusAnswer,
    )
    from proximity.service import fswatch
    from proximity.service.cookies import Cookies
    from proximity.service.scheduler import Scheduler
    from proximity.service.state import ServiceState

READ_TIMEOUT = 5.0


def _read_request(conn: socket.socket) -> dict[str, object] | None:
    buf = bytearray()
    deadline = time.monotonic() + READ_TIMEOUT
    while b"\n" not in buf:
        if len(buf) > MAX_MESSAGE or time.monotonic() > deadline:
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


def _text(value: object) -> bool:
    return value is None or isinstance(value, str)


RID = re.compile(r"[0-9a-f]{24}")  # client.new_request_id: a file name under claims/
NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")  # a cookie's file name
OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # a commit's id (SHA-1 or SHA-256)
MAX_INDEX_BYTES = 1 << 30  # an index file past this is no index (git's own for 1M files:
# ~100 MB); read whole by git, so a request naming /dev/zero must not get that far
MAX_PATCH_BYTES = 256 << 20


def agent_name(value: object) -> TypeGuard[str]:
    """A worktree id as gitio.agent_id makes them: a name, never a path."""
    return (isinstance(value, str) and 0 < len(value) <= 255 and "/" not in value
            and "\0" not in value and value not in (".", ".."))


def regular_file(path: object, limit: int, inside: str | None = None) -> TypeGuard[str]:
    """Whether ``path`` names a regular file of this user's, at most ``limit`` bytes, and
    (``inside``) within that directory once links are resolved: what a request may name
    for the service to read (never a FIFO, a device, another user's file)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return False
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return False
    if inside is not None and os.path.commonpath([real, os.path.realpath(inside)]) != \
            os.path.realpath(inside):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_size <= limit


def hook_request(msg: Mapping[str, object], common: str) -> HookRequest | None:
    """A hook's request as its client sends it (thin.hook_request), read from the wire;
    None: malformed, or naming what a hook never names (an index outside the repository's
    git dir, a device, a path as its request id). (``later`` and ``synced`` are the
    service's own, never a client's.)"""
    stage, agent, kind, index = msg.get("stage"), msg.get("agent"), msg.get("kind"), \
        msg.get("index")
    if not isinstance(stage, str) or stage not in STAGES or not agent_name(agent) \
            or not isinstance(kind, str) or len(kind) > 32:
        return None
    if index is not None and not regular_file(index, MAX_INDEX_BYTES, common):
        return None
    rid, cookie, unstash = msg.get("rid"), msg.get("cookie"), msg.get("unstash")
    if (rid is not None and not (isinstance(rid, str) and RID.fullmatch(rid))) \
            or (cookie is not None and not (isinstance(cookie, str) and NAME.fullmatch(cookie))) \
            or (unstash is not None and not regular_file(unstash, MAX_PATCH_BYTES)):
        return None
    req: HookRequest = {"op": HOOK, "stage": stage, "agent": agent, "kind": kind,
                        "index": index, "allow": bool(msg.get("allow")),
                        "unstash": unstash}
    if isinstance(rid, str):
        req["rid"] = rid
    if isinstance(cookie, str):
        req["cookie"] = cookie
    remote = msg.get("remote")
    if isinstance(remote, str) and remote:
        req["remote"] = remote
    head = msg.get("head")
    if head is not None:
        if not (isinstance(head, str) and OBJECT_ID.fullmatch(head)):
            return None
        req["head"] = head
    pushed = msg.get("pushed")
    if pushed is not None:
        if not isinstance(pushed, list) or not all(
                isinstance(p, list) and len(p) in (2, 3, 4)
                and all(isinstance(x, str) for x in p) for p in pushed):
            return None
        # (a client of a version before names no remote commit, or no remote ref: not
        # known, as for a new ref)
        req["pushed"] = [(p[0], p[1], p[2] if len(p) > 2 else "", p[3] if len(p) > 3 else "")
                         for p in pushed]
    return req


def scan_request(msg: Mapping[str, object], common: str) -> ScanRequest | None:
    """A scan's request (client.scan) read from the wire; None: malformed."""
    agent, index = msg.get("agent"), msg.get("index")
    if (agent is not None and not agent_name(agent)) or (
            index is not None and not regular_file(index, MAX_INDEX_BYTES, common)):
        return None
    return {"op": "scan", "agent": agent, "index": index, "record": bool(msg.get("record"))}


def check_request(msg: dict[str, Any]) -> CheckRequest | None:
    """A check's request (thin.check) read from the wire; None: malformed."""
    cwd, deny_on, specs = msg.get("cwd"), msg.get("deny_on"), msg.get("specs")
    if not isinstance(cwd, str) or not _text(deny_on) or not _text(msg.get("harness")) \
            or not _text(msg.get("event_text")):
        return None
    req: CheckRequest = {"op": CHECK, "cwd": cwd, "deny_on": deny_on,
                         "json": bool(msg.get("json"))}
    if isinstance(specs, list) and all(isinstance(x, str) for x in specs):
        req["specs"] = specs
    elif specs is not None:
        return None
    merge = msg.get("merge")
    if isinstance(merge, str):
        req["merge"] = merge
    elif merge is not None:
        return None
    if msg.get("harness") is not None:
        req["harness"], req["event_text"] = msg["harness"], msg.get("event_text") or ""
    return req


class Dispatch:
    """One connection's requests, answered at once or handed to the worker."""

    def __init__(self, state: ServiceState, scheduler: Scheduler, watcher: fswatch.Watcher,
                 cookies: Cookies) -> None:
        self.state, self.scheduler, self.watcher, self.cookies = (state, scheduler, watcher,
                                                                  cookies)
        # the check answered here reads siblings' symbols from the states kept warm (an
        # edit nobody recorded yet, a person's save, is seen as the scan sees it)
        theirs.LIVE = self.kept_trees

    def kept_trees(self, common: str) -> dict[str, tuple[str | None, str]]:
        """The worktrees' kept states that are current (none the watcher marked changed
        since), for ``common``; nothing while the worker is between them."""
        air = self.scheduler.air
        if air is None or os.path.realpath(common) != os.path.realpath(self.state.common):
            return {}
        snaps = air.snapshots
        try:  # (the worker replaces these as it goes: read once, as they are)
            dirty = set(snaps.dirty)
            kept = list(snaps.agents.items())
        except RuntimeError:
            return {}
        return {wid: (a.head, a.tree) for wid, a in kept
                if wid not in dirty and a.tree and a.error is None and not a.remote}

    def serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                msg = _read_request(conn)
                bad: Answer = {"ok": False, "error": "bad request"}
                answer = self.answer(msg) if msg is not None else bad
                if answer is not None:
                    conn.settimeout(READ_TIMEOUT)
                    reply = {"v": PROTOCOL, "code": self.state.code, **answer}
                    conn.sendall(client.marshal_reply(reply) if msg and msg.get("reply") ==
                                 MARSHAL else json.dumps(reply).encode() + b"\n")
            except OSError:
                pass

    def answer(self, msg: dict[str, object]) -> Answer | None:
        st, work = self.state, self.scheduler
        st.requests += 1
        st.last_active = time.monotonic()
        op = msg.get("op")
        if msg.get("v") != PROTOCOL:
            return {"ok": False, "error": f"protocol {msg.get('v')!r} not spoken (want "
                    f"{PROTOCOL})"}
        if op == PING:
            ping: PingAnswer = {"ok": True, "pid": os.getpid(), "ready": work.air is not None}
            return ping
        if op == STATUS:
            status: StatusAnswer = {"ok": True, "status": self.status()}
            return status
        if op == SHUTDOWN:
            st.stop.set()
            return {"ok": True}
        if msg.get("code") is not None and msg.get("code") != st.code:
            # a client of other code (an upgrade since this process started): this one
            # goes, the client judges in process, and its next hook starts the new code
            st.stop.set()
            return {"ok": False, "refused": True, "error": f"this service runs {st.code}, "
                    f"the client {msg.get('code')}: exiting"}
        if op == TOUCHED:
            agent = msg.get("agent")
            if not agent_name(agent):
                return {"ok": False, "error": "malformed touched request"}
            work.put(Job(TOUCHED, agent), 1)
            return {"ok": True}
        if op == CHECK:
            check = check_request(msg)
            return self._check(check) if check is not None else {
                "ok": False, "error": "malformed check request"}
        if op not in WORKER_OPS:
            return {"ok": False, "error": f"unknown op {op!r}"}
        st.last_request = time.monotonic()
        req = hook_request(msg, st.common) if op == HOOK else scan_request(msg, st.common)
        if req is None:
            return {"ok": False, "error": f"malformed {op} request"}
        air = work.air
        if (req["op"] == HOOK and req["stage"] == "snapshot" and air is not None
                and not req.get("unstash") and req["agent"] in air.snapshots.paths
                and self._inbox_empty(req["agent"])):
            # a snapshot hook with nothing to print does not wait for its record: the
            # worker takes it in order, so the next verdict sees it. Not one whose host
            # holds unstaged edits out (``unstash``): once it returns the host writes them
            # back (`git apply` removes each file, then creates it), and a record read
            # then held a file deleted or half written
            later = req.copy()
            later["later"] = True
            work.put(Job(HOOK, request=later), 0)
            # (a config's warnings are said where it judges: a commit, a push)
            queued: HookAnswer = {"ok": True, "lines": [], "block": False, "queued": True}
            return queued
        since = work.background_since
        if req["op"] == HOOK and since is not None and st.last_request - since > BUSY:
            # a long rescan (a new import graph after main moved): no hook waits on it
            return {"ok": False, "refused": True, "error": "busy"}
        job = Job(req["op"], request=req)
        work.put(job, 0)
        budget = msg.get("budget")
        wait = float(budget) if isinstance(budget, (int, float)) else 30.0
        if not job.done.wait(max(0.0, min(wait, 600.0))):
            job.abandoned = True  # the client has gone to judge in process
            return None
        return job.answer

    def _inbox_empty(self, agent: str) -> bool:
        """Whether the worktree has no undelivered message (read-only, on this thread)."""
        return inbox.undelivered(layout.ecm_dir(self.state.common), agent) is False

    def _check(self, msg: CheckRequest) -> CheckAnswer:
        """`proximity check` (its CLI, a harness's pre-edit hook) on this connection's own
        thread: it reads only git's answers about the paths asked, never the worker's
        state, so it never waits behind a rescan. Anything odd: the client checks in
        process."""
        try:
            req, as_json = output.request_of(msg)
            answer = output.wire(answer_check(req), as_json)
        except Exception as e:  # the in-process check says the same error its own way
            answer = {"fallback": f"{type(e).__name__}: {e}"}
        self.state.answered["check" if "fallback" not in answer else "check_fallback"] += 1
        answer["ok"] = True
        return answer

    def status(self) -> ServiceStatus:
        st, air, watcher = self.state, self.scheduler.air, self.watcher
        return {"pid": os.getpid(), "common": st.common,
                "socket": layout.socket_path(st.common), "started": st.started,
                "uptime": round(time.time() - st.started, 3), "idle_timeout": st.idle,
                "ready": air is not None, "error": st.error or watcher.error or st.damaged,
                "worktrees": sorted(air.snapshots.paths) if air else [],
                "watching": list(watcher.roots), "requests": st.requests,
                "busy": self.scheduler.busy(),
                "file_events": st.file_events, "scans": air.scans if air else 0,
                "messages_sent": air.fired if air else 0,
                "last_scan_ms": round(air.last_scan_seconds * 1000, 1) if air else None,
                "rss_kb": _rss_kb(), "code": st.code, "answered": dict(st.answered),
                "git_calls": _git_calls(),
                "partial_snapshots": air.snapshots.partials if air else 0,
                "early_syncs": self.cookies.early_syncs,
                "read_ahead": self.scheduler.read_ahead,
                "turned_away": dict(st.turned_away), "last_ms": dict(st.last_ms)}


def _git_calls() -> dict[str, int]:
    """git subcommands this process ran, by name (what a verdict cost: tests read it)."""
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
