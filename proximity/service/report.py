"""What `doctor` and `proximity service status` see of a repository's service from outside:
running or not, where its socket is, what it recorded as it started and, when it answers,
its own status. Asked through the client alone: a report never loads the service itself."""

from __future__ import annotations

import json
import os
from typing import TypedDict

from proximity import layout
from proximity.service import client


class ServiceReport(TypedDict):
    """What `doctor` and `proximity service status` report of a repository's service."""
    running: bool  # a service holds the repository's lock
    socket: str
    socket_exists: bool
    enabled: bool  # not turned off (PROXIMITY_SERVICE=0)
    recorded: object  # the state file it wrote as it started (JSON), or None
    status: object  # its own status (protocol.ServiceStatus) when it answers, else None
    stale_socket: bool  # a socket left by a killed one
    refused: str | None  # why the socket's place is not ours


def service_state(common: str) -> ServiceReport:
    """The report of the service of the repository whose common dir is ``common``."""
    sock = layout.socket_path(common)
    running, exists = client._alive(common), os.path.exists(sock)
    recorded: object
    try:
        with open(layout.service_state(common)) as fh:
            recorded = json.load(fh)
    except (OSError, ValueError):
        recorded = None
    answer = client.request(common, {"op": "status"}, budget=1.0) if running else None
    return {"running": running, "socket": sock, "socket_exists": exists,
            "enabled": client.enabled(), "recorded": recorded,
            "status": answer.get("status") if answer else None,
            "stale_socket": exists and not running,
            "refused": client.untrusted_socket(sock)}
