"""The editor's one door to the decision: every question the server asks goes through
``ask``, to the one answerer every front end asks (agents/answer.py: the command line,
the harnesses' hooks, MCP, the service). Nothing here decides anything."""

from __future__ import annotations

import os

from proximity.agents import decision, definitions, theirs
from proximity.agents.answer import CheckRequest, answer
from proximity.agents.edits import Edit
from proximity.model import Range


def ask(path: str, ranges: tuple[Range, ...] | None, result: str | None = None,
        deny_on: str | None = None, look: bool = False) -> decision.Decision:
    """May the worktree holding ``path`` (absolute) change ``ranges`` (its lines now;
    None: the whole file) into ``result`` (the whole file after the edit, when known)?
    ``look``: only what the siblings changed there is wanted (nobody waits for it)."""
    got = answer(CheckRequest(os.path.dirname(path), (Edit(path, ranges, result),),
                              deny_on=deny_on, look=look))
    return decision.Decision(got.decision, got.reason, got.conflicts)


def signatures(path: str) -> list[tuple[str, str | None, definitions.Signature]]:
    """The definitions the siblings of the worktree holding ``path`` rewrote the header
    of: (worktree, branch, signature), the check's symbol evidence seen from a caller."""
    return theirs.signatures(os.path.dirname(path))
