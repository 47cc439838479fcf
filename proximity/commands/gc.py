"""`proximity gc`: compact the ledger, retire removed worktrees, drop their pins, and prune
the private object store of live work (store.py) down to what live worktrees need."""

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
            say("pruning the object store of live work")
            names = {gitio.safe_name(x) for x in live}
            kept = gitio.store_gc(ctx.repo.store, names, ctx.repo.shadow_trees(names))
        # pins the repository itself once held (snapshots are pinned in the store now)
        dropped = []
        refs = [r for r in ctx.repo.pg.references if r.startswith(REF_PREFIX)]
        with progress.bar("dropping old pins", len(refs)) as tick:
            for ref in refs:
                tick(1)
                with contextlib.suppress(Exception):
                    ctx.repo.pg.references.delete(ref)
                    dropped.append(ref)
        stats["refs"] = len(dropped) + kept["pins"]
        stats["objects"] = kept["objects"]
        stats["scratch"] = len(gitio.sweep_scratch(ctx.repo.ecm_dir))  # a killed writer's
        stats["scratch"] += gitio.sweep_scratch_stores()
    finally:
        ctx.close()
    if args.json:
        print(json.dumps(stats))
    else:
        print(", ".join(f"{k}: {v}" for k, v in stats.items()))
    return 0
