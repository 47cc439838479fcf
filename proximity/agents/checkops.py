"""`proximity check` as the resident service answers it (its ``check`` op).

The same functions the in-process command runs (precheck.check, verdict, harness.pre) in
the service's warm interpreter: the client pays for a socket round trip instead of an
interpreter full of imports. What the command would print and its exit code come back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from proximity.agents import decision, harness
from proximity.agents.precheck import check
from proximity.analysis.intervals import parse_spec

if TYPE_CHECKING:
    from proximity.protocol import CheckAnswer, CheckRequest


def answer(msg: CheckRequest) -> CheckAnswer:
    """``{"stdout", "exit"}`` for one check request, or ``{"fallback": why}``.

    Request: ``{"cwd", "specs": [PATH[:LINES]…], "deny_on", "json"}`` (the CLI), or
    ``{"harness": NAME, "event_text": "…", "cwd", "deny_on"}`` (a harness's pre-edit hook:
    its event as read from stdin; ``cwd``: the client's, the event's default)."""

    deny_on = msg.get("deny_on")
    deny_on = str(deny_on) if deny_on else None
    name = msg.get("harness")
    if name is not None:

        if name not in harness.PRE or not msg.get("cwd"):
            return {"fallback": "not a pre-edit event this service answers"}
        event, why = harness.parse_event(str(msg.get("event_text") or ""))
        if why is not None:
            return {"stdout": json.dumps(harness.unreadable(str(name), why)), "exit": 0}
        if not event.get("cwd"):
            event["cwd"] = str(msg["cwd"])
        return {"stdout": json.dumps(harness.pre(str(name), event, deny_on)), "exit": 0}

    specs, cwd = msg.get("specs"), msg.get("cwd")
    if not isinstance(specs, list) or not specs or not isinstance(cwd, str):
        return {"fallback": "nothing to check"}
    d = check(cwd, [parse_spec(str(s)) for s in specs], deny_on)
    doc = decision.decision_json(d)
    text = json.dumps(doc, indent=2) if msg.get("json") else decision.decision_text(d)
    return {"stdout": text, "exit": 0 if d.decision == decision.ALLOW else 1, "decision": doc}
