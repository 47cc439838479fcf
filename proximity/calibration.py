"""Calibration: evidence class -> observed collision probability.

Each channel reports its findings with an evidence class (``Finding.kind``). The value a
channel contributes to the noisy-OR is the rate at which pairs with that evidence really
collided (textually, or broke when run) in mined real history, not a hand-picked constant.
``benchmarks/calibrate.py`` fits the table and writes ``calibration_table.py``; this module
only looks values up, so importing it costs nothing.
"""

from __future__ import annotations

from proximity import calibration_table

# How far below tau_RA soft evidence alone is held: a soft channel (import distance, a changed
# body whose callers may still work) must never reach a Resolution Advisory by itself.
SOFT_MARGIN = 0.01


def probability(channel: str, kind: str, default: float) -> float:
    """The fitted probability for ``channel``/``kind``; ``default`` where nothing was fitted."""
    return calibration_table.TABLE.get(channel, {}).get(kind, default)
