"""Files for git's file-level commands (``diff --no-index``, ``merge-file``), which read
paths, not bytes. A process that answers many checks (the resident service, the editor's
server) diffs each keystroke's buffer against the same base blob: the blob is written once,
named by its content, in one private directory this process made, and used again; making
and removing a temporary directory per check cost more than the file writes on a busy disk.

The directory is this process's alone (``mkdtemp``: 0700, its pid in the name) and removed
at exit; one whose process ended without that (killed, or gone by ``os._exit``) is removed
by the next process that makes its own. A file not used for ``STALE`` seconds is removed
once the directory holds more than ``FILES``: a check in flight only uses files it touched a
moment ago, so none is removed under it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time

from proximity import gitio, owned

PREFIX = "proximity-files-"
FILES = 256  # files kept before the stale ones are removed
STALE = 60.0  # seconds since a file was last used before it may be removed

_LOCK = threading.RLock()  # (a check's two questions may run on two threads)
_DIR: list[str] = []  # the directory, once made (and the pid that made it)
_PID: list[int] = []


def directory() -> str:
    """This process's scratch directory (made on first use; a forked child makes its own)."""
    with _LOCK:
        if not _DIR or _PID[0] != os.getpid():
            sweep(tempfile.gettempdir())
            _DIR[:] = [tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")]
            _PID[:] = [os.getpid()]
            atexit.register(shutil.rmtree, _DIR[0], True)
        return _DIR[0]


MERGE_USES = 500  # questions asked of one merge repository before the next is made
_MERGES = [0, 0]  # the merge repository's generation, and the questions asked of it


def merge_repository() -> str:
    """A bare repository in this process's scratch directory, where git's own merges of
    three texts are asked (filemerge.ort_conflicts): made on first use, and a new one
    after MERGE_USES questions (each writes its objects), the one before the last removed
    (a question still using the last one goes on there)."""
    with _LOCK:
        d = directory()
        if _MERGES[1] >= MERGE_USES:
            _MERGES[0], _MERGES[1] = _MERGES[0] + 1, 0
            shutil.rmtree(os.path.join(d, f"merges-{_MERGES[0] - 2}.git"), ignore_errors=True)
        _MERGES[1] += 1
        path = os.path.join(d, f"merges-{_MERGES[0]}.git")
        if not os.path.isdir(os.path.join(path, "objects")):
            gitio.git(["init", "-q", "--bare", path], d, ok=(0, 1, 128))
        return path


def away() -> tuple[str, dict[str, str]]:
    """A directory outside every repository to run git in (this process's scratch
    directory, with git's search for a repository stopped above it), and the environment
    that stops it."""
    d = directory()
    return d, {"GIT_CEILING_DIRECTORIES": os.path.dirname(d)}


def holding(data: bytes) -> str:
    """A file whose content is ``data`` (named by it: written once, then found)."""
    with _LOCK:  # (never removed as stale between being found and being used)
        d = directory()
        path = os.path.join(d, hashlib.sha1(data).hexdigest())
        try:
            os.utime(path)  # used now: not stale
            return path
        except FileNotFoundError:
            pass
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        _tidy(d)
        return path


def same_file(data: bytes, path: str) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (a size check before reading)."""
    try:
        if os.stat(path).st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


def sweep(parent: str) -> None:
    """Remove the directories in ``parent`` that processes of this user left when they
    ended without removing them (their pid no longer runs)."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX):].split("-", 1)[0]
        path = os.path.join(parent, name)
        with contextlib.suppress(OSError, ValueError):
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or owned.alive(int(pid)):
                continue
            shutil.rmtree(path, ignore_errors=True)



def _tidy(d: str) -> None:
    """Remove the stale files once there are more than FILES."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    if len(names) <= FILES:
        return
    old = time.time() - STALE
    for name in names:
        path = os.path.join(d, name)
        with contextlib.suppress(OSError):
            if os.stat(path).st_mtime < old:
                os.unlink(path)


# a file the check reads whole, at most: past it a file is compared with its base by
# streaming and judged at the file level (a path may be a log of gigabytes)
MAX_READ = 32 << 20


class TooLarge(int):
    """The size of a regular file past the limit it was read with (it was not read)."""


def same_content(path: str, blob: bytes | None) -> bool:
    """Whether the file at ``path`` holds exactly ``blob`` (None: none), read in pieces
    and never whole: a size that differs answers at once."""
    if blob is None:
        return False
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size != len(blob):
                return False
            at = 0
            while piece := f.read(1 << 20):
                if blob[at:at + len(piece)] != piece:
                    return False
                at += len(piece)
            return at == len(blob)
    except OSError:
        return False


def read_bytes(path: str) -> bytes | None:
    """A regular file's bytes; None when it cannot be read, or is no regular file: a FIFO
    or a device (a sibling's, or a link to one) has no content git would read, and reading
    it could wait for ever or never end."""
    got = read_capped(path, None)
    return None if isinstance(got, TooLarge) else got


def read_capped(path: str, limit: int | None) -> bytes | TooLarge | None:
    """read_bytes, telling a file over ``limit`` bytes apart: its size, never its bytes (a
    path an agent names may be a log of gigabytes, anywhere)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is not None and st.st_size > limit:
            return TooLarge(st.st_size)
        with os.fdopen(fd, "rb") as f:
            fd = -1  # (closed with f)
            return f.read()
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def outside(root: str, live: str, rel: str) -> bool:
    """Whether a worktree's file at ``rel`` lies through a linked directory outside the
    worktree: git never follows a link to a directory, and what is there is not the
    worktree's to show (an editor's buffer, read in its place, is not asked)."""
    if live != os.path.join(root, rel) or "/" not in rel:
        return False
    top = os.path.realpath(root)
    where = os.path.realpath(os.path.dirname(live))
    return where != top and not where.startswith(top + os.sep)


def retyped(repo: gitio.Repo, base: str | None, path: str, theirs: str, mine: str) -> bool:
    """Whether a sibling's file (``theirs``) is a link where the pair's base has a file,
    or a file (or nothing) where it has a link. Asked of git only when the two worktrees'
    files differ in kind, which is rare: the base is then the one side that says who
    changed it."""
    link = os.path.islink(theirs)
    if link == os.path.islink(mine) or (not link and not os.path.lexists(theirs)):
        return False  # (a deleted file is a deletion, not a change of kind)
    if base is None:
        return link
    out = gitio.git(["ls-tree", "-z", base, "--", path], cwd=repo.here, ok=(0, 128))
    return link != out.stdout.startswith(b"120000 ")
