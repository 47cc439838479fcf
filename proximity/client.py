"""Asking the resident service (see service.py): a thin, fail-fast client.

Imports only the standard library's light modules: a hook that asks the service pays for
a socket, not for pygit2 or tree-sitter. Every function returns None on any problem
(no service, a stale socket, a timeout, a malformed answer) so the caller judges in
process as before; it never waits long. ``PROXIMITY_SERVICE=0`` turns the service off.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

PROTOCOL = 1
MAX_MESSAGE = 8 << 20  # bytes of one request or answer line
CONNECT_TIMEOUT = 0.05
HOOK_BUDGET = 2.0  # seconds a hook waits for an answer before judging in process
SUN_PATH_MAX = 100  # sun_path holds 108 bytes with its NUL; leave a margin


def enabled() -> bool:
    return os.environ.get("PROXIMITY_SERVICE", "1") != "0"


def ecm_dir(common: str) -> str:
    return os.path.join(common, "ecm")


def runtime_dir() -> str:
    """A private directory for sockets whose path under the common dir is too long."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, "proximity")
    return os.path.join("/tmp", f"proximity-{os.getuid()}")


def socket_path(common: str) -> str:
    """``<common>/ecm/service.sock``, or (past the sun_path limit) a short path in a
    private runtime directory keyed by a hash of the common dir."""
    path = os.path.join(ecm_dir(common), "service.sock")
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        return path
    key = hashlib.sha256(os.fsencode(os.path.realpath(common))).hexdigest()[:20]
    return os.path.join(runtime_dir(), f"{key}.sock")


def _read_line(sock: socket.socket, deadline: float) -> bytes | None:
    buf = bytearray()
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or len(buf) > MAX_MESSAGE:
            return None
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return bytes(buf[:buf.index(b"\n")])


def request(common: str, msg: dict[str, Any], budget: float = HOOK_BUDGET,
            connect_timeout: float = CONNECT_TIMEOUT) -> dict[str, Any] | None:
    """One request, one answer; None on any problem."""
    deadline = time.monotonic() + budget
    data = json.dumps({"v": PROTOCOL, **msg, "budget": budget}).encode() + b"\n"
    if len(data) > MAX_MESSAGE:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(connect_timeout)
            sock.connect(socket_path(common))
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(data)
            line = _read_line(sock, deadline)
    except (OSError, ValueError):
        return None
    if line is None:
        return None
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("v") != PROTOCOL or not answer.get("ok"):
        return None
    return answer


def start(common: str) -> bool:
    """Start the service for this repository in the background (never waits for it).
    The service itself makes sure only one runs (a lock); a second start exits at once."""
    if not enabled() or not os.path.isdir(common):
        return False
    try:
        os.makedirs(ecm_dir(common), exist_ok=True)
        # a short-lived shell puts it in the background and exits (double fork): the caller
        # returns at once and leaves no child behind
        subprocess.run(["sh", "-c", 'exec "$0" "$@" </dev/null >/dev/null 2>&1 &',
                        sys.executable, "-m", "proximity.service", common],
                       env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")
                            or k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
                                     "GIT_TEMPLATE_DIR", "GIT_EXEC_PATH")},
                       cwd=common, timeout=5, check=False, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def ask(common: str, msg: dict[str, Any], budget: float = HOOK_BUDGET,
        autostart: bool = True) -> dict[str, Any] | None:
    """A request to the service; when none answers, start one for next time."""
    if not enabled():
        return None
    answer = request(common, msg, budget)
    if answer is None and autostart and not _alive(common):
        start(common)
    return answer


def _alive(common: str) -> bool:
    """Whether a service holds the repository's lock (it may be busy, not dead)."""
    try:
        import fcntl

        with open(os.path.join(ecm_dir(common), "service.lock"), "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def judge(common: str, here: str, stage: str, kind: str, override: str | None,
          pushed: list[tuple[str, str]] | None) -> dict[str, Any] | None:
    """The service's verdict for a pre-commit (warn) or pre-push (guard) hook."""
    answer = ask(common, {"op": "judge", "agent": here, "stage": stage, "kind": kind,
                          "index": override, "pushed": pushed})
    if answer is None or not isinstance(answer.get("verdict"), dict):
        return None
    verdict: dict[str, Any] = answer["verdict"]
    return verdict


def scan(common: str, focus: str | None = None, index: str | None = None,
         budget: float = 30.0) -> dict[str, Any] | None:
    """`scan --json` as the service sees the airspace (``index``: the focus worktree's
    index file to snapshot from, e.g. the one a commit is being made from)."""
    answer = ask(common, {"op": "scan", "agent": focus, "index": index}, budget)
    if answer is None or not isinstance(answer.get("scan"), dict):
        return None
    result: dict[str, Any] = answer["scan"]
    return result


def record(common: str, here: str, kind: str, index: str | None) -> bool:
    """Ask the service to record this worktree's state as one ledger event (what the
    snapshot hook does); False: not done, record in process."""
    answer = ask(common, {"op": "record", "agent": here, "kind": kind, "index": index})
    return bool(answer and answer.get("recorded"))


def touched(common: str, here: str) -> None:
    """Tell the service a worktree changed (a commit, checkout, ...); never waits."""
    ask(common, {"op": "touched", "agent": here}, budget=0.2)
