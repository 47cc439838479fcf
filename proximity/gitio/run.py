"""The one git runner: every git subprocess proximity starts, with one time-limit policy.

Every git subprocess runs with the repository-locating ``GIT_*`` variables scrubbed, so a
hook that git started for one worktree can look at its siblings safely, and git run in a
worktree is told which repository it works in (``At``) instead of finding it from that
worktree's files; each has a time limit by the class of work it does (``TIMEOUTS``), and a
git that outlives it is killed with its process group.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from proximity import knobs, owned
from proximity.errors import FatalError, GitTimeout, GitTooOld

MIN_GIT = (2, 38)


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


# Variables that point git at one particular repository, index or object store.
LOCATING_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH", "GIT_INTERNAL_SUPER_PREFIX", "GIT_EXEC_PATH_OVERRIDE",
)


SNAPSHOT_IDENT = {
    "GIT_AUTHOR_NAME": "proximity", "GIT_AUTHOR_EMAIL": "proximity@localhost",
    "GIT_COMMITTER_NAME": "proximity", "GIT_COMMITTER_EMAIL": "proximity@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000",
}


class At(NamedTuple):
    """A worktree of the repository as git must be run in it: the repository named
    explicitly (GIT_DIR: its git dir as the common dir lists it, GIT_WORK_TREE: the
    worktree), never found from the worktree's own `.git` file. That file is the
    worktree's data, as its other files are: pointed at a git dir its agent made, with
    a config of its own (core.fsmonitor), git finding the repository from it would run
    that config's commands in every sibling's hooks."""

    path: str  # the worktree's top directory
    admin: str  # its git dir (the common dir for the main checkout); "" when not known
    cwd: str = ""  # where git runs in it (pathspecs are relative to it); "": its top

    def inside(self, d: str) -> At:
        """The same worktree, git running in ``d`` (a directory in it)."""
        return self._replace(cwd=d)


Where = str | os.PathLike[str] | At  # where git runs: a directory, or a worktree (At)


def placed(where: Where, env: Mapping[str, str] | None) -> tuple[str, Mapping[str, str] | None]:
    """(working directory, environment) of git run ``where``: in a worktree (At), with
    its repository named; a worktree whose git dir is not known is not run in at all
    (FatalError): letting git find one there is what At is for."""
    if not isinstance(where, At):
        return os.fspath(where), env
    if not where.admin:
        raise FatalError(f"{where.path}: the repository does not list this worktree's "
                         "git dir, so git is not run there")
    return where.cwd or where.path, {**(env or {}), "GIT_DIR": where.admin,
                                     "GIT_WORK_TREE": where.path}


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCATING_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


# git reads attributes (``.gitattributes``) from the working tree of the repository it runs
# in: relative to its working directory, whatever the worktree. A merge or diff whose
# answer is a verdict must not: an untracked ``* merge=union`` in any one worktree would
# make git's merge of any pair it runs there clean (the push guard then lets through a
# push that must yield, and the answer is cached for every side), and ``* merge=x``
# would run a driver the repository's config defines (``merge.x.driver``) on two other
# worktrees' files. Such git runs "away": in the repository's common dir (GIT_DIR) with an
# empty directory of this process as its working tree and its working directory, so no
# worktree's files are read; ``$GIT_DIR/info/attributes`` and the user's
# ``core.attributesFile`` (the local user's own choice) still are.
AWAY_PREFIX = "proximity-away-"  # <tmp>/proximity-away-<pid>-<random>: always empty

_AWAY_LOCK = threading.Lock()  # (the service asks from several threads)
_AWAY: list[tuple[int, str]] = []  # (pid, directory), once made


def away_dir() -> str:
    """This process's empty directory (``mkdtemp``: 0700; made on first use, a forked
    child makes its own; removed at exit). Nothing is ever written into it. Those that
    processes of this user left when killed are removed as it is made."""
    with _AWAY_LOCK:
        if not _AWAY or _AWAY[0][0] != os.getpid():
            parent = tempfile.gettempdir()
            _sweep_away(parent)
            d = tempfile.mkdtemp(prefix=f"{AWAY_PREFIX}{os.getpid()}-")
            _AWAY[:] = [(os.getpid(), d)]
            atexit.register(_remove_away, d)
        return _AWAY[0][1]


def _remove_away(d: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(d)


def _sweep_away(parent: str) -> None:
    """Remove the empty directories (away_dir) whose process no longer runs: rmdir only,
    so a directory that holds anything, or that is not a directory, stays."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(AWAY_PREFIX)]
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            if owned.alive(int(name[len(AWAY_PREFIX):].split("-", 1)[0])):
                continue
            path = os.path.join(parent, name)
            if os.lstat(path).st_uid == os.getuid():
                os.rmdir(path)


def away_env(common: str) -> tuple[str, dict[str, str]]:
    """Where (the working directory) and with what environment git runs in the repository
    whose common dir is ``common`` without reading any worktree's files (see AWAY_PREFIX):
    its working tree is an empty directory (GIT_WORK_TREE too, so a ``core.worktree`` in
    the config points it nowhere else), its index one that does not exist (never the main
    checkout's, where a staged ``.gitattributes`` would be read after the tree's)."""
    d = away_dir()
    return d, {"GIT_DIR": common, "GIT_WORK_TREE": d,
               "GIT_INDEX_FILE": os.path.join(d, "index")}


# Time limits (seconds) per class of git call: no git process may hang a hook or command.
TIMEOUTS = {
    "plumbing": 30.0,  # rev-parse, config, update-ref, commit-tree, worktree list…
    "snapshot": 120.0,  # add -A / write-tree over a whole worktree
    "merge": 60.0,  # merge-tree of two snapshots
    "network": 120.0,  # push, fetch, ls-remote
}


CALL_CLASS = {"add": "snapshot", "write-tree": "snapshot", "merge-tree": "merge",
              "push": "network", "fetch": "network", "ls-remote": "network",
              "gc": "snapshot", "repack": "snapshot", "pack-objects": "snapshot",
              "prune-packed": "snapshot", "hash-object": "snapshot"}


CALLS: dict[str, int] = {}  # git subcommand -> calls made by this process (service status)


def time_limit(args: Sequence[str]) -> float:
    """The time limit of a git call; PROXIMITY_GIT_TIMEOUT (seconds) overrides all."""
    value = knobs.git_timeout()
    if value is not None:
        return value
    return TIMEOUTS[CALL_CLASS.get(args[0] if args else "", "plumbing")]


def git(
    args: Sequence[str],
    cwd: Where,
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    ok: tuple[int, ...] = (0,),
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run git; a call past its time limit is killed (with anything it started) and
    raises GitTimeout."""
    cmd = ["git", "-c", "core.quotePath=false", "-c", "advice.addEmbeddedRepo=false", *args]
    cwd, env = placed(cwd, env)
    limit = timeout if timeout is not None else time_limit(args)
    name = args[0] if args else ""
    CALLS[name] = CALLS.get(name, 0) + 1
    try:
        p = subprocess.Popen(cmd, cwd=cwd, env=clean_env(env), stdin=subprocess.PIPE
                             if input is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    except FileNotFoundError as e:
        raise FatalError("git is not installed or not on PATH") from e
    out, err = _communicate(p, input, limit, f"git {' '.join(args[:2])} in {cwd}")
    proc = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    if proc.returncode not in ok:
        msg = proc.stderr.decode(errors="replace").strip() or f"exit {proc.returncode}"
        raise FatalError(f"git {' '.join(args[:2])} failed in {cwd}: {msg}")
    return proc


def _communicate(p: subprocess.Popen[bytes], input: bytes | None, timeout: float | None,
                 what: str, limit: float | None = None) -> tuple[bytes, bytes]:
    """Its output, within ``timeout``; past it the process is killed with everything it
    started, and GitTimeout names ``what`` and its ``limit``."""
    try:
        return p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(p)
        raise GitTimeout(f"{what} took longer than {limit if limit is not None else timeout:g} "
                         "s and was stopped (PROXIMITY_GIT_TIMEOUT sets the limit)") from None
    except BaseException:
        _kill(p)
        raise


def _kill(p: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        p.kill()
    for f in (p.stdin, p.stdout, p.stderr):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
    p.wait()


@lru_cache(maxsize=1)
def git_version() -> tuple[int, ...]:
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, check=True,
                             env=clean_env(), timeout=TIMEOUTS["plumbing"]).stdout.decode()
    except (OSError, subprocess.SubprocessError) as e:
        raise FatalError("git is not installed or not on PATH") from e
    nums = out.split()[2].split(".")
    return tuple(int("".join(c for c in n if c.isdigit()) or 0) for n in nums[:3])


def require_git() -> None:
    have = git_version()
    if have[:2] < MIN_GIT:
        raise GitTooOld(
            f"git {'.'.join(map(str, have))} is too old: proximity needs git "
            f"{'.'.join(map(str, MIN_GIT))} or newer (for `git merge-tree --write-tree`)"
        )


def _b(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


# git's merge (ort) lines up each side against the base with the histogram algorithm, and
# leaves a block that repeats its neighbours where the algorithm put it (the indent
# heuristic that slides it is `git diff`'s alone): the hunks the check judges are those,
# whatever the user's diff settings say. The raw bytes, never a textconv driver's view.
DIFF_ALGORITHM = "--diff-algorithm=histogram"
_AS_MERGED = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-indent-heuristic", "-U0",
              DIFF_ALGORITHM)
DIFF_ARGS = ("diff", *_AS_MERGED, "--no-renames")
# the same, with moves followed as git's merge follows them
MOVED_DIFF_ARGS = ("diff", *_AS_MERGED, "-M")


def untracked(worktree: Where, paths: Sequence[str] = ()) -> list[str]:
    """Untracked, not ignored files (what `add -A` would add), limited to ``paths``."""
    out = git(["ls-files", "-z", "--others", "--exclude-standard", "--", *paths],
              cwd=worktree).stdout
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def new_file_diff(worktree: Where, path: str) -> str:
    """The whole of an untracked file as an addition (`git diff --no-index`)."""
    return git([*DIFF_ARGS, "--no-index", "--", "/dev/null", path], cwd=worktree,
               ok=(0, 1)).stdout.decode("utf-8", "replace")


def commit_of(ref: str, cwd: Where) -> str | None:
    """The commit a name says (git's answer; the name is never read as an option), or
    None."""
    try:
        out = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                  cwd=cwd, ok=(0, 1, 128))
    except (FatalError, OSError):
        return None
    sha = out.stdout.decode("ascii", "replace").strip()
    return sha if out.returncode == 0 and len(sha) in (40, 64) else None


def is_ancestor_cli(anc: str, desc: str, cwd: Where) -> bool:
    """Whether ``anc`` is ``desc`` or one of its ancestors, by git (no libgit2)."""
    if anc == desc:
        return True
    return git(["merge-base", "--is-ancestor", anc, desc], cwd=cwd,
               ok=(0, 1, 128)).returncode == 0


def tree_diff(cwd: Where, old: str | None, new: str, paths: Sequence[str],
              env: Mapping[str, str] | None = None) -> str:
    """`git diff -U0` between two tree-ishes, limited to ``paths`` (Repo.tree_diff's
    answer when libgit2 cannot read the objects)."""
    return git([*DIFF_ARGS, old or EMPTY_TREE, new, "--", *paths], cwd=cwd, env=env,
               ok=(0, 1)).stdout.decode("utf-8", "replace")


_STARTED: weakref.WeakKeyDictionary[subprocess.Popen[bytes], tuple[float, str]] = \
    weakref.WeakKeyDictionary()  # a started git -> (its time limit, what it runs)


def git_start(args: Sequence[str], cwd: Where, env: Mapping[str, str] | None = None
              ) -> subprocess.Popen[bytes]:
    """Start a git command without waiting for it (see git_finish, which waits for it
    within its time limit as git() does, and kills it with anything it started past it).
    ``env``: added to the cleaned environment (a repository's object store, say)."""
    name = args[0] if args else ""
    CALLS[name] = CALLS.get(name, 0) + 1
    limit = time_limit(args)
    cwd, env = placed(cwd, env)
    try:
        p = subprocess.Popen(["git", "-c", "core.quotePath=false", *args], cwd=cwd,
                             env=clean_env(env), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    except OSError as e:
        raise FatalError(f"cannot run git: {e}") from e
    _STARTED[p] = (limit, f"git {' '.join(args[:2])} in {cwd}")
    return p


def git_finish(proc: subprocess.Popen[bytes], ok: tuple[int, ...] = (0, 1)) -> bytes | None:
    """Its stdout, or None when it failed; GitTimeout (the process stopped) when it runs
    past its time limit once waited for."""
    # The limit counts from here, not from git_start: the time in between is the caller's.
    # A git may have finished in it, or be waiting for its output to be read (more than a
    # pipe holds), and only its reader is late.
    limit, what = _STARTED.get(proc, (None, "git"))
    data, _ = _communicate(proc, None, limit, what)
    return data if proc.returncode in ok else None


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Stop and wait for a git process started by git_start, unless it was waited for."""
    if proc.returncode is None:
        _kill(proc)


def git_many(jobs: Sequence[tuple[Sequence[str], Where]], ok: tuple[int, ...] = (0, 1),
             env: Mapping[str, str] | None = None) -> list[bytes | None]:
    """Run several git commands at once (processes, not threads): stdout of each, or None
    when it failed. A check's facts come from a handful of small, independent git calls.
    One past its time limit stops them all (GitTimeout). ``env``: as git_start's. A job
    in a worktree whose git dir is not known (an At without one) is not run: None."""
    procs: list[subprocess.Popen[bytes] | None] = []
    try:
        for args, cwd in jobs:
            procs.append(None if isinstance(cwd, At) and not cwd.admin
                         else git_start(args, cwd, env))
        return [None if p is None else git_finish(p, ok) for p in procs]
    finally:
        for p in procs:
            if p is not None:
                reap(p)


def blob_args(commit: str | None, path: str) -> list[str]:
    """`git cat-file blob COMMIT:PATH` (fails, exit 128, when the path is not there)."""
    return ["cat-file", "blob", f"{commit or EMPTY_TREE}:{path}"]


def live_diff_args(base: str | None, paths: Sequence[str] = ()) -> list[str]:
    return [*DIFF_ARGS, base or EMPTY_TREE, *(["--", *paths] if paths else [])]


def tree_diff_args(old: str | None, new: str) -> list[str]:
    return [*DIFF_ARGS, old or EMPTY_TREE, new]


def file_diff_args(old: str, new: str) -> list[str]:
    """`git diff --no-index -U0` of two files (either may be /dev/null)."""
    return [*DIFF_ARGS, "--no-index", "--", old, new]


def merge_file_args(mine: str, base: str, theirs: str) -> list[str]:
    """`git merge-file -p` of three files: the merged text on stdout, exit 0 when clean
    (the number of conflicts otherwise)."""
    return ["merge-file", "-p", "--", mine, base, theirs]
