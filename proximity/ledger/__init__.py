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
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, NamedTuple

from proximity.errors import LedgerBusy, LedgerError
from proximity.ledger import clocks

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


SPOOL = "spool.jsonl"  # events that found the ledger busy, replayed by the next writer
FILES_CACHE = "stream-files"  # cache kind: each stream's current changed-files map
GENERATIONAL = ("edges:",)  # cache key families where a new generation replaces the old
BUSY_WAIT = 30.0  # seconds a command waits for the write lock
_deadline: float | None = None  # a hook's total budget for waiting (monotonic time)
_opened: list[str] = []  # ledger paths this process opened (for diagnosing a stray error)


def wait_budget(seconds: float | None) -> None:
    """Bound the total time this process waits for a busy ledger (hooks: about 2 s);
    None: each statement waits up to BUSY_WAIT."""
    global _deadline
    _deadline = None if seconds is None else time.monotonic() + seconds


def _wait_left() -> float:
    if _deadline is None:
        return BUSY_WAIT
    return max(0.0, _deadline - time.monotonic())


def recovery_hint(path: str) -> str:
    return (f"move it aside and let proximity start a new one: "
            f"mv '{path}' '{path}.corrupt-{int(time.time())}' (history is lost; git is not)")


def _probe_dir(d: str) -> OSError | None:
    """Try to create and fill a small file in ``d``: the OS's own answer (EROFS, ENOSPC,
    EACCES, EPERM, EDQUOT…) to why the ledger cannot be written, or None."""
    probe = os.path.join(d, f".probe-{os.getpid()}-{os.urandom(3).hex()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        return e
    try:
        os.write(fd, b"\0" * 65536)
        os.fsync(fd)
    except OSError as e:
        return e
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return None


def integrity_says(path: str) -> str | None:
    """``PRAGMA quick_check`` on a fresh read-only connection: "ok", what it reports, or
    None when it cannot run at all (so nobody may call the file corrupt)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        rows = [str(r[0]) for r in db.execute("PRAGMA quick_check(3)").fetchall()]
        lines = [ln for r in rows for ln in r.splitlines() if not ln.startswith("***")]
        return "; ".join(lines[:2]) or "ok"
    except sqlite3.DatabaseError as e:
        text = str(e).lower()
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            return str(e)
        return None
    finally:
        db.close()


def diagnose(exc: BaseException, path: str | None = None) -> LedgerError:
    """Say truthfully why the ledger failed: busy, read-only, full, an I/O error, or
    corrupt (only when an integrity check says so). Exit code 4 for all of them."""
    import errno

    if isinstance(exc, LedgerError):
        return exc
    path = path or (_opened[-1] if _opened else "the ledger")
    d = os.path.dirname(path) or "."
    text = str(exc)
    low = text.lower()
    intact = ("the ledger itself is intact (do not move it aside); fix this and run the "
              "command again")
    if "locked" in low or "busy" in low:
        return LedgerBusy(f"the ledger {path} is busy: another process holds its write lock "
                          f"({text}); try again in a moment")
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        said = integrity_says(path)
        if said is not None and said != "ok":
            return LedgerError(f"the ledger {path} is corrupt (integrity check: {said}); "
                               f"{recovery_hint(path)}")
        return LedgerError(f"the ledger {path} reported {text!r}, but its integrity check "
                           f"{'passes' if said == 'ok' else 'could not run'}; run "
                           "`proximity doctor`")
    probe = _probe_dir(d) if os.path.isdir(d) else None
    code = probe.errno if probe is not None else None
    if code == errno.EROFS or "readonly" in low or "read-only" in low:
        why = ("the file system is mounted read-only" if code == errno.EROFS else
               f"its directory {d} refuses writes ({probe.strerror})" if probe is not None
               else "the file is not writable")
        return LedgerError(f"the ledger {path} is read-only: {why} (sqlite: {text}); {intact}")
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or "full" in low:
        free = ""
        with contextlib.suppress(OSError):
            st = os.statvfs(d)
            free = f", {st.f_bavail * st.f_frsize // 1024} KiB free"
        return LedgerError(f"the disk holding the ledger {path} is full (sqlite: {text}"
                           f"{free}); free some space; {intact}")
    if probe is not None and code in (errno.EACCES, errno.EPERM):
        return LedgerError(f"the ledger directory {d} is not writable ({probe.strerror}; "
                           f"sqlite: {text}); {intact}")
    if probe is not None:
        return LedgerError(f"the ledger {path} cannot be written: {probe.strerror} "
                           f"(sqlite: {text}); {intact}")
    return LedgerError(f"the ledger {path} failed: {text}; run `proximity doctor` (an "
                       "integrity check) before moving anything")


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
        self._claimed: list[str] = []
        # recency answers by what they were computed from (see recency): a process that
        # keeps its Ledger (the resident service) reads a stream's events again only when
        # they changed
        self._recency: dict[tuple[str, int, tuple[int, ...]], tuple[Any, dict[str, float]]] = {}
        _opened.append(self.path)
        del _opened[:-4]
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
        except (OSError, sqlite3.Error) as e:
            err = diagnose(e, self.path)
            raise LedgerError(f"cannot create the ledger in {self.dir}: {err}") from e

    def _connect(self) -> sqlite3.Connection:
        wait = _wait_left()
        try:
            db = sqlite3.connect(self.path, timeout=wait, isolation_level=None,
                                 check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
            mode = db.execute("PRAGMA journal_mode").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            return db
        except sqlite3.Error as e:
            raise diagnose(e, self.path) from e

    def _check(self) -> None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.Error as e:
            raise diagnose(e, self.path) from e
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
        """One write transaction; waits for the lock at most what is left of the budget."""
        wait = _wait_left()
        try:
            self.db.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            err = diagnose(e, self.path)
            if isinstance(err, LedgerBusy):
                err = LedgerBusy(f"the ledger {self.path} is busy: another process held its "
                                 f"write lock for the {wait:.1f} s this command may wait")
            raise err from e
        try:
            yield self.db
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            self._claimed = []  # claimed spool files stay for the next writer
            raise diagnose(e, self.path) from e
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            self._claimed = []
            raise
        else:
            # replayed spool files leave the spool while we still hold the write lock, so
            # the next writer cannot replay them twice; back they go if the commit fails
            parked = self._park_claimed()
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as e:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                for claim, away in parked:
                    with contextlib.suppress(OSError):
                        os.rename(away, claim)
                raise diagnose(e, self.path) from e
            for _claim, away in parked:
                with contextlib.suppress(OSError):
                    os.unlink(away)

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
               debrief: list[str] | None = None, machine: str | None = None,
               spool: bool = False) -> Event:
        """Tick ``stream``'s clock and store one event, in one transaction.

        ``files``: path -> blob id of everything that differs from HEAD. The event keeps
        only what changed since the stream's previous event (None: no longer differs), so
        the ledger does not grow with untracked files that stay as they are; the whole map
        is kept once per stream. ``brief_from``: a stream whose clock a new stream
        inherits; ``debrief``: streams whose clocks merge into this one. ``spool``: when
        the ledger stays busy past the wait budget, append the event to the spool (the
        next writer replays it) and return it with seq 0 instead of raising LedgerBusy.
        """
        item: dict[str, Any] = {"stream": stream, "kind": kind, "path": path, "head": head,
                "branch": branch, "snapshot": snapshot, "tree": tree, "files": dict(files),
                "brief_from": brief_from, "debrief": debrief or [], "machine": machine,
                "time": time.time(), "pid": os.getpid()}
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
            "time, pid) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (stream, item["kind"], item["head"], item["branch"], item["snapshot"],
             item["tree"], json.dumps(delta), json.dumps(clock), now, item["pid"]))
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

    def _park_claimed(self) -> list[tuple[str, str]]:
        parked = []
        for name in self._claimed:
            away = os.path.join(self.dir, ".replayed-" + os.path.basename(name))
            with contextlib.suppress(OSError):
                os.rename(name, away)
                parked.append((name, away))
        self._claimed = []
        return parked

    def retire(self, stream: str) -> None:
        with self.tx() as db:
            db.execute("UPDATE streams SET retired=? WHERE id=? AND retired IS NULL",
                       (time.time(), stream))
            db.execute("DELETE FROM intents WHERE stream=?", (stream,))

    # -- right-of-way ----------------------------------------------------------------------
    def reached(self, stream: str, paths: Collection[str],
                committed: Callable[[str, str, str], bool] | None = None) -> int | None:
        """The ledger order (event seq) at which ``stream`` began its current work on any of
        ``paths``: per path, the first event of its present run of changes (a revert ends a
        run; a commit of the change does not: ``committed(old_head, new_head, path)`` tells
        that a path no longer differing from HEAD went into the commits between the
        stream's previous event and this one). When the stream's whole history is retained
        and no event records that work (its hooks were skipped: ``--no-verify``,
        ``PROXIMITY_SKIP=1``), it began after every event so far: the next seq. None when
        the events that could say were compacted away."""
        if not paths:
            return None
        marks = ",".join("?" * len(paths))
        rows = self.db.execute(
            f"SELECT e.seq, e.head, (SELECT p.head FROM events p WHERE p.stream=e.stream "
            f"AND p.seq<e.seq ORDER BY p.seq DESC LIMIT 1), j.key, j.value "
            f"FROM events e, json_each(e.files) j "
            f"WHERE e.stream=? AND j.key IN ({marks}) ORDER BY e.seq", (stream, *paths))
        start: dict[str, int | None] = {}
        for seq, head, before, path, oid in rows:
            if oid is None:
                if (committed is not None and head and before and head != before
                        and start.get(path) is not None and committed(before, head, path)):
                    continue  # committed, not reverted: the same work goes on
                start[path] = None
            elif start.get(path) is None:
                start[path] = seq
        found = [s for s in start.values() if s is not None]
        if found:
            return min(found)
        whole = self.db.execute(
            "SELECT 1 FROM streams s JOIN events e ON e.seq = s.first_seq AND e.stream = s.id "
            "WHERE s.id=?", (stream,)).fetchone()
        if whole is None:
            return None
        # first seen now: after every event so far (trial15: a side that skipped its hooks
        # took right-of-way from its worktree-add event)
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]) + 1

    def held(self, a: str, b: str) -> tuple[str, int, int] | None:
        """The pair's standing right-of-way decision: (the side told to yield, the ledger
        order when it was told, the other side's committed lines then), or None."""
        x, y = sorted((a, b))
        row = self.db.execute("SELECT value FROM cache WHERE kind='right-of-way' AND key=?",
                              (f"{x}\t{y}",)).fetchone()
        try:
            got = json.loads(row[0]) if row else None
            return (str(got[0]), int(got[1]), int(got[2])) \
                if isinstance(got, list) and len(got) == 3 else None
        except (ValueError, TypeError):
            return None

    def hold(self, decisions: Mapping[tuple[str, str], tuple[str, int]]) -> None:
        """Keep each pair's decision (pair -> (the side told to yield, the other side's
        committed lines)) from the ledger order now; a pair whose standing decision names
        the same side keeps its order, and the most committed lines its holder has had."""
        rows: list[tuple[str, str, int | None, int]] = []
        for (a, b), (yielding, lines) in decisions.items():
            got = self.held(a, b)
            x, y = sorted((a, b))
            if got is None or got[0] != yielding:
                rows.append((f"{x}\t{y}", yielding, None, lines))
            elif lines > got[2]:
                rows.append((f"{x}\t{y}", yielding, got[1], lines))
        if not rows:
            return
        with self.tx() as db:
            now = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
            db.executemany("INSERT OR REPLACE INTO cache VALUES ('right-of-way', ?, ?)",
                           [(k, json.dumps([yielding, int(now if since is None else since),
                                            int(lines)]))
                            for k, yielding, since, lines in rows])

    # -- recency ------------------------------------------------------------------------
    def recency(self, stream: str, files: Mapping[str, str], window: int = 60
                ) -> dict[str, float]:
        """w_f per path: backward decay of the hops since ``stream`` last changed f.
        Remembered per stream by the sequence numbers of its newest ``window`` events
        (events never change; a new one or a deleted one changes the numbers)."""
        seqs = tuple(r[0] for r in self.db.execute(
            "SELECT seq FROM events WHERE stream=? ORDER BY seq DESC LIMIT ?", (stream, window)))
        if not seqs:
            return {}
        key = (stream, window, seqs)
        kept = self._recency.get(key)
        if kept is not None and kept[0] == files:
            return dict(kept[1])
        out = self._recency_now(stream, files, window)
        if len(self._recency) > 256:
            self._recency.clear()
        self._recency[key] = (dict(files), dict(out))
        return out

    def _recency_now(self, stream: str, files: Mapping[str, str], window: int
                     ) -> dict[str, float]:
        evs = self.events(stream, window)
        if not evs:
            return {}
        now = evs[0].clock
        current = self.current_files(stream)
        out: dict[str, float] = {}
        for path, oid in files.items():
            touched = None
            if current.get(path) == oid:
                for ev in evs:  # newest first: back to the event that set this content
                    touched = ev
                    if path in ev.files:
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
        # keys "<name>:<format>:<generation>:…" of a generational family (import edges,
        # keyed by the reference tree): a new generation supersedes the older ones, so
        # these rows do not pile up per commit with every changed or untracked file
        gens = {tuple(k.split(":", 3)[:3]) for k in data.added
                if k.startswith(GENERATIONAL) and k.count(":") >= 3}
        with self.tx() as db:
            if replace:
                db.execute("DELETE FROM cache WHERE kind=?", (kind,))
            for name, fmt, gen in gens if len(gens) == 1 else ():
                db.execute("DELETE FROM cache WHERE kind=? AND key >= ? AND key < ? AND "
                           "substr(key, 1, ?) != ?",
                           (kind, f"{name}:", f"{name};", len(f"{name}:{fmt}:{gen}:"),
                            f"{name}:{fmt}:{gen}:"))
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


def _cooling(db: sqlite3.Connection, recipient: str, sender: str, kind: str, now: float,
             hops: float, cooldown_s: float, cooldown_hops: float) -> bool:
    """Whether the last message of this recipient, sender and type is within both
    cooldowns (then a new one is dropped)."""
    last = db.execute(
        "SELECT created, hops FROM inbox WHERE recipient=? AND sender=? AND type=? "
        "ORDER BY id DESC LIMIT 1", (recipient, sender, kind)).fetchone()
    return bool(last and now - last[0] < cooldown_s and hops - last[1] < cooldown_hops)
