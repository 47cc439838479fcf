"""`proximity ledger`: recent events, newest first."""

from __future__ import annotations

import argparse
import json
import time

from proximity.snapshot import workspace


def run(args: argparse.Namespace) -> int:
    ctx = workspace.open_context(args.repo, need_ledger=True)
    try:
        assert ctx.ledger is not None
        events = ctx.ledger.events(None, args.n)
        streams = ctx.ledger.streams()
    finally:
        ctx.close()
    if args.json:
        print(json.dumps({"streams": streams, "events": [e._asdict() for e in events]},
                         indent=2))
        return 0
    for e in events:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
        print(f"{e.seq:6} {when} {e.stream:12} {e.kind:12} {(e.head or '-')[:10]:10} "
              f"{len(e.files):3} file(s)  clock={json.dumps(e.clock, sort_keys=True)}")
    return 0
