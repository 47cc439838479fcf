"""A deny in a wait cycle: who goes first, what the member it goes over is told, and the
wait each deny that stands records (the waits themselves, and who goes first in a cycle of
them, are agents/waits.py)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from proximity.agents import decision, waits
from proximity.errors import LedgerError
from proximity.ledger import Ledger
from proximity.ledger.traffic import LATE
from proximity.safetext import text
from proximity.views.messages import SET_ASIDE

if TYPE_CHECKING:
    from proximity import gitio


def wait_cycles(repo: gitio.Repo, me: str, sides: Sequence[decision.Side], policy: str,
                behind: set[str], ahead: Mapping[str, str], d: decision.Decision
                ) -> decision.Decision:
    """A deny, given the waits: the holders whose wait cycle this worktree goes first in
    (agents/waits.py) yield to it, and the deny that stands is recorded as this worktree's
    wait on each holder still denying it. One ledger open; a ledger that cannot be read or
    written leaves the waits as they are, never the answer."""
    denying = {c.agent for c in d.conflicts if c.level == decision.RA}
    try:
        ledger = Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return d
    now = time.time()
    try:
        standing, orders = read(ledger, now)
        # an order given stands: the member gone over waits for that work to land (it
        # stopped asking), so the first goes over its lines again, wherever they meet
        # next, and the two never trade places; the orders are an order of landings, and
        # one that would close a ring of them is never given (waits.first_over)
        first = {h for h in denying if waits.first_over(standing, orders, me, h)}
        again = {h for h in first if (h, me) in orders}
        after = {h for h in first - again if me in waits.awaited(orders, h)}
        if first:
            d = decision.decide(sides, policy, behind, {
                **{h: f"you wait on '{text(h)}' in a cycle of waits that comes back to you, "
                   "and you waited longest: you go first, they steer"
                   for h in first - again - after},
                **{h: f"'{text(h)}' waits for work that waits for yours to land (a cycle "
                   "of waits broken before): you go first, they steer" for h in after},
                **{h: f"'{text(h)}' was told that you go first (a cycle of waits broken "
                   "before): you go first, they steer" for h in again}, **ahead})
        if d.decision == decision.DENY:
            holders = {c.agent for c in d.conflicts if c.level == decision.RA}
            # a person shown the deny on lines they had typed already, where only the
            # other side had changed them: told after the edit, not before it, so that
            # wait is never a cycle's oldest (else typing over an agent's lines, then
            # being shown the error, took them over once the agent asked about its own)
            late = {c.agent for c in d.conflicts if c.level == decision.RA and any(
                s.typed and s.agent == c.agent and s.path == c.path
                and not decision.held(s, c) for s in sides)}
            where = {h: {c.path for c in d.conflicts if c.agent == h
                         and c.level == decision.RA} for h in holders}
            with contextlib.suppress(LedgerError):
                known = ledger.waits_of(me, now)
                ledger.wait(me, holders - late, now, paths=where)
                ledger.wait(me, late, now, since=LATE, paths=where)
                told_waiting(ledger, me, where, known, ledger.waits_of(me, now))
            # a member of a wait cycle this worktree stands in that goes first over its
            # lines (in a longer cycle, not the holder denying it here, or by an order that
            # stands): said in the deny, with the files where it goes over them
            ahead_of_me = {w for w, held in standing if held == me
                           and waits.first_over(standing, orders, w, me)}
            ahead_of_me |= {f for g, f in orders if g == me}
            if ahead_of_me:
                d = d._replace(reason=d.reason + gone_over(
                    {f: orders.get((me, f), ()) for f in sorted(ahead_of_me)}))
        else:
            told_first(ledger, me, first, d, now)
    finally:
        ledger.close()
    return d


def read(ledger: Ledger, now: float) -> tuple[waits.Waits, dict[tuple[str, str],
                                                                tuple[str, ...]]]:
    """The waits that stand and the orders that do (an unreadable ledger: none). A
    member gone over by an order waits on the first while it stands, as a wait that is
    never the oldest: it stays in the cycles it closes, and never goes first by them. So
    does a wait on the side a standing Resolution Advisory gives right-of-way: however
    long the side told to yield has waited, a cycle its holder's next deny closes lets the
    holder go first, never the yielding side (else a worktree told to yield took
    right-of-way by waiting, then touching a line its holder asked for next)."""
    try:
        standing = dict(ledger.waits(now))
        orders = ledger.orders(now)
        told = {(y, h) for y, h, _ in ledger.standing_yields()} if standing else set()
    except LedgerError:
        return {}, {}
    for edge in told & standing.keys():
        standing[edge] = math.inf
    for edge in orders:
        standing[edge] = math.inf
    return standing, orders


def own_waits(ledger: Ledger | None, me: str) -> dict[str, tuple[str, ...]]:
    """This worktree's waits that stand: holder -> the paths where it was denied (an
    unreadable ledger: none)."""
    if ledger is None:
        return {}
    try:
        return ledger.waits_of(me, time.time())
    except LedgerError:
        return {}


def ended_waits(repo: gitio.Repo, me: str, asked: Collection[str],
                own: Mapping[str, Sequence[str]], d: decision.Decision) -> None:
    """A wait ends where it was answered: each path asked that this worktree waited on a
    holder for, where that holder no longer denies it (nor is gone over there in a wait
    cycle), leaves that wait, and the wait goes with its last path. Else a wait kept
    until it lapsed stood in cycles it was no longer part of: a person allowed at last to
    save over an agent's old lines kept the wait the deny before had recorded, and the
    agent that then asked about those lines went first over them."""
    still = {(c.agent, c.path) for c in d.conflicts
             if c.level == decision.RA or c.right_of_way}
    cleared = {h: done for h, paths in own.items()
               if (done := {p for p in paths if p in asked and (h, p) not in still})}
    if not cleared:
        return
    try:
        ledger = Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return
    try:
        with contextlib.suppress(LedgerError):
            ledger.end_waits(me, cleared)
    finally:
        ledger.close()


def waited_on(repo: gitio.Repo, me: str, d: decision.Decision) -> decision.Decision:
    """An ask (lines near a sibling's, which git merges cleanly) next to a sibling that is
    waiting on this worktree's work: this side's to go on with, as in a wait cycle. A
    person shown it as traffic stops (an editor's warning), and nobody records an ask as a
    wait: the two would wait on each other unseen. Marked right-of-way, it is information
    in the editor; an agent goes on at an ask either way."""
    near = {c.agent for c in d.conflicts if c.level == decision.TA and not c.right_of_way}
    if d.decision != decision.ASK or not near:
        return d
    try:
        ledger = Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return d
    try:
        standing, _ = read(ledger, time.time())
    finally:
        ledger.close()
    waiting = {w for w, held in standing if held == me and w in near}
    if not waiting:
        return d
    why = {w: f" ('{text(w)}' waits on your work: you go on, they steer)" for w in waiting}
    top = d.conflicts[0].agent  # (the reason is its words: an agent reads them there)
    return d._replace(reason=d.reason + why.get(top, ""), conflicts=tuple(
        c._replace(right_of_way=True, detail=c.detail + why[c.agent])
        if c.agent in waiting and c.level == decision.TA and not c.right_of_way else c
        for c in d.conflicts))


FIRST_COOLDOWN = 300.0  # seconds between two "goes first" messages of one pair
# seconds between two "waits on you" messages of one pair about the same files: the waiter
# asks again every few seconds while it waits, and the holder needs telling once
WAITED_COOLDOWN = 300.0


def told_waiting(ledger: Ledger, me: str, where: Mapping[str, Collection[str]],
                 known: Mapping[str, Collection[str]],
                 held: Mapping[str, Collection[str]]) -> None:
    """Each holder this deny stands on (``where``) is told that this worktree waits for
    its lines, in every file where it does, and whether it is all this worktree waits for
    (``held``: every wait of this worktree now; ``known``: before this deny). A holder
    that cannot land soon can set those lines aside and redo them last: when it is all
    the waiter waits for, the waiter then goes on to its landing. A file newly waited on,
    or a waiter left waiting on this holder alone, is told at once; the same again once in
    WAITED_COOLDOWN. Advice: a ledger that cannot be written leaves the answer as it is."""
    for h in sorted(where):
        paths = sorted(held.get(h, where[h]))
        if not paths or h == me:
            continue
        alone = set(held) == {h}
        news = bool(set(paths) - set(known.get(h, ()))) or (alone and set(known) != {h})
        with contextlib.suppress(LedgerError):
            ledger.post(h, me, "waited", {"type": "waited", "from": text(me), "to": text(h),
                                          "paths": [text(p, 300) for p in paths[:8]],
                                          "alone": alone},
                        0.0, 0.0 if news else WAITED_COOLDOWN, 1.0)


def gone_over(first: Mapping[str, Sequence[str]]) -> str:
    """The words a deny adds for the members that go first over this worktree's lines
    in a wait cycle (``first``: each, with the files where it does, as its order and its
    GOES FIRST message name them), and what to do."""
    parts = []
    for h, paths in first.items():
        where = (f" over your live lines in {', '.join(text(p, 300) for p in paths[:8])}"
                 if paths else "")
        parts.append(f"'{text(h)}' goes first{where}: you and they wait on each other's work, "
                     "and they waited longest")
    advice = SET_ASIDE[0].upper() + SET_ASIDE[1:]
    return ". " + "; ".join(parts) + f". {advice}. Until their work lands, this stays denied"


def told_first(ledger: Ledger, me: str, first: Collection[str], d: decision.Decision,
               now: float) -> None:
    """Each member of a wait cycle this worktree goes first in is given the order, with
    the files where it goes over their live lines, and told so: they steer (set an
    uncommitted change there aside and redo it once this work has landed), or resolve it
    when they rebase. A file not named before is told at once; the same files again, once
    in FIRST_COOLDOWN. Advice, like every message: a ledger that cannot be written leaves
    the answer as it is."""
    for h in sorted(first):
        paths = sorted({c.path for c in d.conflicts if c.agent == h and c.right_of_way})
        if not paths:
            continue
        with contextlib.suppress(LedgerError):
            new = ledger.order(h, me, paths, now)
            ledger.post(h, me, "first", {"type": "first", "from": text(me), "to": text(h),
                                         "paths": [text(p, 300) for p in paths[:8]]},
                        0.0, 0.0 if new else FIRST_COOLDOWN, 1.0)
