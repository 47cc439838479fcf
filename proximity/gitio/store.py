"""Where proximity writes the objects of live work: a private object store, never the
repository's own ``objects``.

A snapshot hashes uncommitted and untracked files; written into ``.git/objects`` they took
the user's umask (a 0600 token file became a 0444 object another user could read) and `git
gc` repacked them into world-readable packs. So every object proximity writes for live
state goes into ``<common>/ecm/store``: a bare repository inside the private ledger
directory (0700) whose objects borrow the repository's as alternates. proximity's own git
processes and its libgit2 handle read both; the user's git never sees the store, and the
store's pins (one ref per worktree for its last recorded snapshot) never reach `git gc`.

A store that cannot take a write (a read-only or full disk) is no reason to judge less: the
objects then go to a scratch store in the system's temporary directory (0700, removed when
the repository is closed), on a filesystem with room, and are read from there.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping

from proximity import layout, owned
from proximity.gitio.run import git

SCRATCH_PREFIX = "proximity-objects-"  # <tmp>/proximity-objects-<pid>-<random>
SPARE = 1 << 20  # bytes a store's filesystem must keep free beyond a write's own size
GRACE = 3600.0  # seconds an unreferenced object is kept (a writer may still be using it)

# what a git process or libgit2 says when the filesystem refuses an object write
_NO_ROOM = re.compile(r"No space left|Disk quota exceeded|Read-only file system|File too "
                      r"large|unable to (?:write|create temporary file)|insufficient "
                      r"permission for adding an object", re.I)

# (no auto gc, no reflogs, no commit-graph: `proximity gc` alone keeps the store)
_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tlogAllRefUpdates = false\n" \
          "[gc]\n\tauto = 0\n\twriteCommitGraph = false\n"


def refused_write(message: str) -> bool:
    """Whether an error says the object write was refused for want of room or rights."""
    return bool(_NO_ROOM.search(message))


def quote_path(path: str) -> str:
    """``path`` as git reads one entry of an alternates list (the environment variable's
    ``:``-separated list, or a line of ``info/alternates``): C-quoted when it holds a
    separator, a quote, a backslash or a control character."""
    if not re.search(r'[:"\\\x00-\x1f]', path) and not path.startswith('"'):
        return path
    out = []
    for ch in path:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def has_room(d: str, need: int = 0) -> bool:
    """Whether directory ``d`` can take ``need`` more bytes: writable, with room to spare."""
    try:
        st = os.statvfs(d)
    except OSError:
        return False
    return os.access(d, os.W_OK) and st.f_bavail * st.f_frsize >= 2 * need + SPARE


def _write_alternates(objects: str, borrowed: Iterable[str]) -> None:
    info = os.path.join(objects, "info")
    os.makedirs(info, mode=owned.PRIVATE, exist_ok=True)
    with open(os.path.join(info, "alternates"), "w", encoding="utf-8",
              errors="surrogateescape") as fh:
        fh.write("".join(quote_path(p) + "\n" for p in borrowed))


def make_store(path: str, repo_objects: str) -> None:
    """A bare repository at ``path`` (0700) whose objects borrow ``repo_objects``; built
    beside it and renamed into place, so a reader never sees half a store."""
    parent = os.path.dirname(path)
    owned.private_dir(parent)
    tmp = tempfile.mkdtemp(prefix=".store.", dir=parent)
    try:
        for d in ("refs", "objects/pack"):
            os.makedirs(os.path.join(tmp, d), mode=owned.PRIVATE, exist_ok=True)
        with open(os.path.join(tmp, "HEAD"), "w") as fh:
            fh.write("ref: refs/heads/none\n")  # (a store has no branch)
        with open(os.path.join(tmp, "config"), "w") as fh:
            fh.write(_CONFIG)
        _write_alternates(os.path.join(tmp, "objects"), [repo_objects])
        try:
            os.rename(tmp, path)
        except OSError:
            if not os.path.isdir(path):  # (another process made it first: theirs stands)
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class ObjectStore:
    """Where this process writes objects for one repository, and what it reads them from:
    the private store, or (when that cannot take a write) a scratch store in the temporary
    directory; the repository's own objects are always read."""

    def __init__(self, common: str, ecm_dir: str) -> None:
        self.repo_objects = os.path.join(common, "objects")
        self.path = layout.store_dir(ecm_dir)
        self.objects = os.path.join(self.path, "objects")
        self.scratch: str | None = None  # the temporary store, once one was needed
        self.why: str | None = None  # why writes went to the scratch store
        self._target: str | None = None

    # -- where objects go -------------------------------------------------------------
    def target(self, need: int = 0) -> str:
        """The object directory a write of about ``need`` bytes goes to now: the private
        store when it exists (made if missing) and has room, else the scratch store."""
        if self._store_ok(need):
            self._target = self.objects
        else:
            self._target = self._scratch()
        return self._target

    def current(self) -> str:
        """The object directory the last write went to (chosen when none was yet)."""
        return self._target or self.target()

    def elsewhere(self, message: str) -> bool:
        """After a write the current target refused (``message``): move writes to the
        scratch store; False when they were there already (nowhere else to go)."""
        if self._target is not None and self._target == self.scratch:
            return False
        self.why = message.strip().splitlines()[-1][:300] if message.strip() else "refused"
        self._target = self._scratch()
        return True

    def off(self) -> str | None:
        """Why the last write went to the scratch store (recording is off: its objects go
        with this process), or None: they went to the store."""
        if self._target is None or self._target == self.objects:
            return None
        return (f"{self.why or 'the object store cannot be written'}; live objects are "
                f"kept in {self._target} until this process ends")

    def _store_ok(self, need: int) -> bool:
        if not os.path.isdir(self.objects):
            try:
                make_store(self.path, self.repo_objects)
            except OSError as e:
                self.why = f"the private object store {self.path} cannot be made: " \
                           f"{e.strerror or e}"
                return False
        if has_room(self.objects, need):
            return True
        self.why = self.full_reason() or f"{self.objects} cannot be written"
        return False

    def full_reason(self) -> str | None:
        """Why the private store's filesystem takes no writes (full, read-only), or None."""
        d = self.objects
        while not os.path.isdir(d) and os.path.dirname(d) != d:
            d = os.path.dirname(d)  # (not made yet: where it would be)
        try:
            st = os.statvfs(d)
        except OSError:
            return None
        free = st.f_bavail * st.f_frsize
        if st.f_flag & os.ST_RDONLY:
            return f"the disk holding {d} is read-only"
        if free < SPARE:
            return f"the disk holding {d} is full ({free // 1024} KiB free)"
        if not os.access(d, os.W_OK):
            return f"{d} is not writable"
        return None

    def free(self) -> int | None:
        """Bytes free on the store's filesystem (None: unknown)."""
        d = self.objects
        while not os.path.isdir(d) and os.path.dirname(d) != d:
            d = os.path.dirname(d)
        try:
            st = os.statvfs(d)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize

    def _scratch(self) -> str:
        if self.scratch is None:
            d = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")  # 0700
            borrowed = [self.repo_objects]
            if os.path.isdir(self.objects):
                borrowed.insert(0, self.objects)
            _write_alternates(d, borrowed)
            self.scratch = d
            # (a caller that never closes its repository: gone with it, or at exit)
            weakref.finalize(self, shutil.rmtree, d, True)
        return self.scratch

    # -- how git and libgit2 see them -------------------------------------------------
    def env(self, need: int = 0, choose: bool = False) -> dict[str, str]:
        """The environment of a git process that reads (and may write) live objects:
        writes go to the current target (``choose``: pick it anew for ``need`` bytes);
        every store this process wrote to is read."""
        target = self.target(need) if choose else self.current()
        extra = [d for d in (self.objects, self.scratch) if d and d != target
                 and os.path.isdir(d)]
        out = {"GIT_OBJECT_DIRECTORY": target}
        if extra:
            out["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = ":".join(quote_path(d) for d in extra)
        return out

    def read_dirs(self) -> list[str]:
        """Every object directory beyond the repository's that holds live objects."""
        return [d for d in (self.objects, self.scratch) if d and os.path.isdir(d)]

    # -- keeping and dropping ---------------------------------------------------------
    def pin(self, ref: str, oid: str) -> None:
        """Point the store's ``ref`` at ``oid`` (the last recorded snapshot of a worktree:
        what the store's gc keeps). The store is this user's alone: a plain file write."""
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            raise ValueError(f"not a ref name: {ref!r}")
        path = os.path.join(self.path, *ref.split("/"))
        try:
            with open(path, encoding="ascii") as fh:
                if fh.read().strip() == oid:
                    return
        except OSError:
            pass
        os.makedirs(os.path.dirname(path), mode=owned.PRIVATE, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="ascii") as fh:
            fh.write(oid + "\n")
        os.replace(tmp, path)

    def pins(self, prefix: str) -> dict[str, str]:
        """The store's refs under ``prefix`` (``refs/...``): name -> object id."""
        base = os.path.join(self.path, *prefix.rstrip("/").split("/"))
        out: dict[str, str] = {}
        for d, _dirs, files in os.walk(base):
            for name in files:
                if name.endswith(".tmp"):
                    continue
                full = os.path.join(d, name)
                with contextlib.suppress(OSError, UnicodeDecodeError), \
                        open(full, encoding="ascii") as fh:
                    rel = os.path.relpath(full, self.path).replace(os.sep, "/")
                    out[rel] = fh.read().strip()
        return out

    def unpin(self, ref: str) -> bool:
        try:
            os.unlink(os.path.join(self.path, *ref.split("/")))
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Remove the scratch store (its objects were this process's alone)."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
            if self._target is not None and self._target != self.objects:
                self._target = None


PINS = "refs/ecm/local/"  # the store's ref per worktree: its last recorded snapshot
SHADOWS = "refs/ecm/shadow/"  # the store's ref per shadow index: the tree it holds


def gc(store: ObjectStore, live: Iterable[str], shadows: Mapping[str, str],
       grace: float = GRACE) -> dict[str, int]:
    """Drop from the store what no live worktree needs: the pins of retired worktrees
    (``live``: the safe names of live ones), and every object that neither a pin nor a
    shadow index (``shadows``: name -> the tree it holds) reaches, once older than
    ``grace`` seconds (a writer may be using a newer one). Counts of what went."""
    if not os.path.isdir(store.objects):
        return {"pins": 0, "objects": 0}
    keep = set(live)
    dropped = sum(store.unpin(ref) for ref in store.pins(PINS)
                  if ref[len(PINS):] not in keep)
    for ref in store.pins(SHADOWS):
        if ref[len(SHADOWS):] not in shadows:
            store.unpin(ref)
    for name, tree in shadows.items():
        store.pin(SHADOWS + name, tree)

    def count() -> int:
        out = git(["--git-dir", store.path, "count-objects", "-v"], cwd=store.path).stdout
        fields = dict(line.split(": ", 1) for line in out.decode().splitlines()
                      if ": " in line)
        return int(fields.get("count", 0)) + int(fields.get("in-pack", 0))

    before = count()
    git(["--git-dir", store.path, "gc", "--quiet", f"--prune={int(grace)}.seconds.ago"],
        cwd=store.path)
    return {"pins": dropped, "objects": max(0, before - count())}


def stale_scratch_stores(now: float | None = None, alive: Mapping[int, bool] | None = None
                         ) -> list[str]:
    """Scratch stores in the temporary directory a killed process of this user left (its
    pid gone, untouched for GRACE seconds): the paths."""
    now = time.time() if now is None else now
    d = tempfile.gettempdir()
    out = []
    try:
        names = os.listdir(d)
    except OSError:
        return []
    for name in names:
        m = re.fullmatch(re.escape(SCRATCH_PREFIX) + r"([0-9]+)-\w+", name)
        if not m:
            continue
        full = os.path.join(d, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        pid = int(m.group(1))
        gone = not (alive.get(pid, True) if alive is not None else owned.alive(pid))
        if st.st_uid == os.getuid() and now - st.st_mtime > GRACE and gone:
            out.append(full)
    return out


def sweep_scratch_stores() -> int:
    """Remove the scratch stores killed processes left (stale_scratch_stores): how many."""
    gone = stale_scratch_stores()
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    return len(gone)
