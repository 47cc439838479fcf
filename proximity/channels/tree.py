"""Tree channel: the seed's path-prefix proximity, a soft prior.

``treeprox.channel`` gives 1 - the smallest tree distance between the two sides' files
(intents included); the evidence class is its fifth (``b0`` … ``b4``), whose calibrated
probability is small: being near in the tree is a prior, never a collision by itself. It
has no findings of its own (it names no lines). The paths both trees changed are a fact of
both: no recency decay.
"""

from __future__ import annotations

from proximity import calibration
from proximity.analysis import treeprox
from proximity.channels.evidence import Evidence, Result

NAME = "tree"
DEFAULTS = {"b0": 0.015, "b1": 0.045, "b2": 0.075, "b3": 0.105, "b4": 0.15}


def kind_of(raw: float) -> str:
    return f"b{min(4, int(raw * 5))}"


def value(a: set[str], b: set[str]) -> Result:
    raw = treeprox.channel(a, b)
    if raw <= 0:
        return Result(0.0, [])
    kind = kind_of(raw)
    return Result(calibration.probability(NAME, kind, DEFAULTS[kind]), [])


def run(ev: Evidence) -> Result:
    return value(ev.wa.touched() | set(ev.wa.intents), ev.wb.touched() | set(ev.wb.intents))
