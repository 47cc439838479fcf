"""`proximity launcher ARGS…`: the quickest command line that runs `proximity ARGS…` with
this install, for an agent harness's hook command (docs/agents.md): this interpreter,
isolated and without ``site`` (``-I -S``), running the package's launch.py. `proximity
check --hook NAME` through the console script answers the same; this line skips ``site``
and the script's imports before the service is asked (benchmarks/RESULTS.md has the
difference).

The file is run by a one-line ``-c`` program rather than named as the script: Python exits
2 when it cannot open a script, and Claude Code and Gemini CLI read a hook's exit 2 as
"block this call", so a line left behind by a moved or deleted environment would stop
every edit. Here it fails with exit 1 and the file's name on stderr (the interpreter
gone: the shell's exit 127): a hook error the person sees, the edit let through. For the
same reason no line is printed for a command line the parser refuses."""

from __future__ import annotations

import argparse
import json
import os
import shlex

import proximity
from proximity.commands.install import interpreter
from proximity.errors import UsageError


def program(path: str) -> str:
    """The ``-c`` program that runs the launch.py at ``path`` as the main module (its
    path written as a JSON string, which Python reads alike, so the shell's single quotes
    hold it whole). launch.py always leaves by exiting; a file that returns (emptied or
    cut short by an interrupted upgrade) ends in exit 1 and says so, never a silent 0
    that would let every edit through unchecked."""
    return (f"__file__=f={json.dumps(path)};"
            'exec(compile(open(f,"rb").read(),f,"exec"));'
            'raise SystemExit("proximity: "+f+" ended without an answer: reinstall proximity")')


def argv(args: list[str]) -> list[str]:
    """The launcher's command line for ``proximity ARGS…``."""
    here = os.path.dirname(os.path.abspath(proximity.__file__))
    return [interpreter(), "-I", "-S", "-c", program(os.path.join(here, "launch.py")), *args]


def run(args: argparse.Namespace) -> int:
    rest = list(args.args)
    rest = rest[1:] if rest[:1] == ["--"] else rest
    refused = args.refusal(rest) if rest else None  # (none: the line, ARGS added by hand)
    if refused:
        # a line that exits 2 on every call is one a harness reads as "block every edit"
        raise UsageError(f"`proximity {shlex.join(rest)}` is not a command line proximity "
                         f"runs ({refused}): no launcher line printed")
    words = argv(rest)
    if args.json:
        print(json.dumps({"command": shlex.join(words), "argv": words}))
    else:
        print(shlex.join(words))
    return 0
