"""The scan engine: who is flying and how close (live git state -> working sets -> channels
-> pair results)."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from proximity import channels, gitio
from proximity.analysis import depgraph, parsers, resolve
from proximity.analysis.intervals import Range
from proximity.config import Config
from proximity.errors import FatalError
from proximity.ledger import clocks
from proximity.model import Agent, FileChange, Finding, PairResult, WorkingSet
from proximity.tcas import risk
from proximity.tcas.memo import (
    REACHES,
    RESOLVERS,
    channel_key,
    content_key,
    kept_by_content,
    memo_get,
    memo_put,
    work_key,
)
from proximity.tcas.rightofway import (
    Contested,
    contested_of,
    in_order,
    lines_of_work,
    priority,
    shared_priority,
    standing,
)

COLD_GRAPH_FILES = 2000  # parseable files above which a hook defers the first graph build
Recency = Callable[[str, Mapping[str, str]], dict[str, float]]


@dataclass
class Facts:
    """What the ledger knows, handed to the scan as plain data (all optional)."""
    started: dict[str, float] = field(default_factory=dict)
    clocks: dict[str, dict[str, int]] = field(default_factory=dict)
    intents: dict[str, dict[str, tuple[Range, ...] | None]] = field(default_factory=dict)
    intent_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    recency: Recency | None = None
    history: Callable[[str, str], list[tuple[float, float, float]]] | None = None
    # ledger order of first work (stream, paths, committed(old head, new head, path))
    reached: Callable[[str, set[str], Callable[[str, str, str], bool]], int | None] | None = None
    # a pair's standing right-of-way decision: (told to yield, ledger order when told,
    # the other side's committed lines then)
    held: Callable[[str, str], tuple[str, int, int] | None] | None = None
    held_files: Callable[[str, str], tuple[str, ...] | None] | None = None
    # the yield graph: agent -> the agents it yields to (standing decisions still at RA,
    # then this scan's own): a new decision never closes a cycle in it
    yields: dict[str, set[str]] = field(default_factory=dict)
    imports_cache: dict[str, Any] = field(default_factory=dict)
    symbols_cache: dict[str, Any] = field(default_factory=dict)
    pair_cache: dict[str, Any] = field(default_factory=dict)
    graph_cache: dict[str, Any] = field(default_factory=dict)  # ref tree -> resolved graph
    # hooks set this: never parse a whole repository inside a git command (first run only)
    defer_cold_graph: bool = False
    graph_ever_built: bool = True
    remote: list[Agent] = field(default_factory=list)
    created: dict[str, float] = field(default_factory=dict)  # stream -> creation time
    machine: str = ""  # this machine's id, for pairs that involve remote agents
    # the resident service keeps one across scans: each pair's channel results keyed by
    # everything the channels read (both states, base, working-set weights and intents,
    # the graph's reference commit), and resolvers keyed by their paths
    memo: dict[Any, Any] | None = None
    # a progress bar for long work (views/progress.bar), for commands run on a terminal
    progress: Callable[[str, int], AbstractContextManager[Callable[[int], None]]] | None = None


@dataclass
class Scan:
    agents: list[Agent]
    pairs: list[PairResult]
    retired: list[str] = field(default_factory=list)
    seconds: float = 0.0
    changed: dict[str, set[str]] = field(default_factory=dict)  # agent -> paths, any base
    timing: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    graph: Any = None  # the import graph of the reference tree (for the view)
    graph_deferred: bool = False  # the first graph was left for a background warm-up
    paths: set[str] = field(default_factory=set)  # files of the reference tree
    # right-of-way as one order: agent -> the live agents it waits for (acyclic)
    yields: dict[str, set[str]] = field(default_factory=dict)

    def involving(self, agent_id: str) -> list[PairResult]:
        return [p for p in self.pairs if agent_id in (p.a, p.b)]


def live_agents(repo: gitio.Repo, index_override: Mapping[str, str] | None = None,
                known: MutableMapping[str, Any] | None = None) -> tuple[list[Agent], list[str]]:
    """Snapshot every live worktree (in parallel: it is git's work, not Python's)."""
    from concurrent.futures import ThreadPoolExecutor

    live = []
    retired: list[str] = []
    for wt in repo.worktrees():
        (retired.append(wt.id) if wt.prunable else live.append(wt))

    def tree_of(wt: gitio.WorktreeInfo) -> str | Exception:
        try:
            return repo.snapshot_tree(wt, (index_override or {}).get(wt.id))
        except (FatalError, OSError) as e:
            return e

    workers = min(8, max(1, len(live)), (os.cpu_count() or 2) * 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(tree_of, wt) for wt in live]
        repo.pg  # noqa: B018 -- load libgit2 while git works in the threads
        trees = [f.result() for f in futures]
    out = []
    for wt, tree in zip(live, trees, strict=True):
        if isinstance(tree, Exception):
            out.append(Agent(wt.id, wt.path, wt.branch, wt.head, error=str(tree)))
            continue
        # snapshot commits are content-addressed: the same (tree, head) has one id; a
        # cached id whose object `git gc` removed is made again
        key = f"snap:{tree}:{wt.head}"
        snap = (known or {}).get(key)
        if not snap or not repo.has_object(snap):
            snap = repo.snapshot_commit(tree, wt.head)
            if known is not None:
                known[key] = snap
        out.append(Agent(wt.id, wt.path, wt.branch, wt.head, snap, tree,
                         subject=repo.subject(wt.head),
                         operation=gitio.operation_in_progress(wt.admin) if wt.admin else None))
    return out, retired


class _Pairwise:
    """Per-scan memo of bases, working sets, graphs; shared across all pairs."""
    def __init__(self, repo: gitio.Repo, cfg: Config, facts: Facts) -> None:
        self.repo, self.cfg, self.facts = repo, cfg, facts
        self.changes: dict[tuple[str, str], list[FileChange]] = {}
        self.graph: depgraph.Graph | depgraph.StoredGraph | depgraph.Edges | None = None
        self.graph_tree = ""
        self.deferred = False
        self._resolver: resolve.Resolver | None = None
        self.paths: set[str] = set()
        self.go_mods: dict[str, str] = {}
        self.edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.changed: dict[str, set[str]] = {}
        self.reaches: dict[tuple[str, str], depgraph.Reach] = {}
        self.sets: dict[tuple[str, str], WorkingSet] = {}
        self.committed: dict[tuple[str, str], dict[str, FileChange]] = {}

    def working_set(self, agent: Agent, base_tree: str) -> WorkingSet:
        """The agent's working set against one base (memoised: pairs share bases)."""
        memo_key = (agent.id, base_tree)
        if memo_key not in self.sets:
            self.sets[memo_key] = self._working_set(agent, base_tree)
        return self.sets[memo_key]

    def _working_set(self, agent: Agent, base_tree: str) -> WorkingSet:
        key = (base_tree, agent.tree or "")
        if key not in self.changes:
            self.changes[key] = self.repo.changes(base_tree, agent.tree or gitio.EMPTY_TREE,
                                                  self.cfg.max_diff_bytes)
        files = {fc.dest: fc for fc in self.changes[key] if not self.cfg.excluded(fc.dest)}
        weights: dict[str, float] = {}
        if self.facts.recency is not None:
            weights = self.facts.recency(agent.id, {p: fc.new_oid for p, fc in files.items()})
        intents = self.facts.intents.get(agent.id, {})
        return WorkingSet(files, weights, dict(intents),
                          dict(self.facts.intent_weights.get(agent.id, {})))

    def ensure_graph(self, agents: list[Agent]) -> None:
        """The import graph of the reference tree (main's HEAD), cached by tree id."""
        if self.graph is not None:
            return
        ref = next((a for a in agents if a.id == "main" and a.head), None) or next(
            (a for a in agents if a.head), None)
        tree = self.repo.commit_tree(ref.head) if ref else gitio.EMPTY_TREE
        self.graph_tree = tree
        key = f"{depgraph.CACHE_FORMAT}:{tree}"
        memo = self.facts.memo
        loaded = memo.get(("graph", key)) if memo is not None else None
        cached = self.facts.graph_cache.get(key) if loaded is None else None
        if cached is not None:
            try:
                loaded = depgraph.Graph.from_json(cached)
            except (KeyError, IndexError, TypeError, ValueError):
                loaded = None  # damaged or foreign cache entry: rebuild it
        if loaded is not None:
            if memo is not None and isinstance(loaded[0], depgraph.StoredGraph):
                # the resident service: decoded once per tree, kept as a networkx graph
                loaded = (depgraph.Graph.of(loaded[0]), *loaded[1:])
                memo[("graph", key)] = loaded
            self.graph, paths, go_mods = loaded
            self.paths = set(paths)
        else:
            files = self.repo.files(tree) if ref else {}
            if (self.facts.defer_cold_graph and not self.facts.graph_ever_built
                    and sum(1 for p in files if parsers.language_of(p)) > COLD_GRAPH_FILES):
                # the first graph of a large repository parses every file: not inside a
                # hook. The dependency channel is unknown this time (never "clean"); the
                # caller starts a background warm-up.
                self.graph, self.paths, self.go_mods = depgraph.Edges(), set(files), {}
                self.deferred = True
                return
            with (self.facts.progress("reading every file's imports (first scan)",
                                      len(files)) if self.facts.progress is not None
                  else contextlib.nullcontext(None)) as tick:
                self.graph, resolver = depgraph.build(files, self.repo.blob,
                                                      self.facts.imports_cache, tick)
            self.paths, go_mods = set(files), resolver.go_mods
            self.facts.graph_cache.clear()
            self.facts.graph_cache[key] = self.graph.to_json(self.paths, go_mods)
        self.go_mods = go_mods

    def resolver(self) -> resolve.Resolver:
        if self._resolver is None:
            extra = {fc.dest for fcs in self.changes.values() for fc in fcs
                     if fc.status != "D"}
            memo = self.facts.memo
            key = ("resolver", self.graph_tree, frozenset(extra - self.paths),
                   tuple(sorted(self.go_mods.items())))
            kept = memo_get(memo, "resolver", key)
            if kept is None:
                kept = resolve.Resolver(self.paths | extra)
                kept.set_go_mods(self.go_mods)
                memo_put(memo, "resolver", key, kept, RESOLVERS)  # each holds every path
            self._resolver = kept
        return self._resolver

    def reach(self, agent: Agent, ws: WorkingSet, edges: list[tuple[str, str]],
              base_tree: str) -> depgraph.Reach:
        key = (agent.id, base_tree)
        if key not in self.reaches:
            assert self.graph is not None
            memo = self.facts.memo
            # across scans (the resident service): by everything a reach is made of
            mk = ("reach", self.graph_tree, agent.id, agent.tree, base_tree, work_key(ws),
                  tuple(edges)) if memo is not None else None
            kept = memo_get(memo, "reach", mk)
            if kept is None:
                kept = depgraph.Reach(self.graph, ws, edges, self.cfg.gamma,
                                      self.cfg.depth_cap, self.cfg.hub_degree)
                memo_put(memo, "reach", mk, kept, REACHES)
            self.reaches[key] = kept
        return self.reaches[key]

    def committed_lines(self, agent: Agent, base: str | None, contested: Contested) -> int:
        """Committed work in the contested region since the base: the changed lines of the
        commits between the base and the agent's HEAD whose hunks lie within ``near_lines``
        of the contested base lines (the whole file where the region has no lines: an
        exact conflict without line evidence, a symbol). Padding elsewhere in the file, a
        commit in another file, or the commits a rebase has replayed so far buy nothing."""
        if not contested or not agent.head or agent.operation or agent.head == base:
            return 0
        key = (agent.head, base or "")
        if key not in self.committed:
            base_tree = self.repo.commit_tree(base) if base else gitio.EMPTY_TREE
            self.committed[key] = {
                p: fc for fc in self.repo.changes(
                    base_tree, self.repo.commit_tree(agent.head), self.cfg.max_diff_bytes)
                for p in fc.paths}
        changes = self.committed[key]
        total = 0
        for path, region in contested.items():
            fc = changes.get(path)
            if fc is not None:
                total += lines_of_work(fc, region, self.cfg.near_lines)
        return total

    def agent_edges(self, agent: Agent, ws: WorkingSet) -> list[tuple[str, str]]:
        """Import edges of an agent's changed files, resolved in the reference tree and
        cached per (reference tree, path, blob) so the resolver is rarely built."""
        key = (agent.id, agent.tree or "")
        if key not in self.edges:
            out: list[tuple[str, str]] = []
            cache = self.facts.pair_cache
            for p, fc in sorted(ws.files.items()):
                if not fc.new_oid or fc.kind != "text" or parsers.language_of(p) is None:
                    continue  # no parser, no edges: nothing worth a cache row per commit
                ck = f"edges:{depgraph.CACHE_FORMAT}:{self.graph_tree}:{p}:{fc.new_oid}"
                dsts = cache.get(ck)
                if dsts is None:
                    dsts = [d for _, d in depgraph.edges_of(
                        {p: fc.new_oid}, self.repo.blob, self.facts.imports_cache,
                        self.resolver())]
                    cache[ck] = dsts
                out.extend((p, d) for d in dsts)
            self.edges[key] = out
        return self.edges[key]


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


def assess(pw: _Pairwise, a: Agent, b: Agent, all_agents: list[Agent]) -> PairResult:
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
        r, adv = max(0.0, cfg.tau_ra - risk.SOFT_MARGIN), risk.TRAFFIC
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
        yielding = in_order(facts, a.id, b.id, yielding)
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
    pw = _Pairwise(repo, cfg, facts)
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
                yields={x: ys for x, ys in yields.items() if ys})
