"""What a check's answer looks like to each front end: the command's text, its JSON (the
same document `check --json`, the MCP tools and the service's wire carry), a harness's
reply, the exit code; and a check request and answer on the resident service's wire."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from proximity import checkargs
from proximity.agents.answer import CheckAnswer, CheckRequest, of_specs
from proximity.agents.decision import ALLOW, Decision, decision_json, decision_text
from proximity.errors import UsageError
from proximity.safetext import text as shown

if TYPE_CHECKING:
    from proximity import protocol


def doc(a: CheckAnswer) -> protocol.DecisionDoc:
    """`check --json`: the decision, its reason and every sibling's evidence; a merge's
    also says what it brings in."""
    out = decision_json(Decision(a.decision, a.reason, a.conflicts))
    if a.plan is not None:
        out["merge"] = {"ref": a.plan.ref, "commit": a.plan.commit,
                        "paths": [p for p, _ in a.plan.targets],
                        "own_conflicts": list(a.plan.conflicts)}
    return out


def text(a: CheckAnswer) -> str:
    """What `proximity check` prints (a merge first says what it would change here)."""
    d = decision_text(Decision(a.decision, a.reason, a.conflicts))
    if a.plan is None:
        return d
    p = a.plan
    head = (f"proximity: merging {shown(p.ref)!r} ({p.commit[:12]}) here changes "
            f"{len(p.targets)} file(s)")
    if p.conflicts:
        head += f"; it conflicts with your own HEAD in: {shown(', '.join(p.conflicts), 400)}"
    return head if not p.targets else f"{head}\n{d}"


def stdout(a: CheckAnswer, as_json: bool) -> str:
    """What the command prints: a harness's reply, else the JSON or the text."""
    if a.reply is not None:
        return json.dumps(a.reply)
    return json.dumps(doc(a), indent=2) if as_json else text(a)


def exit_code(a: CheckAnswer) -> int:
    """0 on allow (and for every harness reply: the answer is in it), 1 on ask or deny."""
    return 0 if a.reply is not None or a.decision == ALLOW else 1


def request_of(msg: protocol.CheckRequest) -> tuple[CheckRequest, bool]:
    """The request a check op on the wire asks, and whether it wants JSON (UsageError:
    a request that names nothing to check)."""
    cwd, deny_on = msg["cwd"], msg.get("deny_on")
    harness = msg.get("harness")
    if harness is not None and checkargs.is_post(harness):
        raise UsageError("a post-edit event records in the hook's own process")
    if harness is not None:
        return CheckRequest(cwd, harness=harness, event=msg.get("event_text") or "",
                            deny_on=deny_on), False
    specs, merge = msg.get("specs") or [], msg.get("merge")
    if not specs and merge is None:
        raise UsageError("nothing to check")
    return of_specs(cwd, specs, deny_on, merge), bool(msg.get("json"))


def wire(a: CheckAnswer, as_json: bool) -> protocol.CheckAnswer:
    """The service's answer: what the command prints, its exit code and the decision."""
    return {"stdout": stdout(a, as_json), "exit": exit_code(a), "decision": doc(a)}
