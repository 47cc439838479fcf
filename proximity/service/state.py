"""The resident service's shared state: what its parts (cookies, scheduler, dispatch) all
read, count and lock, and the jobs the worker is handed."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proximity.service import stamp

if TYPE_CHECKING:
    from proximity.protocol import Answer, HookRequest, ScanRequest


@dataclass
class Job:
    """A request for the worker (``request``: a hook's or a scan's, read from the wire), or
    the service's own work (``op``: files, rescan, ...; ``agent``: which worktree)."""
    op: str
    agent: str = ""
    gate: str = ""  # (an ``ahead`` job: the hook whose verdict it starts)
    request: HookRequest | ScanRequest | None = None
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None
    abandoned: bool = False


class ServiceState:
    """What every part of the service reads or counts: the repository and its idle limit,
    the code this process runs, when it last did what, the counters its status reports,
    the stop signal, and the lock of what the watcher thread hands the worker (pending
    file events, cookies, post-commit notes)."""

    def __init__(self, common: str, idle: float) -> None:
        self.common, self.idle = common, idle
        self.stop = threading.Event()
        self.started = time.time()
        self.code = stamp.code_stamp()  # the code this process runs (read at its start)
        self.last_active = time.monotonic()
        self.last_request = 0.0  # when the last hook or scan request came
        self.last_file_event = 0.0
        self.error: str | None = None  # why the warm airspace could not start
        self.damaged: str | None = None  # a loose object it must not read (gitio/loose.py)
        self.requests = 0
        self.answered = dict.fromkeys(("hook", "hook_fallback", "check", "check_fallback"), 0)
        # connections closed unserved: another uid at the other end, or every slot taken
        self.turned_away = {"other_user": 0, "too_many": 0}
        self.file_events = 0
        self.last_ms: dict[str, float] = {}  # the last request of each kind took (ms)
        self.lock = threading.Lock()
