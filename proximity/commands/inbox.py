"""`proximity inbox`: messages for this worktree (delivered once unless --all)."""

from __future__ import annotations

import argparse
import json

from proximity.snapshot import workspace
from proximity.views import messages


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo, need_ledger=True)
    try:
        assert ctx.ledger is not None
        msgs = (ctx.ledger.messages(ctx.here, 200) if args.all else ctx.ledger.take(ctx.here))
    finally:
        ctx.close()
    if args.json:
        print(json.dumps({"agent": ctx.here, "messages": msgs}, indent=2))
        return 0
    if not msgs:
        print(f"{ctx.here}: no new messages")
    for m in msgs:
        print(messages.render(m))
    return 0
