"""Turning advisories into TCAS actions: transmit (TA), steer and hold (RA).

Messages go to the ledger inbox (cooldown per pair and type) and, when
``[tool.proximity] notify`` is set, to that command as JSON on stdin.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
from typing import Any

from proximity.analysis import hunks
from proximity.errors import LedgerError
from proximity.model import Agent, PairResult, Scan, last_commit
from proximity.safetext import opt_text, text
from proximity.snapshot.workspace import Context
from proximity.tcas import risk


def _files(p: PairResult, who: str) -> list[dict[str, Any]]:
    """``who``'s side of the evidence, one entry per path (channels and ranges merged)."""
    by_path: dict[str, dict[str, Any]] = {}
    for f in p.findings:
        if f.score <= 0 or f.channel == "error":
            continue
        mine, ranges = f.side(who == p.a)
        mine = text(mine, 300)  # paths from other people's trees: printable, bounded
        entry = by_path.setdefault(mine, {"path": mine, "ranges": [], "channels": [],
                                          "details": []})
        for r in ranges:
            if list(r) not in entry["ranges"]:
                entry["ranges"].append(list(r))
        if f.channel not in entry["channels"]:
            entry["channels"].append(f.channel)
            entry["details"].append(text(f.detail, 300))
    for entry in by_path.values():
        entry["ranges"].sort()
        entry["channel"] = entry["channels"][0]
    return list(by_path.values())[:8]


def body(p: PairResult, sender: Agent, recipient: str, kind: str, scan: Scan,
         intents: dict[str, Any]) -> dict[str, Any]:
    b: dict[str, Any] = {
        "type": kind, "advisory": p.advisory, "risk": round(p.risk, 3),
        "escalated": p.escalated, "from": text(sender.id), "to": text(recipient),
        "branch": opt_text(sender.branch), "last_commit": text(last_commit(p, sender)),
        "channels": {k: v for k, v in p.channels.items() if v},
        "their_files": _files(p, sender.id), "your_files": _files(p, recipient),
        "intents": intents.get(sender.id, {}),
        # a collision at a distance names what collides, not only the files
        "symbols": [text(f.detail, 300) for f in p.findings if f.channel == "symbol"][:3],
    }
    if kind == "steer":
        mine = scan.changed.get(recipient, set())
        hot = {f["path"] for f in b["your_files"]}
        b["avoid"] = sorted(hot)
        b["elsewhere"] = [text(x, 300) for x in sorted(mine - hot)[:10]]
        b["override"] = "PROXIMITY_ALLOW=1 git push  (or git push --no-verify)"
    return b


def add_hunks(msg: dict[str, Any], their: dict[str, str]) -> None:
    """The sender's hunk (bounded excerpt of its diff) next to each of its contested files."""
    for f in msg.get("their_files", []):
        if their.get(f["path"]):
            f["hunk"] = their[f["path"]]


def plan(scan: Scan) -> list[tuple[str, str, str, PairResult]]:
    """(recipient, sender, type, pair) for every advisory that calls for a message."""
    out = []
    for p in scan.pairs:
        level = p.advisory
        if p.escalated:
            level = risk.TRAFFIC if level == risk.CLEAR else risk.RESOLUTION
        if level == risk.TRAFFIC:
            out += [(p.a, p.b, "transmit", p), (p.b, p.a, "transmit", p)]
        elif level == risk.RESOLUTION:
            y = p.yielding or max(p.a, p.b)
            h = p.b if y == p.a else p.a
            out += [(y, h, "steer", p), (h, y, "hold", p)]
    return out


def fire(ctx: Context, scan: Scan) -> list[dict[str, Any]]:
    """Queue the messages an advisory calls for; returns the ones actually posted."""
    if ctx.ledger is None:
        return []
    agents = {a.id: a for a in scan.agents}
    intents = {k: {p: v[0] for p, v in items.items()}
               for k, items in ctx.ledger.intents().items()}
    posted = []
    for recipient, sender, kind, p in plan(scan):
        if sender not in agents:
            continue
        hops = float(sum(agents[recipient].clock.values()) if recipient in agents else 0)
        if ctx.ledger.cooling(recipient, sender, kind, hops, ctx.cfg.cooldown_seconds,
                              ctx.cfg.cooldown_hops):
            continue  # (post would drop it: no body, no diff for its hunks)
        msg = body(p, agents[sender], recipient, kind, scan, intents)
        add_hunks(msg, hunks.of_pair(ctx.repo, p, agents[sender]))
        try:
            mid = ctx.ledger.post(recipient, sender, kind, msg, hops,
                                  ctx.cfg.cooldown_seconds, ctx.cfg.cooldown_hops)
        except LedgerError:
            continue
        if mid is not None:
            msg["id"] = mid
            msg["recipient"] = recipient
            posted.append(msg)
            notify(ctx.cfg.notify, msg)
    return posted


def notify(command: str | None, msg: dict[str, Any]) -> None:
    if not command:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(shlex.split(command), input=json.dumps(msg).encode(), timeout=10,
                       capture_output=True, check=False)
