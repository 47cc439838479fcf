"""Gemini CLI: ``BeforeTool`` (replace, write_file, run_shell_command) answered with
``decision: deny`` and ``reason``; ``AfterTool`` records.

Its hooks reference documents ``decision`` as allow / deny only: an ask is no decision
plus a ``systemMessage`` to the person (Gemini CLI confirms file edits with the person
itself), and no objection is no decision at all, ``{}`` (a call that could not be judged:
``systemMessage`` alone). Never ``allow``: it decides nothing today, but a hook's answer
must not be a grant should Gemini CLI ever read it as one; a deny says its summary to the
person too.
"""

from __future__ import annotations

import os
from typing import NotRequired, TypedDict

from proximity.agents.edits import write_of
from proximity.agents.harnesses import base
from proximity.agents.harnesses.base import Ask, Json, Reply, Said


class Event(TypedDict):
    """BeforeTool and AfterTool, as documented (tool_input: replace's ``file_path``,
    ``old_string``, ``new_string``, ``expected_replacements``; write_file's ``content``;
    run_shell_command's ``command`` and ``dir_path``)."""

    session_id: str
    transcript_path: str
    cwd: str
    hook_event_name: str  # BeforeTool | AfterTool
    timestamp: str
    tool_name: str
    tool_input: dict[str, object]
    tool_response: NotRequired[dict[str, object]]  # AfterTool


EDITS = ("replace", "write_file")


def read(event: Json, default: str) -> Ask:
    tool = base.text(event, "tool_name")
    cwd = base.cwd_of(event, default)
    ti = base.obj(event.get("tool_input") or {}, "tool_input")
    if tool == "run_shell_command":  # (its directory: dir_path, formerly directory)
        where = base.text(ti, "dir_path") or base.text(ti, "directory")
        return base.Command(base.text(ti, "command"), os.path.join(cwd, where) if where else cwd)
    if tool not in EDITS:
        return base.Other(f"{tool or 'this tool'} is not a file edit")
    file = base.path(ti, "file_path", cwd)
    if tool == "write_file":
        return base.Edits(tuple(write_of(file, ti.get("content"))))
    count = ti.get("expected_replacements") or 1
    every = isinstance(count, int) and not isinstance(count, bool) and count > 1
    return base.replacement(ti, file, "old_string", "new_string", every)


def reply(said: Said, event: Json) -> Reply:
    if said.decision == "deny":
        return {"decision": "deny", "reason": said.reason, "systemMessage": said.summary}
    return {"systemMessage": said.summary} if said.decision == "ask" or not said.judged \
        else {}


def edited(event: Json, default: str) -> list[str]:
    ti = base.obj(event.get("tool_input") or {}, "tool_input")
    return [base.path(ti, "file_path", base.cwd_of(event, default))] \
        if base.text(event, "tool_name") in EDITS else []


def context(messages: str) -> Reply:
    return {"hookSpecificOutput": {"hookEventName": "AfterTool",
                                   "additionalContext": messages}}


HARNESS = base.Harness("gemini", read, reply, edited, context)
