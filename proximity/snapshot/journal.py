"""A hook's event on its way to the ledger: the claim on a request (recorded by one side
only) and the pending note that keeps it until somebody records it (a killed or stopped
service loses nothing: recorder.replay_pending takes what is left). Standard library only:
hooks import it.
"""

from __future__ import annotations

import os
import time

from proximity import layout
from proximity.jsontext import dumps

TYPE_CHECKING = False  # (not typing's: hooks import this module)
if TYPE_CHECKING:
    from proximity.protocol import HookRequest

CLAIM_AGE = 120.0  # seconds a request's claim is kept (far past any client's budget)


def claim(common: str, rid: str) -> bool:
    """Take request ``rid`` for ourselves: True for the first taker only (an exclusive
    create). The service claims each recording job as it begins it; a client that gave up
    waiting claims it before recording in process. So an event is recorded once, by
    whichever side began it, never twice."""
    d = layout.claims_dir(common)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(d, rid), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return True  # no claims possible here: nothing else can have taken it either
    os.close(fd)
    return True


def pending_dir(common: str) -> str:
    return layout.pending_dir(common)


def note_pending(common: str, msg: HookRequest, head: str | None = None) -> None:
    """Before a hook's request leaves: the event it asks for, in a file named by its
    request id. Whoever records the event with that id removes the file (settle_pending);
    one left behind (a service killed or stopped mid-job) is recorded by the next service
    or in-process hook (recorder.replay_pending), once: the ledger keeps one event per id."""
    rid = msg.get("rid")
    if rid is None:
        return
    d = pending_dir(common)
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(d, rid), os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | os.O_NOFOLLOW, 0o600)
    except OSError:
        return  # (the in-process path records it then, or nothing can be recorded at all)
    try:
        os.write(fd, dumps({"rid": rid, "agent": msg["agent"], "kind": msg["kind"],
                            "stage": msg["stage"], "cwd": os.getcwd(), "head": head,
                            "time": time.time()}).encode())
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)


def settle_pending(common: str, rid: str | None) -> None:
    """The event of request ``rid`` is in the ledger: its pending note goes."""
    if rid is None:
        return
    try:  # noqa: SIM105 -- (contextlib is one more import for every hook)
        os.unlink(os.path.join(pending_dir(common), rid))
    except OSError:
        pass


def forget_claims(common: str, older_than: float = CLAIM_AGE) -> None:
    d = layout.claims_dir(common)
    now = time.time()
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        path = os.path.join(d, name)
        try:
            if now - os.stat(path).st_mtime > older_than:
                os.unlink(path)
        except OSError:
            pass
