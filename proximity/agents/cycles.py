"""A deny in a wait cycle: who goes first, what the member it goes over is told, and the
wait each deny that stands records (the waits themselves, and who goes first in a cycle of
them, are agents/waits.py)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Collection, Mapping, Sequence

from proximity import gitio
from proximity.agents import decision, waits
from proximity.analysis import hunks
from proximity.errors import FatalError, LedgerError
from proximity.ledger import Ledger
from proximity.model import Range
from proximity.safetext import text
from proximity.views.messages import FIRST_WHY, SET_ASIDE, WHY_HELD


def wait_cycles(repo: gitio.Repo, me: str, sides: Sequence[decision.Side], policy: str,
                behind: set[str], ahead: Mapping[str, str], d: decision.Decision,
                head: str | None) -> decision.Decision:
    """A deny, given the waits: the holders whose wait cycle this worktree goes first in
    (agents/waits.py) yield to it, and the deny that stands is recorded as this worktree's
    wait on each holder still denying it. ``head``: this worktree's HEAD. One ledger open;
    a ledger that cannot be read or written leaves the waits as they are, never the
    answer."""
    denying = {c.agent for c in d.conflicts if c.level == decision.RA}
    theirs, mine = committed(repo, sides, d, head)
    try:
        ledger = Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return d
    now = time.time()
    try:
        # lines both sides changed already: not a wait to enter them but a collision
        # made, whose side the push guard's advisory would hold decides (its committed
        # lines there, then who reached the file first); the other's wait is never first
        # (else the side that edited over a deny, or without asking, went first by its
        # wait, and the worktree whose lines they were was told to set them aside)
        crossing = crossed(repo, ledger, me, sides, d, theirs, mine)
        with contextlib.suppress(LedgerError):
            ledger.mark_waits([(h, me) for h in crossing.get(False, ())], "crossed")
        standing, orders, since = read(ledger, now)
        # an order given stands: the member gone over waits for that work to land (it
        # stopped asking), so the first goes over its lines again, wherever they meet
        # next, and the two never trade places
        again = {h for h in denying if (h, me) in orders}
        first = again | {h for h in denying if (me, h) not in orders
                         and waits.goes_first(standing, me, h)}
        if first:
            d = decision.decide(sides, policy, behind, {
                **{h: f"you wait on '{text(h)}' in a cycle of waits that comes back to you, "
                   + ("and you waited longest" if waits.longest(since, standing, me, h) else
                      "and " + WHY_HELD.format(whose="yours"))
                   + ": you go first, they steer" for h in first - again},
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
            over = crossing.get(True, set())
            # where this worktree asks to enter a holder's lines (its change not there
            # yet): read back if its change meets theirs there later (crossed)
            entering = {h: {c.path for c in d.conflicts if c.agent == h
                            and c.level == decision.RA and c.evidence == "conflict"
                            and not any(s.agent == h and s.path == c.path
                                        and decision.held(s, c) for s in sides)}
                        for h in holders}
            with contextlib.suppress(LedgerError):
                for kind in ("", "late", "crossed"):
                    ledger.wait(me, {h for h in holders if kind == (
                        "crossed" if h in over else "late" if h in late else "")}, now,
                                kind=kind, entering=entering)
            # a member of a wait cycle this worktree stands in that goes first over its
            # lines (in a longer cycle, not the holder denying it here, or by an order that
            # stands): said in the deny, with the files where it goes over them
            ahead_of_me: dict[str, tuple[Sequence[str], str]] = {
                w: ((), "longest" if waits.longest(since, standing, w, me) else "held")
                for w, held in standing if held == me
                and (me, w) not in orders and waits.goes_first(standing, w, me)}
            ahead_of_me.update({f: (paths, "order") for (g, f), paths in orders.items()
                                if g == me})
            if ahead_of_me:
                d = d._replace(reason=d.reason + gone_over(dict(sorted(ahead_of_me.items()))))
        else:
            told_first(ledger, me, {h: "order" if h in again else "longest"
                                    if waits.longest(since, standing, me, h) else "held"
                                    for h in first}, d, now)
    finally:
        ledger.close()
    return d


def crossed(repo: gitio.Repo, ledger: Ledger, me: str, sides: Sequence[decision.Side],
            d: decision.Decision, theirs: Collection[str], mine: Collection[str]
            ) -> dict[bool, set[str]]:
    """Of the holders denying this edit where both sides changed the lines already (this
    worktree's change is in the collision), the side whose wait is never first, as the
    push guard's advisory would rank them: the side whose lines there are uncommitted
    where the other's are committed; else the one that reached the file later in the
    ledger's order. ``True``: the holders this worktree crossed; ``False``: those that
    crossed it (``theirs``/``mine``: committed(), the holders whose lines there are in
    their commits, and those meeting this worktree's committed lines)."""
    out: dict[bool, set[str]] = {True: set(), False: set()}
    try:
        # (a pair a wait cycle's order stands between met there by that order: the first
        # went over the other's lines as told, and crossed nothing)
        ordered = {x for pair in ledger.orders(time.time()) for x in pair if me in pair}
    except LedgerError:
        return out
    for c in d.conflicts:
        if c.agent in ordered:
            continue
        if c.level != decision.RA or c.evidence != "conflict" or not any(
                s.agent == c.agent and s.path == c.path and s.own is not None
                and s.own.changed and decision.held(s, c) for s in sides):
            continue
        h = c.agent
        if (h in theirs) != (h in mine):
            out[h in theirs].add(h)
            continue
        try:
            ours, other = (ledger.reached(w, {c.path}, repo.committed_path) for w in (me, h))
        except (LedgerError, FatalError):
            continue
        if ours is not None and other is not None and ours != other:
            out[ours > other].add(h)
            continue
        # nothing to rank them by (neither side's work there has an event: both made
        # with their hooks skipped): the side whose wait asked to enter the other's lines
        # in that file, before its change met them, crossed that deny
        waits_now = ledger.waits(time.time())
        entered = [c.path in waits_now[w].paths if w in waits_now else False
                   for w in ((me, h), (h, me))]
        if entered[0] != entered[1]:
            out[entered[0]].add(h)
    return out


# a kind's place in a cycle: every wait of a lower rank goes first before it, the oldest of
# one rank first (a time stands for rank * RANK_STEP + its own time, seconds since 1970)
RANK = {"": 0, "late": 1, "crossed": 2}
RANK_STEP = 1e12


COMMITTED: dict[tuple[str, str, str], hunks.FileDiff | None] = {}
COMMITTED_ENTRIES = 1024


def committed(repo: gitio.Repo, sides: Sequence[decision.Side], d: decision.Decision,
              head: str | None) -> tuple[set[str], set[str]]:
    """Of the holders whose lines deny this edit: those with their lines there in their
    commits, and those whose lines there meet this worktree's committed lines (the first
    thing the push guard's advisory ranks a collision by: crossed). Two commits' diff of
    one path never changes: kept. Git that fails: none known (the waits as they were)."""
    meets: list[tuple[str, bool, str, str, str, tuple[Range, ...] | None]] = []
    for c in d.conflicts:
        if c.level != decision.RA or c.evidence != "conflict":
            continue
        for s in sides:
            if s.agent != c.agent or s.path != c.path or s.base is None:
                continue
            for ours, tip in ((False, s.head), (True, head)):
                if tip and tip != s.base:
                    meets.append((c.agent, ours, s.base, tip, s.path, c.ranges or None))
    asked = sorted({m[2:5] for m in meets} - COMMITTED.keys())
    out = gitio.git_many([([*gitio.DIFF_ARGS, b, t, "--", p], repo.here) for b, t, p in asked])
    if len(COMMITTED) + len(asked) > COMMITTED_ENTRIES:
        COMMITTED.clear()
    for (b, t, p), raw in zip(asked, out, strict=True):
        if raw is not None:  # (no diff of the path: its lines are all uncommitted)
            COMMITTED[b, t, p] = hunks.parse(raw.decode("utf-8", "replace")).get(p)
    theirs: set[str] = set()
    mine: set[str] = set()
    for holder, ours, b, t, p, ranges in meets:
        diff = COMMITTED.get((b, t, p))
        if diff is not None and (diff.binary or hunks.contested(diff, ranges)):
            (mine if ours else theirs).add(holder)
    return theirs, mine




def read(ledger: Ledger, now: float) -> tuple[waits.Waits, dict[tuple[str, str],
                                                                tuple[str, ...]], waits.Waits]:
    """The waits that stand (each as its place in a cycle: its time, or its kind's RANK),
    the orders that do, and each wait's own time (an unreadable ledger: none). A member
    gone over by an order waits on the first while it stands, as a wait that is never the
    oldest: it stays in the cycles it closes, and never goes first by them. So does a wait
    on the side a standing Resolution Advisory gives right-of-way: however long the side
    told to yield has waited, a cycle its holder's next deny closes lets the holder go
    first, never the yielding side (else a worktree told to yield took right-of-way by
    waiting, then touching a line its holder asked for next)."""
    try:
        got = ledger.waits(now)
        orders = ledger.orders(now)
        told = {(y, h) for y, h, _ in ledger.standing_yields()} if got else set()
    except LedgerError:
        return {}, {}, {}
    standing = {e: RANK.get(w.kind, 0) * RANK_STEP + w.since for e, w in got.items()}
    for edge in told & standing.keys():
        standing[edge] = math.inf
    for edge in orders:
        standing[edge] = math.inf
    return standing, orders, {e: w.since for e, w in got.items()}


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
        standing, _, _ = read(ledger, time.time())
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


def gone_over(first: Mapping[str, tuple[Sequence[str], str]]) -> str:
    """The words a deny adds for the members that go first over this worktree's lines
    in a wait cycle (``first``: each, with the files where it does, as its order and its
    GOES FIRST message name them, and why: messages.FIRST_WHY's key), and what to do."""
    parts = []
    for h, (paths, why) in first.items():
        where = (f" over your live lines in {', '.join(text(p, 300) for p in paths[:8])}"
                 if paths else "")
        parts.append(f"'{text(h)}' goes first{where}: you and they wait on each other's work, "
                     f"and {FIRST_WHY[why]}")
    advice = SET_ASIDE[0].upper() + SET_ASIDE[1:]
    return ". " + "; ".join(parts) + f". {advice}; until then this stays denied"


def told_first(ledger: Ledger, me: str, first: Mapping[str, str], d: decision.Decision,
               now: float) -> None:
    """Each member of a wait cycle this worktree goes first in is given the order, with
    the files where it goes over their live lines, and told so: they steer (set an
    uncommitted change there aside and redo it once this work has landed), or resolve it
    when they rebase. A file not named before is told at once; the same files again, once
    in FIRST_COOLDOWN (``first``: each, with why, messages.FIRST_WHY's key). Advice, like
    every message: a ledger that cannot be written leaves the answer as it is."""
    for h in sorted(first):
        paths = sorted({c.path for c in d.conflicts if c.agent == h and c.right_of_way})
        if not paths:
            continue
        with contextlib.suppress(LedgerError):
            new = ledger.order(h, me, paths, now)
            ledger.post(h, me, "first", {"type": "first", "from": text(me), "to": text(h),
                                         "paths": [text(p, 300) for p in paths[:8]],
                                         "why": first[h]},
                        0.0, 0.0 if new else FIRST_COOLDOWN, 1.0)
