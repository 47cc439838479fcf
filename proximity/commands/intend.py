"""`proximity intend PATH[:LINES]…`: declare this worktree's look-ahead set."""

from __future__ import annotations

import argparse
import json

from proximity.analysis.intervals import bounded_specs, parse_intent
from proximity.snapshot import recorder, workspace


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo, need_ledger=True)
    try:
        assert ctx.ledger is not None
        items = dict(parse_intent(s, ctx.repo.workdir) for s in bounded_specs(args.paths))
        clock: dict[str, int] = {}
        if items or args.clear:
            # declaring intent is a D-T-D step of this stream: it ticks the clock, and the
            # intent decays forward from that tick
            ev = recorder.record_here(ctx, "intent")
            clock = ev.clock if ev else {}
        ctx.ledger.set_intents(ctx.here, items, clock, clear=args.clear)
        current = ctx.ledger.intents().get(ctx.here, {})
    finally:
        ctx.close()
    if args.json:
        print(json.dumps({"agent": ctx.here, "intents": {p: r for p, (r, _) in
                                                          current.items()}}, indent=2))
    else:
        if not current:
            print(f"{ctx.here}: no intents")
        for path, (ranges, _) in sorted(current.items()):
            lines = ", ".join(f"{s}-{e}" for s, e in ranges) if ranges else "whole file"
            print(f"{ctx.here} intends {path} ({lines})")
    return 0
