"""Channels: each module turns one pair's evidence into a calibrated probability.

A channel module has ``NAME`` and ``run(ev: Evidence) -> Result`` (``evidence.py``). ``run``
returns the probability that a pair with this evidence really collides (textually, or breaks
when run), looked up in the fitted calibration table by evidence class (``Finding.kind``), or
``None`` when the channel could not tell (unknown is never "clean"). ``CHANNELS`` runs the
exact channel first, so later channels can see what git's own merge said
(``ev.prior["conflict"]``).

Adding a channel (call graph, test coverage) is one new module and one entry in
``CHANNELS`` (and a weight in config.py's defaults).

**Facts do not age; claims do.** What a channel reads from the two live trees is a fact of
both: a conflict of git's merge of the two live states (conflict), lines both trees changed
(overlap), an import between them (dependency), a definition one changed that the other's
new code uses -- a call that no longer binds, a removed name (symbol), how near their paths
are (tree). A fact holds at full weight for as long as both trees hold it, whatever the
number of events in between (a ``proximity snapshot`` of an unchanged tree, an aborted
commit, an edit elsewhere), and ends the moment either tree drops it: the next scan reads
the trees again. Decay (the hops since a side last changed a file, the closure rate)
applies only to what can go stale: intents (the forward decay of a claim not yet made,
overlap), the approach band (a forecast that two sides working one region will collide
later, approach: scaled by ``WorkingSet.recency``), and messages (cooldown by hops).
A channel reading ``WorkingSet.recency`` for a fact would let a break that is still there
go quiet while its author edits other files.
"""

from __future__ import annotations

from proximity.channels import approach, conflict, dependency, overlap, symbol, tree
from proximity.channels.evidence import Evidence, Result, Scope
from proximity.model import Finding

# the exact channel first: later ones read what git's own merge said
CHANNELS = (conflict, overlap, approach, dependency, symbol, tree)
ORDER = tuple(c.NAME for c in CHANNELS)

__all__ = ["CHANNELS", "ORDER", "Evidence", "Result", "Scope", "run_all"]


def run_all(ev: Evidence) -> tuple[dict[str, float | None], list[Finding]]:
    values: dict[str, float | None] = {}
    findings: list[Finding] = []
    for channel in CHANNELS:
        res = channel.run(ev)
        ev.prior[channel.NAME] = res
        values[channel.NAME] = res.value
        findings.extend(res.findings)
    return values, findings
