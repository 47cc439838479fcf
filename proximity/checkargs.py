"""What `proximity check` takes on its command line, read without argparse, and the names
it takes there declared once: the agent harnesses ``--hook`` answers and the ``--deny-on``
policies.

The hook's thin path (thin.py) and the command line (main.py) share this one parser: an
agent's pre-edit hook runs ``proximity check --hook NAME`` before every edit, and building
argparse's whole parser would cost it more than asking the service does. Anything this
parser does not take (``--help``, an unknown or abbreviated option, a bad value) is left
to argparse, which says what is wrong; argparse's choices come from here too.

Standard library only, and light: the thin path imports it before anything else.
"""

from __future__ import annotations

import sys

from proximity.protocol import MAX_EVENT_CHARS

TYPE_CHECKING = False  # (not typing's: the thin hook path never imports typing)
if TYPE_CHECKING:
    from typing import Final, TextIO

DENY_ON: Final = ("ra", "ta", "never")  # deny on a certain conflict, on any traffic, never

# Agent harnesses and the events ``--hook NAME`` reads (agents/harnesses/ has one module per
# name: how to read its event, how to answer it). NAME-post reads the harness's after-edit
# event: it records the worktree at once and hands the agent its messages.
HARNESSES: Final = {
    "claude": "Claude Code: PreToolUse",
    "gemini": "Gemini CLI: BeforeTool",
    "codex": "Codex: PreToolUse (apply_patch, shell)",
    "cursor": "Cursor: preToolUse, beforeShellExecution",
    "copilot": "GitHub Copilot CLI: preToolUse",
}
AFTER: Final = {
    "claude": "PostToolUse",
    "gemini": "AfterTool",
    "codex": "PostToolUse",
    "cursor": "afterFileEdit",
    "copilot": "postToolUse",
}
POST: Final = "-post"


def hook_names() -> tuple[str, ...]:
    """Every ``--hook`` value: each harness's pre-edit name, then its NAME-post."""
    return (*HARNESSES, *(name + POST for name in AFTER))


def is_post(hook: str) -> bool:
    """A NAME-post hook: it records (the in-process path), it never decides."""
    return hook.endswith(POST) and hook[:-len(POST)] in AFTER


class CheckArgs:
    """`proximity check`'s arguments. ``specs``: PATH[:LINES] to check; ``merge``: a ref to
    check merging; ``hook``: a harness whose event is on stdin; ``repo``: ``-C``."""

    __slots__ = ("deny_on", "hook", "json", "merge", "repo", "specs")

    def __init__(self, specs: list[str] | None = None, js: bool = False,
                 deny_on: str | None = None, repo: str | None = None,
                 hook: str | None = None, merge: str | None = None) -> None:
        self.specs, self.json, self.deny_on = list(specs or ()), js, deny_on
        self.repo, self.hook, self.merge = repo, hook, merge

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckArgs) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return "CheckArgs(" + ", ".join(f"{k}={getattr(self, k)!r}"
                                        for k in self.__slots__) + ")"


VALUED = {"--deny-on": "deny_on", "-C": "repo", "--repo": "repo", "--hook": "hook",
          "--merge": "merge"}


def parse(argv: list[str]) -> CheckArgs | None:
    """`check`'s arguments (after the word ``check``), or None: leave them to argparse."""
    a = CheckArgs()
    it = iter(argv)
    for word in it:
        name, eq, inline = word.partition("=")
        if word == "--":
            a.specs += list(it)
        elif word == "--json":
            a.json = True
        elif name in VALUED and name.startswith("--") and eq:
            setattr(a, VALUED[name], inline)
        elif word in VALUED:
            value = next(it, None)
            if value is None or (value.startswith("-") and value != "-"):
                return None  # argparse says the option wants a value
            setattr(a, VALUED[word], value)
        elif word.startswith("-") and word != "-":
            return None  # --help, an abbreviation, an option this parser does not know
        else:
            a.specs.append(word)
    if a.deny_on is not None and a.deny_on not in DENY_ON:
        return None
    if a.hook is not None and a.hook not in hook_names():
        return None
    return a


def read_event(stream: TextIO | None = None) -> tuple[str, int]:
    """A harness's event from standard input (or ``stream``) and its size in characters:
    whole up to MAX_EVENT_CHARS; past it, the rest is read and counted, never held (the
    harness writes it all), and the event comes back empty: too long to check, which the
    answerer says with its size (agents/answer.py)."""
    f = stream if stream is not None else sys.stdin
    if f is None:  # (started with standard input closed: no event came)
        return "", 0
    head = f.read(MAX_EVENT_CHARS + 1)
    if len(head) <= MAX_EVENT_CHARS:
        return head, len(head)
    size = len(head)
    del head
    while chunk := f.read(1 << 20):
        size += len(chunk)
    return "", size
