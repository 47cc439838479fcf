"""Watching worktrees' files (inotify through watchfiles), for the resident service.

Reports batches of changed paths, debounced: a burst of saves is one batch. Git's own
internals (any ``.git`` path component) never count; paths git ignores are filtered by
the caller, which asks git (``ignored``), since only git knows its ignore rules.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

from proximity import gitio, layout

DEBOUNCE_MS = 200  # longest a burst of changes is grouped
STEP_MS = 4  # quiet time that ends a burst (a sync cookie comes back after it: 4-8 ms)
COOKIE = os.sep + os.path.join(layout.ECM, "cookies") + os.sep  # sync cookies (service.sync)


def outside_git(path: str) -> bool:
    return ".git" not in path.split(os.sep)


def top_roots(roots: Iterable[str]) -> list[str]:
    """The roots not inside another root (a nested worktree is watched through its parent)."""
    out: list[str] = []
    for r in sorted({os.path.realpath(r) for r in roots}):
        if not any(r == o or r.startswith(o.rstrip(os.sep) + os.sep) for o in out):
            out.append(r)
    return out


def covered(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def owner(path: str, roots: dict[str, str]) -> str | None:
    """Which worktree (id -> path) a changed path belongs to: the deepest enclosing one."""
    best, depth = None, -1
    for wid, root in roots.items():
        root = root.rstrip(os.sep)
        if (path == root or path.startswith(root + os.sep)) and len(root) > depth:
            best, depth = wid, len(root)
    return best


def ignored(workdir: gitio.Where, paths: list[str]) -> set[str]:
    """The ones among ``paths`` (relative to ``workdir``) that git ignores (untracked and
    matching an ignore rule), asked in one batch."""
    if not paths:
        return set()
    proc = gitio.git(["check-ignore", "--stdin", "-z"], cwd=workdir,
                     input="\0".join(paths).encode() + b"\0", ok=(0, 1, 128))
    if proc.returncode not in (0, 1):
        return set()
    return {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def watched_inodes() -> set[int] | None:
    """The inodes this process's inotify instances watch (from /proc/self/fdinfo), None
    when that cannot be read (no /proc, another kind of watcher)."""
    found: set[int] = set()
    seen = False
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                text = fh.read()
        except OSError:
            continue
        seen = True
        for line in text.splitlines():  # "inotify wd:1 ino:3f7e8 sdev:fe00000 ..."
            if line.startswith("inotify "):
                for word in line.split():
                    if word.startswith("ino:"):
                        found.add(int(word[4:], 16))
    return found if seen else None


def unwatched_dirs(added: Iterable[str]) -> list[str]:
    """Directories just made that got no watch: the kernel's limit on watches was reached
    (the watcher says nothing of it; changes inside them would go unseen)."""
    dirs = [p for p in added if outside_git(p) and os.path.isdir(p) and not os.path.islink(p)]
    if not dirs:
        return []
    inodes = watched_inodes()
    if inodes is None:
        return []
    out = []
    for d in dirs:
        try:
            if os.stat(d).st_ino not in inodes:
                out.append(d)
        except OSError:
            continue
    return out


class Watcher:
    """A thread that calls ``on_change(paths)`` for every debounced batch of changes under
    its roots; ``set_roots`` restarts it on new roots."""

    def __init__(self, on_change: Callable[[set[str]], None],
                 on_watching: Callable[[], None] | None = None) -> None:
        self.on_change, self.on_watching = on_change, on_watching
        self.roots: list[str] = []
        self.error: str | None = None
        self.watching = threading.Event()  # set once the current roots are watched
        self.active: list[str] = []  # the roots watched now (empty while (re)starting)
        self._stop = threading.Event()
        self._restart = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fswatch", daemon=True)

    def start(self, roots: Iterable[str]) -> None:
        self.roots = top_roots(roots)
        self._thread.start()

    def set_roots(self, roots: Iterable[str]) -> None:
        new = top_roots(roots)
        if new != self.roots:
            self.roots = new
            self._restart.set()

    def stop(self) -> None:
        self._stop.set()
        self._restart.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        import watchfiles

        while not self._stop.is_set():
            self._restart.clear()
            roots = [r for r in self.roots if os.path.isdir(r)]
            if not roots:
                self._restart.wait(0.5)
                continue
            self.watching.clear()
            self.active = []
            try:
                # the first (empty) yield on timeout says the watches are in place: changes
                # made after it are seen
                for changes in watchfiles.watch(
                        *roots, watch_filter=lambda _c, p: outside_git(p) or COOKIE in p,
                        debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=self._restart,
                        rust_timeout=100, yield_on_timeout=True, raise_interrupt=False,
                        ignore_permission_denied=True):
                    if not self.watching.is_set():
                        self.active = roots
                        self.watching.set()
                        if self.on_watching is not None:
                            self.on_watching()
                    if changes:
                        unwatched = unwatched_dirs(p for c, p in changes if c == 1)
                        if unwatched:  # (asked again: the watch may be on its way)
                            self._stop.wait(0.05)
                            unwatched = unwatched_dirs(unwatched)
                        if unwatched:  # the watch limit: changes below them go unseen
                            self.error = (f"inotify watch limit reached: {unwatched[0]} "
                                          "and what is made below it are not watched (raise "
                                          "fs.inotify.max_user_watches); every request reads "
                                          "the worktrees again")
                        self.on_change({p for _, p in changes})
                self.error = None
            except Exception as e:  # a vanished root, too many watches: retry, say why
                self.error = f"{type(e).__name__}: {e}"
                self._stop.wait(1.0)
