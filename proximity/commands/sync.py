"""`proximity sync [REMOTE]`: share this machine's snapshots and fetch everyone else's.

``--dry-run`` lists exactly what would leave the machine (refs, the paths that differ from
each worktree's HEAD with their sizes, what is withheld and why) and sends nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from proximity.remote import sharing
from proximity.safetext import text
from proximity.snapshot import workspace
from proximity.views import progress


def dry_run_text(plan: dict[str, Any]) -> str:
    lines = [f"dry run: nothing sent. `proximity sync` would push to {text(plan['remote'])} "
             f"as {plan['machine']}:"]
    for r in plan["refs"]:
        extra = r["head_commits_not_on_remote"]
        head = (f" on {(r['head'] or '')[:12]} ({extra} commit(s) the remote lacks also leave)"
                if extra else "")
        lines.append(f"  {text(r['ref'])} (branch {text(r['branch'] or '(detached)')})"
                     f"{head}: {len(r['paths'])} changed path(s), {r['bytes']} bytes")
        for c in r["paths"]:
            lines.append(f"    {c['status']} {text(c['path'], 300)} ({c['size']} bytes)")
        for w in r["withheld"]:
            lines.append(f"    withheld ({w['reason']}): {text(w['path'], 300)} "
                         f"({w['size']} bytes)")
    for ref in plan["would_delete"]:
        lines.append(f"  delete {text(ref)}")
    return "\n".join(lines)


def once(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo)
    try:
        if getattr(args, "dry_run", False):
            plan = sharing.dry_run(ctx, args.remote, prune=args.prune)
            print(json.dumps(plan, indent=2) if args.json else dry_run_text(plan))
            return 0
        with progress.phases("sync") as say:
            stats = sharing.sync(ctx, args.remote, prune=args.prune, say=say)
        if args.prune:
            gone = sharing.prune_fetched(ctx, stats["remote"], stats["machine"])
            stats["pruned_local"] = gone
    finally:
        ctx.close()
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(f"synced with {text(stats['remote'])} as {stats['machine']}: pushed "
              f"{stats['pushed']} snapshot(s), pruned {stats['pruned']}, "
              f"{stats['remote_agents']} remote agent(s) known"
              + (f", {len(stats['rejected'])} snapshot(s) rejected (warnings above)"
                 if stats.get("rejected") else "")
              + (f", {len(stats['vanished'])} pinned snapshot(s) vanished from the remote "
                 "and kept (warnings above)" if stats.get("vanished") else "") + " "
              f"({stats['seconds'] * 1000:.0f} ms)")
    return 0


def run(args: argparse.Namespace) -> int:
    if not args.watch or getattr(args, "dry_run", False):
        return once(args)
    try:
        while True:
            once(args)
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
