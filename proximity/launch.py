"""``python -I -S …/proximity/launch.py check ARGS…``: the pre-edit check's quickest start,
for an agent harness's hook command (``proximity launcher`` prints the line for this
install, which runs this file through a one-line ``-c`` program: see commands/launcher.py).
Any arguments the command line takes work the same (``launch.py scan``).

The console script (``proximity check --hook NAME``) pays for Python's ``site`` and for the
script's own imports before it asks the resident service anything: a few milliseconds of
every edit an agent makes. Started as a file, isolated (``-I``: no PYTHON* variables, no
user site, no worktree directory on the path) and without ``site`` (``-S``), this file
puts the directory its package lives in on the path and asks the service through the
check's thin client (thincheck.py: the standard library and a few modules of ours); the
command line and ``site`` are loaded only when the check goes on in process
(main.full_site), handed the event read already.
"""

from __future__ import annotations

import os
import sys


def package_parent(here: str) -> str:
    """The directory the package at ``here`` lives in (site-packages, a source checkout)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(here)))


if __name__ == "__main__":
    mine = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.realpath(mine):
        del sys.path[0]  # (started without -I: the package's modules are no top level)
    # after the standard library, where site would put it: none of ours shadows it
    sys.path.append(package_parent(__file__))
    # a check asks the service with the check's own thin client alone (no module of the
    # hooks or the command line loaded); anything else, or no answer: the command line
    args = sys.argv[1:]
    try:
        from proximity import checkargs, thincheck

        check = checkargs.parse(args[1:]) if args[:1] == ["check"] else None
        got = thincheck.check(check) if check is not None else None
    except Exception:  # a damaged thin path: the command line still answers
        got = None
    if isinstance(got, int):
        # answered and printed: leave without the interpreter's teardown of every module
        # loaded (1-2 ms of each check; nothing on this path registers work for the exit)
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:  # (None: started with that descriptor closed)
                    stream.flush()
            except (OSError, ValueError):
                pass  # (the harness closed its end: nobody reads the answer)
        os._exit(got)
    from proximity.main import main

    raise SystemExit(main(args, told=got))
