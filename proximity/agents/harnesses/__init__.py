"""Every agent harness proximity answers, one module each, in one table: the names are
``checkargs.HARNESSES`` (the command line's ``--hook`` choices, the thin client's parser
and docs/agents.md derive from them); each module says how its harness's events read and
how it answers. Adding a harness: a module with a ``HARNESS``, a line here and a line in
``checkargs.HARNESSES`` and ``checkargs.AFTER`` (docs/development.md has the recipe)."""

from __future__ import annotations

from proximity.agents.harnesses import claude, codex, copilot, cursor, gemini
from proximity.agents.harnesses.base import Harness

HARNESSES: dict[str, Harness] = {h.name: h for h in (
    claude.HARNESS, gemini.HARNESS, codex.HARNESS, cursor.HARNESS, copilot.HARNESS)}
