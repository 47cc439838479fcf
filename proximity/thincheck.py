"""`proximity check` asked of the resident service first: the thin client of the pre-edit
check, which every front end's process waits on (an agent harness's hook, the command line).

Standard library only, and fewer modules than the hooks' thin client (thin.py, which
shares :func:`where` from here): the quickest start (launch.py) imports this module and
nothing of the hooks or the command line before the service answers. No service, a
timeout, an odd answer or a case the service leaves alone: a :class:`Fallback` hands the
in-process check what was read already (the harness's event).
"""

from __future__ import annotations

import os

from proximity import checkargs, gitfiles, knobs, layout
from proximity.protocol import CHECK, MAX_EVENT_CHARS
from proximity.service import client

TYPE_CHECKING = False  # (not typing's: this module must stay light)
if TYPE_CHECKING:
    from proximity.checkargs import CheckArgs
    from proximity.protocol import CheckAnswer, CheckRequest


class Fallback:
    """Check in process. ``stdin``: the harness event read from standard input already;
    ``size``: its size in characters (past MAX_EVENT_CHARS it is not kept: ``stdin`` is
    then empty)."""

    __slots__ = ("size", "stdin")

    def __init__(self, stdin: str | None = None, size: int | None = None) -> None:
        self.stdin, self.size = stdin, size

    def __repr__(self) -> str:
        return f"Fallback(stdin={self.stdin is not None})"


def where(start: str) -> tuple[str, str] | None:
    """(git dir, common dir) of the worktree at ``start``, from files; None: not a plain
    layout, or a repository proximity has never recorded in (the in-process path sets
    it up)."""
    gitdir = gitfiles.find_git_dir(start)
    if gitdir is None:
        return None
    gitdir = os.path.realpath(os.path.join(start, gitdir))
    if not os.path.isdir(gitdir):
        return None
    common = os.path.realpath(gitfiles.common_dir(gitdir))
    if not os.path.isdir(layout.ecm_dir(common)):
        return None
    return gitdir, common


def check(a: CheckArgs) -> int | Fallback:
    """`proximity check …` (its arguments parsed by checkargs) through the service: prints
    what the command prints and returns its exit code, or Fallback (``stdin``: a harness
    event read already). Only what the service answers is sent: a harness's pre-edit
    event, or PATH specs or a merge; the rest (a post-edit event records, a mix the
    command refuses) is the in-process path's."""
    stdin, size = checkargs.read_event() if a.hook is not None else (None, None)
    if size is not None and size > MAX_EVENT_CHARS:
        return Fallback(stdin, size)  # (answered at once, never sent: agents/answer.py)
    try:
        if knobs.skip() or not client.enabled():
            return Fallback(stdin)
        cwd = os.path.abspath(a.repo or os.getcwd())
        msg: CheckRequest = {"op": CHECK, "deny_on": a.deny_on, "cwd": cwd}
        if a.hook is not None:
            if a.specs or a.merge is not None or checkargs.is_post(a.hook):
                return Fallback(stdin)
            # the service parses the event (no `json` import here) and defaults its cwd
            msg["harness"], msg["event_text"] = a.hook, stdin or ""
        elif bool(a.specs) == (a.merge is not None):
            return Fallback(stdin)
        else:
            msg["specs"], msg["json"] = a.specs, a.json
            if a.merge is not None:
                msg["merge"] = a.merge
        answer = ask_check(cwd, msg)
        if answer is None:
            return Fallback(stdin)
        print(answer["stdout"])
        return answer["exit"]
    except Exception:
        return Fallback(stdin)


def ask_check(start: str, msg: CheckRequest) -> CheckAnswer | None:
    """The service's answer to one check request: what the command prints and its exit
    code (None: absent, odd, or ``fallback``)."""
    found = where(start) if os.path.isdir(start) else None
    if found is None:
        return None
    answer = client.ask(found[1], msg, budget=CHECK_BUDGET)
    if answer is None or "fallback" in answer:
        return None
    stdout, code = answer.get("stdout"), answer.get("exit")
    if not isinstance(stdout, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    return {"ok": True, "stdout": stdout, "exit": code}


CHECK_BUDGET = 1.0  # seconds a check waits for the service before checking in process
