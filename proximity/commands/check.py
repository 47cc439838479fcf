"""`proximity check PATH[:START-END]…`: may this worktree edit these lines now?
`proximity check --merge REF`: may it merge REF now (what the merge would change here,
checked the same way)? `proximity check --hook HARNESS`: an agent harness's pre- or
post-edit event on stdin, answered in that harness's format.

The answer is the one answerer's (agents/answer.py), as every front end's is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from proximity import checkargs, knobs
from proximity.agents import output
from proximity.agents.answer import CheckRequest, answer, of_specs
from proximity.checkargs import CheckArgs
from proximity.errors import UsageError

if TYPE_CHECKING:
    pass


def check(a: CheckArgs, stdin: str | None = None, size: int | None = None) -> int:
    """The command, from its arguments however they were parsed; ``stdin``: a harness's
    event the thin client read already (None: read it here), ``size``: its size in
    characters (checkargs.read_event)."""
    cwd = os.path.abspath(a.repo or os.getcwd())
    if a.hook is not None:
        if a.specs or a.merge is not None:
            raise UsageError("--hook reads the harness's event on stdin: name no PATH and "
                             "no --merge with it")
        if stdin is None:
            stdin, size = checkargs.read_event()
        req = CheckRequest(cwd, harness=a.hook, deny_on=a.deny_on, event=stdin,
                           event_size=size, skip=knobs.skip())
    elif a.merge is not None and a.specs:
        raise UsageError("--merge REF checks what the merge changes: name no PATH with it")
    else:
        req = of_specs(cwd, a.specs, a.deny_on, a.merge)
    got = answer(req)
    print(output.stdout(got, a.json))
    return output.exit_code(got)
