"""Caches kept in the ledger (parsed imports and symbols, pair results, the import graph),
read lazily and written back only for the keys a run added."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from proximity.ledger.db import LedgerCore

GENERATIONAL = ("edges:",)  # cache key families where a new generation replaces the old


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


class Caches(LedgerCore):
    """Parse and pair caches kept in the ledger between runs."""

    _warm: dict[str, TrackedDict] | None = None  # see keep_warm
    _warm_most = 0

    def keep_warm(self, most: int) -> None:
        """Keep each kind's lazily read cache in memory from one call to the next (a
        resident process), until it holds more than ``most`` entries: the derived data is
        keyed by content, so never stale; new entries are still persisted by save_cache."""
        self._warm, self._warm_most = {}, most

    def cache(self, kind: str, lazy: bool = True) -> TrackedDict:
        """Derived data, read key by key on demand (``lazy``) or all at once.

        A row that does not decode is skipped, so it is recomputed.
        """
        if lazy and self._warm is not None:
            warm = self._warm.get(kind)
            if warm is None or len(warm) > self._warm_most:
                warm = self._warm[kind] = self._read(kind, True)
            return warm
        return self._read(kind, lazy)

    def _read(self, kind: str, lazy: bool) -> TrackedDict:
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
