"""Loose object files checked before libgit2 reads them.

libgit2 (1.9.7, under pygit2 1.21) loops forever on a loose object whose zlib stream ends
early (a truncated file: a crash or a full disk mid-write, a bad copy): it keeps asking
zlib for output zlib cannot make, holding the GIL, so the process reading it wedges -- the
resident service stops answering and never runs its SIGTERM handler, an in-process hook
never returns to git. git reads the same object and fails with an error. So before
libgit2 reads the objects a live snapshot names beyond its HEAD, git lists them (and
fails, saying so, on a tree it cannot read) and their loose files are inflated here, in
bounded pieces: one that does not inflate whole is named, never handed to libgit2.
Before libgit2 is opened at all, every loose file of the repository's own object
directories is inflated once (Audit, check): a damaged one that a commit reaches stops
judging, named in one line, until it is mended.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
import zlib
from collections.abc import Sequence
from typing import Any

from proximity import layout, owned
from proximity.errors import DamagedObject
from proximity.gitio import listing
from proximity.gitio.run import At, git

CHUNK = 1 << 16  # bytes read and inflated at a time (a loose blob may be large)
HEADER_MAX = 64  # "blob 123456789\0" and then some: a longer header is not git's


def loose_files(dirs: Sequence[str], oid: str) -> list[str]:
    """Every loose file of object ``oid`` in the object directories ``dirs``: libgit2
    may read any of them, whichever git would."""
    return [p for d in dirs if os.path.isfile(p := os.path.join(d, oid[:2], oid[2:]))]


def damage(path: str) -> str | None:
    """What is wrong with the loose object file at ``path``, in a few words (None: its
    zlib stream inflates whole to a git header and exactly the size that header gives).
    A file that cannot be opened, or is no regular file (a FIFO planted there would block
    the read), is not judged here (None): git says what it says."""
    d = zlib.decompressobj()
    head = b""
    body = -1  # (the header not read whole yet)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            while not d.eof:
                data = fh.read(CHUNK)
                if not data:
                    break
                while data and not d.eof:
                    out = d.decompress(data, CHUNK)
                    data = d.unconsumed_tail
                    if body < 0:
                        head += out
                        if b"\0" in head:
                            head, _, rest = head.partition(b"\0")
                            body = len(rest)
                        elif len(head) > HEADER_MAX:
                            return "has no object header"
                    else:
                        body += len(out)
    except zlib.error as e:
        return f"does not inflate ({e})"
    except OSError:
        return None
    if not d.eof:
        return "is cut short (its zlib stream ends early)"
    kind, _, size = head.partition(b" ")
    if kind not in (b"blob", b"tree", b"commit", b"tag") or not size.isdigit():
        return "has no object header"
    if int(size) != body:
        return f"holds {body} bytes where its header says {int(size)}"
    return None


FANS = frozenset(f"{i:02x}" for i in range(256))  # git's fan-out directory names
HEX = "0123456789abcdef"
KEPT_MAX = 1 << 20  # bytes: a kept audit past this is not read
KEPT = "loose-audit"  # in the ecm dir: the fan-out directories found whole, for the next process
TRUSTED_AGE_NS = 2_000_000_000  # a directory changed this recently may change again unseen


class Audit:
    """Every loose object file of the repository's object directories, inflated once
    before libgit2 may read it: libgit2 would wedge on one cut short (a crash while git
    wrote it, a bad copy), committed objects included, which git's listing of a live
    state never names. A fan-out directory is listed again only once its mtime moved;
    one that moved within TRUSTED_AGE_NS of the audit is listed again next time too (a
    file added within the same clock tick leaves the mtime as it was, as git's racy
    index). A file damaged in place after it was found whole is not seen again (git
    writes a loose file once, whole, and renames it into place). A call costs a stat of
    each fan-out directory; what was found whole is kept for the next process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.trusted: dict[str, int] = {}  # fan-out dir -> its mtime when found whole
        self.whole: set[tuple[str, int, int, int]] = set()  # files found whole (path, stat)
        self.loaded: set[str] = set()  # kept files read
        self.distrusted = False  # no kept file is read in this process (distrust)

    def distrust(self) -> None:
        """Inflate every loose file again, the kept audit unread: the service went
        unanswered, which a file damaged in place after its audit would also explain."""
        with self.lock:
            self.trusted.clear()
            self.whole.clear()
            self.distrusted = True

    def damaged(self, roots: Sequence[str], keep: str | None = None) -> list[tuple[str, str]]:
        """The loose files under ``roots`` (object directories) that do not inflate
        whole, each as (its path, what is wrong); []: libgit2 may read them all.
        ``keep``: the file the directories found whole are kept in across processes."""
        with self.lock:
            if keep and keep not in self.loaded and not self.distrusted:
                self.loaded.add(keep)
                self._load(keep)
            before = len(self.trusted)
            found: list[tuple[str, str]] = []
            now = time.time_ns()
            for root in roots:
                found += self._root(root, now)
            if keep and (found or len(self.trusted) != before):
                self._save(keep)  # (found: the kept audit, which missed it, is replaced)
            return found

    def _root(self, root: str, now: int) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        try:
            with os.scandir(root) as it:  # (the fan-out directories there are)
                fans = [e.path for e in it if len(e.name) == 2 and e.name in FANS]
        except OSError:
            return found
        trusted = self.trusted
        for d in fans:
            try:
                mtime = os.stat(d).st_mtime_ns
            except OSError:
                continue
            if trusted.get(d) == mtime:
                continue
            self.trusted.pop(d, None)
            try:
                with os.scandir(d) as it:  # (a temporary file of git's is not an object)
                    entries = [e for e in it if len(e.name) in (38, 62)
                               and not e.name.strip(HEX)]
            except OSError:
                continue
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                # (a file replaced under the same name is another file)
                seen = (entry.path, st.st_ino, st.st_size, st.st_mtime_ns)
                if seen in self.whole:
                    continue
                wrong = damage(entry.path)
                if wrong:
                    found.append((entry.path, wrong))
                else:
                    self.whole.add(seen)
            if now - mtime > TRUSTED_AGE_NS and not any(p.startswith(d + os.sep) for p, _ in found):
                self.trusted[d] = mtime
        return found

    def _load(self, keep: str) -> None:
        try:  # (no link followed, no FIFO waited on, nothing read without bound)
            fd = os.open(keep, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with open(fd, "rb") as fh:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > KEPT_MAX:
                    return
                got = json.loads(fh.read(KEPT_MAX))
        except (OSError, ValueError):
            return
        if isinstance(got, dict):
            self.trusted.update({k: v for k, v in got.items()
                                 if isinstance(k, str) and type(v) is int})

    def _save(self, keep: str) -> None:
        tmp = f"{keep}.{os.getpid()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.trusted, fh)
            os.replace(tmp, keep)
        except OSError:  # (a full disk, a read-only ledger: audited again next time)
            with contextlib.suppress(OSError):
                os.unlink(tmp)


AUDIT = Audit()  # one a process: the service's threads share it


def alternates(objects: str) -> list[str]:
    """``objects`` and the object directories its info/alternates names (git's rule:
    one per line, relative to ``objects``; comments and blank lines skipped)."""
    out = [objects]
    try:
        with open(os.path.join(objects, "info", "alternates"), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(os.path.normpath(os.path.join(objects, line)))
    return out


def check(common: str, here: At, memo: dict[tuple[Any, ...], Any],
          distrust: bool = False) -> int:
    """Raise DamagedObject, saying which, when a loose object file of the repository at
    ``common`` that a commit reaches does not inflate whole: libgit2 would wedge on it.
    git's own commands fail on that object too, each its own way. One no commit reaches
    (a blob staged and cut short) is left to the live state's own check
    (Readable.unreadable): the worktree holding it is judged on its commits; how many such
    were found is returned. ``distrust``: audit every loose file again (Audit.distrust);
    ``memo``: the repository's."""
    if distrust:
        AUDIT.distrust()
    found = AUDIT.damaged(alternates(os.path.join(common, "objects")), kept(common))
    if not found:
        return 0
    oids = tuple(os.path.basename(os.path.dirname(p)) + os.path.basename(p) for p, _ in found)
    reached = committed(common, here, oids, memo)
    for oid, (path, wrong) in zip(oids, found, strict=True):
        if oid in reached:
            raise DamagedObject(f"git object {oid[:12]} is damaged: its loose file {path} "
                                f"{wrong}; proximity cannot read this repository safely "
                                "until it is mended (`git fsck` names what is damaged)")
    return len(found)


def kept(common: str) -> str | None:
    """Where the audit of the repository at ``common`` is kept across processes (in its
    ecm dir, when that is this user's alone; None: nowhere)."""
    ecm = layout.ecm_dir(common)
    return os.path.join(ecm, KEPT) if os.path.isdir(ecm) and \
        owned.why_not_private(ecm) is None else None


def forget(common: str) -> None:
    """Drop the kept audit: the next process audits every loose file again."""
    path = kept(common)
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)


def committed(common: str, here: At, oids: tuple[str, ...],
              memo: dict[tuple[Any, ...], Any]) -> set[str]:
    """Which of ``oids`` a commit reaches: git walks every ref and HEAD (it never reads a
    blob, and stops on a damaged tree or commit: then every one counts). Asked once a
    process (``memo``) for each set of damaged objects found and the worktrees' HEADs."""
    # (a commit made since, in any worktree, may reach one no commit reached before)
    heads = tuple(w.head for w in listing.from_files(common) or ())
    key = ("committed", oids, heads)
    if key not in memo:
        proc = git(["rev-list", "--objects", "--all"], cwd=here, ok=(0, 128))
        wanted = set(oids)
        memo[key] = wanted if proc.returncode else {
            oid for line in proc.stdout.decode("ascii", "replace").splitlines()
            if (oid := line.split(" ", 1)[0]) in wanted}
    got: set[str] = memo[key]
    return got
