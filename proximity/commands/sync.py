"""`proximity sync [REMOTE]`: share this machine's snapshots and fetch everyone else's."""

from __future__ import annotations

import argparse
import json
import time

from proximity import context, remote


def once(args: argparse.Namespace) -> int:
    ctx = context.open_context(args.repo)
    try:
        stats = remote.sync(ctx, args.remote, prune=args.prune)
        if args.prune:
            gone = remote.prune_fetched(ctx, stats["remote"], stats["machine"])
            stats["pruned_local"] = gone
    finally:
        ctx.close()
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(f"synced with {stats['remote']} as {stats['machine']}: pushed "
              f"{stats['pushed']} snapshot(s), pruned {stats['pruned']}, "
              f"{stats['remote_agents']} remote agent(s) known "
              f"({stats['seconds'] * 1000:.0f} ms)")
    return 0


def run(args: argparse.Namespace) -> int:
    if not args.watch:
        return once(args)
    try:
        while True:
            once(args)
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
