"""proximity: TCAS for git worktrees."""

from __future__ import annotations

__version__ = "0.4.0"
