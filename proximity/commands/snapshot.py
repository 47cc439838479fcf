"""`proximity snapshot`: record this worktree's working state (what post-* hooks run)."""

from __future__ import annotations

import argparse
import json

from proximity import context, recorder


def run(args: argparse.Namespace) -> int:
    ctx = context.open_context(args.repo, need_ledger=True)
    try:
        wt = recorder.this_worktree(ctx)
        agent = recorder.snapshot_agent(ctx, wt)
        ev = recorder.record(ctx, args.kind, agent)
    finally:
        ctx.close()
    assert ev is not None
    if args.json:
        print(json.dumps({"seq": ev.seq, "stream": ev.stream, "kind": ev.kind,
                          "head": ev.head, "snapshot": ev.snapshot, "tree": ev.tree,
                          "files": ev.files, "clock": ev.clock, "time": ev.time}, indent=2))
    else:
        print(f"{ev.stream}: event {ev.seq} ({ev.kind}), {len(ev.files)} changed file(s), "
              f"clock {ev.clock}")
    return 0
