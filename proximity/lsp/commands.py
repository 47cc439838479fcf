"""What the editor's person does that the ledger keeps, and what it says back: a save
recorded as the worktree's state, lines declared taken, the inbox, and who yields to whom
(the hover's standing order). Each runs off the server's loop."""

from __future__ import annotations

import sys

from proximity.errors import LedgerError
from proximity.ledger import Ledger
from proximity.lsp.documents import Where
from proximity.safetext import text as shown
from proximity.snapshot import declared, recorder, workspace
from proximity.views import messages


def yields(where: Where, agents: set[str]) -> dict[str, str]:
    """Who yields to whom, per sibling, as the ledger's standing decisions say."""
    out: dict[str, str] = {}
    try:
        ledger = Ledger(where.ecm, create=False)
    except LedgerError:
        return out
    try:
        for agent in agents:
            got = ledger.held(where.agent, agent)
            if got is None:
                continue
            name = shown(agent)
            out[agent] = (f"{name} was told to yield to you (a standing Resolution "
                          "Advisory): hold your course, they steer" if got[0] == agent
                          else f"you were told to yield to {name}: steer clear of "
                          "their lines, or wait until their work lands")
    except LedgerError:
        return out
    finally:
        ledger.close()
    return out


def record(root: str) -> None:
    """This worktree's state as a ledger event (what an agent's PostToolUse records)."""
    try:
        ctx = workspace.open_context(root, check_git=False, strict=False)
        try:
            recorder.record_here(ctx, "snapshot")
        finally:
            ctx.close()
    except Exception as e:
        print(f"proximity lsp: the save was not recorded: {type(e).__name__}: {e}",
              file=sys.stderr)


def intend_lines(where: Where, spec: str) -> str:
    """`proximity intend` for the lines the person chose (the command's own code)."""
    here, _ = declared.declare(where.root, [spec], False)
    return f"proximity: the other worktrees are told that {shown(here)} is taking {shown(spec)}"


def inbox_text(where: Where) -> str:
    here, msgs = declared.inbox(where.root)
    if not msgs:
        return f"proximity: {shown(here)}: no new messages"
    return "\n\n".join(messages.render(m) for m in msgs)
