"""`proximity inbox`: messages for this worktree (delivered once unless --all)."""

from __future__ import annotations

import argparse
import json

from proximity.snapshot.declared import inbox
from proximity.views import messages


def run(args: argparse.Namespace) -> int:
    here, msgs = inbox(args.repo, 200 if args.all else 0)
    if args.json:
        print(json.dumps({"agent": here, "messages": msgs}, indent=2))
        return 0
    if not msgs:
        print(f"{here}: no new messages")
    for m in msgs:
        print(messages.render(m))
    return 0
