"""Interval arithmetic on base-side line ranges, without materialising lines.

A change is a closed range ``(start, end)`` of 1-based base line numbers; a pure insertion
after line ``p`` is the empty range ``(p + 1, p)``. Git's merge reports a conflict when two
changes leave no unchanged base line between them (overlap, adjacency, or two insertions at
the same point). Padding every range by one line on each side, to ``[start - 1, end + 1]``,
turns that rule into plain geometry: two changes collide exactly when their padded intervals
share a stretch of positive length. Every change, insertions included, then has a positive
measure (``end - start + 2``), so the overlap coefficient is defined for all of them.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Sequence

from proximity.errors import UsageError
from proximity.model import Range
from proximity.safetext import text

Span = tuple[int, int]  # padded, closed, always hi > lo


def pad(ranges: Iterable[Range]) -> list[Span]:
    """Padded, sorted, merged spans. Malformed ranges (end < start - 1) are clamped."""
    spans = sorted((s - 1, max(e, s - 1) + 1) for s, e in ranges)
    merged: list[Span] = []
    for lo, hi in spans:
        if merged and lo < merged[-1][1]:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def measure(spans: Sequence[Span]) -> int:
    return sum(hi - lo for lo, hi in spans)


def intersection(a: Sequence[Span], b: Sequence[Span]) -> int:
    """Length of the intersection of two merged span lists (two-pointer sweep)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_coefficient(a: Sequence[Range], b: Sequence[Range]) -> float:
    """|A ∩ B| / min(|A|, |B|) on padded intervals; 0.0 when either side is empty."""
    pa, pb = pad(a), pad(b)
    if not pa or not pb:
        return 0.0
    return intersection(pa, pb) / min(measure(pa), measure(pb))


def touching(a: Sequence[Range], b: Sequence[Range]) -> list[tuple[Range, Range]]:
    """Pairs of ranges git would merge as one conflicting region (sorted sweep)."""
    sa = sorted(a)
    sb = sorted(b)
    out: list[tuple[Range, Range]] = []
    j0 = 0
    for ra in sa:
        lo_a, hi_a = ra[0] - 1, max(ra[1], ra[0] - 1) + 1
        while j0 < len(sb) and max(sb[j0][1], sb[j0][0] - 1) + 1 <= lo_a:
            j0 += 1
        j = j0
        while j < len(sb) and sb[j][0] - 1 < hi_a:
            hi_b = max(sb[j][1], sb[j][0] - 1) + 1
            if min(hi_a, hi_b) > max(lo_a, sb[j][0] - 1):
                out.append((ra, sb[j]))
            j += 1
    return out


def gap(a: Sequence[Range], b: Sequence[Range]) -> int | None:
    """Fewest unchanged base lines between a change of ``a`` and one of ``b``.

    0 means they touch (git would conflict); None when either side is empty.
    """
    pa, pb = pad(a), pad(b)
    if not pa or not pb:
        return None
    best: int | None = None
    i = j = 0
    while i < len(pa) and j < len(pb):
        (alo, ahi), (blo, bhi) = pa[i], pb[j]
        if min(ahi, bhi) > max(alo, blo):
            return 0
        # padded spans that meet at a point leave exactly one unchanged line between
        d = (blo - ahi + 1) if ahi <= blo else (alo - bhi + 1)
        best = d if best is None else min(best, d)
        if ahi < bhi:
            i += 1
        else:
            j += 1
    return best


# line numbers: ASCII digits, nine at most (a line past 999,999,999 is no file's; more
# digits, or another script's digits, are a typo said as such, never a crash or a range)
LINE = r"[0-9]{1,9}"
SPEC = re.compile(rf"^(.*?):({LINE}(?:-{LINE})?(?:,{LINE}(?:-{LINE})?)*)$")


def parse_spec(spec: str) -> tuple[str, tuple[Range, ...] | None]:
    """``path`` or ``path:10-20,30`` -> (path, 1-based ranges or None for the whole file)."""
    m = SPEC.match(spec)
    if not m:
        return spec, None
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        s, e = int(lo), int(hi or lo)
        if e < s or s < 1:
            raise UsageError(f"bad line range {part!r} in {spec!r} (want START-END, 1-based)")
        out.append((s, e))
    return m.group(1), tuple(out)


def lines_typo(cwd: str, path: str, ranges: tuple[Range, ...] | None) -> None:
    """UsageError for a spec whose line ranges did not parse and read as part of the name
    (``app.py:x``): a name nobody has, where the part before the colon is a file. Checked
    or declared as written, it would be a file nobody works on."""
    head, sep, tail = path.rpartition(":")
    if ranges is None and sep and head and not os.path.lexists(os.path.join(cwd, path)) \
            and os.path.isfile(os.path.join(cwd, head)):
        raise UsageError(f"bad line range {text(tail, 40)!r} in {text(path, 300)!r} (want "
                         "START-END, 1-based)")


def parse_intent(spec: str, workdir: str, cwd: str | None = None
                 ) -> tuple[str, list[tuple[int, int]] | None]:
    """``path`` or ``path:10-20,30`` -> (path confined to the worktree at ``workdir``, see
    :func:`confine`; ranges or None for the whole file). ``cwd``: where a relative path
    is read from (the worktree by default)."""
    path, ranges = parse_spec(spec)
    lines_typo(cwd or workdir, path, ranges)
    return confine(workdir, path), None if ranges is None else list(ranges)


MAX_PATH_BYTES = 4096  # the system's PATH_MAX: no longer name is a file
MAX_SPECS = 1000  # paths one request names (an agent's look-ahead, not a file listing)
MAX_SPEC_CHARS = MAX_PATH_BYTES + 4096  # a path and its line ranges


def bounded_specs(specs: Sequence[str]) -> list[str]:
    """``specs`` as given, or UsageError when there are too many, one is too long or holds
    a NUL (checked before any is parsed: what an agent sends is bounded before the work)."""
    if len(specs) > MAX_SPECS:
        raise UsageError(f"{len(specs)} paths in one request: at most {MAX_SPECS}")
    for spec in specs:
        if len(spec) > MAX_SPEC_CHARS:
            raise UsageError(f"a path of {len(spec)} characters ({spec[:60]!r}…): at most "
                             f"{MAX_SPEC_CHARS}")
        if "\0" in spec:
            raise UsageError(f"{spec[:200]!r} holds a NUL byte: no file is named so")
    return list(specs)


def confine(workdir: str, path: str) -> str:
    """``path`` (relative to the worktree root, or absolute inside the worktree) as the
    normalised, '/'-separated path from the root; UsageError when it leaves the worktree
    (``..``, an absolute path elsewhere), names the root itself or git's own directory,
    holds a NUL or is longer than any file name. Lexical: what is declared is a name, and
    a name inside the worktree is what siblings compare."""
    shown = f"{path[:200]!r}"
    if "\0" in path:
        raise UsageError(f"{shown} holds a NUL byte: no file is named so")
    try:
        size = len(os.fsencode(path))
    except UnicodeError:
        raise UsageError(f"{shown} cannot be a file name here") from None
    if size > MAX_PATH_BYTES:
        raise UsageError(f"a path of {size} bytes ({path[:60]!r}…): at most {MAX_PATH_BYTES}")
    rel = posixpath.normpath(path.replace(os.sep, "/"))
    if posixpath.isabs(rel):
        rel = _inside(rel, workdir)
    if rel in (".", "..") or rel.startswith("../") or posixpath.isabs(rel):
        raise UsageError(f"{shown} is outside this worktree ({workdir})")
    if rel.split("/", 1)[0] == ".git":
        raise UsageError(f"{shown} is git's own, not a file of the worktree")
    return rel


def _inside(full: str, workdir: str) -> str:
    """An absolute ``full`` relative to the worktree root (as given, or with its links
    resolved); unchanged (absolute) when it is under neither."""
    for root in dict.fromkeys((posixpath.normpath(workdir),
                               posixpath.normpath(os.path.realpath(workdir)))):
        if full == root or full.startswith(root.rstrip("/") + "/"):
            return posixpath.relpath(full, root)
    return full


def fmt_ranges(ranges: Sequence[Range]) -> str:
    """Ranges as people read them: "3-7", "12", "after line 40" (an insertion), at most six
    (then "(+N)")."""
    parts = []
    for s, e in ranges[:6]:
        parts.append(f"after line {s - 1}" if e < s else (f"{s}" if s == e else f"{s}-{e}"))
    more = f" (+{len(ranges) - 6})" if len(ranges) > 6 else ""
    return ", ".join(parts) + more
