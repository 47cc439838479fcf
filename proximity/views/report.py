"""Rendering: the JSON contract and the human text for scans and advisories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proximity.analysis.intervals import fmt_ranges
from proximity.gitio.bulk import summary_text
from proximity.model import Agent, Finding, PairResult, Scan, last_commit
from proximity.safetext import opt_text, text
from proximity.tcas import rightofway

SCHEMA = 1


def agent_json(a: Agent) -> dict[str, Any]:
    return {"id": a.id, "branch": opt_text(a.branch, 255), "path": text(a.path, 4096),
            "head": a.head, "snapshot": a.snapshot, "tree": a.tree, "remote": a.remote,
            "machine": a.machine or None, "clock": a.clock, "started": a.started,
            "subject": text(a.subject), "error": opt_text(a.error, 400),
            "unread": opt_text(a.unread, 400), "operation": a.operation,
            "summarized": {text(d, 4096): n for d, n in a.summarized}}


def finding_json(f: Finding) -> dict[str, Any]:
    return {"channel": f.channel, "score": round(f.score, 4), "path_a": f.path_a,
            "path_b": f.path_b, "ranges_a": [list(r) for r in f.ranges_a],
            "ranges_b": [list(r) for r in f.ranges_b], "detail": f.detail,
            "route": list(f.route), "kind": f.kind}


def pair_json(p: PairResult) -> dict[str, Any]:
    return {
        "a": p.a, "b": p.b, "risk": round(p.risk, 4), "distance": round(p.distance, 4),
        "advisory": p.advisory, "yielding": p.yielding,
        "channels": {k: (None if v is None else round(v, 4)) for k, v in p.channels.items()},
        "concurrent": p.concurrent, "escalated": p.escalated,
        "closure_per_hop": None if p.closure_per_hop is None else round(p.closure_per_hop, 4),
        "base": p.base, "findings": [finding_json(f) for f in p.findings],
        "in_progress": dict(p.in_progress),
        "priority": {k: {"committed": -v[0], "started": None if v[1] == float("inf") else v[1]}
                     for k, v in p.priority.items()},
        "complete": all(v is not None for v in p.channels.values()),
    }


def scan_json(scan: Scan) -> dict[str, Any]:
    return {"schema": SCHEMA, "agents": [agent_json(a) for a in scan.agents],
            "pairs": [pair_json(p) for p in scan.pairs], "retired": scan.retired,
            "seconds": round(scan.seconds, 4),
            "timing": {k: round(v, 4) for k, v in scan.timing.items()},
            "yields": [{"agent": x, "waits_for": sorted(ys)}
                       for x, ys in sorted(scan.yields.items())],
            "yield_cycle": rightofway.cycle(scan.yields),
            "goes_first": [[f, g] for g, f in sorted(scan.orders)]}


def yield_line(scan: Scan) -> str:
    """Who waits for whom, in one line, and whether that order has a cycle (it never
    should: a cycle would block every agent in it, so it is shown as an error)."""
    first = "".join(f"; {text(f)} goes first over {text(g)} (a wait cycle broken, until "
                    f"{text(f)}'s work lands)" for g, f in sorted(scan.orders))
    if not scan.yields:
        return f"right-of-way: nobody waits{first}"
    waits = "; ".join(f"{text(x)} waits for {', '.join(text(y) for y in sorted(ys))}"
                      for x, ys in sorted(scan.yields.items()))
    loop = rightofway.cycle(scan.yields)
    if loop:
        return (f"right-of-way: {waits} -- ERROR: a cycle ({' -> '.join(map(text, loop))}) "
                f"would block all of them; report it{first}")
    return f"right-of-way: {waits} (one order, no cycle){first}"


LABEL = {"clear": "CLEAR", "traffic": "TRAFFIC ADVISORY", "resolution": "RESOLUTION ADVISORY"}


def evidence_lines(p: PairResult, me: str | None = None, limit: int = 6) -> list[str]:
    """`path:lines — channel: detail` lines, from ``me``'s side when given."""
    out = []
    seen = set()
    for f in p.findings:
        if f.score <= 0 or f.channel == "error":
            if f.channel == "error":
                out.append(f"  {text(f.detail, 300)}")
            continue
        first = me is None or me != p.b
        (mine, rm), (theirs, rt) = f.side(first), f.side(not first)
        # paths and details may come from other people's trees: printable, bounded
        mine, theirs, detail = text(mine, 300), text(theirs, 300), text(f.detail, 300)
        if f.channel == "dependency":
            line = f"  dependency: {detail}"
        elif f.channel == "symbol":
            line = f"  symbol: {detail}"
        else:
            where = mine if mine == theirs else f"{mine} / {theirs}"
            lines = ""
            if rm or rt:
                # no lines on one side: a whole-file intent, or a file added, deleted
                # or binary as a whole
                lines = (f" lines {fmt_ranges(rm) or 'whole file'} vs "
                         f"{fmt_ranges(rt) or 'whole file'}")
            line = f"  {f.channel}: {where}{lines} — {detail}"
        if line not in seen:
            seen.add(line)
            out.append(line)
        if len(out) >= limit:
            break
    return out


def advisory_text(p: PairResult, me: str, agents: dict[str, Agent],
                  their_hunks: Mapping[str, str] | None = None) -> str:
    other = agents.get(p.b if me == p.a else p.a)
    other_id = text(p.b if me == p.a else p.a)
    branch = f" (branch {text(other.branch)})" if other and other.branch else ""
    head = f"{LABEL[p.advisory]}{' (escalated: closing fast)' if p.escalated else ''}"
    lines = [f"proximity: {head} with worktree {other_id!r}{branch}: "
             f"risk {p.risk:.2f} via {top_channels(p)}"]
    lines += evidence_lines(p, me)
    for path, hunk in list((their_hunks or {}).items())[:3]:  # bounded by hunks.of_pair
        lines.append(f"  their change in {text(path, 300)}:")
        lines += [f"    {text(ln, 300)}" for ln in hunk.split("\n")]
    if other and other.subject:
        last = last_commit(p, other)
        lines.append(f"  their last commit: {text(last)}" if last else
                     "  they have not committed since your common base: uncommitted work only")
    for who, op in sorted(p.in_progress.items()):
        lines.append(f"  {'you are' if who == me else repr(text(who)) + ' is'} in the middle "
                     f"of a {op}: no block until it ends")
    if p.advisory == "resolution":
        if p.yielding == me:
            lines.append(f"  → you must yield: steer away from these lines or coordinate with "
                         f"{other_id!r} before pushing. Override: PROXIMITY_ALLOW=1 git push "
                         "(or git push --no-verify).")
        else:
            lines.append(f"  → you have right-of-way: hold course; {other_id!r} was told to "
                         "steer away.")
    elif p.advisory == "traffic":
        lines.append(f"  → traffic: tell {other_id!r} what you are doing "
                     "(`proximity intend PATH`), and keep clear of their lines.")
    return "\n".join(lines)


def top_channels(p: PairResult) -> str:
    vals = sorted(((v or 0.0, k) for k, v in p.channels.items() if k != "tree"), reverse=True)
    names = [f"{k} {v:.2f}" for v, k in vals if v > 0][:3]
    return ", ".join(names) or "no channel"


def in_progress(a: Agent, why: str = "") -> str:
    """" (rebase in progress)" after a worktree's branch, where git is in the middle of an
    operation there ("" otherwise); ``why``: words after it, inside the parentheses."""
    return f" ({text(a.operation)} in progress{why})" if a.operation else ""


def scan_text(scan: Scan) -> str:
    lines = [f"{len(scan.agents)} agents, {len(scan.pairs)} pairs "
             f"({scan.seconds * 1000:.0f} ms)"]
    for a in scan.agents:
        tag = " [remote]" if a.remote else ""
        err = f"  UNREADABLE: {text(a.error, 400)}" if a.error else (
            f"  COMMITTED WORK ONLY (live changes unread: {text(a.unread, 400)})"
            if a.unread else "")
        op = in_progress(a, ": blocks nobody until it ends")
        lines.append(f"  {text(a.id)}{tag}: {text(a.branch or '(detached)')} at "
                     f"{text(a.path, 400)}{op}{err}")
        if a.summarized:
            lines.append(f"    {text(summary_text(dict(a.summarized)), 600)}")
    for rid in scan.retired:
        lines.append(f"  {text(rid)}: retired (worktree directory is gone; never blocks)")
    for p in scan.pairs:
        ch = " ".join(f"{k}={'?' if v is None else f'{v:.2f}'}" for k, v in p.channels.items())
        y = f" yield: {text(p.yielding)}" if p.yielding else ""
        lines.append(f"{text(p.a)} ~ {text(p.b)}: {p.advisory.upper()} risk={p.risk:.2f} "
                     f"distance={p.distance:.2f}{y}  [{ch}]")
        if not p.concurrent:
            lines.append("  (causally ordered: one has merged the other's work)")
        for who, op in sorted(p.in_progress.items()):
            lines.append(f"  ({text(who)} is in the middle of a {text(op)}: no block until it "
                         "ends)")
        lines += evidence_lines(p)
    lines.append(yield_line(scan))
    return "\n".join(lines)
