"""Exact channel: git's own merge of the two live working states (merge-tree).

A conflicted path is a real collision. The result is cached per pair of snapshot commits
(a snapshot commit names its base and its tree). Failure to compute is unknown.

Where git's merge provably cannot conflict, it is not run: both sides only add and modify
files (no deletion, hence no rename for git to detect), on disjoint paths, with no path of
one side a directory of a path of the other, against a single merge base. git then takes
each path from the one side that changed it, which is what `merge-tree` answers too
(tests/test_conflict_paths.py compares the two).
"""

from __future__ import annotations

from proximity import calibration, gitio
from proximity.channels import Evidence, Result
from proximity.model import FileChange, Finding

NAME = "conflict"


def run(ev: Evidence) -> Result:
    a, b = ev.a, ev.b
    if not a.snapshot or not b.snapshot:
        return Result(None, [])
    cache = ev.scope.facts.pair_cache
    key = "conflict:" + ":".join(sorted((a.snapshot, b.snapshot)))
    paths = cache.get(key)
    if paths is None:
        paths = [] if _apart(ev) else ev.scope.repo.merge_conflicts(a.snapshot, b.snapshot)
        if paths is None:
            return Result(None, [])
        cache[key] = paths
    p = calibration.probability(NAME, "conflict", 1.0)
    findings = [Finding(NAME, p, path, path, detail="git's merge of the two working states "
                        "conflicts here", kind="conflict") for path in paths]
    return Result(p if paths else 0.0, findings)


def _apart(ev: Evidence) -> bool:
    """Whether git's merge of the two states cannot conflict, from what each side changed
    since their merge base alone (see the module's docstring)."""
    if not ev.base or not ev.a.head or not ev.b.head:
        return False
    changes = getattr(ev.scope, "changes", {})
    ca = changes.get((ev.base_tree, ev.a.tree or ""))
    cb = changes.get((ev.base_tree, ev.b.tree or ""))
    if ca is None or cb is None:
        return False
    pa, pb = _touched(ca), _touched(cb)
    if pa is None or pb is None or pa & pb or _dirs(pa) & pb or _dirs(pb) & pa:
        return False
    repo: gitio.Repo = ev.scope.repo
    return repo.sole_merge_base(ev.a.head, ev.b.head) == ev.base


def _touched(changes: list[FileChange]) -> set[str] | None:
    """The paths a side added or modified; None when it deleted or renamed any."""
    out = set()
    for fc in changes:
        if fc.status not in ("A", "M", "T"):
            return None
        out.add(fc.path)
    return out


def _dirs(paths: set[str]) -> set[str]:
    return {p[:i] for p in paths for i in range(len(p)) if p[i] == "/"}
