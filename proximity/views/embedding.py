"""Stable 3-D coordinates for files and agents (the airspace view).

A file's coordinate is a space-filling embedding of its path: each directory level adds a
displacement derived from a hash of the path prefix, halving at every level, so files that
share a long prefix share most of their coordinate. One averaging step then pulls each file
toward its import neighbours. Hashes (not random numbers) make the map the same on every
run and every machine, so a person can learn it. An agent sits at the recency-weighted
centroid of the files it changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping

Vec = tuple[float, float, float]


def _unit(key: str) -> Vec:
    h = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=12).digest()
    x, y, z = (int.from_bytes(h[i:i + 4], "big") / 2**32 * 2 - 1 for i in (0, 4, 8))
    n = (x * x + y * y + z * z) ** 0.5 or 1.0
    return (x / n, y / n, z / n)


def path_point(path: str, scale: float = 0.5) -> Vec:
    parts = path.split("/")
    x = y = z = 0.0
    step = 1.0
    for i in range(len(parts)):
        ux, uy, uz = _unit("/".join(parts[: i + 1]))
        x, y, z = x + ux * step, y + uy * step, z + uz * step
        step *= scale
    return (x, y, z)


def layout(paths: Iterable[str], neighbours: Callable[[str], Iterable[str]],
           pull: float = 0.3) -> dict[str, Vec]:
    base = {p: path_point(p) for p in sorted(set(paths))}
    out: dict[str, Vec] = {}
    for p, (x, y, z) in base.items():
        nbs = [base[n] for n in neighbours(p) if n in base]
        if nbs:
            mx = sum(v[0] for v in nbs) / len(nbs)
            my = sum(v[1] for v in nbs) / len(nbs)
            mz = sum(v[2] for v in nbs) / len(nbs)
            x, y, z = x + pull * (mx - x), y + pull * (my - y), z + pull * (mz - z)
        out[p] = (round(x, 5), round(y, 5), round(z, 5))
    return out


def centroid(weights: Mapping[str, float], coords: Mapping[str, Vec]) -> Vec | None:
    pts = [(coords[p], w) for p, w in weights.items() if p in coords and w > 0]
    total = sum(w for _, w in pts)
    if not total:
        return None
    return tuple(round(sum(c[i] * w for c, w in pts) / total, 5) for i in range(3))  # type: ignore[return-value]
