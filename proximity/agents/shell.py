"""What a shell command an agent is about to run does to the worktree, read from its text
(only split, never run): the simple commands a command line runs and the directory each
runs in (``&&``, ``||``, ``;``, ``|``, subshells, ``cd DIR``), and the files a plain
``git mv`` / ``mv`` moves. Which of those commands bring foreign work in is
``proximity.agents.incoming``'s."""

from __future__ import annotations

import os
import shlex
from typing import Any, NamedTuple

MOVED_FILES = 200  # files of moved directories checked, at most
MAX_COMMAND = 4096  # a longer command line is not read (splitting it is not free)
SEPARATORS = frozenset(";&|")  # a token of these alone ends a simple command
WRAPPERS = frozenset(("command", "nohup", "time", "exec", "env"))  # run the words after them


class Simple(NamedTuple):
    """One simple command of a command line: its words (leading ``NAME=value``
    assignments and wrappers such as ``env`` dropped; redirections dropped) and the
    directory it runs in (None: after a ``cd`` that cannot be followed)."""

    cwd: str | None
    words: tuple[str, ...]


def opaque(word: str) -> bool:
    """A word the shell expands (a variable, a command substitution): its value is not
    in the text."""
    return "$" in word or "`" in word


def simple_commands(cmd: str, cwd: str) -> list[Simple] | None:
    """The simple commands ``cmd`` runs, in order, each with its directory; None when the
    text cannot be split (unbalanced quotes), is too long, or feeds a here-document."""
    if len(cmd) > MAX_COMMAND:
        return None
    lex = shlex.shlex(cmd.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return None
    out: list[Simple] = []
    stack: list[str | None] = []  # directories to return to when a subshell ends
    here: str | None = cwd
    words: list[str] = []

    def end() -> None:
        nonlocal here
        got = _strip(words)
        words.clear()
        if not got:
            return
        if got[0] in ("cd", "pushd"):
            arg = got[1] if len(got) > 1 else None
            if here is None or arg is None or arg == "-" or opaque(arg):
                here = None
            else:
                here = os.path.normpath(os.path.join(here, os.path.expanduser(arg)))
        elif got[0] == "popd":
            here = None
        out.append(Simple(here, got))

    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t and set(t) <= SEPARATORS:
            end()
        elif t and set(t) <= set("()"):
            end()
            for c in t:
                if c == "(":
                    stack.append(here)
                elif stack:
                    here = stack.pop()
        elif t and set(t) <= set("<>&") and ("<" in t or ">" in t):
            if t.startswith("<<"):
                return None  # a here-document: its lines are data, not commands
            if words and words[-1].isdigit():
                words.pop()  # the descriptor of `2>file`
            i += 1  # and the redirection's target
        else:
            words.append(t)
        i += 1
    end()
    return out


def _strip(words: list[str]) -> tuple[str, ...]:
    """The command's own words: leading assignments and wrapper commands dropped."""
    i = 0
    while i < len(words):
        w = words[i]
        assigns = "=" in w and w.split("=", 1)[0].isidentifier()
        if assigns or w in WRAPPERS or (i and words[i - 1] == "env" and w.startswith("-")):
            i += 1
        else:
            break
    return tuple(words[i:])


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
