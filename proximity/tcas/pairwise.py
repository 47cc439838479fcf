"""One scan's shared memo: merge bases' working sets, the import graph of the reference
tree, the resolver, each agent's import edges and reach, committed lines per contested
region. Every pair of the scan reads through it (the channels' ``Scope``)."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from proximity import gitio
from proximity.analysis import depgraph, resolve
from proximity.analysis.languages import registry
from proximity.analysis.reach import Reach
from proximity.config import Config
from proximity.errors import FatalError
from proximity.model import Agent, Facts, FileChange, WorkingSet
from proximity.tcas.memo import REACHES, RESOLVERS, memo_get, memo_put
from proximity.tcas.rightofway import Contested, lines_of_work

COLD_GRAPH_FILES = 2000  # parseable files above which a hook defers the first graph build
# a reference tree's import graph: (graph, its files, module roots, the tree whose set of
# paths its resolution read -- the same for every tree it followed to)
GraphEntry = tuple[Any, list[str], dict[str, dict[str, str]], str]


class Pairwise:
    """Per-scan memo of bases, working sets, graphs; shared across all pairs."""
    def __init__(self, repo: gitio.Repo, cfg: Config, facts: Facts) -> None:
        self.repo, self.cfg, self.facts = repo, cfg, facts
        self.changes: dict[tuple[str, str], list[FileChange]] = {}
        self.graph: depgraph.Graph | depgraph.StoredGraph | depgraph.Edges | None = None
        # the reference tree whose graph has the very edges of this one (a commit on main
        # that changed no import keeps it): what a reach kept across scans is keyed by
        self.graph_edges = ""
        self.since = ""  # the tree whose set of paths the graph's resolution read
        self.deferred = False
        self._resolver: resolve.Resolver | None = None
        self.paths: set[str] = set()
        self.roots: resolve.Roots = {}
        self.edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.changed: dict[str, set[str]] = {}
        self.reaches: dict[tuple[str, str], Reach] = {}
        self.sets: dict[tuple[str, str], WorkingSet] = {}
        self.committed: dict[tuple[str, str], dict[str, FileChange]] = {}
        self.tips: list[str] | None = None  # the remotes' trunks (landed_lines)
        # parseable files above which a first graph build is deferred (when the facts say
        # to defer): the pre-edit check, judging one pair in a hook, never builds one
        self.cold_files = COLD_GRAPH_FILES

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
        """The import graph of the reference tree (main's HEAD), cached by tree id, and
        followed from the last one when the tree only modified files in place."""
        if self.graph is not None:
            return
        ref = next((a for a in agents if a.id == "main" and a.head), None) or next(
            (a for a in agents if a.head), None)
        tree = self.repo.commit_tree(ref.head) if ref else gitio.EMPTY_TREE
        key = f"{depgraph.CACHE_FORMAT}:{tree}"
        memo = self.facts.memo
        loaded = (memo.get(("graph", key)) if memo is not None else None) \
            or self._stored(key, tree) or self._followed(tree, key)
        self.graph_edges = (memo.get(("graph-edges", key)) if memo is not None else None) \
            or tree
        if loaded is None:
            files = self.repo.files(tree) if ref else {}
            if (self.facts.defer_cold_graph and not self.facts.graph_ever_built
                    and sum(1 for p in files if registry.dialect_of(p)) > self.cold_files):
                # the first graph of a large repository parses every file: not inside a
                # hook. The dependency channel is unknown this time (never "clean"); the
                # caller starts a background warm-up.
                self.graph, self.paths, self.roots = depgraph.Edges(), set(files), {}
                self.since = tree
                self.deferred = True
                return
            with (self.facts.progress("reading every file's imports (first scan)",
                                      len(files)) if self.facts.progress is not None
                  else contextlib.nullcontext(None)) as tick:
                graph, resolver = depgraph.build(files, self.repo.blob,
                                                 self.facts.imports_cache, tick)
            self._store(key, {**graph.to_json(files, resolver.roots), "since": tree})
            loaded = (graph, list(files), resolver.roots, tree)
            self._keep(key, loaded, resolver)
        self.graph, paths, self.roots, self.since = loaded
        self.paths = set(paths)

    def _store(self, key: str, data: dict[str, Any]) -> None:
        """The reference tree's graph into the ledger's cache, the one kept there."""
        self.facts.graph_cache.clear()
        self.facts.graph_cache[key] = data
        self.facts.graph_cache["last"] = key

    def _keep(self, key: str, loaded: GraphEntry, resolver: resolve.Resolver | None = None
              ) -> None:
        """The resident service keeps the last reference tree's graph (a networkx graph)
        and the resolver of its paths: the next tree's graph follows from them."""
        memo = self.facts.memo
        if memo is None:
            return
        last = memo.get(("graph-last",))
        if last is not None and last != key:
            memo.pop(("graph", last), None)
        memo[("graph", key)], memo[("graph-last",)] = loaded, key
        if resolver is not None:
            memo[("graph-resolver",)] = (loaded[3], resolver)

    def _stored(self, key: str, tree: str) -> GraphEntry | None:
        cached = self.facts.graph_cache.get(key)
        if cached is None:
            return None
        try:
            stored, paths, roots = depgraph.Graph.from_json(cached)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return None  # damaged or foreign cache entry: rebuild it
        since = cached.get("since") or tree
        if self.facts.memo is None:
            return stored, paths, roots, since
        # the resident service: decoded once per tree, kept as a networkx graph
        loaded: GraphEntry = (depgraph.Graph.of(stored), paths, roots, since)
        self._keep(key, loaded)
        return loaded

    def _followed(self, tree: str, key: str) -> GraphEntry | None:
        """The graph of ``tree`` from the last one kept (by the resident service, else in
        the ledger), when ``tree`` only modified files in place (depgraph.follows): a
        commit on main costs its own files' imports, not a new graph of every file.
        None: build it."""
        memo = self.facts.memo
        last = memo.get(("graph-last",)) if memo is not None else None
        warm = last is not None
        if not warm:
            last = self.facts.graph_cache.get("last")
        if not isinstance(last, str) or ":" not in last or last == key:
            return None
        old: Any = memo.get(("graph", last)) if warm and memo is not None else \
            self.facts.graph_cache.get(last)
        if old is None:
            return None
        try:
            if warm:
                graph, paths, roots, since = old
            else:
                order = old["paths"]
                paths = [order[i] for i in old["files"]]
                roots = {name: dict(dirs) for name, dirs in old["roots"].items()}
                since = old.get("since") or last.split(":", 1)[1]
            files = set(paths)
            delta = self.repo.tree_delta(last.split(":", 1)[1], tree)
            if not depgraph.follows(delta, files):
                return None
            kept = memo.get(("graph-resolver",)) if memo is not None else None
            resolver = kept[1] if kept is not None and kept[0] == since else None
            if resolver is None:
                resolver = resolve.Resolver(files)
                resolver.set_roots(roots)
            new = depgraph.imports_of({p: oid for p, (_st, oid) in delta.items()},
                                      self.repo.blob, self.facts.imports_cache, resolver)
        except (FatalError, KeyError, IndexError, TypeError, ValueError, AttributeError):
            return None
        if warm:  # (the service keeps it in memory; its ledger copy stays as it was)
            if memo is not None:
                edges = memo.pop(("graph-edges", last), None) or last.split(":", 1)[1]
                if all(graph.imports_same(src, dsts) for src, dsts in new.items()):
                    # no import changed: the reaches kept for the last tree hold for this one
                    memo[("graph-edges", key)] = edges
            for src, dsts in new.items():
                graph.set_imports(src, dsts)
            loaded: GraphEntry = (graph, paths, roots, since)
        else:
            data = {**depgraph.followed_json(old, new), "since": since}
            self._store(key, data)
            stored, paths, roots = depgraph.Graph.from_json(data)
            loaded = (stored if memo is None else depgraph.Graph.of(stored), paths, roots,
                      since)
        self._keep(key, loaded, resolver)
        return loaded

    def resolver(self) -> resolve.Resolver:
        if self._resolver is None:
            extra = {fc.dest for fcs in self.changes.values() for fc in fcs
                     if fc.status != "D"}
            memo = self.facts.memo
            key = ("resolver", self.since, frozenset(extra - self.paths),
                   tuple(sorted((name, tuple(sorted(dirs.items())))
                                for name, dirs in self.roots.items())))
            kept = memo_get(memo, "resolver", key)
            if kept is None:
                kept = resolve.Resolver(self.paths | extra)
                kept.set_roots(self.roots)
                memo_put(memo, "resolver", key, kept, RESOLVERS)  # each holds every path
            self._resolver = kept
        return self._resolver

    def reach(self, agent: Agent, ws: WorkingSet, edges: list[tuple[str, str]],
              base_tree: str) -> Reach:
        key = (agent.id, base_tree)
        if key not in self.reaches:
            assert self.graph is not None
            memo = self.facts.memo
            # across scans (the resident service, whose memo a new policy empties): by
            # everything a reach is made of -- the graph, the files touched, the new
            # edges; not the trees, so a commit that changes what the same files hold
            # (most do) or a new base that leaves them the files touched finds it kept.
            # The graph is this very object as it stands (a reach reads it again for its
            # findings, and a commit on main may change its edges in place: _followed)
            graph = self.graph
            mk = ("reach", self.graph_edges, id(graph), getattr(graph, "version", 0),
                  tuple(sorted(ws.touched())), tuple(edges)) if memo is not None else None
            kept = memo_get(memo, "reach", mk)
            if kept is None:
                kept = Reach(graph, ws, edges, self.cfg.gamma, self.cfg.depth_cap,
                             self.cfg.hub_degree)
                memo_put(memo, "reach", mk, kept, REACHES)
            self.reaches[key] = kept
        return self.reaches[key]

    def committed_lines(self, agent: Agent, base: str | None, contested: Contested) -> int:
        """Committed work in the contested region since the base: the changed lines of the
        commits between the base and the agent's HEAD whose hunks lie within ``near_lines``
        of the contested base lines (the whole file where the region has no lines: an
        exact conflict without line evidence, a symbol). Padding elsewhere in the file, a
        commit in another file, the commits a rebase has replayed so far, or the commits a
        detached checkout has (a worktree checked out at the work that must yield holds no
        right-of-way by its count) buy nothing."""
        if not contested or not agent.head or agent.operation or agent.head == base:
            return 0
        if not agent.branch and not agent.remote:
            return 0  # a detached checkout's commits are others' lines (or a look at them)
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

    def landed_lines(self, agent: Agent, base: str | None, contested: Contested) -> int:
        """The agent's committed work in the contested region that a remote's trunk
        already holds (pushed, or merged there and pushed): committed_lines up to where
        its HEAD meets that trunk, when that point lies past the pair's base."""
        if not contested or not agent.head or not base or agent.remote:
            return 0
        if self.tips is None:  # (the refs read once a scan, not once an agent and pair)
            self.tips = self.repo.trunk_tips()
        got = 0
        for tip in self.tips:
            point = self.repo.merge_base(agent.head, tip)
            if point and point != base and self.repo.merge_base(point, base) == base:
                got = max(got, self.committed_lines(replace(agent, head=point), base,
                                                    contested))
        return got

    def agent_edges(self, agent: Agent, ws: WorkingSet) -> list[tuple[str, str]]:
        """Import edges of an agent's changed files, resolved in the reference tree and
        cached per (reference tree, path, blob) so the resolver is rarely built."""
        key = (agent.id, agent.tree or "")
        if key not in self.edges:
            out: list[tuple[str, str]] = []
            cache = self.facts.pair_cache
            for p, fc in sorted(ws.files.items()):
                if not fc.new_oid or fc.kind != "text" or registry.dialect_of(p) is None:
                    continue  # no parser, no edges: nothing worth a cache row per commit
                ck = f"edges:{depgraph.CACHE_FORMAT}:{self.since}:{p}:{fc.new_oid}"
                dsts = cache.get(ck)
                if dsts is None:
                    dsts = [d for _, d in depgraph.edges_of(
                        {p: fc.new_oid}, self.repo.blob, self.facts.imports_cache,
                        self.resolver())]
                    cache[ck] = dsts
                out.extend((p, d) for d in dsts)
            self.edges[key] = out
        return self.edges[key]
