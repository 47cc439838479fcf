"""Every subcommand's ``run`` by its name, but for `check` and `hook`: the one table the
command line dispatches through. Importing it loads every command module it names (and
their own imports): main.py reaches it only for a command that has no fast path. `check`
and the hooks ask the resident service first and then load their own module alone, and
`--help` loads no command."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from proximity.commands import (
    demo,
    doctor,
    gc,
    inbox,
    install,
    intend,
    ledger,
    lsp,
    mcp,
    scan,
    service,
    snapshot,
    sync,
    uninstall,
    view,
    watch,
)

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "scan": scan.run, "status": scan.run, "snapshot": snapshot.run, "intend": intend.run,
    "inbox": inbox.run, "mcp": mcp.run, "lsp": lsp.run, "watch": watch.run,
    "view": view.run, "demo": demo.run, "ledger": ledger.run, "doctor": doctor.run,
    "install": install.run, "uninstall": uninstall.run, "gc": gc.run,
    "service": service.run, "sync": sync.run,
}
