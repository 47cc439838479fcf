"""`proximity launcher ARGS…`: the quickest command line that runs `proximity ARGS…` with
this install, for an agent harness's hook command (docs/agents.md): this interpreter,
isolated and without ``site`` (``-I -S``), starting the package's launch.py by its path.
`proximity check --hook NAME` through the console script answers the same; this line
skips ``site`` and the script's imports before the service is asked (benchmarks/RESULTS.md
has the difference)."""

from __future__ import annotations

import argparse
import json
import os
import shlex

import proximity
from proximity.commands.install import interpreter


def argv(args: list[str]) -> list[str]:
    """The launcher's command line for ``proximity ARGS…``."""
    here = os.path.dirname(os.path.abspath(proximity.__file__))
    return [interpreter(), "-I", "-S", os.path.join(here, "launch.py"), *args]


def run(args: argparse.Namespace) -> int:
    rest = list(args.args)
    words = argv(rest[1:] if rest[:1] == ["--"] else rest)
    if args.json:
        print(json.dumps({"command": shlex.join(words), "argv": words}))
    else:
        print(shlex.join(words))
    return 0
