"""The editor's one door to the decision: every question the server asks goes through
``ask``, the very answerer `proximity check` uses (agents.precheck facts, agents.verdict
decision). Nothing here decides anything."""

from __future__ import annotations

import os

from proximity.agents import decision, definitions, precheck
from proximity.agents.precheck import check
from proximity.model import Range


def ask(path: str, ranges: tuple[Range, ...] | None, result: str | None = None,
        deny_on: str | None = None) -> decision.Decision:
    """May the worktree holding ``path`` (absolute) change ``ranges`` (its lines now;
    None: the whole file) into ``result`` (the whole file after the edit, when known)?"""
    start = os.path.dirname(path)
    return check(start, [(path, ranges)], deny_on, cwd=start,
                 results=None if result is None else {path: result})


def signatures(path: str) -> list[tuple[str, str | None, definitions.Signature]]:
    """The definitions the siblings of the worktree holding ``path`` rewrote the header
    of: (worktree, branch, signature), the check's symbol evidence seen from a caller."""
    return precheck.signatures(os.path.dirname(path))
