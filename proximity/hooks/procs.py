"""This process's ancestors, as /proc tells them: who ran the hook.

Hook hosts hide what git told them from the hooks they run: the pre-commit framework and
prek stash the worktree's unstaged edits in a patch named for their own pid, and pass a
pre-push hook one of the pushed refs only. What they hid is found through the processes
that ran this one (git, the host, a shell in between). Read-only, bounded, and empty
where there is no /proc: every caller then does what it did without it.
"""

from __future__ import annotations

import os

MAX_DEPTH = 8  # ancestors looked at: hook -> sh -> host (-> python launcher) -> sh -> git


class Proc:
    """One ancestor: its pid, when it started (seconds since the epoch), its command line.
    (A plain class: the thin client imports this module, without typing's cost.)"""

    __slots__ = ("argv", "pid", "started")

    def __init__(self, pid: int, started: float, argv: list[bytes]) -> None:
        self.pid, self.started, self.argv = pid, started, argv


def ancestors(pid: int, depth: int = MAX_DEPTH) -> list[Proc]:
    """The ancestors of process ``pid``, nearest first (init not included); empty where
    there is no /proc."""
    try:
        with open("/proc/stat", "rb") as f:
            boot = next(float(ln.split()[1]) for ln in f if ln.startswith(b"btime "))
        tick = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, StopIteration, ValueError, IndexError):
        return []
    out: list[Proc] = []
    for _ in range(depth):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if ppid <= 1:
            break
        try:
            with open(f"/proc/{ppid}/stat", "rb") as f:
                start = int(f.read().rsplit(b")", 1)[1].split()[19])
            with open(f"/proc/{ppid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            break
        if argv and argv[-1] == b"":
            argv.pop()
        out.append(Proc(ppid, boot + start / tick, argv))
        pid = ppid
    return out
