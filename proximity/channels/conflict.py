"""Exact channel: git's own merge of the two live working states (merge-tree).

A conflicted path is a real collision. The result is cached per pair of snapshot commits
(a snapshot commit names its base and its tree). Failure to compute is unknown.
"""

from __future__ import annotations

from proximity import calibration
from proximity.channels import Evidence, Result
from proximity.model import Finding

NAME = "conflict"


def run(ev: Evidence) -> Result:
    a, b = ev.a, ev.b
    if not a.snapshot or not b.snapshot:
        return Result(None, [])
    cache = ev.scope.facts.pair_cache
    key = "conflict:" + ":".join(sorted((a.snapshot, b.snapshot)))
    paths = cache.get(key)
    if paths is None:
        paths = ev.scope.repo.merge_conflicts(a.snapshot, b.snapshot)
        if paths is None:
            return Result(None, [])
        cache[key] = paths
    p = calibration.probability(NAME, "conflict", 1.0)
    findings = [Finding(NAME, p, path, path, detail="git's merge of the two working states "
                        "conflicts here", kind="conflict") for path in paths]
    return Result(p if paths else 0.0, findings)
