"""Noisy-OR combination, TCAS bands, right-of-way and closure rate: pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from proximity import calibration

CLEAR, TRAFFIC, RESOLUTION = "clear", "traffic", "resolution"
ORDER = {CLEAR: 0, TRAFFIC: 1, RESOLUTION: 2}


def noisy_or(values: Mapping[str, float | None], weights: Mapping[str, float]) -> float:
    """R = 1 - prod(1 - w_i r_i); unknown channels (None) contribute nothing."""
    keep = 1.0
    for name, r in values.items():
        if r is None:
            continue
        r = min(1.0, max(0.0, r))
        keep *= 1.0 - min(1.0, max(0.0, weights.get(name, 0.0))) * r
    return min(1.0, max(0.0, 1.0 - keep))


def combine(values: Mapping[str, float | None], weights: Mapping[str, float],
            tau_ra: float) -> float:
    """Noisy-OR of calibrated channels, where an RA needs evidence of a real collision.

    Soft evidence (an import, a nearby edit, a shared directory) must not add up to a
    Resolution Advisory by accident: unless one weighted channel on its own reaches
    ``tau_ra``, the combined risk stays just below it (a traffic advisory at most).
    """
    r = noisy_or(values, weights)
    strongest = max((min(1.0, max(0.0, weights.get(k, 0.0))) * v
                     for k, v in values.items() if v is not None), default=0.0)
    if r >= tau_ra and strongest < tau_ra:
        return max(0.0, tau_ra - calibration.SOFT_MARGIN)
    return r




def band(risk: float, tau_ta: float, tau_ra: float) -> str:
    if risk >= tau_ra:
        return RESOLUTION
    if risk >= tau_ta:
        return TRAFFIC
    return CLEAR


Priority = tuple[int, float, str]


def priority(committed: int, started: float | None, agent_id: str) -> Priority:
    """Sort key: smaller wins right-of-way. More committed work, then earlier start, then id."""
    return (-committed, started if started is not None else float("inf"), agent_id)


def yielding(a: str, pa: Priority, b: str, pb: Priority) -> str:
    """The agent that must steer away: the one with the lower priority."""
    return b if pa <= pb else a


def closure(samples: Sequence[tuple[float, float, float]]) -> tuple[float | None, float | None]:
    """Closure rate from (hops, seconds, risk) samples, oldest first: (dR/hop, dR/second)."""
    if len(samples) < 2:
        return None, None
    (h0, t0, r0), (h1, t1, r1) = samples[-2], samples[-1]
    per_hop = (r1 - r0) / (h1 - h0) if h1 > h0 else None
    per_s = (r1 - r0) / (t1 - t0) if t1 > t0 else None
    return per_hop, per_s


def escalate(advisory: str, risk: float, per_hop: float | None, tau_ta: float, tau_ra: float,
             threshold: float) -> bool:
    """True when a fast closure should raise the advisory one level before its threshold.

    A clear pair within ``threshold`` of tau_TA, or a traffic pair within ``threshold`` of
    tau_RA, that gained at least ``threshold`` risk per hop is expected to cross within one
    more hop: both agents are told now. Escalation changes the messages, never the push
    block, which needs a real RA.
    """
    if per_hop is None or per_hop < threshold:
        return False
    if advisory == CLEAR:
        return risk + per_hop >= tau_ta
    if advisory == TRAFFIC:
        return risk + per_hop >= tau_ra
    return False
