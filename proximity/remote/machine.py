"""This machine's id among the machines that share a repository through its remote: stable
per clone, safe as a ref name component."""

from __future__ import annotations

import os
import re
import socket

from proximity import knobs, layout, owned
from proximity.snapshot.workspace import Context


def machine_id(ctx: Context) -> str:
    """Stable per clone: PROXIMITY_MACHINE_ID, [tool.proximity] machine_id, or generated once
    into <common-dir>/ecm/machine-id (a config file is shared by every clone, so it is only
    right where one machine owns the repository)."""
    env = knobs.machine_id()
    if env:
        return env
    if ctx.cfg.machine_id:
        return _clean(ctx.cfg.machine_id)
    path = layout.machine_id(ctx.repo.ecm_dir)
    try:
        with open(path) as f:
            found = _clean(f.read().strip())
        if found:
            return found
    except OSError:
        pass
    mid = _clean(f"{socket.gethostname()}-{os.urandom(3).hex()}")
    owned.private_dir(ctx.repo.ecm_dir)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(mid + "\n")
    os.replace(tmp, path)
    return mid


def _clean(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-.")[:64]
