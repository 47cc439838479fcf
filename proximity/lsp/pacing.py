"""When an open document is judged again: at once for the first keystroke after a quiet
spell and ``DEBOUNCE`` seconds after the last while typing goes on; for a sibling's move,
at a pace bounded by the document's last judgement (``paced``); and after ``reask()`` while
a deny stands. Everything here runs on the server's event loop, but ``took``, which the
judging thread calls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from proximity import knobs
from proximity.ledger.traffic import WAIT_FRESH

DEBOUNCE = 0.15  # seconds of quiet typing before the buffer is judged again
# a document judged again for a sibling's move waits this many times its last judgement's
# length after it: however fast siblings move (a swarm of agents writes the ledger many
# times a second), judging them takes at most a fifth of the judging thread; a keystroke
# is judged at once as ever
PACE = 4.0


def paced(last: tuple[float, float] | None, now: float, pace: float = PACE) -> float:
    """Seconds until a document may be judged again for a sibling's move: ``last`` is
    when its last judgement ended and how long it took (None: never judged)."""
    if last is None:
        return 0.0
    ended, took = last
    return max(0.0, ended + pace * took - now)


def reask() -> float:
    """Seconds after which a document showing a deny is judged again with nothing moved:
    the person's wait on the sibling stays standing (a wait not asked again lapses after
    WAIT_FRESH, and a wait cycle through them could no longer be seen and broken), and a
    deny that no longer holds goes without a keystroke. PROXIMITY_LSP_REASK overrides."""
    got = knobs.seconds("PROXIMITY_LSP_REASK", 1.0, WAIT_FRESH / 2)
    return WAIT_FRESH / 2 if got is None else got


class Pacing:
    """One timer per document: when it fires, ``submit(uri)`` judges it."""

    def __init__(self, submit: Callable[[str], None],
                 loop: Callable[[], asyncio.AbstractEventLoop | None]) -> None:
        self.submit, self.loop = submit, loop  # (loop: the server's, once it has one)
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.judged: dict[str, tuple[float, float]] = {}  # uri -> (ended, took)
        self.typed: dict[str, float] = {}  # uri -> when its last change came
        self.reask = reask()

    def pending(self, uri: str) -> bool:
        return uri in self.timers

    def due(self, uri: str) -> float | None:
        """When ``uri``'s judgement is due (the loop's clock: monotonic), None: not asked."""
        timer = self.timers.get(uri)
        return None if timer is None else timer.when()

    def schedule(self, uri: str, delay: float) -> None:
        """Judge ``uri`` after ``delay`` seconds (a later call restarts the wait)."""
        loop = self.loop()
        if loop is None:
            return
        old = self.timers.pop(uri, None)
        if old is not None:
            old.cancel()
        self.timers[uri] = loop.call_later(delay, self._fire, uri)

    def _fire(self, uri: str) -> None:
        self.timers.pop(uri, None)
        self.submit(uri)

    def moved(self, uri: str) -> None:
        """A sibling's move: judge ``uri`` again once its pace allows (``paced``), unless
        a judgement is due sooner already (a keystroke's)."""
        delay = paced(self.judged.get(uri), time.monotonic())
        due = self.due(uri)
        if due is not None and due <= time.monotonic() + delay:
            return
        self.schedule(uri, delay)

    def keystroke(self, uri: str) -> None:
        """The first after a quiet spell is judged at once (the answer comes in the time
        of one check); while the person keeps typing, judging waits for ``DEBOUNCE``
        seconds of quiet (the answers for text already gone are not worth their cost)."""
        now = time.monotonic()
        last = self.typed.get(uri)
        self.typed[uri] = now
        quiet = last is None or now - last > DEBOUNCE
        self.schedule(uri, 0.0 if quiet and uri not in self.timers else DEBOUNCE)

    def took(self, uri: str, start: float) -> None:
        """The judging thread: a judgement of ``uri`` begun at ``start`` has ended."""
        now = time.monotonic()
        self.judged[uri] = (now, now - start)

    def forget(self, uri: str) -> None:
        """The document is closed."""
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self.judged.pop(uri, None)
        self.typed.pop(uri, None)
