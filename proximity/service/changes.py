"""What the file watcher reported that the worker has not read yet: the paths that
changed, and whether the watches had a gap (a restart, an error) since the worker last
looked. The watcher's thread adds, under the state's lock; the worker's thread reads them
as the worktrees to snapshot again."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from proximity.service import fswatch

if TYPE_CHECKING:
    from proximity.service.snapshots import WarmSnapshots
    from proximity.service.state import ServiceState


class Changes:
    def __init__(self, state: ServiceState, watcher: fswatch.Watcher) -> None:
        self.state, self.watcher = state, watcher
        self.pending: set[str] = set()  # paths the watcher reported, not read yet
        self.rewatched = 0
        self.rewatch_seen = 1  # the first watch is the baseline's

    # -- the watcher's thread -----------------------------------------------------------
    def add(self, paths: set[str]) -> bool:
        """Paths the watcher reported (the caller holds the state's lock); True when none
        was pending before (the worker is to be told)."""
        first = not self.pending and bool(paths)
        self.pending |= paths
        return first

    def rewatch(self) -> bool:
        """New roots are watched: True when that is not the first watch (what changed
        while they were not is unknown)."""
        self.rewatched += 1
        return self.rewatched > 1

    # -- the worker's thread ------------------------------------------------------------
    def worktrees(self, snaps: WarmSnapshots) -> set[str]:
        """The worktrees the pending file events concern (ignored paths left out)."""
        with self.state.lock:
            paths, self.pending = self.pending, set()
        roots = snaps.watch_roots()
        by_wt: dict[str, list[str]] = {}
        for p in paths:
            wid = fswatch.owner(p, roots)
            if wid is not None:
                by_wt.setdefault(wid, []).append(os.path.relpath(p, roots[wid]))
        ids = set()
        for wid, rels in by_wt.items():
            snaps.note_files(wid, rels)
            if snaps.in_snapshot(wid, rels):
                ids.add(wid)  # a file its state holds: no need to ask git about ignores
                continue
            try:
                skip = fswatch.ignored(snaps.ats[wid], rels)
            except Exception:
                skip = set()
            if any(r not in skip for r in rels):
                ids.add(wid)
        return ids

    def gaps(self, snaps: WarmSnapshots) -> None:
        """After the watcher restarted (new roots, an error), what changed meanwhile is
        unknown: no snapshot may start from the paths it reported."""
        if self.rewatched != self.rewatch_seen or not self.watcher.watching.is_set() \
                or self.watcher.error:
            self.rewatch_seen = self.rewatched
            snaps.forget_files()
            snaps.dirty |= set(snaps.paths)  # and no kept state is known current
        # a worktree no watch covers yet (found since the watcher started: its roots are
        # set at the next turn) says nothing when it changes: it is read again (else a
        # worktree added while the service started was never watched, and a commit there
        # was judged on the state it had when added)
        for wid, path in snaps.paths.items():
            if not fswatch.covered(path, self.watcher.active):
                snaps.dirty.add(wid)

    def settled(self) -> bool:
        """No file event waits to be read, and the watcher is sound."""
        with self.state.lock:
            settled = not self.pending
        return settled and self.watcher.watching.is_set() and not self.watcher.error
