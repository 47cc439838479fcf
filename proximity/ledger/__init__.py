"""The shared ledger at ``<git-common-dir>/ecm/ledger.sqlite3``.

One SQLite database in WAL mode for every worktree of a repository. It is created in a
temporary file under a lock and moved into place, so no reader ever sees half a schema;
each event is one ``BEGIN IMMEDIATE`` transaction; a corrupt or newer-schema file is
reported and never overwritten.

``Ledger`` is the one class callers use; its parts live by concern: the database
(``db``), the event log and its busy-ledger spool (``events``), the facts
right-of-way reads (``traffic``), the inbox (``inbox``) and the caches (``cache``).
"""

from __future__ import annotations

from proximity.ledger.cache import GENERATIONAL, Caches, TrackedDict
from proximity.ledger.db import (
    BUSY_WAIT,
    DDL,
    FILENAME,
    SCHEMA,
    diagnose,
    integrity_says,
    recovery_hint,
    wait_budget,
)
from proximity.ledger.events import FILES_CACHE, SPOOL, Event
from proximity.ledger.inbox import Inbox
from proximity.ledger.traffic import Traffic


class Ledger(Traffic, Inbox, Caches):
    """The ledger of one repository, opened from its ``ecm`` directory."""


__all__ = ["BUSY_WAIT", "DDL", "FILENAME", "FILES_CACHE", "GENERATIONAL", "SCHEMA", "SPOOL",
           "Event", "Ledger", "TrackedDict", "diagnose", "integrity_says", "recovery_hint",
           "wait_budget"]
