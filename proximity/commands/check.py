"""`proximity check PATH[:START-END]…`: may this worktree edit these lines now?

``--hook HARNESS`` reads an agent harness's pre- or post-edit event on stdin and answers in
that harness's format (proximity/harness.py). The facts come from proximity/precheck.py,
the decision from proximity/checker.py.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from proximity import checker
from proximity.errors import FatalError
from proximity.intervals import parse_spec
from proximity.precheck import check

if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    if args.hook:
        from proximity import harness

        text = getattr(args, "stdin_text", None)  # read already by the thin client
        return harness.run(args.hook, sys.stdin.read() if text is None else str(text),
                           args.deny_on)
    if not args.paths:
        raise FatalError("name at least one PATH[:START-END] to check (or use --hook)")
    cwd = os.path.abspath(args.repo or os.getcwd())
    d = check(cwd, [parse_spec(s) for s in args.paths], args.deny_on)
    if args.json:
        print(json.dumps(checker.decision_json(d), indent=2))
    else:
        print(checker.decision_text(d))
    return 0 if d.decision == checker.ALLOW else 1
