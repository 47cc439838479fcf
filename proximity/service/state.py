"""The resident service's shared state: what its socket, watcher and worker threads hand
each other (the job queue, pending file events, cookies waited for, counters)."""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proximity import layout, owned
from proximity.service import fswatch, stamp

if TYPE_CHECKING:
    from proximity.protocol import Answer, HookRequest, ScanRequest
    from proximity.service.warm import WarmAirspace


@dataclass
class Job:
    """A request for the worker (``request``: a hook's or a scan's, read from the wire), or
    the service's own work (``op``: files, rescan, ...; ``msg``: which worktree)."""
    op: str
    msg: dict[str, Any] = field(default_factory=dict)
    request: HookRequest | ScanRequest | None = None
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None
    abandoned: bool = False


class ServiceState:
    """What the service's threads share: the job queue, pending file events, cookies,
    counters."""

    watcher: fswatch.Watcher  # made by Service, whose methods it calls back

    def __init__(self, common: str, idle: float) -> None:
        self.common, self.idle = common, idle
        self.jobs: queue.PriorityQueue[tuple[int, int, Job]] = queue.PriorityQueue()
        self.seq = itertools.count()
        self.stop = threading.Event()
        self.last_active = time.monotonic()
        self.last_request = 0.0  # when the last hook or scan request came
        self.last_file_event = 0.0
        self.started = time.time()
        self.air: WarmAirspace | None = None
        self.error: str | None = None
        self.requests = 0
        self.answered = dict.fromkeys(("hook", "hook_fallback", "check", "check_fallback"), 0)
        # connections closed unserved: another uid at the other end, or every slot taken
        self.turned_away = {"other_user": 0, "too_many": 0}
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
            owned.private_dir(layout.ecm_dir(common))
            os.makedirs(layout.cookies_dir(common), exist_ok=True)
        self.code = stamp.code_stamp()  # the code this process runs (read at its start)
        self.rewatched = 0
        self.rewatch_seen = 1  # the first watch is the baseline's
        self.last_ms: dict[str, float] = {}  # the last request of each kind took (ms)

    # -- threads ------------------------------------------------------------------------
    def put(self, job: Job, priority: int) -> None:
        self.jobs.put((priority, next(self.seq), job))
        if priority == 0:
            self.request_ready.set()  # a worker waiting for a quiet moment takes it now
