"""Every subcommand's ``run`` by its name, but for `check` and `hook`: the one table the
command line dispatches through. main.py reaches it only for a command that has no fast
path (`check` and the hooks ask the resident service first and then load their own module
alone, and `--help` loads no command). Importing it loads the commands that do not scan;
the scan engine comes with the commands that run it (`scanning`), when one runs: a
`snapshot`, `install` or `ledger` process never loads it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from proximity.commands import (
    doctor,
    gc,
    inbox,
    install,
    intend,
    launcher,
    ledger,
    lsp,
    mcp,
    service,
    snapshot,
    sync,
    uninstall,
)

Run = Callable[[argparse.Namespace], int]

SCANNING = ("scan", "status", "watch", "view", "demo")  # the commands that run the engine


def scanning() -> dict[str, Run]:
    """The commands that run the scan engine, by name (importing them loads it)."""
    # (every other command's process is that much cheaper to start)
    # lazy: the scan engine (about 0.1 s of CPU, 50 modules) for the commands that scan
    from proximity.commands import demo, scan, view, watch

    return {"scan": scan.run, "status": scan.run, "watch": watch.run, "view": view.run,
            "demo": demo.run}


def _scanning(args: argparse.Namespace) -> int:
    return scanning()[args.command](args)


COMMANDS: dict[str, Run] = {
    "snapshot": snapshot.run, "intend": intend.run, "inbox": inbox.run, "mcp": mcp.run,
    "lsp": lsp.run, "ledger": ledger.run, "doctor": doctor.run, "install": install.run,
    "uninstall": uninstall.run, "gc": gc.run, "service": service.run, "sync": sync.run,
    "launcher": launcher.run,
    **dict.fromkeys(SCANNING, _scanning),
}
