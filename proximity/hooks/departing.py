"""Siblings that leave the airspace while they are read. `git worktree remove` deletes a
worktree's files first (in directory order), its `.git` and its admin directory last, and
marks nothing meanwhile: a state read in between is half a deletion, and against it a
commit of the files not deleted yet looks like a collision. A sibling whose advisory is
about a file its live state deletes (its HEAD has it) is looked at again after a moment;
gone by then, its pairs were no collision."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from proximity.errors import FatalError
from proximity.gitio import MAIN_ID

if TYPE_CHECKING:
    from proximity.gitio import Repo
    from proximity.model import Agent, PairResult

# seconds a sibling whose files are being deleted has to finish going (a removal takes
# some milliseconds; a sibling that stays costs this wait to a verdict that tells of a
# file it deleted)
SETTLE = 0.1


def gone(a: Agent) -> bool:
    """Whether a local worktree's directory no longer holds its `.git`."""
    return not os.path.lexists(os.path.join(a.path, ".git"))


def departed(repo: Repo, agents: list[Agent], pairs: list[PairResult], who: str,
             settle: float = SETTLE) -> set[str]:
    """The siblings of ``who`` named by a pair that is not clear whose worktree has gone
    (at once, or after ``settle`` seconds when the pair is about a file it deleted)."""
    by_id = {a.id: a for a in agents}
    out: set[str] = set()
    deleting: list[Agent] = []
    for p in pairs:
        if p.advisory == "clear" and not p.escalated:
            continue
        other = by_id.get(p.b if p.a == who else p.a)
        if (other is None or other.id in out or other in deleting or other.remote
                or other.id == MAIN_ID or not other.path or not other.head
                or not other.tree):
            continue
        if gone(other):
            out.add(other.id)
            continue
        try:
            delta = repo.tree_delta(repo.commit_tree(other.head), other.tree)
        except (FatalError, KeyError, ValueError):
            continue
        if any(delta.get(path, ("",))[0] == "D" for path in p.contested):
            deleting.append(other)  # (what the advisory is about is a file it deleted)
    if deleting:
        time.sleep(settle)
        out |= {a.id for a in deleting if gone(a)}
    return out
