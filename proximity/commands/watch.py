"""`proximity watch`: a live control pane that refreshes on an interval and on ledger change."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from proximity.ledger import FILENAME
from proximity.snapshot import workspace
from proximity.tcas import pipeline
from proximity.views import tables


def _stamp(ecm: str) -> tuple[float, ...]:
    out = []
    for suffix in ("", "-wal"):
        try:
            out.append(os.stat(os.path.join(ecm, FILENAME + suffix)).st_mtime)
        except OSError:
            out.append(0.0)
    return tuple(out)


def render(ctx: workspace.Context, width: int) -> Any:
    result = pipeline.run_scan(ctx)
    history: dict[tuple[str, str], list[float]] = {}
    messages: list[dict[str, Any]] = []
    if ctx.ledger is not None:
        for p in result.pairs:
            key = (min(p.a, p.b), max(p.a, p.b))
            history[key] = [r for _, _, r in ctx.ledger.history(key[0], key[1])]
        messages = ctx.ledger.messages(None, 4)
    return tables.frame(result, history, messages, width)


def run(args: argparse.Namespace) -> int:
    from rich.live import Live

    ctx = workspace.open_context(args.repo)
    con = tables.console()
    width = max(80, min(con.width, 140))
    try:
        if args.once:
            con.print(render(ctx, width))
            return 0
        last = _stamp(ctx.repo.ecm_dir)
        due = 0.0
        with Live(render(ctx, width), console=con, auto_refresh=False) as live:
            while True:
                time.sleep(0.25)
                now = _stamp(ctx.repo.ecm_dir)
                if now != last or time.monotonic() >= due:
                    last, due = now, time.monotonic() + args.interval
                    live.update(render(ctx, width), refresh=True)
                    last = _stamp(ctx.repo.ecm_dir)  # our own risk samples changed it
    except KeyboardInterrupt:
        return 0
    finally:
        ctx.close()
