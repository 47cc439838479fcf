"""Directories only this user can enter: the ledger's, the service's runtime directory.

Whatever another local user made first is refused, never repaired: a directory is ours
when ``lstat`` says it is a real directory (not a symlink) owned by our uid; only then is
a too-open mode narrowed, through a descriptor opened without following links, so no
``chmod`` ever lands on a link's target. Standard library only: hooks import it.
"""

from __future__ import annotations

import os
import stat

PRIVATE = 0o700


class NotOurs(OSError):
    """A path another user (or a link) controls: refused, never used."""


def why_not_private(path: str) -> str | None:
    """None when ``path`` is a real directory of ours that nobody else can enter; else
    the reason, in words (a missing path is no reason: the caller may make it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{path}: {e.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_mode & 0o077:
        return f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_dir(path: str) -> str:
    """Make ``path`` (and missing parents) or take it as it is when it is ours; narrow its
    mode to 0700. Raises NotOurs when it is a link, not a directory, or another user's."""
    try:
        os.makedirs(path, mode=PRIVATE, exist_ok=True)
    except FileExistsError as e:  # a file or a dangling link where the directory goes
        raise NotOurs(f"{path} exists and is not a directory") from e
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise NotOurs(why_not_private(path) or f"{path}: {e.strerror}") from e
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise NotOurs(f"{path} belongs to uid {st.st_uid}, not to this user "
                          f"(uid {os.getuid()})")
        if st.st_mode & 0o077:
            try:  # noqa: SIM105 -- (contextlib is one more import for every hook)
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & PRIVATE)
            except OSError:  # a read-only mount: ours still, and nobody writes it either
                pass
    finally:
        os.close(fd)
    return path


def private_file(path: str) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (a file SQLite then fills:
    its journal files take the same mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs: a directory, buffer or object store it left is
    cleaned only once it is gone. Another user's process counts as alive (not ours to
    judge gone); 0 and negative ids name process groups, never one process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
