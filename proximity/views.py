"""Rich renderings: the status table (plain in a pipe, colour on a terminal)."""

from __future__ import annotations

import os
import sys
from typing import Any

from proximity import report
from proximity.airspace import Scan

STYLE = {"clear": "green", "traffic": "yellow", "resolution": "bold red"}


def console(file: Any = None, width: int | None = None) -> Any:
    from rich.console import Console

    return Console(file=file or sys.stdout, width=width, no_color="NO_COLOR" in os.environ,
                   highlight=False, soft_wrap=False)


def bar(risk: float, width: int = 10) -> str:
    n = round(risk * width)
    return "█" * n + "░" * (width - n)


def agents_table(scan: Scan) -> Any:
    from rich.table import Table

    t = Table(title="agents", expand=False)
    for col in ("agent", "branch", "changed", "clock", "path"):
        t.add_column(col, overflow="fold")
    for a in scan.agents:
        changed = scan.changed.get(a.id, set())
        t.add_row(a.id + (" (remote)" if a.remote else ""), a.branch or "(detached)",
                  str(len(changed)) if changed else "-",
                  str(sum(a.clock.values())) if a.clock else "-",
                  (a.error and f"[red]{a.error}[/]") or a.path)
    for rid in scan.retired:
        t.add_row(rid, "-", "-", "-", "[dim]retired: directory gone[/]")
    return t


def pairs_table(scan: Scan) -> Any:
    from rich.table import Table

    t = Table(title="pairs", expand=False)
    for col in ("pair", "risk", "advisory", "yields", "channels"):
        t.add_column(col, overflow="fold")
    for p in scan.pairs:
        ch = " ".join(f"{k[:3]} {'?' if v is None else f'{v:.2f}'}"
                      for k, v in p.channels.items() if v is None or v > 0)
        style = STYLE[p.advisory]
        t.add_row(f"{p.a} ~ {p.b}", f"{bar(p.risk)} {p.risk:.2f}",
                  f"[{style}]{p.advisory}{' ↑' if p.escalated else ''}[/]",
                  p.yielding or "", ch or "-")
    return t


def status(scan: Scan, con: Any) -> None:
    con.print(agents_table(scan))
    con.print(pairs_table(scan))
    for p in scan.pairs:
        if p.advisory != "clear":
            con.print(f"{p.a} ~ {p.b}:", style=STYLE[p.advisory])
            for line in report.evidence_lines(p, limit=4):
                con.print(line, markup=False, highlight=False)
    n_ra = sum(p.advisory == "resolution" for p in scan.pairs)
    n_ta = sum(p.advisory == "traffic" for p in scan.pairs)
    con.print(f"{n_ra} resolution, {n_ta} traffic advisories; scan took "
              f"{scan.seconds * 1000:.0f} ms")
