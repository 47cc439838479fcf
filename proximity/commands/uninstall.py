"""`proximity uninstall`: remove the plain hooks, restoring any chained ones."""

from __future__ import annotations

from proximity.commands.install import run

__all__ = ["run"]
