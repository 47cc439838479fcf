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

import re
from collections.abc import Iterable, Sequence

from proximity.errors import UsageError

Range = tuple[int, int]
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


SPEC = re.compile(r"^(.*?):(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)$")


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


def parse_intent(spec: str) -> tuple[str, list[tuple[int, int]] | None]:
    """``path`` or ``path:10-20,30`` -> (path, ranges or None for the whole file)."""
    path, ranges = parse_spec(spec)
    return path.strip("/"), None if ranges is None else list(ranges)
