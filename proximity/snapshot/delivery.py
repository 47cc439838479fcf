"""What a worktree's inbox delivers now: every message, except news that has not happened.

A LANDING is posted by the push guard, which judges before the remote answers: the push
may still be refused (a non-fast-forward, the remote's own hook), or be a dry run. It is
delivered once this clone's remote-tracking ref for the pushed ref shows the pushed commit
(a push that went through moves it), held until then, and dropped unseen when nothing
confirms it within HOLD_MAX. A push by URL (even a configured remote's), or to a remote
whose fetch refspec maps into local branches, moves no remote-tracking ref: its LANDING is
delivered as it comes. The same landing told twice (a refused push, then its retry: both
confirmed by the retry) is delivered once. WAITED ON news is dropped once that wait no
longer stands.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from proximity.snapshot.workspace import Context

HOLD_MAX = 600.0  # seconds a LANDING waits for its push to show before it is dropped


def take(ctx: Context) -> list[dict[str, Any]]:
    """This worktree's undelivered messages that may be delivered now, marked delivered
    (see the module's docstring); a LANDING the remote-tracking ref confirmed says so
    (``landed``). [] without a ledger. LedgerError: busy or read-only."""
    if ctx.ledger is None:
        return []

    told: set[tuple[object, ...]] = set()  # landings delivered by this take (in id order)
    standing: list[set[str]] = []  # who waits on this worktree now (read once, if asked)
    ledger = ctx.ledger

    def waiting(sender: object) -> bool:
        if not standing:
            standing.append({w for w, h in ledger.waits(time.time()) if h == ctx.here})
        return sender in standing[0]

    def hold(msg: dict[str, Any]) -> Literal["take", "hold", "drop"]:
        body = msg.get("body")
        if msg.get("type") == "waited":
            # news of a wait that has ended (the waiter went on, or stopped asking) is
            # no longer anything to act on
            return "take" if waiting(msg.get("from")) else "drop"
        if msg.get("type") != "landed" or not isinstance(body, dict):
            return "take"
        sha, dest, remote = body.get("sha"), body.get("dest"), body.get("remote")
        if not (isinstance(sha, str) and isinstance(dest, str) and isinstance(remote, str)):
            return "take"  # (posted by an earlier version: as it always was)
        try:
            arrived = ctx.repo.push_arrived(remote, dest, sha)
        except Exception:  # an unreadable ref: deliver, as before the guard held any
            arrived = None
        if arrived is False:
            late = time.time() - float(msg.get("created") or 0) > HOLD_MAX
            return "drop" if late else "hold"
        key = (msg.get("from"), remote, dest, sha)
        if key in told:
            return "drop"
        told.add(key)
        if arrived is True:
            msg["landed"] = True  # (views.messages: it has landed, not "being pushed")
        return "take"

    return ctx.ledger.take(ctx.here, hold)
