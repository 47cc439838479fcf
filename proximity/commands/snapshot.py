"""`proximity snapshot`: record this worktree's working state (what post-* hooks run)."""

from __future__ import annotations

import argparse
import json

from proximity.snapshot import recorder, workspace


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo, need_ledger=True)
    try:
        ev = recorder.record_here(ctx, args.kind, commit=True)
    finally:
        ctx.close()
    assert ev is not None
    if args.json:
        print(json.dumps(ev._asdict(), indent=2))
    else:
        print(f"{ev.stream}: event {ev.seq} ({ev.kind}), {len(ev.files)} changed file(s), "
              f"clock {ev.clock}")
    return 0
