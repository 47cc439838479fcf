"""The unstaged edits a hook host took out of the worktree while its hooks run.

The pre-commit framework and prek, before the hooks of any stage, save the worktree's
unstaged changes to tracked files as a binary patch in their store (`git diff-index
--binary` against the index's tree), drop them (`git checkout -- .`), run the hooks and
apply the patch again. A hook in between sees the worktree without that work: recorded
as is, the ledger would read it as reverted (a right-of-way lost, an advisory dropped)
for the second the hooks take.

The patch is not named to the hooks. It is found by the process that wrote it: its pid
is in the file name, and that process is the nearest ancestor of the hook whose command
line is that host's (git runs the host, the host runs the hook), alive now, started no
later than the patch was written. pre-commit:
``patch<seconds>-<pid>`` in ``$PRE_COMMIT_HOME`` (else ``$XDG_CACHE_HOME/pre-commit``,
``~/.cache/pre-commit``); prek: ``patches/<milliseconds>-<pid>.patch`` in ``$PREK_HOME``
(else ``$XDG_CACHE_HOME/prek``, ``~/.cache/prek``). Both hosts set ``PRE_COMMIT=1`` for
their hooks; nothing is looked for without it.

The patch is only ever data: it is applied to a temporary index holding the state the
hook read (gitio.Repo.tree_with_patch), never to the worktree or the user's index.
"""

from __future__ import annotations

import os
import stat

from proximity.hooks import procs

TYPE_CHECKING = False  # (not typing's: the thin client imports this module)
if TYPE_CHECKING:
    from collections.abc import Mapping

def host_patch(env: Mapping[str, str], pid: int | None = None) -> str | None:
    """The patch of unstaged edits the hook host running this process holds out of the
    worktree now, or None (no host, nothing stashed, or not sure): the newest patch of
    the nearest ancestor that is that host (its command line names it) and was alive when
    the patch was written."""
    if env.get("PRE_COMMIT") != "1":
        return None
    started = _ancestors(os.getpid() if pid is None else pid)
    if not started:
        return None
    found: dict[int, tuple[float, str]] = {}  # ancestor pid -> its newest patch
    for store, prefix, suffix, scale, host in _stores(env):
        try:
            names = os.listdir(store)
        except OSError:
            continue
        for name in names:
            got = _name(name, prefix, suffix)
            if got is None or got[1] not in started:
                continue
            written, owner = got[0] / scale, got[1]
            # the process was alive when it wrote the patch (a recycled pid's old file no)
            if written + 1.0 < started[owner][0] or started[owner][1] != host:
                continue
            path = os.path.join(store, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            if owner not in found or written > found[owner][0]:
                found[owner] = (written, path)
    for owner in started:  # nearest first
        if owner in found:
            return found[owner][1]
    return None


def _name(name: str, prefix: str, suffix: str) -> tuple[int, int] | None:
    """(time, pid) from ``<prefix><digits>-<digits><suffix>``, else None."""
    if not (name.startswith(prefix) and name.endswith(suffix)):
        return None
    when, _, pid = name[len(prefix):len(name) - len(suffix)].partition("-")
    if not (when.isascii() and when.isdigit() and pid.isascii() and pid.isdigit()):
        return None
    return int(when), int(pid)


def _stores(env: Mapping[str, str]) -> list[tuple[str, str, str, float, str]]:
    """(directory, name prefix, name suffix, time unit per second, the host's name as its
    command line says it) of each host's patches."""
    home = env.get("HOME") or os.path.expanduser("~")
    cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    pre_commit = env.get("PRE_COMMIT_HOME") or os.path.join(cache, "pre-commit")
    prek = env.get("PREK_HOME") or os.path.join(cache, "prek")
    if prek.startswith("~"):
        prek = os.path.join(home, prek[1:].lstrip("/"))
    return [(os.path.abspath(pre_commit), "patch", "", 1.0, "pre-commit"),  # patch<s>-<pid>
            (os.path.abspath(os.path.join(prek, "patches")), "", ".patch", 1000.0, "prek")]


def _ancestors(pid: int) -> dict[int, tuple[float, str]]:
    """pid -> (start time in seconds since the epoch, which host its command line names:
    "pre-commit", "prek" or "") of this process's ancestors, nearest first; empty where
    there is no /proc."""
    return {p.pid: (p.started, _host_named(p.argv)) for p in procs.ancestors(pid)}


def _host_named(argv: list[bytes]) -> str:
    """Which hook host a command line runs: pre-commit (`pre-commit ...`, `python -m
    pre_commit ...`, its hook script's `python .../pre-commit hook-impl`), prek, or ""."""
    for arg in argv[:3]:
        base = os.path.basename(arg).decode("utf-8", "replace")
        base = base[2:] if base.startswith("-m") else base  # `python -mpre_commit`
        if base in ("pre-commit", "pre_commit") or base.startswith("pre-commit-"):
            return "pre-commit"
        if base == "prek" or base.startswith("prek-"):
            return "prek"
    return ""
