"""`proximity launcher ARGS…`: the quickest command line that runs `proximity ARGS…` with
this install, for an agent harness's hook command (docs/agents.md): this interpreter,
isolated and without ``site`` (``-I -S``), running the package's launch.py. `proximity
check --hook NAME` through the console script answers the same; this line skips ``site``
and the script's imports before the service is asked (benchmarks/RESULTS.md has the
difference).

The file is run by a one-line ``-c`` program rather than named as the script: Python exits
2 when it cannot open a script, and Claude Code and Gemini CLI read a hook's exit 2 as
"block this call", so a line left behind by a moved or deleted environment would stop
every edit. Here it fails with exit 1 and the file's name on stderr: a hook error the
person sees, the edit let through (as a missing ``proximity`` on PATH, exit 127, is)."""

from __future__ import annotations

import argparse
import json
import os
import shlex

import proximity
from proximity.commands.install import interpreter


def program(path: str) -> str:
    """The ``-c`` program that runs the launch.py at ``path`` as the main module (its
    path written as a JSON string, which Python reads alike, so the shell's single quotes
    hold it whole)."""
    return (f"__file__=f={json.dumps(path)};"
            'exec(compile(open(f,"rb").read(),f,"exec"))')


def argv(args: list[str]) -> list[str]:
    """The launcher's command line for ``proximity ARGS…``."""
    here = os.path.dirname(os.path.abspath(proximity.__file__))
    return [interpreter(), "-I", "-S", "-c", program(os.path.join(here, "launch.py")), *args]


def run(args: argparse.Namespace) -> int:
    rest = list(args.args)
    words = argv(rest[1:] if rest[:1] == ["--"] else rest)
    if args.json:
        print(json.dumps({"command": shlex.join(words), "argv": words}))
    else:
        print(shlex.join(words))
    return 0
