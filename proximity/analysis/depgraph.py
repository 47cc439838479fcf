"""The repository-wide import graph and the coupling it gives two files (the dependency
channel, `channels/dependency.py`, turns that coupling into evidence).

Nodes are repository paths. An edge joins an importer and the file it imports, resolved to
a path in the tree (external packages drop out). Distance is undirected: two files that
import a common module are two hops apart through it, even when neither agent touched it.
Coupling is gamma^(d-1); passing *through* a hub (fan-in above ``hub_degree``) multiplies by
hub_degree / fan-in, so a file everything imports does not couple everything.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from proximity.analysis import imports
from proximity.analysis.languages import registry
from proximity.analysis.resolve import Resolver, Roots, manifest_names, roots

CACHE_FORMAT = "g3"  # bump when the stored graph or import records change shape


class Imports(Protocol):
    """Any of the graphs below, as far as whether one file imports another."""

    def imports(self, src: str, dst: str) -> bool: ...


@dataclass
class Edges:
    """A few import edges held as plain sets: an agent's own new edges over a graph (see
    View), or the empty graph of a first scan that left the build for later."""
    adj: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    fan_in: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    out: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, src: str, dst: str) -> None:
        if src == dst or dst in self.out[src]:
            return
        self.out[src].add(dst)
        self.adj[src].add(dst)
        self.adj[dst].add(src)
        self.fan_in[dst] += 1

    def neighbors(self, node: str) -> set[str]:
        return self.adj.get(node, set())

    def imports(self, src: str, dst: str) -> bool:
        return dst in self.out.get(src, ())

    def fan(self, node: str) -> int:
        return self.fan_in.get(node, 0)


class Graph:
    """The repository's import graph as built from its files: a networkx directed graph
    (importer -> imported), which the resident service keeps warm between scans."""

    def __init__(self) -> None:
        import networkx as nx  # lazy: a hook that loads the stored graph never needs it

        self.g: nx.DiGraph[str] = nx.DiGraph()
        self._adj: dict[str, set[str]] = {}
        # moves whenever set_imports changes an edge: what was read of this very graph
        # before (a reach kept across scans) may not hold for it now
        self.version = 0

    def add(self, src: str, dst: str) -> None:
        if src != dst:
            self.g.add_edge(src, dst)
            self._adj.pop(src, None)
            self._adj.pop(dst, None)

    def neighbors(self, node: str) -> set[str]:
        """Importers and imported alike (distance is undirected)."""
        hit = self._adj.get(node)
        if hit is None:
            g = self.g
            hit = set(g.successors(node)) | set(g.predecessors(node)) if node in g else set()
            self._adj[node] = hit
        return hit

    def imports(self, src: str, dst: str) -> bool:
        return bool(self.g.has_edge(src, dst))

    def fan(self, node: str) -> int:
        return int(self.g.in_degree(node)) if node in self.g else 0

    def imports_same(self, src: str, dsts: Iterable[str]) -> bool:
        """Whether ``set_imports(src, dsts)`` would leave this graph's edges as they are."""
        now = set(self.g.successors(src)) if src in self.g else set()
        return now == {d for d in dsts if d != src}  # (as ``add``: no edge to itself)

    def set_imports(self, src: str, dsts: Iterable[str]) -> None:
        """What ``src`` imports, now (a file modified in place: see follow)."""
        dsts = list(dsts)
        if self.imports_same(src, dsts):
            return
        self.version += 1
        if src in self.g:
            for d in list(self.g.successors(src)):
                self.g.remove_edge(src, d)
                self._adj.pop(d, None)
        self._adj.pop(src, None)
        for d in dsts:
            self.add(src, d)

    def to_json(self, paths: Collection[str], roots: Mapping[str, Mapping[str, str]]
                ) -> dict[str, object]:
        """The graph as stored in the ledger cache, with the module roots it was resolved
        with (language -> directory -> import path)."""
        nodes = set(paths) | set(self.g.nodes)
        order = sorted(nodes)
        index = {p: i for i, p in enumerate(order)}
        g = self.g
        return {"paths": order, "files": sorted(index[p] for p in paths),
                "out": [sorted(index[d] for d in g.successors(p)) if p in g else []
                        for p in order],
                "roots": {name: dict(dirs) for name, dirs in roots.items()}}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> tuple[StoredGraph, list[str], Roots]:
        g = StoredGraph(data)
        return g, [g.order[i] for i in data["files"]], {
            name: dict(dirs) for name, dirs in data["roots"].items()}

    @staticmethod
    def of(stored: StoredGraph) -> Graph:
        """A stored graph, whole, as a networkx graph (for a process that keeps it)."""
        graph = Graph()
        o = stored.order
        graph.g.add_nodes_from(o)
        graph.g.add_edges_from((o[i], o[j]) for i, lst in enumerate(stored.out_idx)
                               for j in lst if i != j)
        return graph


class StoredGraph:
    """A graph loaded from the ledger cache; a node's neighbours are built on first use,
    so a scan pays only for the part of the graph around the agents' files."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.order: list[str] = list(data["paths"])
        self.index = {p: i for i, p in enumerate(self.order)}
        self.out_idx: list[list[int]] = data["out"]
        self._in: list[list[int]] | None = None
        self._adj: dict[str, set[str]] = {}

    def _inverse(self) -> list[list[int]]:
        if self._in is None:
            inv: list[list[int]] = [[] for _ in self.order]
            for i, lst in enumerate(self.out_idx):
                for j in lst:
                    inv[j].append(i)
            self._in = inv
        return self._in

    def neighbors(self, node: str) -> set[str]:
        hit = self._adj.get(node)
        if hit is None:
            i = self.index.get(node)
            if i is None:
                hit = set()
            else:
                o = self.order
                hit = {o[j] for j in self.out_idx[i]} | {o[j] for j in self._inverse()[i]}
            self._adj[node] = hit
        return hit

    def imports(self, src: str, dst: str) -> bool:
        i, j = self.index.get(src), self.index.get(dst)
        return i is not None and j is not None and j in self.out_idx[i]

    def fan(self, node: str) -> int:
        i = self.index.get(node)
        return 0 if i is None else len(self._inverse()[i])


AnyGraph = Graph | StoredGraph | Edges


class View:
    """A graph plus extra edges, without copying the graph (one per pair of agents)."""

    def __init__(self, base: AnyGraph, edges: Iterable[tuple[str, str]]) -> None:
        self.base = base
        self.extra = Edges()
        for s, d in edges:
            if not base.imports(s, d):
                self.extra.add(s, d)

    def neighbors(self, node: str) -> set[str]:
        extra = self.extra.adj.get(node)
        if not extra:
            return self.base.neighbors(node)
        return self.base.neighbors(node) | extra

    def imports(self, src: str, dst: str) -> bool:
        return self.base.imports(src, dst) or self.extra.imports(src, dst)

    def fan(self, node: str) -> int:
        return self.base.fan(node) + self.extra.fan(node)


def records_for(
    files: Mapping[str, str], read: Callable[[str], bytes],
    cache: dict[str, list[imports.Record]], tick: Callable[[int], None] | None = None,
) -> dict[str, list[imports.Record]]:
    """path -> import records, parsing only blobs not already in ``cache`` (by blob id);
    ``tick(1)`` after each file (a progress bar)."""
    out = {}
    for path, oid in files.items():
        if tick is not None:
            tick(1)
        if registry.dialect_of(path) is None:
            continue
        key = f"{imports.FORMAT}:{oid}"
        recs = cache.get(key)
        if recs is None:
            try:
                recs = imports.extract(path, read(oid))
            except Exception:
                recs = []
            cache[key] = recs
        out[path] = recs
    return out


def build(files: Mapping[str, str], read: Callable[[str], bytes],
          cache: dict[str, list[imports.Record]], tick: Callable[[int], None] | None = None
          ) -> tuple[Graph, Resolver]:
    resolver = Resolver(files.keys())
    resolver.set_roots(roots(files, read))
    graph = Graph()
    for src, recs in records_for(files, read, cache, tick).items():
        for rec in recs:
            for dst in resolver.resolve(src, rec):
                graph.add(src, dst)
    return graph, resolver


def follows(delta: Mapping[str, tuple[str, str]], files: Collection[str]) -> bool:
    """Whether the graph of one tree follows to a tree ``delta`` (path -> (status, new
    blob)) away, file by file: only files of ``files`` modified in place, no module
    manifest (a language's file of module roots) among them. Every other file's imports
    then resolve as they did (resolution reads the set of paths and the module roots
    alone), so only the modified files' own edges change."""
    manifests = manifest_names()
    return all(st == "M" and p in files and posixpath.basename(p) not in manifests
               for p, (st, _oid) in delta.items())


def imports_of(changed: Mapping[str, str], read: Callable[[str], bytes],
               cache: dict[str, list[imports.Record]], resolver: Resolver
               ) -> dict[str, list[str]]:
    """path -> the paths its content (``changed``: path -> blob) imports, in the tree."""
    recs = records_for(changed, read, cache)
    return {src: sorted({d for rec in recs.get(src, ()) for d in resolver.resolve(src, rec)
                         if d != src}) for src in changed}


def followed_json(data: Mapping[str, Any], new: Mapping[str, list[str]]) -> dict[str, Any]:
    """A stored graph with the imports of some of its files replaced (see follows)."""
    index = {p: i for i, p in enumerate(data["paths"])}
    out = list(data["out"])
    for src, dsts in new.items():
        out[index[src]] = sorted(index[d] for d in dsts)
    return {**data, "out": out}


def edges_of(changed: Mapping[str, str], read: Callable[[str], bytes],
             cache: dict[str, list[imports.Record]], resolver: Resolver
             ) -> list[tuple[str, str]]:
    """Edges from one agent's changed files (their new content) into the tree."""
    out: list[tuple[str, str]] = []
    for src, recs in records_for(changed, read, cache).items():
        for rec in recs:
            out.extend((src, dst) for dst in resolver.resolve(src, rec))
    return out
