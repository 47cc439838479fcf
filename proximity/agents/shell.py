"""What a shell command an agent is about to run does to the worktree, read from its text
(only split, never run): the files a plain ``git mv`` / ``mv`` moves, the branch a plain
``git merge`` / ``git rebase`` brings in. Anything compound or unusual reads as neither."""

from __future__ import annotations

import os
import shlex
from typing import Any

MOVED_FILES = 200  # files of moved directories checked, at most


def claude_moves(event: dict[str, Any]) -> list[str]:
    """The files a Bash tool call is about to move (``git mv SRC… DST`` or ``mv SRC…
    DST``, one plain command): a move is an edit of each whole file it moves (the text is
    data: only split, never run)."""
    cmd = str((event.get("tool_input") or {}).get("command") or "")
    if len(cmd) > MAX_COMMAND or any(c in cmd for c in ";&|`$()<>\n"):
        return []
    try:
        words = shlex.split(cmd)
    except ValueError:
        return []
    if words and os.path.basename(words[0]) == "git" and words[1:2] == ["mv"]:
        args = words[2:]
    elif words and os.path.basename(words[0]) == "mv":
        args = words[1:]
    else:
        return []
    names = [w for w in args if not w.startswith("-")]
    if len(names) < 2:
        return []
    cwd = str(event.get("cwd") or os.getcwd())
    out: list[str] = []
    for src in names[:-1]:
        full = os.path.join(cwd, src)
        if os.path.isdir(full):
            for d, dirs, files in os.walk(full):
                dirs[:] = [x for x in dirs if x != ".git"]
                out += [os.path.relpath(os.path.join(d, f), cwd) for f in files]
        elif os.path.isfile(full):
            out.append(src)
    return out[:MOVED_FILES]


def claude_merge(event: dict[str, Any]) -> str | None:
    """The branch a Bash tool call is about to merge into the worktree: ``git merge REF``
    or ``git rebase REF`` (one plain command, one ref; anything else: None). The text is
    data: only split, never run."""
    if event.get("tool_name") != "Bash":
        return None
    cmd = str((event.get("tool_input") or {}).get("command") or "")
    if len(cmd) > MAX_COMMAND or any(c in cmd for c in ";&|`$()<>\n"):
        return None  # a compound (or huge) command: not read
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if not words or os.path.basename(words[0]) != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):  # git's own options
        i += 2 if words[i] in ("-c", "-C") else 1
    if i >= len(words) or words[i] not in ("merge", "rebase"):
        return None
    rest, refs = words[i + 1:], []
    while rest:
        w = rest.pop(0)
        if w in ("--abort", "--continue", "--skip", "--quit", "--onto", "--root") \
                or w.startswith("--onto="):
            return None  # not a merge of one branch into this one
        if w in _TAKES_VALUE:
            if rest:
                rest.pop(0)
        elif w == "--":
            refs += rest
            break
        elif not w.startswith("-"):
            refs.append(w)
    return refs[0] if len(refs) == 1 else None


MAX_COMMAND = 4096  # a longer command line is not read (splitting it is not free)
# git merge / git rebase options whose value is the next word
_TAKES_VALUE = frozenset(("-m", "-F", "--file", "-s", "--strategy", "-X", "--strategy-option",
                          "-x", "--exec", "--cleanup", "--into-name"))
