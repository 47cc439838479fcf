"""The shared ledger at ``<git-common-dir>/ecm/ledger.sqlite3``.

One SQLite database in WAL mode for every worktree of a repository. It is created in a
temporary file under a lock and moved into place, so no reader ever sees half a schema;
each event is one ``BEGIN IMMEDIATE`` transaction; a corrupt or newer-schema file is
reported and never overwritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from proximity import clocks
from proximity.errors import LedgerError

SCHEMA = 1
FILENAME = "ledger.sqlite3"
DDL = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE streams(
  id TEXT PRIMARY KEY, path TEXT, created REAL NOT NULL, retired REAL, machine TEXT,
  first_seq INTEGER);
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, kind TEXT NOT NULL,
  head TEXT, branch TEXT, snapshot TEXT, tree TEXT, files TEXT NOT NULL,
  clock TEXT NOT NULL, time REAL NOT NULL, pid INTEGER);
CREATE INDEX events_stream ON events(stream, seq);
CREATE TABLE risk(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT NOT NULL, b TEXT NOT NULL,
  risk REAL NOT NULL, advisory TEXT NOT NULL, hops REAL NOT NULL, time REAL NOT NULL);
CREATE INDEX risk_pair ON risk(a, b, seq);
CREATE TABLE inbox(
  id INTEGER PRIMARY KEY AUTOINCREMENT, recipient TEXT NOT NULL, sender TEXT NOT NULL,
  type TEXT NOT NULL, body TEXT NOT NULL, created REAL NOT NULL, hops REAL NOT NULL,
  delivered REAL);
CREATE INDEX inbox_to ON inbox(recipient, delivered);
CREATE TABLE intents(
  stream TEXT NOT NULL, path TEXT NOT NULL, ranges TEXT, clock TEXT NOT NULL,
  created REAL NOT NULL, PRIMARY KEY(stream, path));
CREATE TABLE cache(kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY(kind, key)) WITHOUT ROWID;
"""
MIGRATIONS: dict[int, str] = {}
PAIR_CACHE_MAX = 20_000  # version -> SQL bringing version-1 up to version


def recovery_hint(path: str) -> str:
    return (f"move it aside and let proximity start a new one: "
            f"mv '{path}' '{path}.corrupt-{int(time.time())}' (history is lost; git is not)")


class Event(NamedTuple):
    seq: int
    stream: str
    kind: str
    head: str | None
    branch: str | None
    snapshot: str | None
    tree: str | None
    files: dict[str, str]
    clock: dict[str, int]
    time: float


class TrackedDict(dict[str, Any]):
    """A cache dict: reads a missing key from the ledger on first use (when given a loader)
    and remembers which keys were added (to persist only those)."""

    def __init__(self, data: Mapping[str, Any], loader: Any = None) -> None:
        super().__init__(data)
        self.added: set[str] = set()
        self.loader = loader

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        if self.loader is not None:
            value = self.loader(key)
            if value is not None:
                super().__setitem__(key, value)
                return value
        return default

    def __setitem__(self, key: str, value: Any) -> None:
        self.added.add(key)
        super().__setitem__(key, value)

    def clear(self) -> None:
        self.added.clear()
        super().clear()


class Ledger:
    def __init__(self, ecm_dir: str, *, create: bool = True) -> None:
        self.dir = ecm_dir
        self.path = os.path.join(ecm_dir, FILENAME)
        if not os.path.exists(self.path):
            if not create:
                raise LedgerError(f"no ledger at {self.path} yet (run `proximity snapshot`)")
            self._create()
        self.db = self._connect()
        self._check()

    # -- opening ----------------------------------------------------------------------
    def _create(self) -> None:
        try:
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, ".lock"), "a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if os.path.exists(self.path):
                    return
                tmp = f"{self.path}.tmp-{os.getpid()}"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                db = sqlite3.connect(tmp, isolation_level=None)
                try:
                    db.executescript(DDL)
                    db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                    db.execute("INSERT INTO meta VALUES ('created', ?)", (str(time.time()),))
                    db.execute("PRAGMA journal_mode=WAL")
                finally:
                    db.close()
                os.replace(tmp, self.path)
        except OSError as e:
            raise LedgerError(f"cannot create the ledger in {self.dir}: {e.strerror or e}"
                              ) from e

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            return db
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"the ledger {self.path} is unreadable ({e}); "
                              f"{recovery_hint(self.path)}") from e

    def _check(self) -> None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise LedgerError(f"the ledger {self.path} is corrupt ({e}); "
                              f"{recovery_hint(self.path)}") from e
        version = int(row[0]) if row else 0
        if version > SCHEMA:
            raise LedgerError(
                f"the ledger {self.path} has schema {version}, newer than this proximity "
                f"understands ({SCHEMA}); upgrade proximity (it is left untouched)")
        if version < SCHEMA:
            with self.tx():
                for v in range(version + 1, SCHEMA + 1):
                    self.db.executescript(MIGRATIONS[v])
                self.db.execute("UPDATE meta SET value=? WHERE key='schema'", (str(SCHEMA),))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.db.close()

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise LedgerError(f"the ledger {self.path} is not writable: {e}") from e
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            try:
                self.db.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                with contextlib.suppress(sqlite3.DatabaseError):
                    self.db.execute("ROLLBACK")
                raise LedgerError(f"could not write the ledger {self.path}: {e}") from e

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

    def events(self, stream: str | None = None, limit: int = 50) -> list[Event]:
        if stream is None:
            rows = self.db.execute("SELECT * FROM events ORDER BY seq DESC LIMIT ?", (limit,))
        else:
            rows = self.db.execute(
                "SELECT * FROM events WHERE stream=? ORDER BY seq DESC LIMIT ?", (stream, limit))
        return [_event(r) for r in rows]

    def clocks(self) -> dict[str, dict[str, int]]:
        rows = self.db.execute(
            "SELECT e.stream, e.clock FROM events e JOIN (SELECT stream, MAX(seq) m FROM events "
            "GROUP BY stream) l ON e.seq = l.m")
        return {r[0]: json.loads(r[1]) for r in rows}

    def record(self, stream: str, kind: str, *, path: str, head: str | None,
               branch: str | None, snapshot: str | None, tree: str | None,
               files: Mapping[str, str], brief_from: str | None = None,
               debrief: list[str] | None = None, machine: str | None = None) -> Event:
        """Tick ``stream``'s clock and store one event, in one transaction.

        ``brief_from``: a stream whose clock a new stream inherits; ``debrief``: streams
        whose clocks merge into this one (their work was merged here).
        """
        now = time.time()
        with self.tx() as db:
            row = db.execute("SELECT clock FROM events WHERE stream=? ORDER BY seq DESC LIMIT 1",
                             (stream,)).fetchone()
            clock: dict[str, int] = json.loads(row[0]) if row else {}
            known = db.execute("SELECT 1 FROM streams WHERE id=?", (stream,)).fetchone()
            if not known:
                db.execute("INSERT INTO streams(id, path, created, machine) VALUES (?,?,?,?)",
                           (stream, path, now, machine))
            else:
                db.execute("UPDATE streams SET path=?, retired=NULL WHERE id=?", (path, stream))
            merge_from = ([brief_from] if brief_from and not row else []) + (debrief or [])
            for other in merge_from:
                if other == stream:
                    continue
                r = db.execute("SELECT clock FROM events WHERE stream=? ORDER BY seq DESC "
                               "LIMIT 1", (other,)).fetchone()
                if r:
                    clock = clocks.merge(clock, json.loads(r[0]))
            clock = clocks.tick(clock, stream)
            cur = db.execute(
                "INSERT INTO events(stream, kind, head, branch, snapshot, tree, files, clock, "
                "time, pid) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (stream, kind, head, branch, snapshot, tree, json.dumps(dict(files)),
                 json.dumps(clock), now, os.getpid()))
            seq = int(cur.lastrowid or 0)
            if not known:
                db.execute("UPDATE streams SET first_seq=? WHERE id=?", (seq, stream))
        return Event(seq, stream, kind, head, branch, snapshot, tree, dict(files), clock, now)

    def retire(self, stream: str) -> None:
        with self.tx() as db:
            db.execute("UPDATE streams SET retired=? WHERE id=? AND retired IS NULL",
                       (time.time(), stream))
            db.execute("DELETE FROM intents WHERE stream=?", (stream,))

    # -- recency ------------------------------------------------------------------------
    def recency(self, stream: str, files: Mapping[str, str], window: int = 60
                ) -> dict[str, float]:
        """w_f per path: backward decay of the hops since ``stream`` last changed f."""
        evs = self.events(stream, window)
        if not evs:
            return {}
        now = evs[0].clock
        out: dict[str, float] = {}
        for path, oid in files.items():
            touched = None
            for ev in evs:  # newest first: walk back while the file still had this content
                if ev.files.get(path) == oid:
                    touched = ev
                else:
                    break
            hops = clocks.hop_count(touched.clock, now) if touched else 0
            out[path] = clocks.backward_decay(hops)
        return out

    # -- risk history -------------------------------------------------------------------
    def add_risk(self, samples: list[tuple[str, str, float, str, float]]) -> None:
        if not samples:
            return
        now = time.time()
        with self.tx() as db:
            for a, b, r, adv, hops in samples:
                last = db.execute("SELECT risk, hops FROM risk WHERE a=? AND b=? ORDER BY seq "
                                  "DESC LIMIT 1", (a, b)).fetchone()
                if last and abs(last[0] - r) < 1e-6 and last[1] == hops:
                    continue
                db.execute("INSERT INTO risk(a, b, risk, advisory, hops, time) "
                           "VALUES (?,?,?,?,?,?)", (a, b, r, adv, hops, now))

    def history(self, a: str, b: str, limit: int = 20) -> list[tuple[float, float, float]]:
        a, b = sorted((a, b))
        rows = self.db.execute("SELECT hops, time, risk FROM risk WHERE a=? AND b=? ORDER BY "
                               "seq DESC LIMIT ?", (a, b, limit)).fetchall()
        return [(float(h), float(t), float(r)) for h, t, r in reversed(rows)]

    # -- intents ------------------------------------------------------------------------
    def set_intents(self, stream: str, items: Mapping[str, list[tuple[int, int]] | None],
                    clock: Mapping[str, int], clear: bool = False) -> None:
        now = time.time()
        with self.tx() as db:
            if clear:
                db.execute("DELETE FROM intents WHERE stream=?", (stream,))
            for path, ranges in items.items():
                db.execute("INSERT OR REPLACE INTO intents VALUES (?,?,?,?,?)",
                           (stream, path, json.dumps(ranges), json.dumps(dict(clock)), now))

    def intents(self) -> dict[str, dict[str, tuple[list[tuple[int, int]] | None, dict[str, int]]]]:
        out: dict[str, dict[str, tuple[list[tuple[int, int]] | None, dict[str, int]]]] = {}
        for stream, path, ranges, clock in self.db.execute(
                "SELECT stream, path, ranges, clock FROM intents"):
            rr = json.loads(ranges) if ranges else None
            out.setdefault(stream, {})[path] = (
                [(int(r[0]), int(r[1])) for r in rr] if rr else None, json.loads(clock))
        return out

    # -- inbox --------------------------------------------------------------------------
    def post(self, recipient: str, sender: str, kind: str, body: Mapping[str, Any],
             hops: float, cooldown_s: float, cooldown_hops: float) -> int | None:
        """Queue a message unless the same pair/type was posted within the cooldown."""
        now = time.time()
        with self.tx() as db:
            last = db.execute(
                "SELECT created, hops FROM inbox WHERE recipient=? AND sender=? AND type=? "
                "ORDER BY id DESC LIMIT 1", (recipient, sender, kind)).fetchone()
            if last and now - last[0] < cooldown_s and hops - last[1] < cooldown_hops:
                return None
            cur = db.execute(
                "INSERT INTO inbox(recipient, sender, type, body, created, hops) "
                "VALUES (?,?,?,?,?,?)", (recipient, sender, kind, json.dumps(dict(body)), now,
                                         hops))
            return int(cur.lastrowid or 0)

    def take(self, recipient: str) -> list[dict[str, Any]]:
        """Undelivered messages for ``recipient``, marked delivered in the same transaction."""
        if not self.db.execute("SELECT 1 FROM inbox WHERE recipient=? AND delivered IS NULL "
                               "LIMIT 1", (recipient,)).fetchone():
            return []  # the common case, without taking the write lock
        with self.tx() as db:
            rows = db.execute("SELECT id, sender, type, body, created FROM inbox WHERE "
                              "recipient=? AND delivered IS NULL ORDER BY id",
                              (recipient,)).fetchall()
            if rows:
                db.execute("UPDATE inbox SET delivered=? WHERE recipient=? AND delivered IS NULL "
                           "AND id <= ?", (time.time(), recipient, rows[-1][0]))
        return [{"id": r[0], "from": r[1], "type": r[2], "body": json.loads(r[3]),
                 "created": r[4]} for r in rows]

    def messages(self, recipient: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        q = "SELECT id, recipient, sender, type, body, created, delivered FROM inbox"
        args: tuple[Any, ...] = ()
        if recipient:
            q += " WHERE recipient=?"
            args = (recipient,)
        rows = self.db.execute(q + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [{"id": r[0], "to": r[1], "from": r[2], "type": r[3], "body": json.loads(r[4]),
                 "created": r[5], "delivered": r[6]} for r in rows]

    # -- caches -------------------------------------------------------------------------
    def cache(self, kind: str, lazy: bool = True) -> TrackedDict:
        """Derived data, read key by key on demand (``lazy``) or all at once.

        A row that does not decode is skipped, so it is recomputed.
        """
        if lazy:
            def load(key: str) -> Any:
                row = self.db.execute("SELECT value FROM cache WHERE kind=? AND key=?",
                                      (kind, key)).fetchone()
                try:
                    return json.loads(row[0]) if row else None
                except ValueError:
                    return None

            return TrackedDict({}, load)
        out: dict[str, Any] = {}
        for k, v in self.db.execute("SELECT key, value FROM cache WHERE kind=?", (kind,)):
            try:
                out[k] = json.loads(v)
            except ValueError:
                continue
        return TrackedDict(out)

    def has_cache(self, kind: str) -> bool:
        return self.db.execute("SELECT 1 FROM cache WHERE kind=? LIMIT 1", (kind,)).fetchone() \
            is not None

    def save_cache(self, kind: str, data: TrackedDict, replace: bool = False) -> None:
        """Persist the entries added since loading; ``replace`` drops the kind's others."""
        if not data.added:
            return
        with self.tx() as db:
            if replace:
                db.execute("DELETE FROM cache WHERE kind=?", (kind,))
            db.executemany("INSERT OR REPLACE INTO cache VALUES (?,?,?)",
                           [(kind, k, json.dumps(data[k])) for k in data.added])
        data.added.clear()

    # -- maintenance --------------------------------------------------------------------
    def integrity(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])

    def gc(self, keep_events: int, live: set[str]) -> dict[str, int]:
        stats = {"events": 0, "risk": 0, "inbox": 0, "retired": 0, "cache": 0}
        with self.tx() as db:
            for (stream,) in db.execute("SELECT id FROM streams").fetchall():
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


def _event(row: tuple[Any, ...]) -> Event:
    return Event(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6],
                 json.loads(row[7]), json.loads(row[8]), float(row[9]))
