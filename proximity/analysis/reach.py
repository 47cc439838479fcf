"""How far one working set's change reaches another through the import graph: a best-first
search over the graph's undirected edges (coupling gamma^(d-1), damped through hubs), and
the pair's dependency channel from both sides' reaches (``channels/dependency.py`` turns
it into evidence)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping

from proximity.analysis.depgraph import AnyGraph, Graph, Imports, View
from proximity.model import Finding, WorkingSet


def reach(graph: Graph | View, sources: Mapping[str, float], gamma: float, depth_cap: int,
          hub_degree: int, targets: Mapping[str, float] | None = None, keep: int = 5
          ) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Best coupling from any source to nodes within ``depth_cap`` hops (max-product search).

    A source f contributes w_f * gamma^(d-1) (times hub damping for each hub passed
    through) to a node d >= 1 hops away. Nodes pop in decreasing coupling, so with
    ``targets`` (node -> its own weight <= 1) the search stops once nothing left can beat
    the ``keep``-th best target found. Returns node -> (coupling, route).
    """
    best: dict[str, tuple[float, tuple[str, ...]]] = {}
    heap: list[tuple[float, int, str, tuple[str, ...]]] = []
    for s, w in sources.items():
        for nb in graph.neighbors(s):
            heapq.heappush(heap, (-w, 1, nb, (s, nb)))
    found: list[float] = []
    while heap:
        negc, d, node, route = heapq.heappop(heap)
        c = -negc
        if node in best:
            continue
        if targets is not None and len(found) >= keep and c < found[keep - 1]:
            break
        best[node] = (c, route)
        if targets is not None and node in targets and node != route[0]:
            found.append(c * targets[node])
            found.sort(reverse=True)
        if d >= depth_cap:
            continue
        fan = graph.fan(node)
        damp = min(1.0, hub_degree / fan) if fan > hub_degree else 1.0
        nc = c * gamma * damp
        if nc < 1e-3:
            continue
        for nb in graph.neighbors(node):
            if nb not in best:
                heapq.heappush(heap, (-nc, d + 1, nb, (*route, nb)))
    return best


class Reach:
    """One agent's coupling to every node within the depth cap: its touched files as
    sources over the base graph plus the agent's own new import edges."""

    def __init__(self, graph: AnyGraph, ws: WorkingSet, edges: list[tuple[str, str]],
                 gamma: float, depth_cap: int, hub_degree: int) -> None:
        self.view = View(graph, edges)
        self.touched = ws.touched()
        self.gamma, self.hub_degree = gamma, hub_degree
        # an import between two live trees is a fact of both: no recency weight
        self.best = reach(self.view, dict.fromkeys(self.touched, 1.0), gamma, depth_cap,
                          hub_degree)

    def damp(self, node: str, other: View) -> float:
        fan = self.view.fan(node) + other.extra.fan(node)
        return min(1.0, self.hub_degree / fan) if fan > self.hub_degree else 1.0


def pair_channel(ra: Reach, rb: Reach) -> tuple[float, list[Finding]]:
    """max over f in a, g in b (g != f) of coupling(f, g) from two agents' reaches.

    Exact decomposition: a path from a to b either uses only the base graph and a's new
    edges (``ra.best`` at b's file), or ends with one of b's new edges s -> t (s is b's
    changed file): then it is a's coupling to t, one more hop, into s.
    """
    # candidates as light tuples; only the reported few become Findings (with a description)
    hits: list[tuple[float, int, tuple[str, ...], Reach, bool, View | None]] = []
    for src, dst, flip in ((ra, rb, False), (rb, ra, True)):
        for g in dst.touched:
            hit = src.best.get(g)
            if hit is not None and hit[1][0] != g:
                c, route = hit
                hits.append((c, len(route), route, src, flip, None))
    for src, dst, flip in ((ra, rb, False), (rb, ra, True)):
        for s_node, t_set in dst.view.extra.out.items():
            if s_node not in dst.touched:
                continue
            for t_node in t_set:
                if t_node in src.touched and t_node != s_node:
                    c, route = 1.0, (t_node, s_node)
                else:
                    hit = src.best.get(t_node)
                    if hit is None or len(hit[1]) > 4:
                        continue
                    c = hit[0] * src.gamma * src.damp(t_node, dst.view)
                    route = (*hit[1], s_node)
                if route[0] != s_node:
                    hits.append((c, len(route), route, src, flip, dst.view))
    hits.sort(key=lambda h: (-h[0], h[1], h[2]))  # equal ones by route: the same five each run
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for score, _, route, src, flip, other in hits:
        key = (route[-1], route[0]) if flip else (route[0], route[-1])  # (a's, b's) file
        if key in seen:
            continue
        seen.add(key)
        out.append(_finding(src, score, route, flip, other))
        if len(out) == 5:
            break
    return (out[0].score if out else 0.0), out


def _finding(src: Reach, score: float, route: tuple[str, ...], flip: bool,
             other: View | None = None) -> Finding:
    r = tuple(reversed(route)) if flip else route
    g = _Both(src.view, other) if other is not None else src.view
    return Finding("dependency", score, r[0], r[-1], detail=_describe(g, r), route=r)


class _Both:
    def __init__(self, a: View, b: View) -> None:
        self.a, self.b = a, b

    def imports(self, src: str, dst: str) -> bool:
        return self.a.imports(src, dst) or self.b.extra.imports(src, dst)


def channel(graph: AnyGraph, a: WorkingSet, b: WorkingSet, gamma: float, depth_cap: int,
            hub_degree: int, edges_a: list[tuple[str, str]] | None = None,
            edges_b: list[tuple[str, str]] | None = None) -> tuple[float, list[Finding]]:
    """The dependency channel for one pair (see ``pair_channel``)."""
    ra = Reach(graph, a, edges_a or [], gamma, depth_cap, hub_degree)
    rb = Reach(graph, b, edges_b or [], gamma, depth_cap, hub_degree)
    return pair_channel(ra, rb)


def _describe(graph: Imports, route: tuple[str, ...]) -> str:
    if len(route) == 2:
        x, y = route
        return f"{x} imports {y}" if graph.imports(x, y) else f"{y} imports {x}"
    parts = [route[0]]
    for x, y in itertools.pairwise(route):
        parts.append(("→ " if graph.imports(x, y) else "← ") + y)
    return " ".join(parts) + " (→ means imports)"
