"""The ledger's facts for right-of-way and closure rate: the order in which streams first
worked contested files, standing yield decisions, recency, risk history and intents."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping

from proximity.ledger import clocks
from proximity.ledger.events import Events

# a wait on a holder stands while the waiter asks again and is denied within this many
# seconds (an agent retries within one; one that stopped asking waits on nobody)
WAIT_FRESH = 120.0
# the time of a wait that is never a wait cycle's oldest (agents/cycles.py: a person shown
# a deny on lines they had typed already): later than any other
LATE = 1e18
# a wait cycle's order (who went first over whose live lines) stands this long after it was
# last given, unless the first member's work lands before: the member gone over was told to
# wait for that landing, and not asking meanwhile is how it waits
ORDER_STANDS = 3600.0


class Traffic(Events):
    """What right-of-way and closure read: who reached contested files first, standing
    decisions, recency, risk history, intents."""

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
        start: dict[str, int | None] = {}
        for seq, head, before, path, oid in self._path_events(stream, paths):
            if oid is None:
                if start.get(path) is not None and _committed(committed, before, head, path):
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
        # first seen now: after every event so far (else a side that skipped its hooks
        # took right-of-way from its worktree-add event)
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]) + 1

    def broke_since(self, stream: str, paths: Collection[str], since: int,
                    committed: Callable[[str, str, str], bool] | None = None) -> bool:
        """Whether an event of ``stream`` after ledger order ``since`` records its work on
        one of ``paths`` ending (the path no longer differs from HEAD, and did not go into
        a commit meanwhile: see reached)."""
        return any(oid is None and not _committed(committed, before, head, path)
                   for _, head, before, path, oid in self._path_events(stream, paths, since))

    def _path_events(self, stream: str, paths: Collection[str], after: int = 0
                     ) -> list[tuple[int, str | None, str | None, str, str | None]]:
        """``stream``'s events after ledger order ``after`` that record one of ``paths``,
        in order: (seq, HEAD, the HEAD of its event before, path, the path's blob or None:
        it no longer differs from HEAD)."""
        if not paths:
            return []
        marks = ",".join("?" * len(paths))
        return self.db.execute(
            f"SELECT e.seq, e.head, (SELECT p.head FROM events p WHERE p.stream=e.stream "
            f"AND p.seq<e.seq ORDER BY p.seq DESC LIMIT 1), j.key, j.value "
            f"FROM events e, json_each(e.files) j WHERE e.stream=? AND e.seq>? "
            f"AND j.key IN ({marks}) ORDER BY e.seq", (stream, after, *paths)).fetchall()

    # -- who waits on whom (the pre-edit check's denies) -----------------------------------
    def wait(self, waiter: str, holders: Collection[str], now: float,
             since: float | None = None,
             paths: Mapping[str, Collection[str]] | None = None) -> None:
        """``waiter`` was denied for ``holders``' work (``paths``: where each denied it):
        since when it waits on each (an earlier wait that still stands keeps its time and
        adds the paths; ``since``: the time a new one is given, LATE for a wait that is
        never a cycle's oldest)."""
        if not holders:
            return
        keys = {h: f"{waiter}\t{h}" for h in holders}
        with self.tx() as db:
            marks = ",".join("?" * len(keys))
            old = dict(db.execute(f"SELECT key, value FROM cache WHERE kind='waits' AND key IN "
                                  f"({marks})", list(keys.values())).fetchall())
            rows = []
            for h, key in keys.items():
                got = _wait_value(old.get(key))
                where = set((paths or {}).get(h, ()))
                if got is not None and got[1] >= now - WAIT_FRESH:
                    value = [got[0], now, sorted(set(got[2]) | where)]
                else:
                    value = [now if since is None else since, now, sorted(where)]
                rows.append((key, json.dumps(value)))
            db.executemany("INSERT OR REPLACE INTO cache VALUES ('waits', ?, ?)", rows)

    def waits(self, now: float) -> dict[tuple[str, str], float]:
        """Every wait that stands now: (waiter, holder) -> since when (asked again and denied
        within the last WAIT_FRESH seconds each time)."""
        out: dict[tuple[str, str], float] = {}
        for key, value in self.db.execute("SELECT key, value FROM cache WHERE kind='waits'"):
            waiter, tab, holder = str(key).partition("\t")
            got = _wait_value(value)
            if tab and got is not None and now - got[1] <= WAIT_FRESH:
                out[(waiter, holder)] = got[0]
        return out

    def waits_of(self, waiter: str, now: float) -> dict[str, tuple[str, ...]]:
        """The waits of ``waiter`` that stand now: holder -> the paths where it was denied
        (empty: not known, a wait recorded before paths were)."""
        out: dict[str, tuple[str, ...]] = {}
        for key, value in self.db.execute(
                "SELECT key, value FROM cache WHERE kind='waits' AND key >= ? AND key < ?",
                (f"{waiter}\t", f"{waiter}\n")):
            got = _wait_value(value)
            if got is not None and now - got[1] <= WAIT_FRESH:
                out[str(key).partition("\t")[2]] = got[2]
        return out

    def end_waits(self, waiter: str, cleared: Mapping[str, Collection[str]]) -> None:
        """``waiter`` asked again about ``cleared`` paths and each holder named no longer
        denied it there: those paths leave its wait on that holder, and a wait left with
        no path ends (it waits on that work nowhere now, and an old wait kept would give
        it, or keep from it, the first place in a wait cycle it no longer stands in)."""
        with self.tx() as db:
            for holder, gone in cleared.items():
                key = f"{waiter}\t{holder}"
                row = db.execute("SELECT value FROM cache WHERE kind='waits' AND key=?",
                                 (key,)).fetchone()
                got = _wait_value(row[0]) if row else None
                if got is None or not got[2]:
                    continue
                left = sorted(set(got[2]) - set(gone))
                if left:
                    db.execute("UPDATE cache SET value=? WHERE kind='waits' AND key=?",
                               (json.dumps([got[0], got[1], left]), key))
                else:
                    db.execute("DELETE FROM cache WHERE kind='waits' AND key=?", (key,))

    def order(self, gone: str, first: str, paths: Collection[str], now: float
              ) -> tuple[str, ...]:
        """A wait cycle was broken: ``first`` goes on over ``gone``'s live lines in
        ``paths``. The order stands (the files named so far kept, the time given anew), so
        the two never trade places while ``gone`` waits for that work; returns the paths
        not named before."""
        key = f"{gone}\t{first}"
        with self.tx() as db:
            row = db.execute("SELECT value FROM cache WHERE kind='first' AND key=?",
                             (key,)).fetchone()
            known: list[str] = []
            since = now
            try:
                got = json.loads(row[0]) if row else None
                if isinstance(got, list) and now - float(got[1]) <= ORDER_STANDS:
                    known, since = [str(p) for p in got[2]], float(got[0])
            except (ValueError, TypeError, IndexError):
                pass
            new = tuple(sorted(set(paths) - set(known)))
            db.execute("INSERT OR REPLACE INTO cache VALUES ('first', ?, ?)",
                       (key, json.dumps([since, now, sorted({*known, *paths})[:64]])))
        return new

    def orders(self, now: float) -> dict[tuple[str, str], tuple[str, ...]]:
        """Every wait cycle's order that stands: (the member gone over, the one that goes
        first over it) -> the files where it does."""
        out: dict[tuple[str, str], tuple[str, ...]] = {}
        for key, value in self.db.execute("SELECT key, value FROM cache WHERE kind='first'"):
            gone, tab, first = str(key).partition("\t")
            try:
                got = json.loads(value)
                last, paths = float(got[1]), tuple(str(p) for p in got[2])
            except (ValueError, TypeError, IndexError):
                continue
            if tab and now - last <= ORDER_STANDS:
                out[(gone, first)] = paths
        return out

    def end_orders(self, first: str) -> list[str]:
        """``first``'s work landed: the orders it went first by end; the members gone over
        (told to wait for this landing)."""
        with self.tx() as db:
            keys = [str(k) for (k,) in db.execute("SELECT key FROM cache WHERE kind='first'")
                    if str(k).partition("\t")[2] == first]
            db.executemany("DELETE FROM cache WHERE kind='first' AND key=?",
                           [(k,) for k in keys])
        return sorted(k.partition("\t")[0] for k in keys)

    def held(self, a: str, b: str) -> tuple[str, int, int] | None:
        """The pair's standing right-of-way decision: (the side told to yield, the ledger
        order when it was told, the other side's committed lines then), or None."""
        x, y = sorted((a, b))
        row = self.db.execute("SELECT value FROM cache WHERE kind='right-of-way' AND key=?",
                              (f"{x}\t{y}",)).fetchone()
        try:
            got = json.loads(row[0]) if row else None
            return (str(got[0]), int(got[1]), int(got[2])) \
                if isinstance(got, list) and len(got) in (3, 4) else None
        except (ValueError, TypeError):
            return None

    def held_files(self, a: str, b: str) -> tuple[str, ...] | None:
        """The files the pair's standing decision was about when it was told (None: a
        decision kept before they were kept)."""
        x, y = sorted((a, b))
        row = self.db.execute("SELECT value FROM cache WHERE kind='right-of-way' AND key=?",
                              (f"{x}\t{y}",)).fetchone()
        try:
            got = json.loads(row[0]) if row else None
        except ValueError:
            return None
        if isinstance(got, list) and len(got) == 4 and isinstance(got[3], list):
            return tuple(str(p) for p in got[3])
        return None

    def standing_yields(self) -> list[tuple[str, str, int]]:
        """Every pair's standing decision whose latest risk sample is still a Resolution
        Advisory: (the side told to yield, the side it yields to, the ledger order when it
        was told). The edges of the yield graph every worktree reads alike."""
        out: list[tuple[str, str, int]] = []
        for key, value in self.db.execute(
                "SELECT key, value FROM cache WHERE kind='right-of-way'").fetchall():
            a, _, b = str(key).partition("\t")
            try:
                got = json.loads(value)
                told, since = str(got[0]), int(got[1])
            except (ValueError, TypeError, IndexError):
                continue
            if told not in (a, b):
                continue
            last = self.db.execute("SELECT advisory FROM risk WHERE a=? AND b=? ORDER BY seq "
                                   "DESC LIMIT 1", (a, b)).fetchone()
            if last is not None and last[0] == "resolution":
                out.append((told, b if told == a else a, since))
        return sorted(out, key=lambda e: (e[2], e[0], e[1]))

    def hold(self, decisions: Mapping[tuple[str, str], tuple[str, int, tuple[str, ...]]]
             ) -> None:
        """Keep each pair's decision (pair -> (the side told to yield, the other side's
        committed lines, the contested files)) from the ledger order now; a pair whose
        standing decision names the same side keeps its order and its files, and the most
        committed lines its holder has had."""
        rows: list[tuple[str, str, int | None, int, list[str]]] = []
        for (a, b), (yielding, lines, files) in decisions.items():
            got = self.held(a, b)
            x, y = sorted((a, b))
            if got is None or got[0] != yielding:
                rows.append((f"{x}\t{y}", yielding, None, lines, sorted(files)))
            elif lines > got[2]:
                kept = self.held_files(a, b)
                rows.append((f"{x}\t{y}", yielding, got[1], lines,
                             sorted(kept if kept is not None else files)))
        if not rows:
            return
        with self.tx() as db:
            now = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
            db.executemany("INSERT OR REPLACE INTO cache VALUES ('right-of-way', ?, ?)",
                           [(k, json.dumps([yielding, int(now if since is None else since),
                                            int(lines), files]))
                            for k, yielding, since, lines, files in rows])

    def release(self, pairs: Collection[tuple[str, str]]) -> None:
        """The pairs judged clear, both sides read: the collision is over, and with it the
        advice told about it (a holder's revert that no hook recorded ends its claim as a
        recorded one does; a collision met again later is decided again)."""
        if not pairs:
            return
        told = {str(k) for (k,) in self.db.execute(
            "SELECT key FROM cache WHERE kind='right-of-way'")}
        keys = [(k,) for k in {f"{x}\t{y}" for x, y in (sorted(p) for p in pairs)} & told]
        if keys:
            with self.tx() as db:
                db.executemany("DELETE FROM cache WHERE kind='right-of-way' AND key=?", keys)

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


def _committed(committed: Callable[[str, str, str], bool] | None, before: str | None,
               head: str | None, path: str) -> bool:
    """Whether a path that no longer differs from HEAD went into the commits between a
    stream's two events (``committed(old head, new head, path)``): its work goes on, it
    was not reverted."""
    return (committed is not None and bool(head) and bool(before) and head != before
            and committed(str(before), str(head), path))


def _wait_value(value: object) -> tuple[float, float, tuple[str, ...]] | None:
    """A stored wait: (since, last denied, the paths where it was denied), or None when
    the value is not one."""
    if value is None:
        return None
    try:
        got = json.loads(str(value))
        since, last = float(got[0]), float(got[1])
        paths = tuple(str(p) for p in got[2]) if len(got) > 2 and isinstance(got[2], list) \
            else ()
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    return since, last, paths
