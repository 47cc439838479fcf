"""Loose object files checked before libgit2 reads them.

libgit2 (1.9.7, under pygit2 1.21) loops forever on a loose object whose zlib stream ends
early (a truncated file: a crash or a full disk mid-write, a bad copy): it keeps asking
zlib for output zlib cannot make, holding the GIL, so the process reading it wedges -- the
resident service stops answering and never runs its SIGTERM handler, an in-process hook
never returns to git. git reads the same object and fails with an error. So before
libgit2 reads the objects a live snapshot names beyond its HEAD, git lists them (and
fails, saying so, on a tree it cannot read) and their loose files are inflated here, in
bounded pieces: one that does not inflate whole is named, never handed to libgit2.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence

CHUNK = 1 << 16  # bytes read and inflated at a time (a loose blob may be large)
HEADER_MAX = 64  # "blob 123456789\0" and then some: a longer header is not git's


def loose_file(dirs: Sequence[str], oid: str) -> str | None:
    """The loose file of object ``oid`` in the first of the object directories ``dirs``
    that has one (None: packed, or absent)."""
    for d in dirs:
        path = os.path.join(d, oid[:2], oid[2:])
        if os.path.isfile(path):
            return path
    return None


def damage(path: str) -> str | None:
    """What is wrong with the loose object file at ``path``, in a few words (None: its
    zlib stream inflates whole to a git header and exactly the size that header gives).
    A file that cannot be opened is not judged here (None): git says what it says."""
    d = zlib.decompressobj()
    head = b""
    body = -1  # (the header not read whole yet)
    try:
        with open(path, "rb") as fh:
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
