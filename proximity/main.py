"""Command line: parse, dispatch, and map failures to exit codes.

Exit codes: 0 ok; 1 a known failure (or a push that must yield); 2 bad usage or config;
3 an internal error (a crash log is written under $XDG_STATE_HOME/proximity); 4 the ledger
cannot be used (any database error: busy, read-only, full, I/O, corrupt, each said as what it
is); 130 Ctrl-C. Hook stages never fail: they warn and exit 0, except the deliberate block.
"""

from __future__ import annotations

import os
import sys

from proximity import __version__, checkargs, owned
from proximity.errors import FatalError, UsageError
from proximity.hooks.inputs import HOOK_NAMES, HookCall, done_exit, parse_hook

TYPE_CHECKING = False  # (not typing's: a hook never imports typing)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from proximity.checkargs import CheckArgs
    from proximity.thincheck import Fallback


def _add_common(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("-C", "--repo", default=None, help="run as if started in this directory")
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output")


def _count(value: str) -> int:
    """A count of at least 1 (argparse's type: a bad one is exit 2, said why)."""
    import argparse

    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= n <= 1_000_000_000:
        raise argparse.ArgumentTypeError(f"{value} is not a count (want 1 to 1000000000)")
    return n


def _seconds(value: str) -> float:
    """A positive, finite number of seconds."""
    import argparse
    import math

    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(s) or s <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of seconds")
    return s


def _kind(value: str) -> str:
    """An event kind: a short word (letters, digits, '-', '_'), never empty."""
    import argparse
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an event kind (a word of letters, digits, '-' or '_')")
    return value


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="proximity", description="TCAS for git worktrees: collision avoidance for "
        "parallel coding agents")
    parser.add_argument("--version", action="version", version=f"proximity {__version__}")
    parser.add_argument("-C", dest="chdir", action="append", default=None, metavar="DIR",
                        help="run as if started in DIR (before the command, as git takes it; "
                        "several compose, each relative to the one before)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("scan", help="pairwise collision risk of every worktree")
    _add_common(p)
    p.add_argument("--intent", nargs="*", default=None, metavar="PATH[:LINES]",
                   help="what if this worktree touched these paths? (not recorded)")
    p.add_argument("--focus", default=None, help="only pairs involving this agent id")

    p = sub.add_parser("status", help="table of agents and pairs")
    _add_common(p)

    p = sub.add_parser("demo", help="build a throwaway repository with three worktrees on "
                       "collision courses and scan it")
    p.add_argument("--dir", default=None, help="where to build it (default: a temp dir)")
    p.add_argument("--json", action="store_true", help="print the scan as JSON")
    p.add_argument("--keep", action="store_true", help="keep the demo repository")
    p.add_argument("--swarm", action="store_true",
                   help="four agents edit it step by step through the hooks and check, "
                        "a person through proximity lsp; "
                        "writes the recording (view.html with its timeline) and keeps it")

    p = sub.add_parser("snapshot", help="record this worktree's working state in the ledger")
    _add_common(p)
    p.add_argument("--kind", default="manual", type=_kind,
                   help="the event kind recorded (default: manual)")

    p = sub.add_parser("ledger", help="recent ledger events")
    _add_common(p)
    p.add_argument("-n", type=_count, default=20, help="how many events (default: 20)")

    p = sub.add_parser("doctor", help="check git, ledger, hooks and worktrees")
    _add_common(p)

    p = sub.add_parser("install", help="install plain git hooks (without pre-commit)")
    _add_common(p, json_flag=False)
    p.add_argument("--force", action="store_true", help="install even if core.hooksPath is set")
    p.add_argument("--lefthook", action="store_true",
                   help="add proximity's block to lefthook.yml instead (printed when the "
                   "file already configures those hooks)")

    p = sub.add_parser("uninstall", help="remove proximity's plain git hooks")
    _add_common(p, json_flag=False)

    p = sub.add_parser("hook", help="entry point for git hooks")
    p.add_argument("stage", choices=HOOK_NAMES)
    p.add_argument("args", nargs="*")

    p = sub.add_parser("intend", help="declare the files (and lines) this worktree will touch")
    _add_common(p)
    p.add_argument("paths", nargs="*", metavar="PATH[:LINES]")
    p.add_argument("--clear", action="store_true", help="forget earlier intents first")

    p = sub.add_parser("check", help="may this worktree edit these lines now? (allow, ask "
                       "or deny, naming the sibling and showing its hunk)")
    _add_common(p)
    p.add_argument("paths", nargs="*", metavar="PATH[:START-END]")
    p.add_argument("--deny-on", choices=checkargs.DENY_ON, default=None,
                   help="deny on a certain conflict (ra, default), on any traffic (ta), or "
                   "never (only ask); default from git config proximity.checkPolicy")
    p.add_argument("--merge", default=None, metavar="REF",
                   help="check merging REF into this worktree before you merge: what the "
                   "merge would change here, checked like edits (git merge-tree: it writes the "
                   "merge's objects to the object store, never files, the index or refs)")
    p.add_argument("--hook", default=None, metavar="HARNESS", choices=checkargs.hook_names(),
                   help="read an agent harness's tool event on stdin and answer in its "
                   "format: " + "; ".join(f"{k} ({v})" for k, v in checkargs.HARNESSES.items())
                   + f"; NAME{checkargs.POST} reads its after-edit event (" + ", ".join(
                       checkargs.AFTER.values()) + ") and records the worktree")

    launcher_help = ("print the quickest command line running `proximity ARGS…` with this "
                     "install (for an agent harness's hook command)")
    p = sub.add_parser("launcher", help=launcher_help, description=launcher_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="what `proximity` would take, e.g. check --hook claude")
    p.set_defaults(refusal=refusal)  # (the launcher asks this parser; it cannot import it)

    mcp_help = ("Model Context Protocol server on stdio (tools: check, check_merge, status, "
                "intend, inbox)")
    p = sub.add_parser("mcp", help=mcp_help, description=mcp_help)
    p.add_argument("-C", "--repo", default=None, help="run as if started in this directory")

    lsp_help = ("language server on stdio for any editor: siblings' lines, conflicts as you "
                "type, hover, code actions (docs/editors.md)")
    p = sub.add_parser("lsp", help=lsp_help, description=lsp_help)
    p.add_argument("--stdio", action="store_true",
                   help="talk over stdin/stdout (the only transport; accepted for editors "
                   "that pass it)")

    p = sub.add_parser("inbox", help="messages for this worktree")
    _add_common(p)
    p.add_argument("--all", action="store_true", help="include delivered messages")

    p = sub.add_parser("watch", help="live control pane")
    _add_common(p, json_flag=False)
    p.add_argument("--interval", type=_seconds, default=2.0,
                   help="seconds between redraws (default: 2; at once when the ledger changes)")
    p.add_argument("--once", action="store_true", help="render one frame and exit")

    p = sub.add_parser("view", help="self-contained HTML view of the airspace")
    _add_common(p)
    p.add_argument("--out", default=None, help="the HTML file (default: view.html in .git/ecm)")
    p.add_argument("--open", action="store_true", help="open it in a browser")
    p.add_argument("--no-timeline", action="store_true",
                   help="draw only the present moment, not the ledger's recorded history")

    p = sub.add_parser("gc", help="compact the ledger, retire removed worktrees")
    _add_common(p)

    p = sub.add_parser("service", help="the resident airspace service: start, stop, status")
    _add_common(p)
    p.add_argument("action", choices=("start", "stop", "status"), nargs="?", default="status")

    p = sub.add_parser("sync", help="share snapshots with other machines through a remote")
    _add_common(p)
    p.add_argument("remote", nargs="?", default=None,
                   help="default: the upstream's remote, else origin, else the only remote")
    p.add_argument("--prune", action="store_true",
                   help="delete this machine's refs of retired worktrees on the remote")
    p.add_argument("--dry-run", action="store_true",
                   help="list what would leave this machine (refs, paths, sizes); send nothing")
    p.add_argument("--watch", action="store_true", help="sync again every --interval seconds")
    p.add_argument("--interval", type=_seconds, default=30.0, help="seconds (default: 30)")
    return parser


def crash_dir() -> str:
    """A private directory for crash logs: $XDG_STATE_HOME/proximity (0700), never a
    shared fixed path in /tmp."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "proximity")


def _crash_log(exc: BaseException) -> str:
    import time
    import traceback

    d = crash_dir()
    try:
        try:
            owned.private_dir(d)
        except owned.NotOurs:
            return f"(no crash log: {d} is not a directory of this user)"
        path = os.path.join(d, f"crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"proximity {__version__}\nargv: {sys.argv}\n\n")
            f.write("".join(traceback.format_exception(exc)))
        old = sorted(n for n in os.listdir(d) if n.startswith("crash-"))
        for name in old[:-20]:  # keep the newest twenty
            os.unlink(os.path.join(d, name))
    except OSError:
        return "(could not write a crash log)"
    return path


def _started_in(args: argparse.Namespace) -> None:
    """``proximity -C DIR CMD``: as ``CMD -C DIR`` (a command's own ``-C`` is then taken
    from DIR, as git's are); a command without one runs in DIR."""
    dirs = getattr(args, "chdir", None)
    if not dirs:
        return
    where = os.path.join(*dirs)
    if hasattr(args, "repo"):
        args.repo = os.path.join(where, args.repo) if args.repo else where
        return
    try:
        os.chdir(where)
    except OSError as e:
        raise UsageError(f"-C {where}: {e.strerror}") from None


def refusal(args: Sequence[str]) -> str | None:
    """Why ``proximity ARGS…`` would be refused as bad usage, in the parser's words (None:
    it parses; help and a version print and exit 0)."""
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            build_parser().parse_args(list(args))
    except SystemExit as e:
        if not e.code:
            return None
        last = (err.getvalue().strip().splitlines() or ["bad usage"])[-1]
        return last.partition(": error: ")[2] or last
    return None


def _thin_client() -> tuple[Callable[[HookCall], int | HookCall],
                            Callable[[CheckArgs], int | Fallback]] | None:
    """How the resident service's standard-library client (thin.py) asks a hook and a
    check before anything heavy is imported; None when that path is damaged (the
    in-process hook and check still answer)."""
    try:
        # lazy: the service's client (~20 ms) is for `check` and the hooks alone
        from proximity import thin
    except Exception:
        return None
    return thin.ask_hook, thin.check


def _in_process_hook(call: HookCall) -> int:
    # lazy: the hook's own command (~260 ms to import); the table besides: ~170 ms more
    from proximity.commands import hook

    return done_exit(hook.run(call))


def _in_process_check(check: CheckArgs, told: Fallback | None) -> int:
    # lazy: the pre-edit answerer alone (~350 ms to import); the table besides: ~230 ms more
    from proximity.commands import check as check_command

    return check_command.check(check, told.stdin if told else None,
                               told.size if told else None)


def _command(args: argparse.Namespace) -> int:
    """A command as argparse read it: `check` and `hook` after a global option (``proximity
    -C DIR check``: no fast path asked the service), any other by the table."""
    _started_in(args)
    if args.command == "hook":
        return _in_process_hook(HookCall(args.stage, tuple(args.args)))
    if args.command == "check":
        return _in_process_check(checkargs.CheckArgs(args.paths, args.json, args.deny_on,
                                                      args.repo, args.hook, args.merge), None)
    # lazy: `check`, the hooks and `--help` load no other command (the table: ~800 ms)
    from proximity.commands.table import COMMANDS

    return COMMANDS[args.command](args)


def full_site() -> None:
    """Load ``site`` now when Python started without it (``-S``: the hook script's boot,
    launch.py), as a plain start would have (the venv's site-packages and .pth files): the
    in-process paths import pygit2 and the parsers from there; the service's thin client
    needed none of it."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def main(argv: Sequence[str] | None = None, handed: HookCall | None = None,
         told: Fallback | None = None) -> int:
    """``handed``: the hook script's boot asked the service already (thin.run_hook);
    ``told``: launch.py asked it of this check already (thincheck.check)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    call = parse_hook(argv[1:]) if argv[:1] == ["hook"] else None
    check = checkargs.parse(argv[1:]) if argv[:1] == ["check"] else None
    ask = (call is not None and handed is None) or (check is not None and told is None)
    client = _thin_client() if ask else None
    if call is not None:
        got = handed if handed is not None else client[0](call) if client else call
        if isinstance(got, int):
            return done_exit(got)
        call = got
    elif check is not None and told is None:
        asked = client[1](check) if client else None
        if isinstance(asked, int):
            return asked
        told = asked
    full_site()
    args = None if call is not None or check is not None else build_parser().parse_args(argv)
    try:
        if call is not None:
            return _in_process_hook(call)
        if check is not None:
            return _in_process_check(check, told)
        assert args is not None
        return _command(args)
    except FatalError as e:
        print(f"proximity: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the one place a crash is turned into a report
        if type(e).__module__ == "sqlite3":  # any database error: the ledger, exit 4
            # lazy: only a database error; the ledger that raised it is loaded by then
            from proximity.ledger import diagnose

            err = diagnose(e)
            print(f"proximity: error: {err}", file=sys.stderr)
            return err.exit_code
        log = _crash_log(e)
        print(f"proximity: internal error: {type(e).__name__}: {e}\n"
              f"  please report it with the log at {log}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    raise SystemExit(main())
