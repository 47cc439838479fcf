"""Repository-wide import graph and the dependency channel.

Nodes are repository paths. An edge joins an importer and the file it imports, resolved to
a path in the tree (external packages drop out). Distance is undirected: two files that
import a common module are two hops apart through it, even when neither agent touched it.
Coupling is gamma^(d-1); passing *through* a hub (fan-in above ``hub_degree``) multiplies by
hub_degree / fan-in, so a file everything imports does not couple everything.
"""

from __future__ import annotations

import heapq
import itertools
import posixpath
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from proximity import imports, parsers
from proximity.model import Finding, WorkingSet

JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


@dataclass
class Graph:
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


class View:
    """A graph plus extra edges, without copying the graph (one per pair of agents)."""

    def __init__(self, base: Graph, edges: Iterable[tuple[str, str]]) -> None:
        self.base = base
        self.extra = Graph()
        for s, d in edges:
            if not base.imports(s, d):
                self.extra.add(s, d)

    def neighbors(self, node: str) -> set[str]:
        return self.base.neighbors(node) | self.extra.neighbors(node)

    def imports(self, src: str, dst: str) -> bool:
        return self.base.imports(src, dst) or self.extra.imports(src, dst)

    def fan(self, node: str) -> int:
        return self.base.fan(node) + self.extra.fan(node)


class Resolver:
    """Maps import records to repository paths for one set of files."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = set(paths)
        self.py: dict[str, list[str]] = defaultdict(list)
        self.dirs: dict[str, list[str]] = defaultdict(list)
        self.go_mods: dict[str, str] = {}
        for p in self.paths:
            d = posixpath.dirname(p)
            if p.endswith(".go") and not p.endswith("_test.go"):
                self.dirs[d].append(p)
            if p.endswith((".py", ".pyi")):
                mod = p.rsplit(".", 1)[0].split("/")
                if mod[-1] == "__init__":
                    mod = mod[:-1]
                for k in range(len(mod)):
                    self.py[".".join(mod[k:])].append(p)
        for lst in self.py.values():
            lst.sort(key=lambda p: (p.count("/"), p))

    def set_go_mods(self, mods: Mapping[str, str]) -> None:
        self.go_mods = dict(mods)

    def resolve(self, src: str, rec: imports.Record) -> list[str]:
        kind = rec[0]
        if kind == "py":
            return self._py(src, rec[1], int(rec[2]), rec[3])
        if kind == "js":
            return self._js(src, rec[1])
        if kind == "go":
            return self._go(rec[1])
        if kind == "rs":
            return self._rs(src, rec[1], rec[2])
        return []

    def _py_abs(self, dotted: str) -> list[str]:
        cands = self.py.get(dotted, [])
        if not cands:
            return []
        best = cands[0].count("/") - dotted.count(".")
        return [c for c in cands if c.count("/") - dotted.count(".") == best][:3]

    def _py(self, src: str, module: str, level: int, names: list[str]) -> list[str]:
        if level:
            base = posixpath.dirname(src)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            stem = posixpath.join(base, *module.split(".")) if module else base
            out = []
            for n in names or [""]:
                for cand in (f"{stem}/{n}.py", f"{stem}/{n}/__init__.py"):
                    if n and cand in self.paths:
                        out.append(cand)
                        break
                else:
                    for cand in (f"{stem}.py", f"{stem}/__init__.py"):
                        if cand in self.paths:
                            out.append(cand)
                            break
            return sorted(set(out))
        out = []
        for n in names:
            if n != "*":
                out.extend(self._py_abs(f"{module}.{n}"))
        if not out:
            out = self._py_abs(module)
        return sorted(set(out))

    def _js(self, src: str, spec: str) -> list[str]:
        if not spec.startswith("."):
            return []
        stem = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
        cands = [stem]
        base, ext = posixpath.splitext(stem)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            cands += [base + e for e in JS_EXTS]  # TS imports "./x.js" meaning x.ts
        cands += [stem + e for e in JS_EXTS] + [f"{stem}/index{e}" for e in JS_EXTS]
        for c in cands:
            if c in self.paths:
                return [c]
        return []

    def _go(self, path: str) -> list[str]:
        for root, mod in sorted(self.go_mods.items(), key=lambda kv: -len(kv[1])):
            if path == mod or path.startswith(mod + "/"):
                rel = path[len(mod):].lstrip("/")
                d = posixpath.join(root, rel) if root else rel
                return sorted(self.dirs.get(posixpath.normpath(d) if d else "", []))[:50]
        return []

    def _rs(self, src: str, kind: str, path: str) -> list[str]:
        d = posixpath.dirname(src)
        stem = posixpath.basename(src)[:-3]
        if kind == "mod":
            base = d if stem in ("mod", "lib", "main") else posixpath.join(d, stem)
            for c in (f"{base}/{path}.rs", f"{base}/{path}/mod.rs"):
                if c in self.paths:
                    return [c]
            return []
        parts = [p for p in path.split("::") if p]
        if not parts:
            return []
        if parts[0] == "crate":
            root = d
            while root and posixpath.basename(root) != "src":
                root = posixpath.dirname(root)
            base, parts = (root or d), parts[1:]
        elif parts[0] in ("super", "self"):
            is_root = stem in ("mod", "lib", "main")  # the file is its directory's module
            if parts[0] == "self":
                base = d if is_root else posixpath.join(d, stem)
            else:
                base = posixpath.dirname(d) if is_root else d
            parts = parts[1:]
        else:
            return []
        for k in range(len(parts), 0, -1):
            stem_path = posixpath.join(base, *parts[:k])
            for c in (f"{stem_path}.rs", f"{stem_path}/mod.rs"):
                if c in self.paths:
                    return [c]
        return []


def go_modules(files: Mapping[str, str], read: Callable[[str], bytes]) -> dict[str, str]:
    mods = {}
    for p, oid in files.items():
        if posixpath.basename(p) == "go.mod":
            for line in read(oid).decode(errors="replace").splitlines():
                if line.startswith("module "):
                    mods[posixpath.dirname(p)] = line.split()[1].strip('"')
                    break
    return mods


def records_for(
    files: Mapping[str, str], read: Callable[[str], bytes],
    cache: dict[str, list[imports.Record]],
) -> dict[str, list[imports.Record]]:
    """path -> import records, parsing only blobs not already in ``cache`` (by blob id)."""
    out = {}
    for path, oid in files.items():
        if parsers.language_of(path) is None:
            continue
        recs = cache.get(oid)
        if recs is None:
            try:
                recs = imports.extract(path, read(oid))
            except Exception:
                recs = []
            cache[oid] = recs
        out[path] = recs
    return out


def build(files: Mapping[str, str], read: Callable[[str], bytes],
          cache: dict[str, list[imports.Record]]) -> tuple[Graph, Resolver]:
    resolver = Resolver(files.keys())
    resolver.set_go_mods(go_modules(files, read))
    graph = Graph()
    for src, recs in records_for(files, read, cache).items():
        for rec in recs:
            for dst in resolver.resolve(src, rec):
                graph.add(src, dst)
    return graph, resolver


def edges_of(changed: Mapping[str, str], read: Callable[[str], bytes],
             cache: dict[str, list[imports.Record]], resolver: Resolver
             ) -> list[tuple[str, str]]:
    """Edges from one agent's changed files (their new content) into the tree."""
    out: list[tuple[str, str]] = []
    for src, recs in records_for(changed, read, cache).items():
        for rec in recs:
            out.extend((src, dst) for dst in resolver.resolve(src, rec))
    return out


def reach(graph: Graph | View, sources: Mapping[str, float], gamma: float, depth_cap: int,
          hub_degree: int) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Best coupling from any source to every node within ``depth_cap`` hops.

    A source f contributes w_f * gamma^(d-1) (times hub damping for each hub passed
    through) to a node d >= 1 hops away. Returns node -> (coupling, route).
    """
    best: dict[str, tuple[float, tuple[str, ...]]] = {}
    heap: list[tuple[float, int, str, tuple[str, ...]]] = []
    for s, w in sources.items():
        for nb in graph.neighbors(s):
            heapq.heappush(heap, (-w, 1, nb, (s, nb)))
    seen_depth: dict[str, float] = {}
    while heap:
        negc, d, node, route = heapq.heappop(heap)
        c = -negc
        if seen_depth.get(node, -1.0) >= c:
            continue
        seen_depth[node] = c
        if node not in best or best[node][0] < c:
            best[node] = (c, route)
        if d >= depth_cap:
            continue
        fan = graph.fan(node)
        damp = min(1.0, hub_degree / fan) if fan > hub_degree else 1.0
        nc = c * gamma * damp
        if nc < 1e-3:
            continue
        for nb in graph.neighbors(node):
            if nb not in route:
                heapq.heappush(heap, (-nc, d + 1, nb, (*route, nb)))
    return best


def channel(graph: Graph | View, a: WorkingSet, b: WorkingSet, gamma: float, depth_cap: int,
            hub_degree: int) -> tuple[float, list[Finding]]:
    ta, tb = a.touched(), b.touched()
    findings: list[Finding] = []
    for src_ws, dst_set, dst_ws, flip in ((a, tb, b, False), (b, ta, a, True)):
        sources = {p: src_ws.weight(p) for p in src_ws.touched()}
        for node, (c, route) in reach(graph, sources, gamma, depth_cap, hub_degree).items():
            if node not in dst_set or node == route[0]:
                continue
            score = c * dst_ws.weight(node)
            f, g = route[0], node
            r = route if not flip else tuple(reversed(route))
            findings.append(Finding("dependency", score, g if flip else f, f if flip else g,
                                    detail=_describe(graph, r), route=r))
    findings.sort(key=lambda f: (-f.score, len(f.route)))
    return (findings[0].score if findings else 0.0), findings[:5]


def _describe(graph: Graph | View, route: tuple[str, ...]) -> str:
    if len(route) == 2:
        x, y = route
        return f"{x} imports {y}" if graph.imports(x, y) else f"{y} imports {x}"
    parts = [route[0]]
    for x, y in itertools.pairwise(route):
        parts.append(("→ " if graph.imports(x, y) else "← ") + y)
    return " ".join(parts) + " (→ means imports)"
