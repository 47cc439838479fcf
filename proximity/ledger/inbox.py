"""The inbox: transmit, steer and hold messages between worktrees, with cooldowns per pair
and type, each taken (delivered) once."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal

from proximity.errors import LedgerBusy
from proximity.ledger.db import FILENAME, LedgerCore


def _cooling(db: sqlite3.Connection, recipient: str, sender: str, kind: str, now: float,
             hops: float, cooldown_s: float, cooldown_hops: float) -> bool:
    """Whether the last message of this recipient, sender and type is within both
    cooldowns (then a new one is dropped)."""
    last = db.execute(
        "SELECT created, hops FROM inbox WHERE recipient=? AND sender=? AND type=? "
        "ORDER BY id DESC LIMIT 1", (recipient, sender, kind)).fetchone()
    return bool(last and now - last[0] < cooldown_s and hops - last[1] < cooldown_hops)


ADVICE = ("transmit", "steer", "hold")  # about a collision; a landing or an order is not

# what a taker does with one undelivered message: deliver it, keep it for a later take
# (what it reports has not happened yet), or drop it (it never will: marked delivered,
# never shown)
Hold = Callable[[dict[str, Any]], Literal["take", "hold", "drop"]]


class Inbox(LedgerCore):
    """Messages between worktrees, with cooldowns, each delivered once."""

    # -- inbox --------------------------------------------------------------------------
    def post(self, recipient: str, sender: str, kind: str, body: Mapping[str, Any],
             hops: float, cooldown_s: float, cooldown_hops: float) -> int | None:
        """Queue a message unless the same pair/type was posted within the cooldown.

        None also when the ledger stays busy past the wait budget: a message is advice (the
        hook prints the advisory itself), and a lock held by someone else must never turn a
        guard's decision into an error."""
        try:
            return self._post(recipient, sender, kind, body, hops, cooldown_s, cooldown_hops)
        except LedgerBusy:
            return None

    def cooling(self, recipient: str, sender: str, kind: str, hops: float, cooldown_s: float,
                cooldown_hops: float) -> bool:
        """Whether a message like this was posted within the cooldown (post would drop it):
        read without the write lock, so a message's body is built only when it may go."""
        try:
            return _cooling(self.db, recipient, sender, kind, time.time(), hops, cooldown_s,
                            cooldown_hops)
        except sqlite3.Error:
            return False

    def _post(self, recipient: str, sender: str, kind: str, body: Mapping[str, Any],
              hops: float, cooldown_s: float, cooldown_hops: float) -> int | None:
        now = time.time()
        with self.tx() as db:
            if _cooling(db, recipient, sender, kind, now, hops, cooldown_s, cooldown_hops):
                return None
            cur = db.execute(
                "INSERT INTO inbox(recipient, sender, type, body, created, hops) "
                "VALUES (?,?,?,?,?,?)", (recipient, sender, kind, json.dumps(dict(body)), now,
                                         hops))
            return int(cur.lastrowid or 0)

    def withdraw(self, pairs: Collection[tuple[str, str]],
                 yields: Collection[tuple[str, str]] = ()) -> int:
        """Advice not yet delivered that no longer holds, never delivered; marked
        delivered, so the history keeps it. ``pairs``: judged clear with both sides read
        (the collision it was about is over: a STEER AWAY read after the other side had
        switched away, or after one's own work had landed); ``yields``: (yielding, holder)
        as decided now, which ends the opposite advice (a HOLD COURSE to the side that
        now yields, once the other's work landed over it). How many. Read without the
        write lock first: the common case (nothing to withdraw) writes nothing."""
        if not pairs and not yields:
            return 0
        over = {(min(p), max(p)) for p in pairs}
        # (recipient, sender, type) of advice the decisions now contradict
        flipped = {(y, h, "hold") for y, h in yields} | {(h, y, "steer") for y, h in yields}
        rows = self.db.execute(
            "SELECT id, recipient, sender, type FROM inbox WHERE delivered IS NULL AND type IN "
            f"({','.join('?' * len(ADVICE))})", ADVICE).fetchall()
        now = time.time()
        ids = [(now, int(i)) for i, r, s, t in rows
               if (min(r, s), max(r, s)) in over or (r, s, t) in flipped]
        if ids:
            with self.tx() as db:
                db.executemany("UPDATE inbox SET delivered=? WHERE id=? AND delivered IS NULL",
                               ids)
        return len(ids)

    def take(self, recipient: str, hold: Hold | None = None) -> list[dict[str, Any]]:
        """Undelivered messages for ``recipient``, marked delivered in the same transaction;
        ``hold`` says of each whether to deliver it, keep it undelivered or drop it."""
        if not self.db.execute("SELECT 1 FROM inbox WHERE recipient=? AND delivered IS NULL "
                               "LIMIT 1", (recipient,)).fetchone():
            return []  # the common case, without taking the write lock
        with self.tx() as db:
            rows = db.execute("SELECT id, sender, type, body, created FROM inbox WHERE "
                              "recipient=? AND delivered IS NULL ORDER BY id",
                              (recipient,)).fetchall()
            msgs = [{"id": r[0], "from": r[1], "type": r[2], "body": json.loads(r[3]),
                     "created": r[4]} for r in rows]
            what = [hold(m) if hold is not None else "take" for m in msgs]
            now = time.time()
            done = [(now, m["id"]) for m, w in zip(msgs, what, strict=True) if w != "hold"]
            if done:
                db.executemany("UPDATE inbox SET delivered=? WHERE id=? AND delivered IS NULL",
                               done)
        return [m for m, w in zip(msgs, what, strict=True) if w == "take"]

    def messages(self, recipient: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        q = "SELECT id, recipient, sender, type, body, created, delivered FROM inbox"
        args: tuple[Any, ...] = ()
        if recipient:
            q += " WHERE recipient=?"
            args = (recipient,)
        rows = self.db.execute(q + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [{"id": r[0], "to": r[1], "from": r[2], "type": r[3], "body": json.loads(r[4]),
                 "created": r[5], "delivered": r[6]} for r in rows]


def undelivered(ecm_dir: str, recipient: str, timeout: float = 0.2) -> bool | None:
    """Whether ``recipient`` has an undelivered message, read on a read-only connection of
    its own (safe from any thread, never waits for a writer longer than ``timeout``); None
    when the ledger cannot be read."""
    path = os.path.join(ecm_dir, FILENAME)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error:
        return None
    try:
        return db.execute("SELECT 1 FROM inbox WHERE recipient=? AND delivered IS NULL "
                          "LIMIT 1", (recipient,)).fetchone() is not None
    except sqlite3.Error:
        return None
    finally:
        db.close()
