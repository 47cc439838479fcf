"""The editor's one door to the decision: every question the server asks goes through
``ask``, the very answerer `proximity check` uses (agents.precheck facts, agents.verdict
decision). Nothing here decides anything."""

from __future__ import annotations

import os

from proximity.agents import verdict
from proximity.agents.precheck import check
from proximity.model import Range


def ask(path: str, ranges: tuple[Range, ...] | None, result: str | None = None,
        deny_on: str | None = None) -> verdict.Decision:
    """May the worktree holding ``path`` (absolute) change ``ranges`` (its lines now;
    None: the whole file) into ``result`` (the whole file after the edit, when known)?"""
    start = os.path.dirname(path)
    return check(start, [(path, ranges)], deny_on, cwd=start,
                 results=None if result is None else {path: result})
