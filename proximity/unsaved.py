"""A person's unsaved editor buffers as live work: the text typed but not saved yet, kept
where every sibling's check reads it in place of the file on disk.

One directory per repository, ``<common dir>/ecm/unsaved`` (0700, this user's: ``owned``),
holds one file per dirty buffer, named ``<key>.<pid>``: ``key`` names the worktree and
path, ``pid`` the editor server that wrote it. A buffer is live while that process runs
and the file on disk is not newer than it (a save, a checkout, or an agent's write since
then makes it stale: the disk is the truth again). The editor server removes its buffers
on save, close and exit; whatever a crash leaves is ignored, then swept by the next one.
Standard library only: the pre-edit check reads it on every call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat

from proximity import layout, owned

MAX_BYTES = 4 << 20  # a buffer larger than this is not shared (nor read back)


def directory(ecm_dir: str) -> str:
    return layout.unsaved_dir(ecm_dir)


def key(worktree: str, rel: str) -> str:
    """The name a worktree's buffer of ``rel`` (relative, '/'-separated) is kept under."""
    return hashlib.sha1(f"{worktree}\0{rel}".encode("utf-8", "surrogateescape")
                        ).hexdigest()[:24]


def write(ecm_dir: str, worktree: str, rel: str, data: bytes, pid: int | None = None
          ) -> str:
    """Keep ``data`` as the live text of ``rel`` in ``worktree`` (replacing this process's
    earlier one at once: a reader sees the old or the new text, never half). Raises
    owned.NotOurs when the directory is not this user's, OSError when it cannot be
    written, ValueError when ``data`` is too large to share."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"{len(data)} bytes: over the {MAX_BYTES} bytes shared")
    d = owned.private_dir(directory(ecm_dir))
    final = os.path.join(d, f"{key(worktree, rel)}.{pid or os.getpid()}")
    tmp = f"{final}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return final


def remove(ecm_dir: str, worktree: str, rel: str, pid: int | None = None) -> None:
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(directory(ecm_dir), f"{key(worktree, rel)}.{pid or os.getpid()}"))


def sweep(ecm_dir: str, pid: int | None = None) -> int:
    """Remove this process's buffers (``pid``: another of ours), and any whose writer is
    gone; how many went."""
    d = directory(ecm_dir)
    if owned.why_not_private(d) is not None:
        return 0
    gone = 0
    for name in _names(d):
        writer = _pid(name)
        if writer is not None and (writer == (pid or os.getpid()) or not owned.alive(writer)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(d, name))
                gone += 1
    return gone


Listing = dict[str, list[tuple[int, str]]]  # key -> (writer pid, file) of each buffer


def listing(ecm_dir: str) -> Listing:
    """Every buffer file in the directory, by key; empty when there is none or the
    directory is not this user's alone (another user's text is never read as ours)."""
    d = directory(ecm_dir)
    if not os.path.isdir(d) or owned.why_not_private(d) is not None:
        return {}
    out: Listing = {}
    for name in _names(d):
        writer = _pid(name)
        if writer is not None:
            out.setdefault(name.split(".", 1)[0], []).append((writer, os.path.join(d, name)))
    return out


def live(found: Listing, worktree: str, rel: str, disk: str) -> str | None:
    """The file holding the live unsaved text of ``rel`` in ``worktree`` (whose file on
    disk is ``disk``), or None: no buffer, its writer gone, the disk newer (saved since,
    or changed under it), or not a small regular file of this user."""
    cands = found.get(key(worktree, rel))
    if not cands:
        return None
    try:
        on_disk = os.stat(disk).st_mtime_ns
    except OSError:
        return None  # (a buffer of a file that is not there: nothing to stand in for)
    best: tuple[int, str] | None = None
    for writer, path in cands:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()
                or st.st_size > MAX_BYTES or st.st_mtime_ns < on_disk or not owned.alive(writer)):
            continue
        if best is None or st.st_mtime_ns > best[0]:
            best = (st.st_mtime_ns, path)
    return best[1] if best else None


def _names(d: str) -> list[str]:
    try:
        return [n for n in os.listdir(d) if not n.endswith(".tmp")]
    except OSError:
        return []


def _pid(name: str) -> int | None:
    head, _, tail = name.rpartition(".")
    return int(tail) if head and tail.isdigit() and 0 < int(tail) < 1 << 31 else None

