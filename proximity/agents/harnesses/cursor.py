"""Cursor: ``.cursor/hooks.json`` — ``preToolUse`` (Write, StrReplace / Edit, Delete, Shell)
and ``beforeShellExecution`` answered with ``permission`` deny / ask plus ``user_message``
(to the person) and ``agent_message`` (to the model); ``afterFileEdit`` records.

Never ``permission: allow``: on ``beforeShellExecution`` it runs the command without the
person's approval. No objection is no ``permission`` field, ``{}``, and Cursor's own
approval flow decides (a call that could not be judged: the two messages alone).
``preToolUse`` enforces deny only ("ask" is accepted but not enforced there), so an ask
there is the two messages with no ``permission``; ``beforeShellExecution`` asks. Cursor
can also run Claude Code's hooks (then ``--hook claude`` answers them).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from proximity.agents.edits import write_of
from proximity.agents.harnesses import base
from proximity.agents.harnesses.base import Ask, Json, Reply, Said


class Common(TypedDict):
    """What every Cursor hook event carries."""

    conversation_id: str
    generation_id: str
    hook_event_name: str  # preToolUse | beforeShellExecution | afterFileEdit | …
    workspace_roots: list[str]
    model: NotRequired[str]
    cursor_version: NotRequired[str]


class PreToolUse(Common):
    tool_name: str  # Write | StrReplace | Edit | Delete | Shell | MCP:…
    tool_input: dict[str, object]
    tool_use_id: NotRequired[str]
    cwd: NotRequired[str]


class BeforeShellExecution(Common):
    command: str
    cwd: str


class FileEdit(TypedDict):
    old_string: str
    new_string: str


class AfterFileEdit(Common):
    file_path: str
    edits: list[FileEdit]


def _cwd(event: Json, default: str) -> str:
    """The event's cwd (it may be empty), else its first workspace root, else the hook's."""
    roots = event.get("workspace_roots")
    first = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) \
        else ""
    return base.text(event, "cwd") or first or default


def _file(ti: Json, cwd: str) -> str:
    return base.path(ti, "file_path" if "file_path" in ti else "path", cwd)


def read(event: Json, default: str) -> Ask:
    cwd = _cwd(event, default)
    if base.text(event, "hook_event_name") == "beforeShellExecution":
        return base.Command(base.text(event, "command"), cwd)
    tool = base.text(event, "tool_name")
    ti = base.obj(event.get("tool_input") or {}, "tool_input")
    if tool == "Shell":
        return base.Command(base.text(ti, "command"), base.text(ti, "working_directory") or cwd)
    if tool == "Write":
        return base.Edits(tuple(write_of(_file(ti, cwd), ti.get("content", ti.get("contents")))))
    if tool in ("StrReplace", "Edit"):
        return base.replacement(ti, _file(ti, cwd), "old_string", "new_string",
                                base.flag(ti, "replace_all"))
    if tool == "Delete":
        return base.whole([_file(ti, cwd)])
    return base.Other(f"{tool or 'this tool'} is not a file edit")


def reply(said: Said, event: Json) -> Reply:
    if said.decision == "allow" and said.judged:
        return {}
    said_to: Reply = {"agent_message": said.reason, "user_message": said.summary}
    shell = base.text(event, "hook_event_name") == "beforeShellExecution"
    if said.decision == "deny" or (said.decision == "ask" and shell):
        return {"permission": said.decision, **said_to}
    return said_to


def edited(event: Json, default: str) -> list[str]:
    return [base.path(event, "file_path", _cwd(event, default))] if event.get("file_path") else []


# afterFileEdit is fire-and-forget: Cursor reads nothing back, so messages wait for the
# next hook that can hand them over
HARNESS = base.Harness("cursor", read, reply, edited, None, _cwd)
