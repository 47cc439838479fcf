"""Who waits on whom: the wait cycles the pre-edit check breaks.

Each deny records a wait (the asker waits on every worktree whose work denied it). Work
that already met in two live trees has no standing right-of-way until a commit's scan
decides one, and a worktree whose every next edit is denied never reaches that commit: a
chain of such waits that closes on itself (a waits on b, b on c, c on a) is a gridlock no
one leaves by waiting. The oldest wait in the cycle goes on -- its holder is treated as
yielding to it, so it is asked, never denied -- and every other member stays denied until
that work lands and they rebase onto it. Every member reads the same waits, so they agree
on who goes."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import pairwise

Waits = Mapping[tuple[str, str], float]  # (waiter, holder) -> since when it has waited


def cycle(waits: Waits, me: str, holder: str) -> list[tuple[str, str]] | None:
    """The shortest cycle of standing waits that ``me`` waiting on ``holder`` closes (its
    edges, that one first), or None when ``holder`` waits on nobody who leads back."""
    if (me, holder) not in waits:
        return None
    after: dict[str, list[str]] = {}
    for waiter, held in sorted(waits):
        after.setdefault(waiter, []).append(held)
    came: dict[str, str] = {holder: holder}
    todo = deque([holder])
    while todo:
        at = todo.popleft()
        for nxt in after.get(at, ()):
            if nxt in came:
                continue
            came[nxt] = at
            if nxt == me:
                path = [me]
                while path[-1] != holder:
                    path.append(came[path[-1]])
                path.reverse()  # holder ... me
                return [(me, holder), *pairwise(path)]
            todo.append(nxt)
    return None


def goes_first(waits: Waits, me: str, holder: str) -> bool:
    """Whether ``me``, waiting on ``holder``, is the one of its wait cycle that goes on:
    its wait is the cycle's oldest (ties by name, so every member agrees)."""
    edges = cycle(waits, me, holder)
    if edges is None:
        return False
    return min(edges, key=lambda e: (waits[e], e[0])) == (me, holder)
