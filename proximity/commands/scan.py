"""`proximity scan` and `proximity status`."""

from __future__ import annotations

import argparse
import json
import re
import sys

from proximity import context, report
from proximity.errors import FatalError

LINES = re.compile(r"^(.*?):(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)$")


def parse_intent(spec: str) -> tuple[str, list[tuple[int, int]] | None]:
    """``path`` or ``path:10-20,30`` -> (path, ranges or None for the whole file)."""
    m = LINES.match(spec)
    if not m:
        return spec.strip("/"), None
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        s, e = int(lo), int(hi or lo)
        if e < s or s < 1:
            raise FatalError(f"bad line range {part!r} in {spec!r} (want START-END, 1-based)")
        out.append((s, e))
    return m.group(1).strip("/"), out


def run(args: argparse.Namespace) -> int:
    ctx = context.open_context(args.repo)
    if ctx.ledger_error:
        context.warn(f"{ctx.ledger_error} (scanning without history, caches or messages; "
                     "see `proximity doctor`)")
    try:
        what_if = None
        if getattr(args, "intent", None):
            what_if = dict(parse_intent(s) for s in args.intent)
        result = context.run_scan(ctx, focus=getattr(args, "focus", None), what_if=what_if)
    finally:
        ctx.close()
    if args.json:
        json.dump(report.scan_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.command == "status":
        from proximity import views

        views.status(result, views.console())
    else:
        print(report.scan_text(result))
    return 0
