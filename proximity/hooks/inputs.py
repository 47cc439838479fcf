"""What a hook stage is and what it carries, from its arguments and environment alone.

Standard library only: the hooks' thin client (thin.py), the command line (main.py) and
the in-process hook (commands/hook.py) all parse `proximity hook NAME ARGS…` and read
stages, event kinds, pushed refs and the block's exit code from here; the thin client hands
the in-process hook what it learnt as one :class:`HookCall`.
"""

from __future__ import annotations

import os
import sys

from proximity import knobs
from proximity.hooks import hosts

TYPE_CHECKING = False  # (not typing's: the thin hook path imports this module)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NamedTuple

    from proximity.protocol import HookRequest

STAGE = {"post-checkout": "snapshot", "post-commit": "snapshot", "post-merge": "snapshot",
         "post-rewrite": "snapshot", "pre-commit": "warn", "pre-push": "guard"}
# what `proximity hook NAME` accepts: a stage, or the git hook that runs it
HOOK_NAMES = ("snapshot", "warn", "guard", *STAGE)


def stage_of(name: str) -> str:
    """snapshot, warn or guard for a git hook name (a stage name stays itself)."""
    return STAGE.get(name, name)


if TYPE_CHECKING:
    class _Call(NamedTuple):
        name: str
        args: tuple[str, ...]
        stdin: str | None = None
        record: bool = True
        request: HookRequest | None = None
else:  # the same fields, without importing typing or collections on every hook (a hook
    # pays for collections and what it imports, ~2 ms of CPU, only for namedtuple)
    class _Call(tuple):
        __slots__ = ()
        _fields = ("name", "args", "stdin", "record", "request")

        def __new__(cls, name, args, stdin=None, record=True, request=None):
            return tuple.__new__(cls, (name, args, stdin, record, request))

        def _replace(self, **changes):
            new = type(self)(*(changes.pop(f, v)
                               for f, v in zip(self._fields, self, strict=True)))
            if changes:
                raise ValueError(f"unexpected field names: {sorted(changes)!r}")
            return new

        name = property(lambda self: self[0])
        args = property(lambda self: self[1])
        stdin = property(lambda self: self[2])
        record = property(lambda self: self[3])
        request = property(lambda self: self[4])


class HookCall(_Call):
    """`proximity hook NAME ARGS…` as read (:func:`parse_hook`), and what the thin client
    learnt asking the service, handed as one value to the in-process hook: ``stdin`` (the
    pushed refs, read already), ``request`` (what it asked the service, which did not
    answer: the in-process hook judges the same, under the same request id, and does not
    ask again) and ``record`` (False: the service began recording this very event).
    Immutable: a named tuple's fields, since importing dataclasses would cost the thin path
    about half its own start-up."""

    __slots__ = ()

    @property
    def stage(self) -> str:
        return stage_of(self.name)

    def kind(self) -> str:
        """The ledger event kind this hook records (see kind_of)."""
        return kind_of(self.name, list(self.args))


def parse_hook(argv: Sequence[str]) -> HookCall | None:
    """``NAME ARGS…`` of `proximity hook` (what the hook script passes), parsed without
    argparse: the thin path and the command line both read it here. None: NAME is no
    hook (the command line's parser then says so)."""
    if not argv or argv[0] not in HOOK_NAMES:
        return None
    return HookCall(argv[0], tuple(argv[1:]))


def kind_of(stage: str, args: list[str]) -> str:
    """The ledger event kind a hook records (the pre-commit framework says its stage in
    PRE_COMMIT_* variables)."""
    if stage == "post-checkout" or "PRE_COMMIT_CHECKOUT_TYPE" in os.environ:
        prev = args[0] if args else os.environ.get("PRE_COMMIT_FROM_REF", "")
        return "worktree-add" if prev and set(prev) == {"0"} else "checkout"
    if stage == "post-rewrite" or "PRE_COMMIT_REWRITE_COMMAND" in os.environ:
        return "rewrite"
    if stage == "post-merge" or (stage == "snapshot" and _framework_merge()):
        return "merge"
    if stage in ("pre-push", "guard"):
        return "push"
    if stage in ("pre-commit", "warn"):
        return "pre-commit"
    return "commit"


def _framework_merge() -> bool:
    """pre-commit or prek running a snapshot from git's post-merge hook (hosts.py)."""
    return hosts.framework_merge(os.environ, os.getcwd())


def index_override() -> str | None:
    """The temporary index of a commit being made (git sets it for pre-commit hooks)."""
    idx = os.environ.get("GIT_INDEX_FILE")
    if not idx:
        return None
    return os.path.abspath(idx)


def pushed_refs(stdin_text: str | None, env: dict[str, str]
                ) -> list[tuple[str, str, str, str]] | None:
    """What a push carries: (local ref, local commit, the remote's commit it replaces --
    zeros for a new ref --, the remote's ref) of every update that brings commits.

    pre-push gets ``<local ref> <local sha> <remote ref> <remote sha>`` lines on stdin; the
    pre-commit framework and prek pass one of them as PRE_COMMIT_LOCAL_BRANCH /
    PRE_COMMIT_TO_REF / PRE_COMMIT_FROM_REF, and the others are read back from the ``git
    push`` command line (pushargs). Deletions and updates of the remote's tags carry no
    work to judge (a tag pushed onto a branch does); an update the remote already has
    neither. None: nothing said what is pushed (the guard run by hand); an empty stdin is
    git saying the push updates no ref (everything up to date: git still
    runs the hook), so nothing to judge, never the worktree as by hand.
    """
    if env.get("PRE_COMMIT_TO_REF") or (env.get("PRE_COMMIT_LOCAL_BRANCH")
                                        and env.get("PRE_COMMIT_REMOTE_BRANCH")):
        # (this module is on the thin hook path: the standard library only)
        # lazy: a host's pre-push alone reads the push's command line and asks git
        from proximity.hooks import pushargs

        lines = pushargs.host_lines(env, os.getcwd())
        if lines is None:
            return None  # not resolvable: judged as a guard run by hand (the worktree)
    elif stdin_text is not None:
        lines = [ln.split() for ln in stdin_text.splitlines() if ln.strip()]
    else:
        return None
    out = []
    for parts in lines:
        if len(parts) != 4:
            continue
        local_ref, local_sha, remote_ref, remote_sha = parts
        # a tag on the remote lands no work; a tag pushed onto a branch does (what the
        # remote ref becomes decides, never the local name it was pushed from)
        if set(local_sha) == {"0"} or remote_ref.startswith("refs/tags/"):
            continue
        if local_sha == remote_sha:
            continue
        out.append((local_ref, local_sha, remote_sha, remote_ref))
    return out


def read_stdin() -> str | None:
    try:
        if sys.stdin is None or sys.stdin.closed or sys.stdin.isatty():
            return None
        # whole: git lists every pushed ref, and a ref past any cut would go unjudged (the
        # list is the pusher's own refs, a few hundred bytes each)
        return sys.stdin.read()
    except (OSError, ValueError):
        return None


def blocked_exit() -> int:
    """The exit code of a deliberate block: 1, or the distinct code the hook script asks
    for (PROXIMITY_BLOCKED_EXIT), so that it can tell a block from a Python that failed."""
    try:
        code = int(os.environ.get("PROXIMITY_BLOCKED_EXIT", "1"))
    except ValueError:
        return 1
    return code if 0 < code < 126 else 1


def done_exit(code: int) -> int:
    """A hook's exit code as its caller reads it: 0 ("go on") becomes the code the hook
    script asks for (PROXIMITY_DONE_EXIT), so that it can tell proximity's own "go on"
    from a program that exited 0 without running it (PROXIMITY_PYTHON=/bin/true would
    otherwise switch the guard off without a word); every other code is kept."""
    if code != 0:
        return code
    try:
        done = int(os.environ.get("PROXIMITY_DONE_EXIT", "0"))
    except ValueError:
        return 0
    return done if 0 < done < 126 else 0


def allowed() -> bool:
    """PROXIMITY_ALLOW=1: let a blocked commit or push through."""
    return knobs.allow()
