"""Where proximity keeps its files: every path under the git common dir's ``ecm/`` and the
runtime directory, named in one place.

``.git/ecm`` (the "ecm" is the seed's engagement control module) is shared by every worktree
of one repository: the ledger, the service's socket, state and lock, the shadow indexes of
snapshots, the spool of hooks' events on their way to the ledger, and what other machines
published, held in quarantine until verified. Standard library only: the hook's thin client
imports it.
"""

from __future__ import annotations

import os

from proximity import owned

ECM = "ecm"
LEDGER = "ledger.sqlite3"
SOCKET = "service.sock"
SUN_PATH_MAX = 100  # sun_path holds 108 bytes with its NUL; leave a margin


def ecm_dir(common: str) -> str:
    """``<common>/ecm``: everything proximity keeps for one repository."""
    return os.path.join(common, ECM)


def ledger_path(ecm: str) -> str:
    return os.path.join(ecm, LEDGER)


def unsaved_dir(ecm: str) -> str:
    """A person's unsaved editor buffers, kept as live work for the other worktrees
    (``unsaved``)."""
    return os.path.join(ecm, "unsaved")


def index_dir(ecm: str) -> str:
    """The shadow indexes snapshots are built in (never the user's index)."""
    return os.path.join(ecm, "index")


def cookies_dir(common: str) -> str:
    """Where hooks make sync cookies and post-commit notes for the service's watcher."""
    return os.path.join(ecm_dir(common), "cookies")


def claims_dir(common: str) -> str:
    """One file per hook request taken, so an event is recorded by one side only."""
    return os.path.join(ecm_dir(common), "claims")


def pending_dir(common: str) -> str:
    """Hooks' events not yet in the ledger (replayed by the next writer)."""
    return os.path.join(ecm_dir(common), "pending")


def service_state(common: str) -> str:
    return os.path.join(ecm_dir(common), "service.json")


def service_lock(common: str) -> str:
    return os.path.join(ecm_dir(common), "service.lock")


def store_dir(ecm: str) -> str:
    """The private object store of live work (gitio/store.py): a bare repository whose
    objects borrow the repository's; snapshots and their pins live there, never in
    ``.git/objects`` or the repository's refs."""
    return os.path.join(ecm, "store")


def machine_id(ecm: str) -> str:
    return os.path.join(ecm, "machine-id")


def runtime_dir() -> str:
    """A private directory for sockets whose path under the common dir is too long:
    ``$XDG_RUNTIME_DIR/proximity`` when that is ours, else ``proximity-<uid>`` in
    ``$TMPDIR`` or ``/tmp`` (as tmux's ``tmux-<uid>``; any user can make it first there:
    owned.why_not_private decides whether it is ours before anything is sent there)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and owned.why_not_private(xdg) is None \
            and os.path.isdir(xdg):
        return os.path.join(xdg, "proximity")
    tmp = os.environ.get("TMPDIR") or ""
    if not (os.path.isabs(tmp) and os.path.isdir(tmp)):
        tmp = "/tmp"
    return os.path.join(tmp, f"proximity-{os.getuid()}")


def socket_path(common: str) -> str:
    """``<common>/ecm/service.sock``, or (past the sun_path limit) a short path in a
    private runtime directory keyed by a hash of the common dir."""
    path = os.path.join(ecm_dir(common), SOCKET)
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        return path
    import hashlib  # (lazy: only a deep repository's hook pays for it)

    key = hashlib.sha256(os.fsencode(os.path.realpath(common))).hexdigest()[:20]
    return os.path.join(runtime_dir(), f"{key}.sock")
