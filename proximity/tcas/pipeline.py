"""The scan pipeline of a command or hook: the ledger's facts in, the scan, its facts and
risk samples back into the ledger, other machines' snapshots included where asked."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace

from proximity.errors import FatalError, LedgerError
from proximity.ledger import TrackedDict, clocks
from proximity.model import Agent, Facts, Scan
from proximity.remote import inbound
from proximity.remote.machine import machine_id
from proximity.safetext import text
from proximity.snapshot.agents import live_agents
from proximity.snapshot.workspace import Context, warn
from proximity.tcas.engine import scan
from proximity.tcas.rightofway import reaches


def facts(ctx: Context, what_if: dict[str, list[tuple[int, int]] | None] | None = None
          ) -> Facts:
    f = Facts()
    led = ctx.ledger
    if led is None:
        if what_if:
            f.intents[ctx.here] = {p: tuple(r) if r else None for p, r in what_if.items()}
        return f
    streams = led.streams()
    # age for right-of-way: the shared ledger's order of first events, not anybody's clock
    f.started = {k: float(v["first_seq"]) for k, v in streams.items()
                 if v["first_seq"] is not None}
    f.created = {k: float(v["created"]) for k, v in streams.items()}
    f.clocks = led.clocks()
    for stream, items in led.intents().items():
        now = f.clocks.get(stream, {})
        f.intents[stream] = {p: tuple(r) if r else None for p, (r, _) in items.items()}
        f.intent_weights[stream] = {p: clocks.forward_decay(clocks.hop_count(c, now))
                                    for p, (_, c) in items.items()}
    if what_if:
        f.intents.setdefault(ctx.here, {}).update(
            {p: tuple(r) if r else None for p, r in what_if.items()})
        f.intent_weights.setdefault(ctx.here, {}).update(dict.fromkeys(what_if, 1.0))
    f.recency = led.recency
    f.history = led.history
    f.reached = led.reached
    f.held = led.held
    f.held_files = led.held_files
    f.broke_since = led.broke_since
    f.orders = set(led.orders(time.time()))
    for told, holder, _since in led.standing_yields():  # oldest first
        # (two worktrees deciding at the same moment could each record half a cycle: the
        # later decision gives way, the same for every reader)
        if not reaches(f.yields, holder, told):
            f.yields.setdefault(told, set()).add(holder)
    f.imports_cache = led.cache("imports")
    f.symbols_cache = led.cache("symbols")
    f.pair_cache = led.cache("pair")
    f.graph_cache = led.cache("graph")
    f.graph_ever_built = led.has_cache("graph")
    return f


def save_facts(ctx: Context, f: Facts) -> None:
    if ctx.ledger is None:
        return
    for kind, data in (("imports", f.imports_cache), ("symbols", f.symbols_cache),
                       ("pair", f.pair_cache), ("graph", f.graph_cache)):
        if isinstance(data, TrackedDict):
            with contextlib.suppress(LedgerError):
                ctx.ledger.save_cache(kind, data, replace=kind == "graph")


def record_risk(ctx: Context, result: Scan) -> None:
    if ctx.ledger is None:
        return
    total = {x.id: sum(x.clock.values()) for x in result.agents}
    remote = {x.id for x in result.agents if x.remote}
    samples = []
    decisions = {}
    # both sides read as they are, neither mid-rebase or the like: a clear pair is over
    whole = {x.id for x in result.agents if x.error is None and x.unread is None
             and not x.remote and not x.operation}
    over = []
    for p in result.pairs:
        a, b = sorted((p.a, p.b))
        samples.append((a, b, p.risk, p.advisory, float(total.get(a, 0) + total.get(b, 0))))
        if p.advisory == "clear" and {a, b} <= whole and not p.in_progress \
                and all(v is not None for v in p.channels.values()):
            over.append((a, b))
        if p.advisory == "resolution" and p.yielding and not {a, b} & remote:
            holder = b if p.yielding == a else a
            prio = p.priority.get(holder)
            decisions[(a, b)] = (p.yielding, -int(prio[0]) if prio else 0,
                                 tuple(p.contested))
    with contextlib.suppress(LedgerError):
        ctx.ledger.add_risk(samples)
        ctx.ledger.release(over)
        ctx.ledger.withdraw(over, [(y, b if y == a else a)
                                   for (a, b), (y, *_rest) in decisions.items()])
        ctx.ledger.hold(decisions)


def run_scan(ctx: Context, *, focus: str | None = None,
             what_if: dict[str, list[tuple[int, int]] | None] | None = None,
             agents: list[Agent] | None = None, retired: list[str] | None = None,
             record: bool = True, in_hook: bool = False, remote: bool = True,
             progress: Callable[[str, int], AbstractContextManager[Callable[[int], None]]]
             | None = None) -> Scan:
    """``remote=False``: leave other machines' snapshots out (the commit hooks never read
    or unpack them; the pre-push guard and the commands do)."""
    t0 = time.perf_counter()
    f = facts(ctx, what_if)
    f.defer_cold_graph = in_hook and ctx.ledger is not None
    f.progress = progress
    f.memo = ctx.memo
    if remote and has_remote_refs(ctx):
        try:
            f.machine = machine_id(ctx)
            f.remote = inbound.agents(ctx)
        except (OSError, FatalError) as e:
            warn(f"remote agents skipped: {text(e, 400)}")
    t1 = time.perf_counter()
    if agents is None:
        agents, retired = live_agents(ctx.repo, known=f.pair_cache)
    if in_hook and f.remote:
        f.remote = inbound.near(ctx, f.remote, next((a for a in agents if a.id == focus),
                                                    None))
    t2 = time.perf_counter()
    agents = [_with_ledger(a, f) for a in agents]
    result = scan(ctx.repo, ctx.cfg, f, focus=focus, agents=agents, retired=retired)
    t3 = time.perf_counter()
    save_facts(ctx, f)
    if record and not what_if:
        record_risk(ctx, result)
    result.timing.update({"ledger_read": t1 - t0, "snapshots": t2 - t1, "pairs": t3 - t2,
                          "ledger_write": time.perf_counter() - t3})
    result.seconds = time.perf_counter() - t0
    return result


def warm_up(ctx: Context) -> None:
    """Build the import graph in a detached background scan (after a deferred first run)."""
    # a short-lived shell starts it in the background and exits (double fork): the hook
    # returns at once and leaves no child behind
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["sh", "-c", 'exec "$0" "$@" </dev/null >/dev/null 2>&1 &',
                        sys.executable, "-m", "proximity", "scan", "--json", "-C",
                        ctx.repo.workdir], env={**os.environ, "PROXIMITY_SKIP": "1"},
                       timeout=10, check=False, start_new_session=True)


def has_remote_refs(ctx: Context) -> bool:
    """Cheap check (no git call) for fetched refs/ecm-remote/*."""
    if os.path.isdir(os.path.join(ctx.repo.common, "refs", "ecm-remote")):
        return True
    try:
        with open(os.path.join(ctx.repo.common, "packed-refs")) as fh:
            return "refs/ecm-remote/" in fh.read()
    except OSError:
        return False


def _with_ledger(a: Agent, f: Facts) -> Agent:
    return replace(a, clock=f.clocks.get(a.id, {}), started=f.started.get(a.id))
