"""Asking the resident service (see server.py): a thin, fail-fast client.

Imports only the standard library's light modules: a hook that asks the service pays for
a socket, not for pygit2 or tree-sitter. Every function returns None on any problem
(no service, a stale socket, a timeout, a malformed answer) so the caller judges in
process as before; it never waits long. ``PROXIMITY_SERVICE=0`` turns the service off.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys
import time

from proximity import knobs, layout, owned
from proximity.jsontext import dumps
from proximity.protocol import (
    MARSHAL,
    MAX_MESSAGE,
    PROTOCOL,
    SCAN,
    SERVICE_MODULE,
    SHUTDOWN,
    TOUCHED,
    TURNED_AWAY,
)
from proximity.service import stamp
from proximity.snapshot import journal

TYPE_CHECKING = False  # (not typing's: hooks import this module)
if TYPE_CHECKING:
    from typing import Any

    from proximity.protocol import (
        HookAnswer,
        HookRequest,
        PostNote,
        Request,
        ScanRequest,
        TouchedRequest,
    )

CONNECT_TIMEOUT = 0.05
HOOK_BUDGET = 2.0  # seconds a hook waits for an answer before judging in process


def enabled() -> bool:
    return knobs.service()


def untrusted_socket(path: str) -> str | None:
    """Why the socket at ``path`` may be another user's (None: its directory is ours)."""
    d = os.path.dirname(path)
    why = owned.why_not_private(d)
    if why is None and not os.path.isdir(d):
        return None  # nothing there yet: nothing to connect to either
    if why is not None and os.path.basename(d) == "ecm":
        # the ledger's own directory sits inside the user's repository: a too-open mode
        # there is repaired by the next ledger open, only another owner is refused
        st = _lstat(d)
        if st is not None and st.st_uid == os.getuid() and not os.path.islink(d):
            return None
    return why


def squatted(common: str) -> str | None:
    """Why no service of ours can ever listen where this repository's socket goes (None:
    it can): its directory is a link, not a directory, or another user's. A directory of
    ours that is merely too open is no reason: the service narrows it when it binds."""
    d = os.path.dirname(layout.socket_path(common))
    st = _lstat(d)
    if st is None or (st.st_uid == os.getuid() and not os.path.islink(d)
                      and os.path.isdir(d)):
        return None
    return owned.why_not_private(d)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def peer_uid(sock: _socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (SO_PEERCRED:
    the kernel's word, not the peer's)."""
    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    except (OSError, AttributeError):
        return None
    return int.from_bytes(cred[4:8], sys.byteorder)  # struct ucred: pid, uid, gid


MARSHAL_VERSION = 2  # plain containers and scalars; every Python 3 reads it


def marshal_reply(answer: dict[str, object]) -> bytes:
    """A reply for a client that asked ``"reply": "marshal"``: its length, a newline, and
    the answer in the interpreter's own builtin format (no `json` import to read it)."""
    payload = marshal.dumps(answer, MARSHAL_VERSION)
    return b"%d\n" % len(payload) + payload


TURNED_AWAY_ANSWER: dict[str, object] = {"v": PROTOCOL, "ok": False, "refused": True,
                                         "error": "busy"}


def _read_reply(sock: _socket.socket, deadline: float) -> dict[str, object] | None:
    """The answer (``TURNED_AWAY_ANSWER``: the service turned the connection away)."""
    buf = bytearray()
    size = -1
    while True:
        if size < 0 and b"\n" in buf:
            head, _, rest = bytes(buf).partition(b"\n")
            if head + b"\n" == TURNED_AWAY:
                return TURNED_AWAY_ANSWER
            size = int(head)
            if not 0 <= size <= MAX_MESSAGE:
                return None
            buf = bytearray(rest)
        if size >= 0 and len(buf) >= size:
            answer = marshal.loads(bytes(buf[:size]))
            return answer if isinstance(answer, dict) else None
        left = deadline - time.monotonic()
        if left <= 0 or len(buf) > MAX_MESSAGE + 32:
            return None
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk


def new_request_id() -> str:
    return os.urandom(12).hex()


def exchange(common: str, msg: Request, budget: float = HOOK_BUDGET,
             connect_timeout: float = CONNECT_TIMEOUT) -> tuple[dict[str, object] | None, bool]:
    """One request, one answer (None on any problem), and whether the request reached
    the service (True: it may be working on it although no answer came in time). The
    answer is as the service sent it: the functions for each op below check its shape."""
    deadline = time.monotonic() + budget
    data = dumps({"v": PROTOCOL, "code": stamp.code_stamp(), **msg, "budget": budget,
                  "reply": MARSHAL}).encode() + b"\n"
    if len(data) > MAX_MESSAGE:
        return None, False
    sent = False
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None, False
    path = layout.socket_path(common)
    if untrusted_socket(path) is not None:
        sock.close()
        return None, False  # (the service refuses to listen there too: in process it is)
    try:
        sock.settimeout(connect_timeout)
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            return None, False  # another user's process: it hears nothing from us
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.sendall(data)
            sent = True
        except BrokenPipeError:  # closed already: turned away (its line is there to read)
            pass
        answer = _read_reply(sock, deadline)
    except (OSError, ValueError, EOFError, TypeError):
        return None, sent
    finally:
        sock.close()
    if answer is TURNED_AWAY_ANSWER:
        return None, False  # nothing was done: the caller judges in process
    if answer is None or answer.get("v") != PROTOCOL:
        return None, sent
    if answer.get("code") != stamp.code_stamp() and msg["op"] != SHUTDOWN:
        # a service started from other code (before an upgrade): it goes, we judge here
        # (a job it already began is claimed by it, see claim)
        exchange(common, {"op": SHUTDOWN}, budget=0.3)
        return None, sent
    if not answer.get("ok"):
        return None, sent and not answer.get("refused")  # refused: nothing was done
    return answer, sent


def request(common: str, msg: Request, budget: float = HOOK_BUDGET,
            connect_timeout: float = CONNECT_TIMEOUT) -> dict[str, object] | None:
    """One request, one answer; None on any problem."""
    return exchange(common, msg, budget, connect_timeout)[0]


def stopped(common: str) -> int | None:
    """The pid of this repository's service when it is stopped (SIGSTOP, a debugger): it
    holds the lock and its socket takes connections, but answers nothing, ever."""
    found = service_process(common)
    return found[0] if found is not None and found[1] in (b"T", b"t") else None


def service_process(common: str) -> tuple[int, bytes] | None:
    """This repository's service as its state file names it, and its scheduler state
    (``R``, ``S``, ``T`` ...): only a process of this user's that runs proximity's
    service for this very common dir (a recycled pid is someone else's)."""
    try:
        with open(layout.service_state(common), "rb") as fh:
            text = fh.read(4096).decode("ascii", "replace")
    except OSError:
        return None
    _, found, rest = text.partition('"pid": ')
    digits = rest[:12].split(",", 1)[0].strip()
    if not found or not digits.isdigit():
        return None
    pid = int(digits)
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    ours = SERVICE_MODULE.encode() in args and os.fsencode(common) in args
    return (pid, state) if ours else None


def end(common: str, grace: float = 2.0) -> str | None:
    """End this repository's service by signal, as `kill` would: TERM, then KILL once
    ``grace`` seconds pass with its lock still held (a process wedged inside a library
    call holding the interpreter never runs its TERM handler; a stopped one takes only
    KILL). The signal that ended it; None: no service of ours was there to end."""
    found = service_process(common)
    if found is None:
        return None
    pid, state = found
    for sig, name in ((15, "SIGTERM"), (9, "SIGKILL")):
        if sig == 15 and state in (b"T", b"t"):
            continue
        try:
            os.kill(pid, sig)
        except OSError:
            return name if not _alive(common) else None
        until = time.monotonic() + grace
        while time.monotonic() < until:
            if not _alive(common):
                return name
            time.sleep(0.02)
    return None


def unanswering(common: str, budget: float = 1.0) -> bool:
    """Whether a service holds the repository's lock and answers not even a ping within
    ``budget`` seconds (wedged, stopped, or swamped beyond it)."""
    return _alive(common) and exchange(common, {"op": "ping"}, budget=budget)[0] is None


def end_wedged(common: str) -> bool:
    """End this repository's service when it answers not even a ping (a hook that went
    unanswered found, in process, the damaged object it is stuck on): KILL, as
    replace_stopped does, so the next hooks do not each wait their budget for it."""
    found = service_process(common) if unanswering(common, 0.3) else None
    return found is not None and _kill(found[0])


def replace_stopped(common: str) -> bool:
    """Kill this repository's service if it is stopped (the next hook starts another):
    a stopped service costs one hook its budget, not every hook from now on."""
    pid = stopped(common)
    return pid is not None and _kill(pid)


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, 9)
    except OSError:
        return False
    return True


def start(common: str) -> bool:
    """Start the service for this repository in the background (never waits for it).
    The service itself makes sure only one runs (a lock); a second start exits at once."""
    if not enabled() or not os.path.isdir(common) or squatted(common) is not None:
        return False  # (a service could not bind there: none is started to fail)
    knobs.service_idle(0.0)  # (read by the service, whose output nobody sees: said here)
    import subprocess

    common = os.path.realpath(common)  # its command line names it so (hooks/proximity-hook)

    # the service runs this very code, whatever the caller's PYTHONPATH says: Python
    # started with -E reads no PYTHON* variable, and `-m` puts its working directory, the
    # directory this package was imported from, first on its path (a project's
    # PYTHONPATH=src, or another checkout of proximity, is the caller's, not the service's)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        owned.private_dir(layout.ecm_dir(common))
        # a short-lived shell puts it in the background and exits (double fork): the caller
        # returns at once and leaves no child behind
        subprocess.run(["sh", "-c", 'exec "$0" "$@" </dev/null >/dev/null 2>&1 &',
                        sys.executable, "-E", "-m", SERVICE_MODULE, common],
                       env={k: v for k, v in os.environ.items()
                            if not (k.startswith("PYTHON") or k.startswith("GIT_"))
                            or k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
                                     "GIT_TEMPLATE_DIR", "GIT_EXEC_PATH")},
                       cwd=root, timeout=5, check=False, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def ask(common: str, msg: Request, budget: float = HOOK_BUDGET,
        autostart: bool = True) -> dict[str, object] | None:
    """A request to the service; when none answers, start one for next time."""
    return ask_sent(common, msg, budget, autostart)[0]


def ask_sent(common: str, msg: Request, budget: float = HOOK_BUDGET,
             autostart: bool = True) -> tuple[dict[str, object] | None, bool]:
    """`ask`, and whether the request reached the service (see exchange)."""
    if not enabled():
        return None, False
    answer, sent = exchange(common, msg, budget)
    # a stopped service (SIGSTOP, a debugger) costs one request its budget, not every
    # request from now on, whichever client asked (a hook, a check, the editor); killed,
    # it may hold its lock a moment longer: the start is not left to _alive
    replaced = answer is None and sent and replace_stopped(common)
    if answer is None and autostart and (replaced or not _alive(common)):
        start(common)
    return answer, sent


def _alive(common: str) -> bool:
    """Whether a service holds the repository's lock (it may be busy, not dead)."""
    try:
        import fcntl

        with open(layout.service_lock(common), "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def hook(common: str, msg: HookRequest, budget: float = HOOK_BUDGET,
         head: str | None = None) -> tuple[HookAnswer | None, bool]:
    """One hook done by the service (op ``hook``: record the worktree, judge it, take its
    inbox, decide the block): the answer, whose ``lines`` the hook prints, or None when
    the caller does the hook in process; and whether that caller records the event (False:
    the service began recording it, a request the client gave up waiting on that the
    service claimed first, see claim). ``head``: the commit HEAD names now (a commit's
    event is that commit's, whether the service records it after HEAD moved on or a
    replay records it later)."""
    if head:
        msg["head"] = head
    journal.note_pending(common, msg, head)
    answer, sent = ask_sent(common, msg, budget)
    if answer is None:  # whoever claims the request first records it (none: the service)
        rid = msg.get("rid")  # (a stopped service was replaced by ask_sent)
        return None, not sent or (rid is not None and journal.claim(common, rid))
    lines = answer.get("lines")
    if "fallback" in answer or not isinstance(lines, list) \
            or not all(isinstance(x, str) for x in lines):
        return None, True  # a case the service leaves to the hook: nothing was recorded
    got: HookAnswer = {"ok": True, "lines": lines, "block": answer.get("block") is True}
    post = answer.get("post")
    pid = post.get("pid") if isinstance(post, dict) else None
    if isinstance(pid, int) and not isinstance(pid, bool):
        note: PostNote = {"pid": pid}
        got["post"] = note
    return got, False


def scan(common: str, focus: str | None = None, index: str | None = None,
         budget: float = 30.0) -> dict[str, Any] | None:
    """`scan --json` as the service sees the airspace (``index``: the focus worktree's
    index file to snapshot from, e.g. the one a commit is being made from)."""
    msg: ScanRequest = {"op": SCAN, "agent": focus, "index": index}
    answer = ask(common, msg, budget)
    result = answer.get("scan") if answer is not None else None
    return result if isinstance(result, dict) else None


def touched(common: str, here: str) -> None:
    """Tell the service a worktree changed (a commit, checkout, ...); never waits."""
    msg: TouchedRequest = {"op": TOUCHED, "agent": here}
    ask(common, msg, budget=0.2)
