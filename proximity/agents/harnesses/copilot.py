"""GitHub Copilot CLI (and the Copilot SDK's ``onPreToolUse``): ``preToolUse`` in
``.github/hooks/*.json`` answered with ``permissionDecision`` ask / deny and
``permissionDecisionReason``; ``postToolUse`` records.

Never ``allow``, which approves the call: no objection is an object with no field, ``{}``
("empty output uses default behavior", the CLI's hooks reference; the SDK's handler
returns no fields), and Copilot's own permission flow decides. A call that could not be
judged says why in ``additionalContext`` (the SDK's context field), deciding nothing.

Two input shapes, chosen by how the hook is configured: ``preToolUse`` (camelCase:
``toolName``, and ``toolArgs`` as a JSON string) and ``PreToolUse`` (VS Code's: ``tool_name``,
``tool_input`` as an object). Tools judged: ``edit`` / ``str_replace`` (``path``,
``old_str``, ``new_str``), ``create`` (``file_text``), ``insert`` (``insert_line``),
``str_replace_editor`` (its ``command`` one of those), ``apply_patch`` (a patch, as
Codex's), and ``bash`` / ``powershell`` commands.
"""

from __future__ import annotations

import json
from typing import NotRequired, TypedDict

from proximity.agents import patches
from proximity.agents.edits import Edit, read_text, write_of
from proximity.agents.harnesses import base
from proximity.agents.harnesses.base import Ask, Json, Reply, Said


class Event(TypedDict):
    """preToolUse / postToolUse (camelCase)."""

    sessionId: NotRequired[str]
    timestamp: int
    cwd: str
    toolName: str
    toolArgs: str  # the tool's arguments as a JSON string
    toolResult: NotRequired[dict[str, object]]  # postToolUse


class VSCodeEvent(TypedDict):
    """PreToolUse / PostToolUse, the VS Code-compatible shape (snake_case)."""

    hook_event_name: str
    session_id: str
    timestamp: str
    cwd: str
    tool_name: str
    tool_input: object  # the arguments, parsed from their JSON string when possible


SHELLS = ("bash", "powershell")
PATCHES = ("apply_patch", "git_apply_patch")


def _tool(event: Json) -> tuple[str, object]:
    """(tool name, its arguments) from either shape; a JSON string is parsed, and a patch
    tool's arguments may be the bare patch."""
    if "toolName" in event:
        name, args = base.text(event, "toolName"), event.get("toolArgs")
    else:
        name, args = base.text(event, "tool_name"), event.get("tool_input")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except RecursionError:
            raise base.BadEvent("toolArgs is nested too deeply to read") from None
        except ValueError:
            if name not in PATCHES:
                raise base.BadEvent("toolArgs is not JSON") from None
    return name, {} if args is None else args


def _insert(file: str, ti: Json) -> Edit:
    """``insert``: ``new_str`` after line ``insert_line`` (0: at the top)."""
    at = ti.get("insert_line")
    if not isinstance(at, int) or isinstance(at, bool) or at < 0:
        raise base.BadEvent("insert_line is not a line number")
    current = read_text(file)
    if current is None:
        return Edit(file, None, None, "the file does not exist")
    lines = current.splitlines(keepends=True)
    if at > len(lines):
        return Edit(file, None, None, f"the file has no line {at}")
    new = base.text(ti, "new_str")
    piece = new if new.endswith("\n") or not new else new + "\n"
    return Edit(file, ((at + 1, at),), "".join(lines[:at]) + piece + "".join(lines[at:]))


def read(event: Json, default: str) -> Ask:
    cwd = base.cwd_of(event, default)
    name, args = _tool(event)
    if name in PATCHES:
        patch = args if isinstance(args, str) else None
        if isinstance(args, dict):
            patch = base.text(args, "input") or base.text(args, "patch")
        try:
            return base.Edits(tuple(patches.edits_of(patch or "", cwd)))
        except patches.BadPatch as e:
            raise base.BadEvent(str(e)) from None
    ti = base.obj(args, "the tool's arguments")
    if name in SHELLS:
        return base.Command(base.text(ti, "command"), cwd)
    op = base.text(ti, "command") if name == "str_replace_editor" else name
    if op not in ("edit", "str_replace", "create", "insert"):
        return base.Other(f"{name or 'this tool'} is not a file edit")
    file = base.path(ti, "path", cwd)
    if op == "create":
        return base.Edits(tuple(write_of(file, ti.get("file_text"))))
    if op == "insert":
        return base.Edits((_insert(file, ti),))
    return base.replacement(ti, file, "old_str", "new_str")


def reply(said: Said, event: Json) -> Reply:
    if said.decision == "allow":
        return {} if said.judged else {"additionalContext": said.reason}
    return {"permissionDecision": said.decision, "permissionDecisionReason": said.reason}


def edited(event: Json, default: str) -> list[str]:
    got = read(event, default)  # (after the call the lines no longer matter: only paths)
    return [e.path for e in got.edits] if isinstance(got, base.Edits) else []


# postToolUse output is read by the SDK only: messages wait for a hook that hands them over
HARNESS = base.Harness("copilot", read, reply, edited, None)
