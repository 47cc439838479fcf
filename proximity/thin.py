"""The thin client: hooks asked of the resident service first (`proximity check`: its own
thin client, thincheck.py, re-exported here for the command line).

Standard library only (plus the light gitfiles, hooks.inputs and service.client modules):
the worktree, its common dir and its agent id come from files; what the hook carries (pushed
refs, the index being committed, PROXIMITY_ALLOW) from its input and environment. ONE request asks
the service to do everything the in-process path does — record, judge, deliver the inbox,
decide the block by the airspace policy — and the answer is printed as the in-process path
would print it, with the same exit code.

No service, a timeout, an odd answer or a case the service leaves alone (``fallback``):
the caller runs the in-process path, handed what was read already and whether the service
may have recorded this very event (a request it began before the client gave up: see
journal.claim), so nothing is recorded twice: for a hook, the inputs.HookCall it was
called with, filled in; for `check`, a thincheck.Fallback.
"""

from __future__ import annotations

import os
import sys

from proximity import gitfiles, knobs
from proximity.hooks import inputs, stash
from proximity.protocol import HOOK, STAGES
from proximity.service import client
from proximity.thincheck import Fallback, check, where

TYPE_CHECKING = False  # (not typing's: this module must stay light)
if TYPE_CHECKING:
    from proximity.protocol import HookRequest

__all__ = ["Fallback", "ask_hook", "check", "hook", "run_hook", "where"]


SKIP_IN_SEQUENCE = ("post-commit", "post-checkout")


def skipped(stage: str) -> bool:
    """PROXIMITY_SKIP=1, or a per-step hook inside a rebase/cherry-pick/… (post-rewrite
    records once at the end). Decided from files, before anything is asked or imported."""
    if knobs.skip():
        return True
    framework_step = stage == "snapshot" and not (
        os.environ.get("PRE_COMMIT_REWRITE_COMMAND")
        or os.environ.get("PRE_COMMIT_IS_SQUASH_MERGE"))
    if stage not in SKIP_IN_SEQUENCE and not framework_step:
        return False
    admin = gitfiles.find_git_dir(os.getcwd())
    if admin is None:
        return False
    op = gitfiles.operation_in_progress(admin)
    if op in ("cherry-pick", "revert"):
        # CHERRY_PICK_HEAD/REVERT_HEAD stand while each picked commit is made: a single
        # pick records; a range records its last step only (nothing fires after it)
        return gitfiles.steps_left(admin) > 1
    return op is not None


def run_hook(argv: list[str]) -> int | inputs.HookCall | None:
    """`proximity hook NAME ARGS…` (``argv``: NAME ARGS…, from the hook script's boot):
    skipped or answered by the service (the exit code, inputs.done_exit), or the call
    handed to the in-process hook; None: NAME is no hook."""
    call = inputs.parse_hook(argv)
    if call is None:
        return None
    got = ask_hook(call)
    return inputs.done_exit(got) if isinstance(got, int) else got


def ask_hook(call: inputs.HookCall) -> int | inputs.HookCall:
    """A parsed hook: skipped, answered by the service, or handed on (see run_hook)."""
    return 0 if skipped(call.name) else hook(call)


def hook(call: inputs.HookCall) -> int | inputs.HookCall:
    """A hook through the service: the exit code, or the call for the in-process hook."""
    if call.stage == "guard":
        call = call._replace(stdin=inputs.read_stdin())
    try:
        return _hook(call)
    except Exception:  # never break git: the in-process path decides
        return call


def _hook(call: inputs.HookCall) -> int | inputs.HookCall:
    stage = call.stage
    if not client.enabled() or stage not in STAGES:
        return call
    # the service runs git with its own limits; a value set here that is out of range is
    # said all the same, as the in-process path says it (never ignored without a word)
    knobs.git_timeout()
    knobs.service_idle(0.0)
    found = where(os.getcwd())
    if found is None:
        return call
    gitdir, common = found
    pushed = inputs.pushed_refs(call.stdin, dict(os.environ)) if stage == "guard" else None
    msg = hook_request(stage, gitfiles.agent_id(gitdir, common), call.kind(), pushed,
                       call.args[0] if call.args else "")
    head = gitfiles.head_commit(gitdir, common) if msg["kind"] == "commit" else None
    answer, record = client.hook(common, msg, head=head)
    if answer is None:
        return call._replace(record=record, request=msg)
    for line in answer["lines"]:
        print(line, file=sys.stderr)
    if call.name == "pre-commit" and os.environ.get("PROXIMITY_HOOK_SCRIPT") == "1":
        leave_post_note(gitdir, answer.get("post"))
    return inputs.blocked_exit() if answer.get("block") is True else 0


def hook_request(stage: str, agent: str, kind: str,
                 pushed: list[tuple[str, str, str, str]] | None,
                 remote: str = "") -> HookRequest:
    """The service's one request for a hook (op ``hook``), from the hook's stage, worktree,
    event kind and pushed refs, and what its environment carries: the index being
    committed, PROXIMITY_ALLOW, the host's stashed edits, the hook script's sync cookie.
    The thin client and the in-process hook (when the thin client did not ask) send it
    alike."""
    msg: HookRequest = {"op": HOOK, "rid": client.new_request_id(), "stage": stage,
                        "agent": agent, "kind": kind, "index": inputs.index_override(),
                        "allow": inputs.allowed(), "unstash": stash.host_patch(os.environ)}
    if stage == "guard":
        msg["pushed"] = pushed
        if remote:  # (pre-push's first argument: the remote's name, or its URL)
            msg["remote"] = remote
    cookie = os.environ.get("PROXIMITY_SYNC_COOKIE", "")
    if cookie and stage != "snapshot":
        msg["cookie"] = cookie  # made by the hook script (the service checks the name)
    return msg


POST_NOTE = "proximity-post-commit"  # in the worktree's git dir; read by hooks/proximity-hook


def leave_post_note(gitdir: str, post: object) -> None:
    """For the post-commit hook of this commit: an empty file named for the service's pid
    (``proximity-post-commit.<pid>``). With it the hook script tells that service of the
    commit by a file in the repository's cookies directory, without starting Python;
    without it (no note, a pid that is not a proximity service) it asks as every hook
    does. Earlier notes go; none is left when the service gives no pid."""
    try:
        for name in os.listdir(gitdir):
            if name.startswith(POST_NOTE):
                try:  # noqa: SIM105 -- contextlib is not imported by the thin client
                    os.unlink(os.path.join(gitdir, name))
                except OSError:
                    pass  # (a directory: the hook script passes it by)
        pid = post.get("pid") if isinstance(post, dict) else None
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
            fd = os.open(os.path.join(gitdir, f"{POST_NOTE}.{pid}"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            os.close(fd)
    except OSError:
        pass
