"""Codex: ``[[hooks.PreToolUse]]`` in ``config.toml`` (or ``hooks.json``), run for
``apply_patch`` (its patch in ``tool_input.command``), the shell (``Bash``) and MCP tools
since Codex 0.124; ``PostToolUse`` records.

An ``apply_patch`` is judged by the lines its hunks change in each file as it is now (moves
and added files included: agents/patches.py). Codex acts on a ``deny`` only: it runs the
call on anything else, and reads ``ask`` as unsupported. So a deny is
``hookSpecificOutput.permissionDecision: deny`` with the reason; an ask is no decision, its
reason handed to the model (``additionalContext``) and its summary to the person
(``systemMessage``); an allow is no decision, ``{}`` (never ``allow``, which would approve
the call where Codex reads it), unless it could not judge (then ``systemMessage`` alone
says why).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from proximity.agents import patches
from proximity.agents.harnesses import base
from proximity.agents.harnesses.base import Ask, Json, Reply, Said


class ToolInput(TypedDict):
    command: str  # Bash: the command line; apply_patch: the patch


class Event(TypedDict):
    """PreToolUse and PostToolUse, as Codex's hook schema declares them."""

    session_id: str
    turn_id: NotRequired[str]
    transcript_path: str | None
    cwd: str
    hook_event_name: str  # PreToolUse | PostToolUse
    model: str
    permission_mode: str
    tool_name: str  # Bash | apply_patch | mcp__SERVER__TOOL
    tool_use_id: str
    tool_input: ToolInput
    tool_response: NotRequired[object]  # PostToolUse


def _patch(event: Json) -> str | None:
    """The patch an apply_patch call (or a shell ``apply_patch <<EOF`` heredoc) carries."""
    tool = base.text(event, "tool_name")
    command = base.text(base.obj(event.get("tool_input") or {}, "tool_input"), "command")
    if tool == "apply_patch":
        return patches.patch_text(command) or command
    return patches.patch_text(command) if tool == "Bash" else None


def read(event: Json, default: str) -> Ask:
    tool = base.text(event, "tool_name")
    cwd = base.cwd_of(event, default)
    try:
        patch = _patch(event)
        if patch is not None:
            return base.Edits(tuple(patches.edits_of(patch, cwd)))
    except patches.BadPatch as e:
        raise base.BadEvent(str(e)) from None
    if tool == "Bash":
        ti = base.obj(event.get("tool_input") or {}, "tool_input")
        return base.Command(base.text(ti, "command"), cwd)
    return base.Other(f"{tool or 'this tool'} is not a file edit")


def reply(said: Said, event: Json) -> Reply:
    if said.decision == "deny":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny",
                                       "permissionDecisionReason": said.reason},
                "systemMessage": said.summary}
    if said.decision == "ask":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "additionalContext": said.reason},
                "systemMessage": said.summary}
    return {} if said.judged else {"systemMessage": said.summary}


def edited(event: Json, default: str) -> list[str]:
    try:
        patch = _patch(event)
        return [] if patch is None else patches.paths_of(patch, base.cwd_of(event, default))
    except patches.BadPatch as e:
        raise base.BadEvent(str(e)) from None


def context(messages: str) -> Reply:
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                   "additionalContext": messages}}


HARNESS = base.Harness("codex", read, reply, edited, context)
