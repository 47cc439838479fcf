"""The resident service's memo of pair results: channel results kept by everything the
channels read (both states, the base, working-set weights and intents, the graph's reference
commit), and resolvers and reaches kept on bounded shelves."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from proximity import gitio
from proximity.model import Agent, Facts, WorkingSet

RESOLVERS = 3  # resolvers the resident service keeps (each holds every path of the tree)


REACHES = 64  # agents' reaches it keeps (each holds its part of the graph)
Key = tuple[Hashable, ...]  # what a result is kept by: compared and hashed, never read


def memo_get(memo: dict[Any, Any] | None, kind: str, key: Hashable) -> Any:
    return None if memo is None else memo.get(kind, {}).get(key)


def memo_put(memo: dict[Any, Any] | None, kind: str, key: Hashable, value: object,
             most: int) -> None:
    """Keep ``value`` in the memo's bounded shelf ``kind`` (the oldest go first)."""
    if memo is None:
        return
    shelf = memo.setdefault(kind, {})
    while len(shelf) >= most:
        del shelf[next(iter(shelf))]
    shelf[key] = value


def channel_key(a: Agent, b: Agent, wa: WorkingSet, wb: WorkingSet, base: str | None,
                 base_tree: str, agents: list[Agent], facts: Facts) -> Key:
    """Everything the channels read of one pair (their caches are keyed by content)."""
    def state(x: Agent) -> Key:
        return (x.id, x.tree, x.snapshot, x.head, x.branch, x.operation, x.remote, x.machine,
                x.error, x.unread)

    ref = next((x.head for x in agents if x.id == "main" and x.head), None) or next(
        (x.head for x in agents if x.head), None)
    return ("pair", state(a), state(b), base, base_tree, work_key(wa), work_key(wb), ref,
            facts.defer_cold_graph)


def content_key(a: Agent, b: Agent, wa: WorkingSet, wb: WorkingSet, base: str | None,
                 base_tree: str, key: Key) -> Key | None:
    """The pair's channel inputs by content: both trees and the merge base, not the
    commits the states sit on (see kept_by_content). None: local states only."""
    if a.remote or b.remote or not (a.head and b.head and a.snapshot and b.snapshot):
        return None
    def state(x: Agent) -> Key:
        return (x.id, x.tree, x.operation, x.error, x.unread)

    return ("pair-content", state(a), state(b), base, base_tree, work_key(wa), work_key(wb),
            key[-2], key[-1])


def kept_by_content(repo: gitio.Repo, memo: dict[Any, Any], content: Key,
                     a: Agent, b: Agent) -> Any:
    """The channel results of the same trees over the same merge bases, judged with one
    side's HEAD a step back: the state a pre-commit judged (tree on the old HEAD) is the
    state pushed (that tree as a commit on it), and the channels read the trees and what
    git's merge of the two states sees (their trees and merge bases; a snapshot commit
    is its tree on its HEAD). Exact: only when the other side's HEAD is the same and
    this side's new HEAD reaches the old one by single-parent commits the other side does
    not contain (then both HEADs have the same merge bases with it: Repo.steps_alike)."""
    got = memo.get(content)
    if got is None:
        return None
    ha, hb, kept = got
    assert a.head and b.head
    if (hb == b.head and repo.steps_alike(ha, a.head, b.head)) or (
            ha == a.head and repo.steps_alike(hb, b.head, a.head)):
        return kept
    return None


def work_key(w: WorkingSet) -> Key:
    """A working set's weights and intents as a key (its files follow from the trees)."""
    return (tuple(sorted(w.weights.items())),
            tuple(sorted((p, r) for p, r in w.intents.items())),
            tuple(sorted(w.intent_weights.items())))
