"""Path-prefix proximity (the seed's measure): how near two paths sit in the tree. The tree
channel (`channels/tree.py`) makes it a soft prior with a small weight."""

from __future__ import annotations

from collections.abc import Collection


def tree_distance(f: str, g: str) -> float:
    """((depth_f - L) + (depth_g - L)) / (depth_f + depth_g); 0 for the same file."""
    if f == g:
        return 0.0
    pf, pg = f.split("/"), g.split("/")
    common = 0
    for x, y in zip(pf[:-1], pg[:-1], strict=False):
        if x != y:
            break
        common += 1
    df, dg = len(pf), len(pg)
    return ((df - common) + (dg - common)) / (df + dg)


def channel(a: Collection[str], b: Collection[str]) -> float:
    """1 - min over f in a, g in b of tree_distance(f, g), in O((|a| + |b|) * depth).

    For a fixed common prefix L the distance grows with depth_f, so each directory prefix
    of ``a`` only needs the smallest depth of a file beneath it; walking each g's prefixes
    then finds the minimum exactly (a shorter prefix can only overestimate a distance, and
    the true minimum appears at the true common prefix).
    """
    if not a or not b:
        return 0.0
    if set(a) & set(b):
        return 1.0
    min_depth: dict[tuple[str, ...], int] = {}
    for f in a:
        parts = f.split("/")
        for k in range(len(parts)):
            key = tuple(parts[:k])
            if min_depth.get(key, 1 << 30) > len(parts):
                min_depth[key] = len(parts)
    best = 1.0
    for g in b:
        parts = g.split("/")
        dg = len(parts)
        for k in range(len(parts)):
            md = min_depth.get(tuple(parts[:k]))
            if md is None:
                break
            best = min(best, ((md - k) + (dg - k)) / (md + dg))
    return 1.0 - best
