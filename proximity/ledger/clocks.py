"""D-T-D vector clocks: one entry per stream (worktree); pure functions over dicts."""

from __future__ import annotations

from collections.abc import Mapping

Clock = Mapping[str, int]


def tick(clock: Clock, stream: str) -> dict[str, int]:
    out = dict(clock)
    out[stream] = out.get(stream, 0) + 1
    return out


def merge(*clocks: Clock) -> dict[str, int]:
    """Element-wise max (debrief)."""
    out: dict[str, int] = {}
    for c in clocks:
        for k, v in c.items():
            out[k] = max(out.get(k, 0), v)
    return out


def dominates(a: Clock, b: Clock) -> bool:
    """a has seen everything b has (a >= b element-wise)."""
    return all(a.get(k, 0) >= v for k, v in b.items())


def concurrent(a: Clock, b: Clock) -> bool:
    """Neither clock dominates the other; unknown (empty) clocks count as concurrent."""
    if not a or not b:
        return True
    return not (dominates(a, b) or dominates(b, a))


def hop_count(edge: Clock, ref: Clock) -> int:
    """Sum over streams present in ``edge`` of how far ``ref`` moved past it."""
    return sum(max(0, ref.get(k, 0) - v) for k, v in edge.items())


def backward_decay(hops: int, floor: float = 0.15) -> float:
    return max(floor, 1.0 - hops / 10.0)


def forward_decay(hops: int) -> float:
    if hops <= 5:
        return 1.0
    return max(0.0, 1.0 - (hops - 5) / 15.0)
