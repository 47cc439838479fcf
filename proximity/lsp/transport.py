"""The server's two pipes, bounded: an editor that sends a huge message, or never reads
what the server writes, costs the server bounded memory and never blocks its work.

Out: a writer thread takes queued messages to stdout; past ``OUT_LIMIT`` queued bytes new
messages are dropped (every one the server sends again later describes the whole state:
diagnostics are republished when the queue drains). In: a message longer than
``IN_LIMIT`` is skipped unread and replaced by a harmless notification."""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from typing import BinaryIO

OUT_LIMIT = 8 << 20  # bytes queued for a client that does not read
IN_LIMIT = 64 << 20  # bytes of one message from the client
SKIPPED = b'{"jsonrpc": "2.0", "method": "$/proximity/skipped"}'


class Output:
    """stdout through a bounded queue and a writer thread (``write`` never blocks)."""

    def __init__(self, out: BinaryIO, on_drained: Callable[[], None] | None = None,
                 limit: int = OUT_LIMIT) -> None:
        self._out, self._limit, self._on_drained = out, limit, on_drained
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self.dropped = 0
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="lsp-out", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        with self._cond:
            if self._closed:
                return
            if self._queued + len(data) > self._limit:
                self.dropped += 1
                return
            self._queue.append(data)
            self._queued += len(data)
            self._cond.notify()

    def flush(self) -> None:
        pass  # (the writer thread flushes each message)

    def backlog(self) -> int:
        with self._cond:
            return self._queued

    def close(self, wait: float = 1.0) -> None:
        """Let queued messages go for up to ``wait`` seconds, then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(wait)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                data = self._queue.popleft()
            try:
                self._out.write(data)
                self._out.flush()
            except (OSError, ValueError):
                with self._cond:  # the client is gone: nothing more can be sent
                    self._closed = True
                    self._queue.clear()
                    self._queued = 0
                return
            with self._cond:
                self._queued -= len(data)
                drained = not self._queue and self.dropped
                if drained:
                    self.dropped = 0
            if drained and self._on_drained is not None:
                with contextlib.suppress(Exception):
                    self._on_drained()


class Input:
    """stdin as pygls reads it (``readline``, ``read``), with one message's size bounded."""

    def __init__(self, stream: BinaryIO, on_skip: Callable[[int], None] | None = None,
                 limit: int = IN_LIMIT) -> None:
        self._in, self._limit, self._on_skip = stream, limit, on_skip

    def readline(self) -> bytes:
        return self._in.readline(64 * 1024)

    def read(self, n: int) -> bytes:
        if n <= self._limit:
            return self._in.read(n)
        left = n
        while left > 0:  # skipped unread, in bounded pieces
            got = self._in.read(min(left, 1 << 20))
            if not got:
                return b""
            left -= len(got)
        if self._on_skip is not None:
            self._on_skip(n)
        return SKIPPED
