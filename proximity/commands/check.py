"""`proximity check PATH[:START-END]…`: may this worktree edit these lines now?
`proximity check --merge REF`: may it merge REF now (what the merge would change here,
checked the same way)?

``--hook HARNESS`` reads an agent harness's pre- or post-edit event on stdin and answers in
that harness's format (``agents.harness``). The facts come from ``agents.precheck``, the
decision from ``agents.decision``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from proximity.agents import decision, harness
from proximity.agents.merging import check_merge, merge_json
from proximity.agents.precheck import check
from proximity.analysis.intervals import parse_spec
from proximity.errors import FatalError
from proximity.safetext import text

if TYPE_CHECKING:
    import argparse


def run(args: argparse.Namespace) -> int:
    if args.hook:

        text = getattr(args, "stdin_text", None)  # read already by the thin client
        return harness.run(args.hook, sys.stdin.read() if text is None else str(text),
                           args.deny_on)
    cwd = os.path.abspath(args.repo or os.getcwd())
    if getattr(args, "merge", None) is not None:
        return _merge(cwd, str(args.merge), args)
    if not args.paths:
        raise FatalError("name at least one PATH[:START-END] to check (or use --hook or "
                         "--merge REF)")
    d = check(cwd, [parse_spec(s) for s in args.paths], args.deny_on)
    if args.json:
        print(json.dumps(decision.decision_json(d), indent=2))
    else:
        print(decision.decision_text(d))
    return 0 if d.decision == decision.ALLOW else 1


def _merge(cwd: str, ref: str, args: argparse.Namespace) -> int:
    """`check --merge REF`: merging REF here changes these paths and lines; checked like
    edits of them, before anything is written (a merge brings others' work in, and no edit
    asks about it: the pre-edit check's blind spot)."""

    plan, d = check_merge(cwd, ref, args.deny_on)
    if args.json:
        print(json.dumps(merge_json(plan, d), indent=2))
    else:
        what = f"merging {text(ref)!r} ({plan.commit[:12]}) here changes " \
               f"{len(plan.targets)} file(s)"
        print(f"proximity: {what}" + (f"; it conflicts with your own HEAD in: "
                                      f"{text(', '.join(plan.conflicts), 400)}"
                                      if plan.conflicts else ""))
        if d is not None:
            print(decision.decision_text(d))
    return 0 if d is None or d.decision == decision.ALLOW else 1
