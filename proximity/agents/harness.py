"""Agent harness adapters: one function per harness and direction.

A *targets* function turns a harness's pre-edit event (JSON from stdin) into the paths and
current-file line ranges an edit will touch; an *answer* function turns a decision into the
JSON that harness reads back. Supported (formats confirmed from their public docs):

* Claude Code: ``PreToolUse`` (Edit, MultiEdit, Write, NotebookEdit) answered with
  ``hookSpecificOutput.permissionDecision`` allow / ask / deny; ``PostToolUse`` records. A
  ``Bash`` call that brings foreign work in (``git merge``, ``pull``, ``rebase``,
  ``cherry-pick``, ``am``, ``stash pop/apply``, ``checkout REF -- PATH``, ``restore
  --source``, anywhere in a compound command: ``agents.incoming``) is checked as the merge
  it is (what it would bring in, before it does); one that cannot be read is allowed with
  the reason.
* Gemini CLI: ``BeforeTool`` (replace, write_file) answered with ``decision`` allow /
  deny and ``reason``; it has no "ask", so ask becomes allow plus a ``systemMessage`` to
  the user (Gemini CLI confirms file edits with the user itself). ``AfterTool`` records.

After an edit both post hooks also hand the agent its undelivered inbox messages as
``hookSpecificOutput.additionalContext`` (bounded), so a steer reaches it between commits.

Codex CLI's hooks intercept only its shell tool and OpenCode's are JavaScript plugins, so
those harnesses use ``proximity mcp`` instead. A hook never blocks an agent because of a
bug of ours: any internal error answers allow, with the error as the reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from proximity import knobs
from proximity.agents import decision, incoming
from proximity.agents.edits import Edit, edits_of, write_of
from proximity.agents.merging import check_plan, incoming_plan
from proximity.agents.precheck import check
from proximity.agents.shell import claude_moves
from proximity.errors import NotARepository, UsageError
from proximity.safetext import text as shown
from proximity.snapshot import recorder, workspace
from proximity.views import messages

MAX_CONTEXT = 4000  # characters of messages handed to an agent after an edit
Targets = list[Edit]  # absolute paths, current-file lines, the files after the edit


def _abs(event: dict[str, Any], path: str) -> str:
    return os.path.join(str(event.get("cwd") or os.getcwd()), path)


# -- Claude Code -------------------------------------------------------------------------
def claude_targets(event: dict[str, Any]) -> Targets:
    tool = event.get("tool_name", "")
    ti = event.get("tool_input") or {}
    if tool == "NotebookEdit":
        return [Edit(_abs(event, ti["notebook_path"]), None, None)]
    if tool == "Bash":
        return [Edit(_abs(event, src), None, None) for src in claude_moves(event)]
    if tool not in ("Edit", "MultiEdit", "Write"):
        return []
    path = _abs(event, ti["file_path"])
    if tool == "Write":
        return write_of(path, ti.get("content"))
    edits = ti.get("edits") if tool == "MultiEdit" else [ti]
    triples = [(str(e.get("old_string", "")), str(e.get("new_string", "")),
                bool(e.get("replace_all"))) for e in edits or []]
    return [edits_of(path, triples)]


def claude_answer(decision: str, reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}


# -- Gemini CLI --------------------------------------------------------------------------
def gemini_targets(event: dict[str, Any]) -> Targets:
    tool = event.get("tool_name", "")
    ti = event.get("tool_input") or {}
    if tool not in ("replace", "write_file"):
        return []
    path = _abs(event, ti["file_path"])
    if tool == "write_file":
        return write_of(path, ti.get("content"))
    every = int(ti.get("expected_replacements") or 1) > 1
    return [edits_of(path, [(str(ti.get("old_string", "")), str(ti.get("new_string", "")),
                              every)])]


def gemini_answer(decision: str, reason: str) -> dict[str, Any]:
    if decision == "deny":
        return {"decision": "deny", "reason": reason}
    if decision == "ask":
        return {"decision": "allow", "systemMessage": f"proximity: {reason}"}
    return {"decision": "allow", "reason": reason}  # (why: read by whoever looks)


PRE: dict[str, tuple[Callable[[dict[str, Any]], Targets],
                     Callable[[str, str], dict[str, Any]]]] = {
    "claude": (claude_targets, claude_answer),
    "gemini": (gemini_targets, gemini_answer),
}
POST: dict[str, Callable[[dict[str, Any]], Targets]] = {
    "claude-post": claude_targets, "gemini-post": gemini_targets,
}


# -- running ---------------------------------------------------------------------------
def _existing_dir(path: str) -> str:
    d = os.path.dirname(path)
    while d and not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d or os.getcwd()


def pre(name: str, event: dict[str, Any], deny_on: str | None = None) -> dict[str, Any]:
    """The harness answer for one pre-edit event (allow on any internal error)."""
    targets_of, answer = PRE[name]
    try:
        if knobs.skip():
            return answer("allow", "proximity: PROXIMITY_SKIP=1")
        brought = claude_incoming(event) if name == "claude" else []
        if brought:
            return _incoming(brought, answer, deny_on)
        targets = targets_of(event)
        if not targets:
            return answer("allow", "proximity: not a file edit")

        by_dir: dict[str, Targets] = {}
        for e in targets:
            by_dir.setdefault(_existing_dir(e.path), []).append(e)
        decisions = []
        for start, items in by_dir.items():
            try:
                decisions.append(check(start, [(e.path, e.ranges) for e in items], deny_on,
                                       cwd=start, results={e.path: e.result for e in items
                                                           if e.result is not None}))
            except NotARepository:
                continue
        if not decisions:
            return answer("allow", "proximity: not inside a git worktree")
        order = {decision.DENY: 0, decision.ASK: 1, decision.ALLOW: 2}
        d = min(decisions, key=lambda x: order[x.decision])
        return answer(d.decision, "proximity: " + _with_hunk(d))
    except Exception as e:  # never block an agent because of our bug
        return answer("allow", f"proximity check failed ({type(e).__name__}: {e}); "
                      "allowing the edit")


def claude_incoming(event: dict[str, Any]) -> list[incoming.Found]:
    """The commands of a Bash tool call that bring foreign work in (the text is data:
    only split, never run)."""
    if event.get("tool_name") != "Bash":
        return []
    cmd = str((event.get("tool_input") or {}).get("command") or "")
    return incoming.read(cmd, str(event.get("cwd") or os.getcwd()))


def _incoming(brought: list[incoming.Found], answer: Callable[[str, str], dict[str, Any]],
              deny_on: str | None) -> dict[str, Any]:
    """Each command that brings work in checked as the merge it is (what it would change
    here, before it does); the strictest answer, with every reason."""
    order = {decision.DENY: 0, decision.ASK: 1, decision.ALLOW: 2}
    worst, reasons = decision.ALLOW, []
    for inc in brought:
        verdict, reason = _one(inc, deny_on)
        reasons.append(reason)
        if order[verdict] < order[worst]:
            worst = verdict
    return answer(worst, "proximity: " + "\n".join(reasons))


def _one(inc: incoming.Found, deny_on: str | None) -> tuple[str, str]:
    cmd = shown(inc.text, 120)
    if isinstance(inc, incoming.Unread):
        return decision.ALLOW, f"`{cmd}` not checked: {inc.why}"
    try:
        plan = incoming_plan(inc)
        if plan is None:
            return decision.ALLOW, f"`{cmd}` brings no other work in"
        d = check_plan(inc.cwd, plan, deny_on)
    except (NotARepository, UsageError) as e:
        return decision.ALLOW, f"`{cmd}` not checked ({e})"
    if d is None:
        return decision.ALLOW, f"{plan.what} changes nothing here"
    if d.decision == decision.ALLOW:
        return decision.ALLOW, f"{plan.what} meets no sibling's work"
    return d.decision, f"{plan.what} here: " + _with_hunk(d)


def _with_hunk(d: Any) -> str:
    """The reason, plus the other side's hunk for the first contested path (bounded)."""
    out = str(d.reason)
    if d.conflicts and d.conflicts[0].hunk:
        c = d.conflicts[0]  # another worktree's names and lines: printable, bounded
        out += (f"\nTheir change ({shown(c.agent)}, {shown(c.path, 300)}):\n"
                + "\n".join(shown(ln, 300) for ln in c.hunk.split("\n")))
    return out


def post(name: str, event: dict[str, Any]) -> dict[str, Any]:
    """Record the worktree that was just written, so siblings see it at once; hand the
    agent its undelivered messages (steer / hold / transmit, with the sender's hunk)."""
    msgs: list[dict[str, Any]] = []
    try:
        if knobs.skip():
            return {}
        targets = POST[name](event) if event.get("tool_input") else []
        starts = {_existing_dir(e.path) for e in targets} or {str(event.get("cwd") or ".")}

        for start in starts:
            ctx = workspace.open_context(start, check_git=False, strict=False)
            try:
                recorder.record_here(ctx, "snapshot")
                if ctx.ledger is not None:
                    msgs += ctx.ledger.take(ctx.here)
            finally:
                ctx.close()
    except Exception as e:
        print(f"proximity: warning: could not record the edit: {type(e).__name__}: {e}",
              file=sys.stderr)
    if not msgs:
        return {}

    text = "\n".join(messages.render(m) for m in msgs)[:MAX_CONTEXT]
    event_name = "PostToolUse" if name == "claude-post" else "AfterTool"
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def parse_event(stdin: str) -> tuple[dict[str, Any], str | None]:
    """The harness's event as an object, and why it could not be read (None: it was). An
    empty input is an empty event; malformed or hostile JSON (nested past the parser's
    depth, not an object) is an empty event with the reason."""
    if not stdin.strip():
        return {}, None
    try:
        event = json.loads(stdin)
    except RecursionError:
        return {}, "the event is nested too deeply to read"
    except ValueError as e:
        return {}, str(e)
    if not isinstance(event, dict):
        return {}, "the event is not a JSON object"
    return event, None


def unreadable(name: str, why: str) -> dict[str, Any]:
    """The answer to a pre-edit event that could not be read: allow, saying why."""
    return PRE[name][1]("allow", f"proximity: unreadable hook event ({why}); allowing "
                        "the edit")


def run(name: str, stdin: str, deny_on: str | None = None) -> int:
    """``proximity check --hook NAME``: read the event, print the answer, exit 0. A
    pre-edit hook answers whatever it is given: anything that goes wrong (the event, our
    own bug) is an allow with the reason, never a crash the harness cannot read."""
    try:
        event, why = parse_event(stdin)
        if why is not None and name in PRE:
            out = unreadable(name, why)
        else:
            out = post(name, event) if name in POST else pre(name, event, deny_on)
        text = json.dumps(out)
    except Exception as e:  # (RecursionError, MemoryError's kin): fail open all the same
        if name not in PRE:
            raise
        text = json.dumps(unreadable(name, f"{type(e).__name__}: {e}"))
    print(text)
    return 0
