"""A hook's inbox: the messages other worktrees sent this one, taken from the ledger once and
rendered for the hook's output."""

from __future__ import annotations

from proximity.errors import LedgerError
from proximity.snapshot.workspace import Context
from proximity.views import messages


def inbox_lines(ctx: Context, shown: set[int] | None = None) -> list[str]:
    """This worktree's undelivered messages, rendered, taken from the ledger (so shown
    once); ``shown``: ids this run already printed as advisories (marked delivered
    without repeating them)."""
    if ctx.ledger is None:
        return []
    try:
        taken = ctx.ledger.take(ctx.here)
    except LedgerError:  # busy, or open read-only: they stay undelivered for the next hook
        return []
    msgs = [m for m in taken if m["id"] not in (shown or set())]
    if not msgs:
        return []
    # lazy: rendering loads the scan engine; a hook with no message never pays for it

    return [messages.render(m) for m in msgs]
