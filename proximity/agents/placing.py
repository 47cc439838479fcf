"""Where git places an edit whose result is known: its lines as git's diff of the file now
and after names them, which is where git's merge sees them. An agent's strings, or a
Write's difflib, can put a block that repeats its neighbours elsewhere. Kept by the two
contents, so an edit asked again (a re-ask, the service's next question) costs no git."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from proximity import gitio
from proximity.agents import scratch
from proximity.agents.edits import Target
from proximity.agents.kept import remember
from proximity.analysis import hunks
from proximity.model import Range

PLACED: dict[tuple[bytes, bytes], tuple[Range, ...]] = {}


class Asked(NamedTuple):
    known: dict[int, tuple[Range, ...]]  # target index -> its lines (kept)
    asked: list[tuple[int, tuple[bytes, bytes]]]  # target index, key: one git job each
    jobs: list[tuple[list[str], str]]  # git diff --no-index of the file now and after


def asked(targets: Sequence[Target], root: str, typed: Collection[str],
          read: Mapping[str, bytes | None]) -> Asked:
    """The git jobs that place the targets whose result is known (an editor's buffer is
    left out: it asks the lines typed, as the editor says). ``read``: files the caller
    read already, by path (the rest is read here)."""
    known: dict[int, tuple[Range, ...]] = {}
    out, jobs = [], []
    for i, t in enumerate(targets):
        if t.result is None or t.ranges is None or t.path in typed:
            continue
        path = os.path.join(root, t.path)
        now = read[path] if path in read else scratch.read_bytes(path)
        if now is None:
            continue
        key = (hashlib.sha1(now).digest(), hashlib.sha1(t.result).digest())
        if key in PLACED:
            known[i] = PLACED[key]
            continue
        out.append((i, key))
        # line ends aside: a harness may give a CRLF file's result with LF ends (it read
        # the file with them), which is no change of every line
        now, result = now.replace(b"\r\n", b"\n"), t.result.replace(b"\r\n", b"\n")
        jobs.append((gitio.file_diff_args(scratch.holding(now), scratch.holding(result)),
                     root))
    return Asked(known, out, jobs)


def placed(targets: Sequence[Target], a: Asked, answers: Sequence[bytes | None]
           ) -> list[Target]:
    """The targets with git's lines where git answered (no answer, or no change: the
    edit's own lines stand)."""
    got = dict(a.known)
    for (i, key), raw in zip(a.asked, answers, strict=True):
        lines = tuple(sorted(h.base for d in hunks.parse(
            (raw or b"").decode("utf-8", "replace")).values() for h in d.hunks))
        if raw is not None and lines:
            remember(PLACED, {key: lines})
            got[i] = lines
    return [t._replace(ranges=got[i]) if got.get(i) else t for i, t in enumerate(targets)]
