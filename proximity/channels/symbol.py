"""Symbol channel: one side changes a definition the other side's new code refers to.

The analysis (name resolution, call binding, aliases, module moves) lives in
``proximity.analysis.symbols``; its findings already carry calibrated probabilities per
evidence class.
A file that does not parse is unknown (None), never "every definition removed".
A finding is a fact of both live trees (this side's definition, the other side's use): it
holds at full weight for as long as both trees have it, however many events pass, and ends
when either side drops the change or the use.

A changed *behaviour* (``value-used``: a constant the other side reads changed value;
``indirect``: a definition it uses reads such a constant; ``body-used``) is approach
evidence, not a broken contract: whatever its calibrated value, it is held below tau_RA
(a traffic advisory at most). Only a removed name, a moved module or a call that no longer
binds can make an RA from this channel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from proximity import calibration
from proximity.analysis import depgraph
from proximity.analysis.symbols import hazard, writes
from proximity.channels.evidence import Evidence, Result

NAME = "symbol"
BEHAVIOUR = frozenset(("value-used", "indirect", "body-used"))


def run(ev: Evidence) -> Result:
    pw = ev.scope
    pw.ensure_graph(ev.agents)
    edges = [] if pw.deferred else pw.agent_edges(ev.a, ev.wa) + pw.agent_edges(ev.b, ev.wb)
    assert pw.graph is not None  # (ensure_graph made one, deferred or not)
    view = depgraph.View(pw.graph, edges)
    base = in_tree(ev, ev.base_tree)
    value, findings = hazard.channel(pw.repo.blob, ev.wa, ev.wb, pw.facts.symbols_cache, view,
                                      pw.resolver(), base_facts=base)
    if any(f.kind not in BEHAVIOUR for f in findings):
        merged = merged_program(ev)
        if merged is not None:  # a contract break only if the merged code still needs it
            value, findings = hazard.channel(pw.repo.blob, ev.wa, ev.wb,
                                             pw.facts.symbols_cache, view, pw.resolver(),
                                             merged, base)
    if not findings:
        return Result(value, [])
    cap = max(0.0, ev.cfg.tau_ra - calibration.SOFT_MARGIN)
    held = [replace(f, score=min(f.score, cap)) if f.kind in BEHAVIOUR else f
            for f in findings]
    held.sort(key=lambda f: -f.score)
    return Result(held[0].score, held)


def merged_program(ev: Evidence) -> hazard.Merged | None:
    """The facts of each file of git's merge of the two live states, where the exact
    channel found that merge clean (None: no merge to judge, or a textual conflict: then
    the two sides are judged apart)."""
    if ev.exact() != frozenset() or not ev.a.snapshot or not ev.b.snapshot:
        return None
    repo = ev.scope.repo
    got = repo.merge_result(ev.a.snapshot, ev.b.snapshot)
    if got is None or got[1]:
        return None
    return in_tree(ev, got[0])


def in_tree(ev: Evidence, tree: str) -> hazard.Merged:
    """The facts of a file of ``tree`` (None: not a file there, or it does not parse)."""
    repo, cache = ev.scope.repo, ev.scope.facts.symbols_cache

    def facts(path: str) -> dict[str, Any] | None:
        oid = repo.blob_id_at(tree, path) if tree else None
        return writes.facts(cache, repo.blob, path, oid) if oid else None

    return facts
