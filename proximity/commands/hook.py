"""`proximity hook STAGE`: what git hooks (plain or via pre-commit) run.

snapshot  post-checkout, post-commit, post-merge, post-rewrite: record, deliver inbox.
warn      pre-commit: print advisories that involve this worktree (blocks only with
          ``block_commit = true`` and an RA that says this worktree yields).
guard     pre-push: exit 1 when an RA says this worktree must yield, unless
          PROXIMITY_ALLOW=1.

Every stage fails open: an internal error prints a warning and exits 0, because the tool
must never break git. The only non-zero exit is the deliberate block.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from proximity import context, recorder
from proximity.errors import FatalError

if TYPE_CHECKING:
    import argparse

STAGE = {"post-checkout": "snapshot", "post-commit": "snapshot", "post-merge": "snapshot",
         "post-rewrite": "snapshot", "pre-commit": "warn", "pre-push": "guard"}


def _kind(stage: str, args: list[str]) -> str:
    if stage == "post-checkout" or "PRE_COMMIT_CHECKOUT_TYPE" in os.environ:
        prev = args[0] if args else os.environ.get("PRE_COMMIT_FROM_REF", "")
        return "worktree-add" if prev and set(prev) == {"0"} else "checkout"
    if stage == "post-rewrite" or "PRE_COMMIT_REWRITE_COMMAND" in os.environ:
        return "rewrite"
    if stage == "post-merge" or "PRE_COMMIT_IS_SQUASH_MERGE" in os.environ:
        return "merge"
    if stage in ("pre-push", "guard"):
        return "push"
    if stage in ("pre-commit", "warn"):
        return "pre-commit"
    return "commit"


def err(msg: str) -> None:
    print(msg, file=sys.stderr)


def deliver(ctx: context.Context, shown: set[int] | None = None) -> None:
    """Print this worktree's undelivered messages, once; ``shown``: ids this run already
    printed as advisories (marked delivered without repeating them)."""
    if ctx.ledger is None:
        return
    msgs = [m for m in ctx.ledger.take(ctx.here) if m["id"] not in (shown or set())]
    if msgs:
        from proximity import triggers

    for msg in msgs:
        err(triggers.render(msg))


GC_EVERY = 1000  # events; retention runs in the hook that records the 1000th


def snapshot(ctx: context.Context, kind: str) -> None:
    ev = recorder.record_here(ctx, kind, recorder.index_override())
    deliver(ctx)
    if ev is not None and ctx.ledger is not None and ev.seq % GC_EVERY == 0:
        live = {w.id for w in ctx.repo.worktrees() if not w.prunable}
        ctx.ledger.gc(ctx.cfg.retain_events, live)


def check(ctx: context.Context, stage: str, kind: str) -> int:
    """Record, scan the pairs involving this worktree, fire triggers, print advisories."""
    from proximity import hunks, report, triggers
    from proximity.airspace import live_agents

    if stage == "guard" and ctx.cfg.sync:
        from proximity import remote

        try:
            remote.sync(ctx, None)
        except FatalError as e:
            err(f"proximity: warning: sync skipped: {e}")
    override = recorder.index_override() if stage == "warn" else None
    agents, retired = live_agents(ctx.repo, {ctx.here: override} if override else None)
    me = next((a for a in agents if a.id == ctx.here), None)
    if me is not None and me.error is None:
        recorder.record(ctx, kind, recorder.Snap(me.id, me.path, me.branch, me.head,
                                                 me.snapshot, me.tree))
    result = context.run_scan(ctx, focus=ctx.here, agents=agents, retired=retired,
                              in_hook=True)
    if result.graph_deferred:
        context.warm_up(ctx)
        err("proximity: first run: building the import graph in the background; the "
            "dependency channel is unknown until it is ready.")
    posted = triggers.fire(ctx, result)
    deliver(ctx, {m["id"] for m in posted if m["recipient"] == ctx.here})
    by_id = {a.id: a for a in result.agents}
    must_yield = []
    for p in result.involving(ctx.here):
        if p.advisory == "clear" and not p.escalated:
            continue
        other = by_id.get(p.b if p.a == ctx.here else p.a)
        err(report.advisory_text(p, ctx.here, by_id, hunks.of_pair(ctx.repo, p, other)))
        if p.advisory == "resolution" and p.yielding == ctx.here:
            must_yield.append(p)
    if not must_yield:
        return 0
    blocking = stage == "guard" or (stage == "warn" and ctx.cfg.block_commit)
    if not blocking:
        return 0
    if os.environ.get("PROXIMITY_ALLOW") == "1":
        err("proximity: PROXIMITY_ALLOW=1 set: letting this through despite the advisory.")
        return 0
    what = "push" if stage == "guard" else "commit"
    err(f"proximity: {what} blocked: this worktree must yield to "
        f"{', '.join(repr(p.b if p.a == ctx.here else p.a) for p in must_yield)}. "
        f"Move your change away from their lines, or coordinate and override with "
        f"PROXIMITY_ALLOW=1 git {what} (or --no-verify).")
    return 1


def run(args: argparse.Namespace) -> int:
    stage = STAGE.get(args.stage, args.stage)
    kind = _kind(args.stage, list(args.args))
    if os.environ.get("PROXIMITY_SKIP") == "1":
        return 0
    try:
        ctx = context.open_context(os.getcwd(), check_git=stage != "snapshot")
    except FatalError as e:
        err(f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:  # never break git
        err(f"proximity: warning: internal error {type(e).__name__}: {e} (hook skipped)")
        return 0
    try:
        if ctx.ledger_error:
            err(f"proximity: warning: {ctx.ledger_error} (advisories need the ledger; "
                "see `proximity doctor`)")
            if stage != "guard":
                return 0
        if stage == "snapshot":
            snapshot(ctx, kind)
            return 0
        return check(ctx, stage, kind)
    except FatalError as e:
        err(f"proximity: warning: {e} (hook skipped; git goes on)")
        return 0
    except Exception as e:
        err(f"proximity: warning: internal error {type(e).__name__}: {e} (hook skipped; "
            "git goes on)")
        if os.environ.get("PROXIMITY_DEBUG"):
            import traceback

            traceback.print_exc()
        return 0
    finally:
        ctx.close()
