"""Symbol channel: one side changes a definition the other side's new code refers to.

The analysis (name resolution, call binding, aliases, module moves) lives in
``proximity.symbols``; its findings already carry calibrated probabilities per evidence class.
A file that does not parse is unknown (None), never "every definition removed".
"""

from __future__ import annotations

from proximity import depgraph, symbols
from proximity.channels import Evidence, Result

NAME = "symbol"


def run(ev: Evidence) -> Result:
    pw = ev.scope
    pw.ensure_graph(ev.agents)
    edges = [] if pw.deferred else pw.agent_edges(ev.a, ev.wa) + pw.agent_edges(ev.b, ev.wb)
    view = depgraph.View(pw.graph, edges)
    value, findings = symbols.channel(pw.repo.blob, ev.wa, ev.wb, pw.facts.symbols_cache, view,
                                      pw.resolver())
    return Result(value, list(findings))
