"""Live updates with the person doing nothing: a thread that looks, a few times a second,
at what a sibling's change moves -- the shared ledger (hooks, PostToolUse, the service
record there), the other editors' unsaved buffers, and each open file's copy in every
sibling worktree -- and names the open documents whose picture may have changed.

``stat`` calls only, on a set bounded by what is open (open files × worktrees): no
inotify watch is spent (the resident service holds those), nothing is read."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from proximity import layout, owned, unsaved

Stat = tuple[int, int, int] | None
# what a document's picture depends on: (the ledger's two stats, the other editors'
# buffers, the worktrees), and its file's stat in each worktree
Mark = tuple[tuple[object, ...], tuple[Stat, ...]]
INTERVAL = 0.2  # seconds between looks


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def worktree_roots(common: str) -> list[str]:
    """Every worktree's top directory, from the common dir's files."""
    roots = [os.path.dirname(common)] if os.path.basename(common) == ".git" else []
    admin = os.path.join(common, "worktrees")
    try:
        names = sorted(os.listdir(admin))
    except OSError:
        return roots
    for name in names:
        try:
            with open(os.path.join(admin, name, "gitdir"), encoding="utf-8",
                      errors="surrogateescape") as f:
                dotgit = f.read().strip()
        except OSError:
            continue
        roots.append(os.path.dirname(dotgit))
    return roots


def others_buffers(ecm: str, pid: int) -> tuple[tuple[str, Stat], ...]:
    """The other editors' buffers (names and stats): this server's own are left out, or
    every keystroke here would look like a sibling's change."""
    d = unsaved.directory(ecm)
    try:
        names = sorted(n for n in os.listdir(d) if not n.endswith(f".{pid}"))
    except OSError:
        return ()
    return tuple((n, _stat(os.path.join(d, n))) for n in names)


class Looker:
    """Calls ``changed(uris)`` when what the open documents depend on changes, and
    ``orphaned()`` when the editor's process (``parent``) is gone."""

    def __init__(self, docs: Callable[[], dict[str, tuple[str, str]]],
                 changed: Callable[[list[str]], None], orphaned: Callable[[], None],
                 parent: int | None = None, interval: float = INTERVAL) -> None:
        # docs(): uri -> (common dir, path inside the worktree) of each judged document
        self._docs, self._changed, self._orphaned = docs, changed, orphaned
        self.parent, self._interval = parent, interval
        self._seen: dict[str, Mark] = {}
        self._roots: dict[str, tuple[Stat, list[str]]] = {}
        # per common dir: the ledger's stats just after this server's own write there (a
        # deny records a wait): a look that sees them sees no sibling's change
        self._own: dict[str, tuple[Stat, Stat]] = {}
        self._lock = threading.Lock()  # (_seen: marked on the loop, looked at here)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lsp-live", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def roots(self, common: str) -> list[str]:
        mark = _stat(os.path.join(common, "worktrees"))
        got = self._roots.get(common)
        if got is None or got[0] != mark:
            got = self._roots[common] = (mark, worktree_roots(common))
        return got[1]

    @staticmethod
    def _ledger(common: str) -> tuple[Stat, Stat]:
        ledger = layout.ledger_path(layout.ecm_dir(common))
        return _stat(ledger), _stat(ledger + "-wal")

    def _shared(self, common: str) -> tuple[object, ...]:
        return (*self._ledger(common), others_buffers(layout.ecm_dir(common), os.getpid()),
                tuple(self.roots(common)))

    def wrote(self, common: str) -> None:
        """This server's own judgement may just have written the ledger (a deny records
        the person's wait): that is no sibling's change (else the next look judged again,
        which wrote again: identical diagnostics a few times a second while a deny
        stood). A sibling's write in the same moment waits for its next sign: the
        re-asking of a standing deny, or its files."""
        got = self._ledger(common)
        with self._lock:
            self._own[common] = got

    def _mark(self, common: str, rel: str, shared: tuple[object, ...]) -> Mark:
        return shared, tuple(_stat(os.path.join(r, rel)) for r in self.roots(common))

    def mark(self, uri: str, common: str, rel: str) -> None:
        """What ``uri`` depends on, as it is now: the picture about to be judged (a change
        after this, even before the next look, is a change)."""
        got = self._mark(common, rel, self._shared(common))
        with self._lock:
            self._seen[uri] = got

    def look(self) -> list[str]:
        """One look: the documents whose picture changed since the last."""
        docs = self._docs()
        shared: dict[str, tuple[object, ...]] = {}
        out = []
        for uri, (common, rel) in docs.items():
            if common not in shared:
                shared[common] = self._shared(common)
            mark = self._mark(common, rel, shared[common])
            with self._lock:
                was = self._seen.get(uri)
                if was is not None and was != mark and not self._ours(common, was, mark):
                    out.append(uri)
                self._seen[uri] = mark
        with self._lock:
            for gone in set(self._seen) - set(docs):
                del self._seen[gone]
        return out

    def _ours(self, common: str, was: Mark, now: Mark) -> bool:
        """Whether the only change from ``was`` to ``now`` is the ledger as this server
        left it after its own write."""
        return (was[1] == now[1] and was[0][2:] == now[0][2:]
                and tuple(now[0][:2]) == self._own.get(common))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if self.parent and not owned.alive(self.parent):
                self._orphaned()
                return
            try:
                moved = self.look()
            except Exception:  # (a look that fails is tried again at the next tick)
                continue
            if moved:
                self._changed(moved)
