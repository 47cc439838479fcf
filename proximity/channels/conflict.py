"""Exact channel: git's own merge of the two live working states (merge-tree).

A conflicted path is a real collision, a fact of both live trees: it holds at full weight
for as long as both trees hold it, however many events pass (no recency decay), and ends
when either tree drops it. The result is cached per pair of snapshot commits
(a snapshot commit names its base and its tree). Failure to compute is unknown.

Where git's merge provably cannot conflict, it is not run: both sides only add and modify
files (no deletion, hence no rename for git to detect), on disjoint paths, with no path of
one side a directory of a path of the other, against a single merge base. git then takes
each path from the one side that changed it, which is what `merge-tree` answers too
(tests/test_conflict_paths.py compares the two).

Nor is it run again for a pair one side of which has since only modified files that the
other side never touched, with the same merge bases (the same HEAD, or single-parent
commits on it the other side lacks: gitio.Repo.steps_alike), where those files are in
the merge base or that side deleted nothing: git takes them from the side that changed
them, and their content cannot start or end a rename (git pairs one side's deletions
with its additions), so every other path merges as it did (the last merge of each pair
is kept in process, for the resident service).
"""

from __future__ import annotations

from proximity import calibration, gitio
from proximity.channels.evidence import Evidence, Result
from proximity.model import FileChange, Finding

NAME = "conflict"
# in the pair cache's keys: 2, git's merge reads no worktree's attributes (a result cached
# before may have come from a merge that did, and cleared a real conflict for everyone)
CACHE_FORMAT = 2


def run(ev: Evidence) -> Result:
    a, b = ev.a, ev.b
    if not a.snapshot or not b.snapshot:
        return Result(None, [])
    cache = ev.scope.facts.pair_cache
    key = f"conflict:{CACHE_FORMAT}:" + ":".join(sorted((a.snapshot, b.snapshot)))
    paths = cache.get(key)
    if paths is None:
        paths = [] if _apart(ev) else _as_last(ev)
        if paths is None:
            paths = ev.scope.repo.merge_conflicts(a.snapshot, b.snapshot)
        if paths is None:
            return Result(None, [])
        cache[key] = paths
    _keep_last(ev, paths)
    p = calibration.probability(NAME, "conflict", 1.0)
    findings = [Finding(NAME, p, path, path, detail="git's merge of the two working states "
                        "conflicts here", kind="conflict") for path in paths]
    return Result(p if paths else 0.0, findings)


def _apart(ev: Evidence) -> bool:
    """Whether git's merge of the two states cannot conflict, from what each side changed
    since their merge base alone (see the module's docstring)."""
    if not ev.base or not ev.a.head or not ev.b.head:
        return False
    changes = ev.scope.changes
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


# the last merge of each pair: (common dir, id, id) -> {id: (snapshot, tree, head), ...}
_LAST: dict[tuple[str, str, str], dict[str, tuple[str, str, str] | list[str]]] = {}
LAST_MAX = 4096


def _last_key(ev: Evidence) -> tuple[str, str, str]:
    x, y = sorted((ev.a.id, ev.b.id))
    return (ev.scope.repo.common, x, y)


def _keep_last(ev: Evidence, paths: list[str]) -> None:
    if not ev.a.head or not ev.b.head or not ev.a.tree or not ev.b.tree:
        return
    if len(_LAST) > LAST_MAX:
        _LAST.clear()
    _LAST[_last_key(ev)] = {
        ev.a.id: (ev.a.snapshot or "", ev.a.tree, ev.a.head),
        ev.b.id: (ev.b.snapshot or "", ev.b.tree, ev.b.head), "paths": list(paths)}


def _as_last(ev: Evidence) -> list[str] | None:
    """The conflicted paths of the pair's last merge when it provably merges alike now
    (see the module's docstring); None: ask git."""
    last = _LAST.get(_last_key(ev))
    if last is None or not ev.base_tree:
        return None
    repo: gitio.Repo = ev.scope.repo
    changes = ev.scope.changes
    try:
        for x, y in ((ev.a, ev.b), (ev.b, ev.a)):
            lx, ly = last.get(x.id), last.get(y.id)
            if (not isinstance(lx, tuple) or not isinstance(ly, tuple) or ly[0] != y.snapshot
                    or not x.head or not y.head or not x.tree):
                continue
            if lx[2] != x.head and not repo.steps_alike(lx[2], x.head, y.head):
                continue
            cy = changes.get((ev.base_tree, y.tree or ""))
            if cy is None:
                continue
            theirs = {fc.path for fc in cy} | {fc.new_path for fc in cy if fc.new_path}
            cx = changes.get((ev.base_tree, x.tree))
            # a file the moving side added counts too when it deleted none (git looks for
            # renames among one side's deletions and additions)
            adds = cx is not None and _touched(cx) is not None
            delta = repo.tree_delta(lx[1], x.tree)
            if all(st == "M" and p not in theirs and not (_dirs({p}) & theirs)
                   and (adds or repo.tree_has(ev.base_tree, p))
                   for p, (st, _oid) in delta.items()):
                return list(last["paths"])
    except Exception:  # unsure: git's merge decides
        return None
    return None
