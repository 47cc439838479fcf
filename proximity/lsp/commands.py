"""What the editor's person does that the ledger keeps, and what it says back: a save
recorded as the worktree's state, lines declared taken, the inbox, and who yields to whom
(the hover's standing order). Each runs off the server's loop."""

from __future__ import annotations

import sys

from proximity import gitio
from proximity.agents import standing
from proximity.errors import FatalError, LedgerError
from proximity.ledger import Ledger
from proximity.lsp.documents import Where
from proximity.safetext import text as shown
from proximity.snapshot import declared, recorder, workspace
from proximity.views import messages


def yields(where: Where, agents: set[str]) -> dict[str, str]:
    """Who yields to whom, per sibling, as the ledger's standing decisions say, and as
    the pre-edit check reads them: a sibling told to yield here that has since landed its
    work over this worktree's (its push overrode the guard: standing.landed_since) holds."""
    out: dict[str, str] = {}
    try:
        ledger = Ledger(where.ecm, create=False)
    except LedgerError:
        return out
    try:
        told = standing.yielding_to(ledger, where.agent, agents)
        mine = {a for a in agents - told if ledger.held(where.agent, a) is not None}
        repo = gitio.Repo(where.root, fast=True) if told or mine else None
        over = standing.landed_since(repo, ledger, where.agent, told) if repo and told \
            else set()
        there = standing.landed_over(repo, ledger, where.agent, mine) if repo and mine \
            else set()
        for agent in agents:
            name = shown(agent)
            if agent in over:
                out[agent] = (f"{name} was told to yield to you, then landed its work over "
                              "yours anyway: landed work holds, so you yield now (rebase "
                              "onto it and keep its lines)")
            elif agent in told:
                out[agent] = (f"{name} was told to yield to you (a standing Resolution "
                              "Advisory): hold your course, they steer")
            elif agent in there:
                out[agent] = (f"you were told to yield to {name}, and their work has "
                              "landed: rebase onto it now and keep their lines")
            elif agent in mine:
                out[agent] = (f"you were told to yield to {name}: steer clear of their "
                              "lines, or wait until their work lands")
    except (LedgerError, FatalError):
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
