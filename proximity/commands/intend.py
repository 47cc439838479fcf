"""`proximity intend PATH[:LINES]…`: declare this worktree's look-ahead set."""

from __future__ import annotations

import argparse
import json

from proximity.snapshot.declared import declare


def run(args: argparse.Namespace) -> int:
    here, current = declare(args.repo, args.paths, args.clear)
    if args.json:
        print(json.dumps({"agent": here, "intents": current}, indent=2))
    else:
        if not current:
            print(f"{here}: no intents")
        for path, ranges in sorted(current.items()):
            lines = ", ".join(f"{s}-{e}" for s, e in ranges) if ranges else "whole file"
            print(f"{here} intends {path} ({lines})")
    return 0
