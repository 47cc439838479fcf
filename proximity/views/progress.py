"""Progress bars for long work (a first scan's parse of every file, sync, gc, the
benchmarks): a rich bar on standard error when it is a terminal, nothing otherwise (hooks,
pipes, CI logs, ``--json`` consumers see no bar)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO

Tick = Callable[[int], None]
MIN_TOTAL = 200  # steps below which the work is too short to show


def wanted(stream: IO[str] | None = None) -> bool:
    """Whether a bar may be drawn: a terminal, and not switched off."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("PROXIMITY_NO_PROGRESS") or os.environ.get("CI"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def bar(label: str, total: int, stream: IO[str] | None = None) -> Iterator[Tick]:
    """``with bar("parsing imports", n) as tick: ... tick(1)``: a bar that goes away when
    the work is done; a no-op where no bar is wanted or the work is short."""
    if total < MIN_TOTAL or not wanted(stream):
        yield lambda _n: None
        return
    from rich.console import Console  # lazy: only a terminal ever sees a bar
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    console = Console(file=stream if stream is not None else sys.stderr)
    with Progress(f"proximity: {label}", BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as prog:
        task = prog.add_task(label, total=total)
        yield lambda n: prog.advance(task, n)


Phase = Callable[[str], None]


@contextlib.contextmanager
def phases(label: str, stream: IO[str] | None = None) -> Iterator[Phase]:
    """``with phases("sync") as say: say("fetching")``: a spinner naming the step under
    way (network round trips, a ledger's compaction), on a terminal only."""
    if not wanted(stream):
        yield lambda _step: None
        return
    from rich.console import Console  # lazy: only a terminal ever sees it

    console = Console(file=stream if stream is not None else sys.stderr)
    with console.status(f"proximity {label}") as status:
        yield lambda step: status.update(f"proximity {label}: {step}")
