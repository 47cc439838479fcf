"""`proximity scan` and `proximity status`."""

from __future__ import annotations

import argparse
import json
import sys

from proximity.analysis import intervals
from proximity.errors import UsageError
from proximity.safetext import text
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.views import progress, report, tables


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo)
    if ctx.ledger_error:
        workspace.warn(f"{ctx.ledger_error} (scanning without history, caches or messages; "
                     "see `proximity doctor`)")
    elif ctx.recording_off:
        workspace.warn(f"{ctx.recording_off} (scanning from what it can read; nothing is "
                       "recorded)")
    try:
        what_if = None
        if getattr(args, "intent", None):
            what_if = dict(intervals.parse_intent(s, ctx.repo.workdir)
                           for s in intervals.bounded_specs(args.intent))
        result = pipeline.run_scan(ctx, focus=getattr(args, "focus", None), what_if=what_if,
                                   progress=progress.bar)
    finally:
        ctx.close()
    focus = getattr(args, "focus", None)
    if focus is not None and all(a.id != focus for a in result.agents):
        live = ", ".join(sorted(text(a.id) for a in result.agents)) or "none"
        raise UsageError(f"--focus {text(focus)!r}: no such worktree (the live ones: {live})")
    if args.json:
        json.dump(report.scan_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.command == "status":

        tables.status(result, tables.console())
    else:
        print(report.scan_text(result))
    return 0
