"""Dependency channel: one side's changed file reaches the other's through imports.

The repository-wide import graph (base graph plus each side's new import edges) couples two
changed files at undirected distance d with gamma^(d-1) (hub files damped in transit, see
``proximity.analysis.depgraph``). The evidence class is the distance (``import-1`` for a
direct import, ``import-2`` through one untouched file, ...); its calibrated probability — a
direct import alone is a few percent, not a collision — is scaled by the hub damping the
coupling carries. An import between the two live trees is a fact of both: it holds at full
weight for as long as both trees have it (no recency decay). Unknown while the graph is not
built yet.
"""

from __future__ import annotations

from dataclasses import replace

from proximity import calibration
from proximity.analysis import reach
from proximity.channels.evidence import Evidence, Result

NAME = "dependency"
DEFAULTS = {"import-1": 0.05, "import-2": 0.03, "import-3": 0.02, "import-4": 0.01}


def kind_of(route: tuple[str, ...]) -> str:
    return f"import-{min(4, max(1, len(route) - 1))}"


def run(ev: Evidence) -> Result:
    pw = ev.scope
    pw.ensure_graph(ev.agents)
    if pw.deferred:
        return Result(None, [])  # unknown until the graph is built, never "clean"
    ea, eb = pw.agent_edges(ev.a, ev.wa), pw.agent_edges(ev.b, ev.wb)
    _, raw = reach.pair_channel(pw.reach(ev.a, ev.wa, ea, ev.base_tree),
                                   pw.reach(ev.b, ev.wb, eb, ev.base_tree))
    findings = []
    for f in raw:
        kind = kind_of(f.route)
        d = len(f.route) - 1
        # the coupling is gamma^(d-1) x hub damping; keep the damping
        rest = f.score / (ev.cfg.gamma ** max(0, d - 1)) if ev.cfg.gamma else 0.0
        p = calibration.probability(NAME, kind, DEFAULTS[kind]) * min(1.0, rest)
        findings.append(replace(f, score=p, kind=kind))
    findings.sort(key=lambda f: -f.score)
    return Result(findings[0].score if findings else 0.0, findings)
