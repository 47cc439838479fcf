"""Claude Code: ``PreToolUse`` (Edit, MultiEdit, Write, NotebookEdit, Bash) answered with
``hookSpecificOutput.permissionDecision`` ask / deny; ``PostToolUse`` records the
worktree and hands the agent its messages as ``additionalContext``.

Never ``allow``: Claude Code's allow skips the person's permission prompt ("allow skips
the prompt but not deny or ask rules", its hooks reference), so in the default permission
mode an edit or a command the person would have been asked about would run unasked because
proximity had no objection. No objection is no decision — ``{}``, exit 0 — and Claude
Code's own permission flow (its modes, rules and prompt) decides as if no hook had run.

Claude Code shows ``permissionDecisionReason`` to the model, not to the person: an ask or a
deny also puts its one-line summary in ``systemMessage``, which the person sees; a call
that could not be judged says so there alone, deciding nothing.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from proximity.agents.edits import edits_of, write_of
from proximity.agents.harnesses import base
from proximity.agents.harnesses.base import Ask, Json, Reply, Said


class EditInput(TypedDict):
    file_path: str
    old_string: str
    new_string: str
    replace_all: NotRequired[bool]


class Event(TypedDict):
    """PreToolUse and PostToolUse, as documented (tool_input per tool: Edit, MultiEdit's
    ``edits``, Write's ``content``, NotebookEdit's ``notebook_path``, Bash's ``command``)."""

    session_id: str
    transcript_path: str
    cwd: str
    permission_mode: NotRequired[str]
    hook_event_name: str  # PreToolUse | PostToolUse
    tool_name: str
    tool_input: dict[str, object]
    tool_use_id: NotRequired[str]
    tool_response: NotRequired[dict[str, object]]  # PostToolUse


EDITS = ("Edit", "MultiEdit", "Write", "NotebookEdit")


def read(event: Json, default: str) -> Ask:
    tool = base.text(event, "tool_name")
    cwd = base.cwd_of(event, default)
    ti = base.obj(event.get("tool_input") or {}, "tool_input")
    if tool == "Bash":
        return base.Command(base.text(ti, "command"), cwd)
    if tool not in EDITS:
        return base.Other(f"{tool or 'this tool'} is not a file edit")
    if tool == "NotebookEdit":
        return base.whole([base.path(ti, "notebook_path", cwd)])
    file = base.path(ti, "file_path", cwd)
    if tool == "Write":
        return base.Edits(tuple(write_of(file, ti.get("content"))))
    items = ti.get("edits") if tool == "MultiEdit" else [ti]
    if not isinstance(items, list):
        raise base.BadEvent("edits is not a list")
    triples = []
    for e in items:
        e = base.obj(e, "an edit")
        triples.append((base.text(e, "old_string"), base.text(e, "new_string"),
                        base.flag(e, "replace_all")))
    return base.Edits((edits_of(file, triples),))


def reply(said: Said, event: Json) -> Reply:
    if said.decision == "allow":
        return {} if said.judged else {"systemMessage": said.summary}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": said.decision,
                                   "permissionDecisionReason": said.reason},
            "systemMessage": said.summary}


def edited(event: Json, default: str) -> list[str]:
    tool = base.text(event, "tool_name")
    ti = base.obj(event.get("tool_input") or {}, "tool_input")
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return [base.path(ti, key, base.cwd_of(event, default))] if tool in EDITS else []


def context(messages: str) -> Reply:
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                   "additionalContext": messages}}


HARNESS = base.Harness("claude", read, reply, edited, context)
