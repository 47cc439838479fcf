"""What a worktree says and hears through the ledger: the lines it intends to touch
(`declare`) and the messages waiting for it (`inbox`). The command line, the MCP tools and
the editor all go through here."""

from __future__ import annotations

from typing import Any

from proximity.analysis.intervals import bounded_specs, parse_intent
from proximity.snapshot import delivery, recorder, workspace

Intents = dict[str, list[tuple[int, int]] | None]  # path -> line ranges (None: whole file)


def declare(start: str | None, specs: list[str], clear: bool) -> tuple[str, Intents]:
    """Declare the files (``PATH[:LINES]``) the worktree containing ``start`` will touch,
    after forgetting its earlier intents with ``clear``: (its agent id, every intent it
    holds now)."""
    specs = bounded_specs(specs)  # (a NUL, a megabyte: refused before anything opens)
    ctx = workspace.open_context(start, need_ledger=True)
    try:
        assert ctx.ledger is not None
        items = dict(parse_intent(s, ctx.repo.workdir) for s in specs)
        clock: dict[str, int] = {}
        if items or clear:
            # declaring intent is a D-T-D step of this stream: it ticks the clock, and the
            # intent decays forward from that tick
            ev = recorder.record_here(ctx, "intent")
            clock = ev.clock if ev else {}
        ctx.ledger.set_intents(ctx.here, items, clock, clear=clear)
        current = ctx.ledger.intents().get(ctx.here, {})
    finally:
        ctx.close()
    return ctx.here, {p: r for p, (r, _) in current.items()}


def inbox(start: str | None, delivered: int = 0) -> tuple[str, list[dict[str, Any]]]:
    """The messages for the worktree containing ``start``: the undelivered ones, marked
    delivered; with ``delivered`` the newest that many, delivered or not."""
    ctx = workspace.open_context(start, need_ledger=True)
    try:
        assert ctx.ledger is not None
        msgs = ctx.ledger.messages(ctx.here, delivered) if delivered else delivery.take(ctx)
    finally:
        ctx.close()
    return ctx.here, msgs
