"""Rich renderings: the status table (plain in a pipe, colour on a terminal)."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

from proximity.model import Scan
from proximity.safetext import text
from proximity.views import report

if TYPE_CHECKING:  # (rich itself loads when a table is drawn)
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

STYLE = {"clear": "green", "traffic": "yellow", "resolution": "bold red"}


def console(file: IO[str] | None = None, width: int | None = None) -> Console:
    from rich.console import Console

    return Console(file=file or sys.stdout, width=width, no_color="NO_COLOR" in os.environ,
                   highlight=False, soft_wrap=False)


def safe(value: object, limit: int = 200) -> str:
    """A name, branch or path as table text: printable, bounded, no rich markup."""
    from rich.markup import escape

    return str(escape(text(value, limit)))


def bar(risk: float, width: int = 10, plain: bool = False) -> str:
    n = round(risk * width)
    return ("#" * n + "." * (width - n)) if plain else ("█" * n + "░" * (width - n))


def _table(title: str, plain: bool) -> Table:
    """A rich table; ``plain`` (a pipe or a file, not a terminal): ASCII borders, so the
    output reads the same through grep, a log or a CI console that is not UTF-8."""
    from rich import box
    from rich.table import Table

    return Table(title=title, expand=False, box=box.ASCII if plain else box.HEAVY_HEAD)


def agents_table(scan: Scan, plain: bool = False) -> Table:
    t = _table("agents", plain)
    for col in ("agent", "branch", "changed", "clock", "path"):
        t.add_column(col, overflow="fold")
    for a in scan.agents:
        changed = scan.changed.get(a.id, set())
        t.add_row(safe(a.id) + (" (remote)" if a.remote else ""),
                  safe(a.branch or "(detached)")
                  + safe(report.in_progress(a)),
                  str(len(changed)) if changed else "-",
                  str(sum(a.clock.values())) if a.clock else "-",
                  (a.error and f"[red]{safe(a.error, 400)}[/]")
                  or (a.unread and f"[yellow]committed work only: {safe(a.unread, 400)}[/]")
                  or safe(a.path, 400))
    for rid in scan.retired:
        t.add_row(safe(rid), "-", "-", "-", "[dim]retired: directory gone[/]")
    return t


def pairs_table(scan: Scan, plain: bool = False) -> Table:
    t = _table("pairs", plain)
    for col in ("pair", "risk", "advisory", "yields", "channels"):
        t.add_column(col, overflow="fold")
    for p in scan.pairs:
        ch = " ".join(f"{k[:3]} {'?' if v is None else f'{v:.2f}'}"
                      for k, v in p.channels.items() if v is None or v > 0)
        style = STYLE[p.advisory]
        t.add_row(f"{safe(p.a)} ~ {safe(p.b)}", f"{bar(p.risk, plain=plain)} {p.risk:.2f}",
                  f"[{style}]{p.advisory}{(' ^' if plain else ' ↑') if p.escalated else ''}[/]",
                  safe(p.yielding or ""), ch or "-")
    return t


def status(scan: Scan, con: Console) -> None:
    plain = not con.is_terminal
    con.print(agents_table(scan, plain))
    con.print(pairs_table(scan, plain))
    for p in scan.pairs:
        if p.advisory != "clear":
            con.print(f"{text(p.a)} ~ {text(p.b)}:", style=STYLE[p.advisory], markup=False)
            for line in report.evidence_lines(p, limit=4):
                con.print(line, markup=False, highlight=False)
    n_ra = sum(p.advisory == "resolution" for p in scan.pairs)
    n_ta = sum(p.advisory == "traffic" for p in scan.pairs)
    con.print(f"{n_ra} resolution, {n_ta} traffic advisories; scan took "
              f"{scan.seconds * 1000:.0f} ms")
    con.print(report.yield_line(scan), markup=False, highlight=False)


SPARK = "▁▂▃▄▅▆▇█"


def spark(values: list[float], width: int = 8) -> str:
    vals = values[-width:]
    return "".join(SPARK[min(len(SPARK) - 1, int(v * len(SPARK)))] for v in vals)


def trend(values: list[float]) -> str:
    if len(values) < 2:
        return "·"
    d = values[-1] - values[-2]
    return "↑" if d > 0.01 else ("↓" if d < -0.01 else "→")


def frame(scan: Scan, history: dict[tuple[str, str], list[float]],
          messages: list[dict[str, Any]], width: int = 80) -> Panel:
    """One frame of the control pane, laid out for ``width`` columns (80 at least)."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    pairs = Table(expand=True, box=None, pad_edge=False, show_edge=False)
    pairs.add_column("pair", overflow="ellipsis", no_wrap=True, ratio=3)
    pairs.add_column("risk", no_wrap=True, width=15)
    pairs.add_column("advisory", no_wrap=True, width=10)
    pairs.add_column("trend", no_wrap=True, width=10)
    pairs.add_column("via", overflow="ellipsis", no_wrap=True, ratio=3)
    for p in scan.pairs[:12]:
        h = history.get(tuple(sorted((p.a, p.b))), [])  # type: ignore[arg-type]
        vals = sorted(((v or 0.0, k) for k, v in p.channels.items() if k != "tree"),
                      reverse=True)
        via = " ".join(f"{k[:3]}{v:.1f}" for v, k in vals if v > 0)[:30]
        adv = {"clear": "clear", "traffic": "TA", "resolution": "RA"}[p.advisory]
        if p.escalated:
            adv += "↑"
        pairs.add_row(f"{safe(p.a)}~{safe(p.b)}", f"{bar(p.risk, 9)} {p.risk:.2f}",
                      Text(adv + (f" {text(p.yielding)}" if p.yielding else ""),
                           style=STYLE[p.advisory]),
                      f"{spark(h)}{trend(h)}", via or "-")
    agents = Text()
    for a in scan.agents:
        n = len(scan.changed.get(a.id, ()))
        agents.append(text(a.id), style="bold")
        agents.append(f" {text(a.branch or '(detached)')}{report.in_progress(a)} {n}f  ")
    for rid in scan.retired:
        agents.append(f"{text(rid)} (retired)  ", style="dim")
    lines = []
    for m in messages[:4]:
        body = m.get("body", {})
        lines.append(f"{text(m.get('type', '?'), 20):8} {text(m.get('from', '?'))}→"
                     f"{text(m.get('to', '?'))} risk {text(body.get('risk', '?'), 20)}")
    n_ra = sum(p.advisory == "resolution" for p in scan.pairs)
    n_ta = sum(p.advisory == "traffic" for p in scan.pairs)
    title = (f"proximity · {len(scan.agents)} agents · {n_ra} RA · {n_ta} TA · "
             f"scan {scan.seconds * 1000:.0f} ms")
    return Panel(Group(agents, pairs, Text(report.yield_line(scan)),
                       Text("\n".join(lines) or "no messages", style="dim")),
                 title=title, title_align="left", width=width)
