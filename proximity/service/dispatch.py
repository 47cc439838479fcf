"""Requests on the service's socket: newline-delimited JSON, one answer each; quick ones
answered on the connection's thread, the rest handed to the worker."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from proximity import gitio
from proximity.agents import checkops
from proximity.ledger import inbox
from proximity.service import client
from proximity.service.scheduler import BUSY, Scheduler
from proximity.service.state import Job

READ_TIMEOUT = 5.0


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


class Dispatch(Scheduler):
    """One connection's requests, answered at once or handed to the worker."""
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
        if op not in ("scan", "hook"):
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

        return inbox.undelivered(client.ecm_dir(self.common), agent) is False

    def _check(self, msg: dict[str, Any]) -> dict[str, Any]:
        """`proximity check` (its CLI, a harness's pre-edit hook) on this connection's own
        thread: it reads only git's answers about the paths asked, never the worker's
        state, so it never waits behind a rescan. Anything odd: the client checks in
        process."""

        try:
            answer = checkops.answer(msg)
        except Exception as e:  # the in-process check says the same error its own way
            answer = {"fallback": f"{type(e).__name__}: {e}"}
        self.answered["check" if "fallback" not in answer else "check_fallback"] += 1
        return {"ok": True, **answer}

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
