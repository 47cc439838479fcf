"""A place in line for the lines a worktree waits for: the waiter denied them longest ago
goes next once they are free, as a queue serves, not whoever asks first after their holder
lands (a person, who asks less often than agents, otherwise waited behind every agent that
wanted the same lines of a hot file). The waits are the ledger's (agents/cycles.py records
each deny that stands, with the lines it asked for); the decision's ``queued`` evidence
says who is ahead."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from proximity.errors import LedgerError
from proximity.ledger.traffic import Asked

if TYPE_CHECKING:
    from proximity.ledger import Ledger
    from proximity.model import Range

Lines = tuple[tuple[int, int], ...] | None  # lines of a file (None: the whole file)
NEAR = 3  # lines apart that still count as the same lines, besides a shift (decision.NEAR)
Line = Mapping[str, Mapping[str, tuple[float, Asked]]]  # waiter -> path -> since, asked


def standing(ledger: Ledger | None) -> dict[str, dict[str, tuple[float, Asked]]]:
    """The lines each worktree waits for (its waits that stand), by path."""
    if ledger is None:
        return {}
    try:
        return ledger.queued(time.time())
    except LedgerError:
        return {}


def ahead(line: Line, me: str, other: str, path: str, asked: tuple[Range, ...] | None,
          data: bytes | None) -> tuple[float, tuple[Range, ...] | None] | None:
    """``other``'s wait for lines of ``path`` that ``asked`` (this worktree's lines now, its
    file's content ``data``) touches, when it began before any wait of this worktree's
    there: (seconds waited, its lines); None: it is not ahead."""
    got = line.get(other, {}).get(path)
    if got is None:
        return None
    since, (theirs, their_size) = got
    mine = line.get(me, {}).get(path)
    if mine is not None and mine[0] <= since:
        return None  # (this worktree waited first)
    if not in_line(asked, lines_of(data), theirs, their_size):
        return None
    return time.time() - since, theirs


def lines_of(data: bytes | None) -> int:
    return data.count(b"\n") if data is not None else 0


def in_line(mine: Lines, size: int, theirs: Lines, their_size: int) -> bool:
    """Whether lines asked for now (``mine``, in a file of ``size`` lines) touch lines a
    waiter asked for (``theirs``, in its file of ``their_size`` lines then). The two files
    may differ (work landed between the asks): lines shift by at most the difference in
    length, which widens the margin."""
    if mine is None or theirs is None:
        return True
    margin = NEAR + abs(size - their_size)
    return any(lo - margin <= bhi and blo - margin <= hi
               for lo, hi in mine for blo, bhi in theirs)
