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
from collections.abc import Collection, Mapping
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


Orders = Collection[tuple[str, str]]  # (the member gone over, the one that went first)


def awaited(orders: Orders, me: str) -> set[str]:
    """Whose landing ``me`` waits for through the orders that stand: the members that went
    first over it, those that went first over them, and so on."""
    after: dict[str, set[str]] = {}
    for gone, first in orders:
        after.setdefault(gone, set()).add(first)
    seen: set[str] = set()
    todo = deque(after.get(me, ()))
    while todo:
        at = todo.popleft()
        if at not in seen:
            seen.add(at)
            todo.extend(after.get(at, ()))
    return seen - {me}


def first_over(waits: Waits, orders: Orders, me: str, holder: str) -> bool:
    """Whether ``me``, denied by ``holder``'s lines, goes on over them. The orders that
    stand decide first, as an order of landings: never when ``me`` already waits for
    ``holder`` to land, through them (the order it would give, ``holder`` waiting for
    ``me``, closes a ring of landings that none of its members can leave); always when
    ``holder`` waits for ``me`` (its lines wait for this work either way). Else the
    cycle's oldest wait goes first (goes_first)."""
    if holder in awaited(orders, me):
        return False
    if me in awaited(orders, holder):
        return True
    return goes_first(waits, me, holder)
