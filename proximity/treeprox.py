"""Tree channel: the seed's path-prefix proximity, a soft prior with a small weight."""

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


def channel(a: Collection[str], b: Collection[str], cap: int = 400) -> float:
    """1 - min tree distance, computed over distinct directories (not file pairs)."""
    if not a or not b:
        return 0.0
    if set(a) & set(b):
        return 1.0
    da = sorted({p.rsplit("/", 1)[0] + "/x" if "/" in p else "x" for p in a})[:cap]
    db = sorted({p.rsplit("/", 1)[0] + "/y" if "/" in p else "y" for p in b})[:cap]
    return 1.0 - min(tree_distance(f, g) for f in da for g in db)
