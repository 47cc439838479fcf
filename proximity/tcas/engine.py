"""The scan engine: who is flying and how close (live git state -> working sets -> channels
-> pair results)."""

from __future__ import annotations

import itertools
import time

from proximity import calibration, channels, gitio
from proximity.config import Config
from proximity.ledger import clocks
from proximity.model import Agent, Facts, Finding, PairResult, Scan
from proximity.snapshot.agents import live_agents
from proximity.tcas import risk
from proximity.tcas.memo import channel_key, content_key, kept_by_content
from proximity.tcas.pairwise import Pairwise
from proximity.tcas.rightofway import (
    cleared,
    contested_of,
    in_order,
    landed,
    ordered,
    priority,
    shared_priority,
    standing,
)


def _concurrent(repo: gitio.Repo, a: Agent, b: Agent, facts: Facts) -> bool:
    """Only concurrent work can collide.

    One clock dominating the other is necessary but not enough: a stream that inherited a
    clock (brief) did not inherit the other's uncommitted work or its intents. The pair is
    ordered only when git confirms the dominated side's whole working state is in the
    other's history and it declared no intents.
    """
    ca, cb = facts.clocks.get(a.id) or a.clock, facts.clocks.get(b.id) or b.clock
    if clocks.concurrent(ca, cb):
        return True
    for old, new, c_old, c_new in ((a, b, ca, cb), (b, a, cb, ca)):
        if (clocks.dominates(c_new, c_old) and old.head and new.head
                and not facts.intents.get(old.id)  # intents are work in nobody's history
                and old.tree == repo.commit_tree(old.head)
                and repo.is_ancestor(old.head, new.head)):
            return False
    return True


def assess(pw: Pairwise, a: Agent, b: Agent, all_agents: list[Agent]) -> PairResult:
    repo, cfg, facts = pw.repo, pw.cfg, pw.facts
    if a.error or b.error:
        why = a.error or b.error or ""
        return PairResult(a.id, b.id, 0.0, dict.fromkeys(channels.ORDER),
                          risk.CLEAR, None, (Finding("error", 0.0, detail=f"unknown: {why}"),))
    base = repo.merge_base(a.head, b.head)
    base_tree = repo.commit_tree(base) if base else gitio.EMPTY_TREE
    wa, wb = pw.working_set(a, base_tree), pw.working_set(b, base_tree)
    pw.changed.setdefault(a.id, set()).update(wa.files)
    pw.changed.setdefault(b.id, set()).update(wb.files)
    conc = _concurrent(repo, a, b, facts)
    ev = channels.Evidence(a, b, wa, wb, base, base_tree, cfg, pw, agents=all_agents)
    key = channel_key(a, b, wa, wb, base, base_tree, all_agents, facts) \
        if facts.memo is not None else None
    kept = facts.memo.get(key) if facts.memo is not None else None
    content = content_key(a, b, wa, wb, base, base_tree, key) \
        if facts.memo is not None and key is not None else None
    if kept is None and content is not None and facts.memo is not None:
        kept = kept_by_content(repo, facts.memo, content, a, b)
    if kept is not None:
        values, findings = dict(kept[0]), list(kept[1])
    else:
        values, findings = channels.run_all(ev)
        findings += [Finding("error", 0.0, detail=f"unknown: the live changes of {x.id!r} "
                             f"could not be read ({x.unread}); judged on its commits")
                     for x in (a, b) if x.unread]
        if facts.memo is not None:
            facts.memo[key] = (dict(values), tuple(findings))
            if content is not None:
                facts.memo[content] = (a.head, b.head, facts.memo[key])
    r = risk.combine(values, cfg.weights, cfg.tau_ra) if conc else 0.0
    adv = risk.band(r, cfg.tau_ta, cfg.tau_ra)
    in_progress = {x.id: x.operation for x in (a, b) if x.operation}
    if in_progress and adv == risk.RESOLUTION:
        # a worktree in the middle of a rebase/merge/... blocks nobody (and its replayed
        # commits buy no right-of-way): shown as traffic until the operation ends
        r, adv = max(0.0, cfg.tau_ra - calibration.SOFT_MARGIN), risk.TRAFFIC
    contested = contested_of(findings, cfg.tau_ta)
    # with a remote agent only facts both machines share may decide
    prio = shared_priority if a.remote or b.remote else priority
    pa = prio(pw, a, base, contested, facts)
    pb = prio(pw, b, base, contested, facts)
    per_hop = None
    if facts.history is not None:
        hist = facts.history(a.id, b.id)
        if hist:
            now_hops = float(sum(facts.clocks.get(a.id, {}).values())
                             + sum(facts.clocks.get(b.id, {}).values()))
            per_hop, _ = risk.closure([*hist, (now_hops + 1, time.time(), r)])
    esc = risk.escalate(adv, r, per_hop, cfg.tau_ta, cfg.tau_ra, cfg.closure_escalate)
    findings.sort(key=lambda x: (-x.score, x.channel))
    yielding = risk.yielding(a.id, pa, b.id, pb) if adv == risk.RESOLUTION else None
    if yielding is not None and not (a.remote or b.remote):
        yielding = standing(pw, a, b, base, yielding, contested, facts,
                            {a.id: pa, b.id: pb})
        yielding = ordered(facts, a.id, b.id, yielding)
        yielding = landed(pw, a, b, base, contested, yielding)
        yielding = in_order(facts, a.id, b.id, yielding)
    elif not (a.remote or b.remote):
        cleared(facts, a.id, b.id)
    return PairResult(
        a.id, b.id, r, values, adv, yielding,
        tuple(findings[:12]), base, conc, esc, per_hop, {a.id: pa, b.id: pb}, in_progress,
        tuple(contested),
    )


def scan(repo: gitio.Repo, cfg: Config, facts: Facts | None = None, *,
         focus: str | None = None, agents: list[Agent] | None = None,
         retired: list[str] | None = None) -> Scan:
    t0 = time.perf_counter()
    facts = facts or Facts()
    timing: dict[str, float] = {}
    if agents is None:
        agents, retired = live_agents(repo)
        timing["snapshots"] = time.perf_counter() - t0
    agents = [*agents, *facts.remote]
    pw = Pairwise(repo, cfg, facts)
    pairs = []
    for a, b in itertools.combinations(agents, 2):
        if focus is not None and focus not in (a.id, b.id):
            continue
        if a.remote and b.remote:  # their machines judge those pairs; ours only ours
            continue
        pairs.append(assess(pw, a, b, agents))
    pairs.sort(key=lambda p: -p.risk)
    timing["pairs"] = time.perf_counter() - t0 - timing.get("snapshots", 0.0)
    if pairs:
        pw.ensure_graph(agents)
    live = {a.id for a in agents}
    yields = {x: {y for y in ys if y in live} for x, ys in facts.yields.items() if x in live}
    return Scan(agents, pairs, retired or [], time.perf_counter() - t0, pw.changed, timing,
                graph=pw.graph, graph_deferred=pw.deferred, paths=pw.paths,
                yields={x: ys for x, ys in yields.items() if ys},
                orders={(g, f) for g, f in facts.orders if g in live and f in live})
