"""Opening the ledger: the schema, the lock it is made under, transactions with a bounded
wait, and what a failing database is diagnosed as (never silently overwritten)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

from proximity import layout, owned
from proximity.errors import LedgerBusy, LedgerError, LedgerUnwritable

SCHEMA = 2


FILENAME = layout.LEDGER


DDL = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE streams(
  id TEXT PRIMARY KEY, path TEXT, created REAL NOT NULL, retired REAL, machine TEXT,
  first_seq INTEGER);
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, kind TEXT NOT NULL,
  head TEXT, branch TEXT, snapshot TEXT, tree TEXT, files TEXT NOT NULL,
  clock TEXT NOT NULL, time REAL NOT NULL, pid INTEGER, rid TEXT);
CREATE INDEX events_stream ON events(stream, seq);
CREATE UNIQUE INDEX events_rid ON events(rid) WHERE rid IS NOT NULL;
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


# a hook's request id on its event: whoever records it (the service, the hook that gave up
# waiting, a replay of what a killed service left) records it once
MIGRATIONS: dict[int, str] = {
    2: "ALTER TABLE events ADD COLUMN rid TEXT;\n"
       "CREATE UNIQUE INDEX events_rid ON events(rid) WHERE rid IS NOT NULL;",
}




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
        return LedgerUnwritable(f"the ledger {path} is read-only: {why} (sqlite: {text}); {intact}")
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or "full" in low:
        free = ""
        with contextlib.suppress(OSError):
            st = os.statvfs(d)
            free = f", {st.f_bavail * st.f_frsize // 1024} KiB free"
        return LedgerUnwritable(f"the disk holding the ledger {path} is full (sqlite: {text}"
                           f"{free}); free some space; {intact}")
    if probe is not None and code in (errno.EACCES, errno.EPERM):
        return LedgerUnwritable(f"the ledger directory {d} is not writable ({probe.strerror}; "
                           f"sqlite: {text}); {intact}")
    if probe is not None:
        return LedgerUnwritable(f"the ledger {path} cannot be written: {probe.strerror} "
                           f"(sqlite: {text}); {intact}")
    return LedgerError(f"the ledger {path} failed: {text}; run `proximity doctor` (an "
                       "integrity check) before moving anything")


def _keep_private(directory: str, path: str) -> None:
    """A ledger made before it was private, or a directory another user made: narrowed
    when ours (its inbox holds hunks of uncommitted work), refused when not."""
    why = owned.why_not_private(directory)
    if why is None:
        return
    try:
        owned.private_dir(directory)
    except owned.NotOurs as e:
        raise LedgerError(f"refusing the ledger: {e}") from e
    for name in (path, f"{path}-wal", f"{path}-shm"):
        with contextlib.suppress(OSError):  # (read-only: nobody else can write it either)
            _narrow(name)


def _narrow(path: str) -> None:
    st = os.lstat(path)
    if st.st_mode & 0o077 and not os.path.islink(path):
        os.chmod(path, 0o600)


class LedgerCore:
    """The database: made under a lock and moved into place, checked, one transaction at a
    time."""

    def __init__(self, ecm_dir: str, *, create: bool = True, read_only: bool = False
                 ) -> None:
        """``read_only``: open it for reading only (a ledger that cannot be written: a
        read-only mount, a full disk); every write then raises LedgerError at once."""
        self.dir = ecm_dir
        self.path = os.path.join(ecm_dir, FILENAME)
        self.read_only = read_only
        self._claimed: list[str] = []
        # recency answers by what they were computed from (see recency): a process that
        # keeps its Ledger (the resident service) reads a stream's events again only when
        # they changed
        self._recency: dict[tuple[str, int, tuple[int, ...]], tuple[Any, dict[str, float]]] = {}
        _opened.append(self.path)
        del _opened[:-4]
        if not os.path.exists(self.path):
            if not create or read_only:
                raise LedgerError(f"no ledger at {self.path} yet (run `proximity snapshot`)")
            self._create()
        elif not read_only:
            _keep_private(self.dir, self.path)
        self.db = self._connect_read_only() if read_only else self._connect()
        self._check()

    # -- opening ----------------------------------------------------------------------
    def _create(self) -> None:
        try:
            owned.private_dir(self.dir)
            with open(os.path.join(self.dir, ".lock"), "a+") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if os.path.exists(self.path):
                    return
                tmp = f"{self.path}.tmp-{os.getpid()}"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                owned.private_file(tmp)  # events and inboxes hold hunks of private work
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

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that never writes: ``mode=ro`` (it still shares the WAL index
        with writers), else ``immutable=1`` when not even the WAL index can be made
        beside it (what a reader sees is then the database file as last checkpointed)."""
        from urllib.parse import quote

        uri = f"file:{quote(self.path)}?mode=ro"
        last: sqlite3.Error | None = None
        for extra in ("", "&immutable=1"):
            try:
                db = sqlite3.connect(uri + extra, uri=True, timeout=_wait_left(),
                                     isolation_level=None, check_same_thread=False)
            except sqlite3.Error as e:
                last = e
                continue
            try:
                db.execute("SELECT 1 FROM meta LIMIT 1").fetchall()
                return db
            except sqlite3.Error as e:
                last = e
                db.close()
        assert last is not None
        raise diagnose(last, self.path) from last

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
        if version < SCHEMA and not self.read_only:  # (read, it needs no new column)
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
        if self.read_only:
            raise LedgerError(f"the ledger {self.path} is open read-only: nothing is written")
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

    def _park_claimed(self) -> list[tuple[str, str]]:
        parked = []
        for name in self._claimed:
            away = os.path.join(self.dir, ".replayed-" + os.path.basename(name))
            with contextlib.suppress(OSError):
                os.rename(name, away)
                parked.append((name, away))
        self._claimed = []
        return parked

    # -- maintenance --------------------------------------------------------------------
    def integrity(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])
