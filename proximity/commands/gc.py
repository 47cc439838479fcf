"""`proximity gc`: compact the ledger, retire removed worktrees, drop their refs."""

from __future__ import annotations

import argparse
import contextlib
import json

from proximity import gitio
from proximity.snapshot import workspace
from proximity.snapshot.recorder import REF_PREFIX
from proximity.views import progress


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo, need_ledger=True)
    try:
        assert ctx.ledger is not None
        live = {wt.id for wt in ctx.repo.worktrees() if not wt.prunable}
        with progress.phases("gc") as say:
            say("compacting the ledger")
            stats = ctx.ledger.gc(ctx.cfg.retain_events, live)
        dropped = []
        refs = [r for r in ctx.repo.pg.references if r.startswith(REF_PREFIX)]
        kept = {gitio.safe_name(x) for x in live}
        with progress.bar("dropping retired worktrees' refs", len(refs)) as tick:
            for ref in refs:
                tick(1)
                if ref[len(REF_PREFIX):] not in kept:
                    with contextlib.suppress(Exception):
                        ctx.repo.pg.references.delete(ref)
                        dropped.append(ref)
        stats["refs"] = len(dropped)
        stats["scratch"] = len(gitio.sweep_scratch(ctx.repo.ecm_dir))  # a killed writer's
    finally:
        ctx.close()
    if args.json:
        print(json.dumps(stats))
    else:
        print(", ".join(f"{k}: {v}" for k, v in stats.items()))
    return 0
