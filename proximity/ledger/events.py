"""The event log: one stream per worktree, each event a snapshot with its vector clock
(brief from the stream it branched from, debrief on merges) and the files it changed."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from proximity.errors import LedgerBusy
from proximity.ledger import clocks
from proximity.ledger.db import LedgerCore, diagnose

FILES_CACHE = "stream-files"  # cache kind: each stream's current changed-files map


class Event(NamedTuple):
    seq: int
    stream: str
    kind: str
    head: str | None
    branch: str | None
    snapshot: str | None
    tree: str | None
    files: dict[str, str | None]  # what changed since the stream's previous event
    clock: dict[str, int]
    time: float


def _event(row: tuple[Any, ...]) -> Event:
    return Event(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6],
                 json.loads(row[7]), json.loads(row[8]), float(row[9]))
PAIR_CACHE_MAX = 20_000  # pair-cache rows past which gc drops them all
SPOOL = "spool.jsonl"  # events that found the ledger busy, replayed by the next writer


class Events(LedgerCore):
    """The event log: streams, their events and clocks, the files each stream changed,
    retention; and the spool of events that found the ledger busy."""

    # -- streams and events -----------------------------------------------------------
    def streams(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, path, created, retired, machine, first_seq FROM streams")
        return {r[0]: {"path": r[1], "created": r[2], "retired": r[3], "machine": r[4],
                       "first_seq": r[5]} for r in rows}

    def last_event(self, stream: str) -> Event | None:
        row = self.db.execute(
            "SELECT * FROM events WHERE stream=? ORDER BY seq DESC LIMIT 1", (stream,)
        ).fetchone()
        return _event(row) if row else None

    def has_commit(self, stream: str, head: str) -> bool:
        """Whether a commit event of ``stream`` at ``head`` is recorded."""
        return self.db.execute("SELECT 1 FROM events WHERE stream=? AND kind='commit' AND "
                               "head=? LIMIT 1", (stream, head)).fetchone() is not None

    def events(self, stream: str | None = None, limit: int = 50) -> list[Event]:
        if stream is None:
            rows = self.db.execute("SELECT * FROM events ORDER BY seq DESC LIMIT ?", (limit,))
        else:
            rows = self.db.execute(
                "SELECT * FROM events WHERE stream=? ORDER BY seq DESC LIMIT ?", (stream, limit))
        return [_event(r) for r in rows]

    def event_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def clocks(self) -> dict[str, dict[str, int]]:
        rows = self.db.execute(
            "SELECT e.stream, e.clock FROM events e JOIN (SELECT stream, MAX(seq) m FROM events "
            "GROUP BY stream) l ON e.seq = l.m")
        return {r[0]: json.loads(r[1]) for r in rows}

    def record(self, stream: str, kind: str, *, path: str, head: str | None,
               branch: str | None, snapshot: str | None, tree: str | None,
               files: Mapping[str, str], brief_from: str | None = None,
               debrief: list[str] | None = None, machine: str | None = None,
               spool: bool = False, rid: str | None = None) -> Event:
        """Tick ``stream``'s clock and store one event, in one transaction.

        ``files``: path -> blob id of everything that differs from HEAD. The event keeps
        only what changed since the stream's previous event (None: no longer differs), so
        the ledger does not grow with untracked files that stay as they are; the whole map
        is kept once per stream. ``brief_from``: a stream whose clock a new stream
        inherits; ``debrief``: streams whose clocks merge into this one. ``spool``: when
        the ledger stays busy past the wait budget, append the event to the spool (the
        next writer replays it) and return it with seq 0 instead of raising LedgerBusy.
        ``rid``: the hook request this event answers; a second event with it is the first
        one (returned, nothing stored), whoever records it.
        """
        item: dict[str, Any] = {"stream": stream, "kind": kind, "path": path, "head": head,
                "branch": branch, "snapshot": snapshot, "tree": tree, "files": dict(files),
                "brief_from": brief_from, "debrief": debrief or [], "machine": machine,
                "time": time.time(), "pid": os.getpid(), "rid": rid}
        try:
            with self.tx() as db:
                self._replay(db)
                return self._insert(db, item)
        except LedgerBusy:
            if not spool:
                raise
            self._spool(item)
            return Event(0, stream, kind, head, branch, snapshot, tree, dict(files), {},
                         float(item["time"]))

    def _insert(self, db: sqlite3.Connection, item: Mapping[str, Any]) -> Event:
        stream, now = str(item["stream"]), float(item["time"])
        rid = item.get("rid")
        if rid is not None:
            had = db.execute("SELECT seq, stream, kind, head, branch, snapshot, tree, files, "
                             "clock, time FROM events WHERE rid=?", (rid,)).fetchone()
            if had is not None:  # recorded already (by the service, or the hook itself)
                return _event(had)
        row = db.execute("SELECT clock FROM events WHERE stream=? ORDER BY seq DESC LIMIT 1",
                         (stream,)).fetchone()
        clock: dict[str, int] = json.loads(row[0]) if row else {}
        known = db.execute("SELECT 1 FROM streams WHERE id=?", (stream,)).fetchone()
        if not known:
            db.execute("INSERT INTO streams(id, path, created, machine) VALUES (?,?,?,?)",
                       (stream, item["path"], now, item["machine"]))
        else:
            db.execute("UPDATE streams SET path=?, retired=NULL WHERE id=?",
                       (item["path"], stream))
        merge_from = (([item["brief_from"]] if item["brief_from"] and not row else [])
                      + list(item["debrief"] or []))
        for other in merge_from:
            if other == stream:
                continue
            r = db.execute("SELECT clock FROM events WHERE stream=? ORDER BY seq DESC "
                           "LIMIT 1", (other,)).fetchone()
            if r:
                clock = clocks.merge(clock, json.loads(r[0]))
        clock = clocks.tick(clock, stream)
        files: dict[str, str] = dict(item["files"])
        before = self._current_files(db, stream) if row else {}
        delta: dict[str, str | None] = {p: o for p, o in files.items() if before.get(p) != o}
        delta.update({p: None for p in before if p not in files})
        if delta or not row:
            db.execute("INSERT OR REPLACE INTO cache VALUES (?,?,?)",
                       (FILES_CACHE, stream, json.dumps(files)))
        cur = db.execute(
            "INSERT INTO events(stream, kind, head, branch, snapshot, tree, files, clock, "
            "time, pid, rid) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (stream, item["kind"], item["head"], item["branch"], item["snapshot"],
             item["tree"], json.dumps(delta), json.dumps(clock), now, item["pid"], rid))
        seq = int(cur.lastrowid or 0)
        if not known:
            db.execute("UPDATE streams SET first_seq=? WHERE id=?", (seq, stream))
        return Event(seq, stream, str(item["kind"]), item["head"], item["branch"],
                     item["snapshot"], item["tree"], delta, clock, now)

    def _current_files(self, db: sqlite3.Connection, stream: str) -> dict[str, str]:
        row = db.execute("SELECT value FROM cache WHERE kind=? AND key=?",
                         (FILES_CACHE, stream)).fetchone()
        if row:
            with contextlib.suppress(ValueError):
                return dict(json.loads(row[0]))
        # older ledgers: the newest event held the whole map
        last = db.execute("SELECT files FROM events WHERE stream=? ORDER BY seq DESC "
                          "LIMIT 1", (stream,)).fetchone()
        return {k: v for k, v in json.loads(last[0]).items() if v is not None} if last else {}

    def current_files(self, stream: str) -> dict[str, str]:
        """path -> blob id of everything that differed from HEAD at ``stream``'s last
        event."""
        return self._current_files(self.db, stream)

    def gc(self, keep_events: int, live: set[str]) -> dict[str, int]:
        stats = {"events": 0, "risk": 0, "inbox": 0, "retired": 0, "cache": 0}
        with self.tx() as db:
            streams = {str(r[0]) for r in db.execute("SELECT id FROM streams")}
            _drop_waits(db, streams - live)
            for stream in sorted(streams):
                if stream not in live:
                    cur = db.execute("UPDATE streams SET retired=? WHERE id=? AND retired IS "
                                     "NULL", (time.time(), stream))
                    stats["retired"] += cur.rowcount
                cur = db.execute(
                    "DELETE FROM events WHERE stream=? AND seq NOT IN (SELECT seq FROM events "
                    "WHERE stream=? ORDER BY seq DESC LIMIT ?)", (stream, stream, keep_events))
                stats["events"] += cur.rowcount
            cur = db.execute("DELETE FROM risk WHERE seq NOT IN (SELECT MAX(seq) FROM risk "
                             "GROUP BY a, b) AND time < ?", (time.time() - 7 * 86400,))
            stats["risk"] = cur.rowcount
            cur = db.execute("DELETE FROM inbox WHERE delivered IS NOT NULL AND delivered < ?",
                             (time.time() - 7 * 86400,))
            stats["inbox"] = cur.rowcount
            # per-pair results (conflicts, snapshot ids, resolved edges) are cheap to
            # recompute and keyed by content that moves on: drop them once they pile up
            (n_pair,) = db.execute("SELECT COUNT(*) FROM cache WHERE kind='pair'").fetchone()
            stats["cache"] = 0
            if n_pair > PAIR_CACHE_MAX:
                stats["cache"] = db.execute("DELETE FROM cache WHERE kind='pair'").rowcount
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return stats

    # -- the spool: events that found the ledger busy ---------------------------------
    @property
    def spool_path(self) -> str:
        return os.path.join(self.dir, SPOOL)

    def _spool(self, item: Mapping[str, Any]) -> None:
        """Append one event to the spool (under a file lock; never waits on SQLite)."""
        line = (json.dumps(item) + "\n").encode()
        try:
            for _ in range(3):
                fd = os.open(self.spool_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                             | os.O_NOFOLLOW, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    try:
                        same = os.fstat(fd).st_ino == os.stat(self.spool_path).st_ino
                    except FileNotFoundError:
                        same = False
                    if same:  # not claimed by a replay meanwhile
                        os.write(fd, line)
                        return
                finally:
                    os.close(fd)
        except OSError as e:
            raise diagnose(e, self.path) from e
        raise LedgerBusy(f"could not queue the event in {self.spool_path}")

    def spooled(self) -> int:
        """How many events wait in the spool."""
        n = 0
        for name in self._spool_files():
            with contextlib.suppress(OSError), open(name, "rb") as f:
                n += sum(1 for line in f if line.strip())
        return n

    def _spool_files(self) -> list[str]:
        try:
            names = os.listdir(self.dir)
        except OSError:
            return []
        return [os.path.join(self.dir, n) for n in sorted(names)
                if n == SPOOL or n.startswith(SPOOL + ".")]

    def _replay(self, db: sqlite3.Connection) -> int:
        """Inside a write transaction: insert the spooled events, oldest first. The spool
        is claimed (renamed) under its file lock, and removed after the commit."""
        if not os.path.exists(self.spool_path) and not any(
                n != self.spool_path for n in self._spool_files()):
            return 0
        claimed: list[str] = []
        for name in self._spool_files():
            if name == self.spool_path:
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    claim = f"{name}.{os.getpid()}-{os.urandom(3).hex()}"
                    os.rename(name, claim)
                finally:
                    os.close(fd)
                name = claim
            claimed.append(name)
        items = []
        for name in claimed:
            with open(name, "rb") as f:
                for line in f:
                    try:
                        item = json.loads(line)
                    except ValueError:
                        continue  # a torn line (a writer killed mid-append)
                    if isinstance(item, dict) and isinstance(item.get("files"), dict):
                        items.append(item)
        items.sort(key=lambda it: float(it.get("time", 0)))
        for item in items:
            self._insert(db, item)
        self._claimed += claimed
        return len(items)

    def replay(self) -> int:
        """Insert the spooled events now (a command with time to wait does this)."""
        with self.tx() as db:
            return self._replay(db)


def _drop_waits(db: sqlite3.Connection, gone: set[str]) -> None:
    """The waits and wait cycles' orders naming a worktree that is gone end with it: a
    worktree made later under its name (git reuses the names of removed ones) is new work
    that waited on nobody and was gone over by nobody."""
    if not gone:
        return
    rows = db.execute("SELECT kind, key FROM cache WHERE kind IN ('waits', 'first')")
    db.executemany("DELETE FROM cache WHERE kind=? AND key=?",
                   [(k, key) for k, key in rows.fetchall()
                    if set(str(key).split("\t")) & gone])
