"""`proximity watch`: a live control pane that refreshes on an interval and on ledger change."""

from __future__ import annotations

import argparse
import os
import re
import signal
import time
from collections.abc import Iterator
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


def frames(ctx: workspace.Context, width: int, interval: float) -> Iterator[Any]:
    """A frame now, then one each time the ledger changes or ``interval`` seconds pass."""
    yield render(ctx, width)
    last = _stamp(ctx.repo.ecm_dir)
    due = time.monotonic() + interval
    while True:
        time.sleep(0.25)
        now = _stamp(ctx.repo.ecm_dir)
        if now != last or time.monotonic() >= due:
            due = time.monotonic() + interval
            yield render(ctx, width)
            last = _stamp(ctx.repo.ecm_dir)  # our own risk samples changed it


def run(args: argparse.Namespace) -> int:
    from rich.live import Live
    from rich.rule import Rule

    ctx = workspace.open_context(args.repo)
    con = tables.console()
    width = max(80, min(con.width, 140))
    try:
        if args.once:
            con.print(render(ctx, width))
            return 0
        # Ctrl-C ends the pane even when its parent started it with SIGINT ignored (a
        # script's background job passes that on), which would leave it unstoppable but by
        # a harder signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        shown = frames(ctx, width, args.interval)
        if not con.is_terminal:
            # a pipe or a file: each new frame printed in turn as plain text (no redraws;
            # one that shows what the last one showed is left out)
            last = ""
            for frame in shown:
                with con.capture() as got:
                    con.print(frame)
                text = got.get()
                if re.sub(r"scan \d+ ms", "", text) != last:
                    last = re.sub(r"scan \d+ ms", "", text)
                    con.print(Rule(f"proximity watch {time.strftime('%H:%M:%S')}"))
                    con.file.write(text)
                    con.file.flush()
        with Live(next(shown), console=con, auto_refresh=False) as live:
            for frame in shown:
                live.update(frame, refresh=True)
    except KeyboardInterrupt:
        return 0
    finally:
        ctx.close()
    return 0
