"""The repository as proximity opens it: from any worktree, its git dirs, every worktree
and its HEAD, and a memo of results keyed by object ids. pygit2 (libgit2) in process; git's
own CLI where git's behaviour is the truth (through ``run``)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from proximity import layout, owned
from proximity.errors import FatalError, NoSuchDirectory, NotARepository
from proximity.gitfiles import (
    _read,
    agent_id,
    checkout_of,
    populating,
)
from proximity.gitio import listing, loose
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.run import At, Where, away_env, git
from proximity.gitio.store import ObjectStore, refused_write

T = TypeVar("T")

MEMO_ENTRIES = 4096  # results a Repo keeps (see Repo._remember)


LARGE_STUB = "proximity: large untracked file, not hashed: "


if TYPE_CHECKING:
    import pygit2


def _pygit2() -> Any:
    """The pygit2 module, imported on first use: a snapshot hook never loads libgit2."""
    import pygit2

    return pygit2


# a scratch file's name (Repo._scratch), or the lock git takes beside it: its writer's pid
SCRATCH = re.compile(r"^\..+\.([0-9]+)\.[0-9a-f]{8}(?:\.lock)?$")
STALE_SCRATCH = 300.0  # seconds: no writer keeps a scratch file this long untouched


def stale_scratch(entries: Iterable[tuple[str, float]], now: float,
                  alive: Callable[[int], bool], age: float = STALE_SCRATCH) -> list[str]:
    """The names among ``entries`` (name, modification time) that are scratch files left
    by a writer that is gone: named so, older than ``age`` and their pid not ``alive``
    (age first: a pid soon reused by another process, or a writer still at work, keeps
    its file)."""
    out = []
    for name, mtime in entries:
        m = SCRATCH.match(name)
        # (pid 0 is no writer's: never a reason to remove anything)
        if m and now - mtime > age and int(m.group(1)) > 0 and not alive(int(m.group(1))):
            out.append(name)
    return out


def sweep_scratch(ecm_dir: str, now: float | None = None) -> list[str]:
    """Remove what a killed writer left in the ledger's index directory (scratch indexes
    and their locks, see stale_scratch); the names removed. Never follows a link, never
    fails: what cannot be read or removed stays."""
    d = layout.index_dir(ecm_dir)
    entries = []
    try:
        with os.scandir(d) as it:
            for e in it:
                try:
                    if e.is_file(follow_symlinks=False) or e.is_symlink():
                        entries.append((e.name, e.stat(follow_symlinks=False).st_mtime))
                except OSError:
                    continue
    except OSError:
        return []
    removed = []
    for name in stale_scratch(entries, time.time() if now is None else now, owned.alive):
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            continue
        removed.append(name)
    return removed


def _cfg_bool(cfg: pygit2.Config, key: str, default: bool) -> bool:
    try:
        return bool(cfg.get_bool(key)) if key in cfg else default
    except (ValueError, KeyError, _pygit2().GitError):
        return not default  # unreadable: the answer that declines the fast path


def _one_path(start: str, arg: str) -> str:
    """One path `git rev-parse ARG` prints, whatever it holds (newlines included)."""
    out = git(["rev-parse", arg], cwd=start).stdout.decode("utf-8", "surrogateescape")
    return out[:-1] if out.endswith("\n") else out


SCRATCH_SPARE = 1 << 20  # bytes a directory must have free beyond what a scratch file needs


def _takes(d: str, need: int) -> bool:
    """Whether directory ``d`` (made if missing) can take a new file of ``need`` bytes:
    writable, with room to spare (git writes the index anew beside it, and a full disk
    fails that write half way)."""
    try:
        owned.private_dir(os.path.dirname(d))  # the ledger's own directory: ours alone
        os.makedirs(d, exist_ok=True)
        st = os.statvfs(d)
    except OSError:
        return False
    return os.access(d, os.W_OK) and st.f_bavail * st.f_frsize >= 2 * need + SCRATCH_SPARE


def copy_index(src: str, dst: str) -> None:
    """Copy an index file *with its timestamps*: git decides which entries are "racily
    clean" (changed within the same second, same size) by comparing them with the index
    file's mtime; a fresh mtime on the copy would make it trust stale stat data and miss
    an edit."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while chunk := fi.read(1 << 20):
            fo.write(chunk)
        st = os.fstat(fi.fileno())
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class RepoCore:
    """The repository: discovery, worktrees and heads, results remembered by object id."""

    large_bytes = 2_000_000  # untracked files over this are stubbed, not hashed

    def __init__(self, start: str | os.PathLike[str], fast: bool = False) -> None:
        start = os.path.abspath(start)
        if not os.path.isdir(start):
            raise NoSuchDirectory(f"{start}: no such directory")
        self._pg: pygit2.Repository | None = None
        self._pg_alts: set[str] = set()  # object stores added to _pg's reads
        self._pgw: pygit2.Repository | None = None  # writing into the store (_writer)
        self._pgw_target = ""
        self._store: ObjectStore | None = None
        # worktree id -> the untracked groups its last snapshot summarized (bulk.py)
        self.summaries: dict[str, dict[str, int]] = {}
        self.memo: dict[tuple[Any, ...], Any] = {}  # results keyed by object ids
        if fast and self._discover(start):
            return
        proc = git(["rev-parse", "--is-bare-repository", "--absolute-git-dir",
                    "--git-common-dir", "--show-toplevel"], cwd=start, ok=(0, 128))
        out = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
        if proc.returncode == 0 and len(out) > 5:
            # a path holding a newline: rev-parse separates its answers by newlines, so
            # ask for each path alone, where only the one trailing newline is git's
            out = [out[0], *(_one_path(start, arg) for arg in (
                "--absolute-git-dir", "--git-common-dir", "--show-toplevel"))]
        if proc.returncode != 0 and len(out) < 3:
            msg = proc.stderr.decode(errors="replace").strip()
            if "not a git repository" in msg:
                raise NotARepository(f"{start} is not inside a git repository")
            raise NotARepository(f"{start}: {msg}")
        if out[0] == "true" or proc.returncode != 0 or len(out) < 4 or not out[3]:
            raise NotARepository(
                f"{out[1] if len(out) > 1 else start} is a bare repository (or the inside of "
                "a .git directory): proximity watches worktrees; run it in a checkout")
        self.gitdir = os.path.realpath(out[1])
        common = out[2]
        self.common = os.path.realpath(common if os.path.isabs(common)
                                       else os.path.join(start, common))
        self.workdir = os.path.realpath(out[3])

    def _discover(self, start: str) -> bool:
        """Find the repository from files alone (no git process), for the hook fast path.

        Only the plain layouts: a `.git` directory, or a `.git` file naming a linked
        worktree's git dir. Anything else (a bare repository, core.worktree, a missing
        file) returns False and `git rev-parse` decides.
        """
        found = checkout_of(start)
        if found is None:
            return False
        d, gitdir = found
        try:
            common = gitdir
            if os.path.isfile(os.path.join(gitdir, "commondir")):
                common = os.path.join(gitdir, _read(os.path.join(gitdir, "commondir")).strip())
            config = _read(os.path.join(common, "config"))
        except OSError:
            return False
        if "worktree =" in config or "worktree=" in config or "bare = true" in config:
            return False
        self.gitdir = os.path.realpath(gitdir)
        self.common = os.path.realpath(common)
        self.workdir = os.path.realpath(d)
        return True

    def warm(self) -> bool:
        """Whether libgit2 is open for this repository already (the resident service, a
        scan): then small reads and writes go through it instead of a `git` process; a
        snapshot hook in process keeps to git plumbing and never loads libgit2."""
        return self._pg is not None

    @property
    def pg(self) -> pygit2.Repository:
        """The pygit2 repository, opened on first use (a snapshot hook never needs it)."""
        if self._pg is None:
            self.check_loose()
            self._pg = _pygit2().Repository(self.gitdir)
            self._pg_alts = set()
            self._see()
        assert self._pg is not None
        return self._pg

    def check_loose(self, distrust: bool = False) -> int:
        """Raise DamagedObject when a loose file a commit reaches does not inflate whole
        (loose.check: libgit2 reads nothing until it is mended); else how many damaged
        ones no commit reaches. ``distrust``: audit every loose file again."""
        return loose.check(self.common, self.here, self.memo, distrust)

    # -- the objects of live work (see store.py) ----------------------------------------
    @property
    def store(self) -> ObjectStore:
        """Where this process writes objects for live work (never ``.git/objects``)."""
        if self._store is None:
            self._store = ObjectStore(self.common, self.ecm_dir)
        return self._store

    def objects_env(self, need: int = 0, choose: bool = False) -> dict[str, str]:
        """The environment of a git process that reads or writes live objects (snapshot
        trees, merges of them): writes go to the object store, reads see it too.
        ``choose``: pick where writes go anew, for about ``need`` bytes."""
        env = self.store.env(need, choose)
        self._see()
        return env

    def _git(self, args: Sequence[str], cwd: Where | None = None,
             env: Mapping[str, str] | None = None, **kw: Any
             ) -> subprocess.CompletedProcess[bytes]:
        """``git`` in this worktree (or ``cwd``: a worktree's At) with the object store's
        environment."""
        return git(args, cwd=cwd or self.here, env={**self.objects_env(), **(env or {})},
                   **kw)

    @property
    def here(self) -> At:
        """Where git runs in the worktree this repository was opened from, its git dir
        named (run.At)."""
        return At(self.workdir, self.gitdir)

    def at(self, path: str) -> At:
        """Where git runs in the worktree whose top is ``path``, its repository named:
        the git dir the common dir lists for it (listing.admin_dir), never the one its
        `.git` file names. One the repository does not list has none: git is not run
        there (run.placed)."""
        real = os.path.realpath(path)
        if real == self.workdir:
            return self.here
        for wt in self.worktrees_fast():
            if wt.path == real and wt.admin:
                return wt.at
        return At(real, "")

    def _git_away(self, args: Sequence[str], env: Mapping[str, str] | None = None,
                  **kw: Any) -> subprocess.CompletedProcess[bytes]:
        """``git`` in this repository with the object store's environment, run away from
        every worktree (run.away_env): for a merge whose answer is a verdict, which must
        not depend on attributes a worktree's files set (nor run a driver they name).
        Only object ids are meaningful to it: names like HEAD are the common dir's."""
        try:
            where, away = away_env(self.common)
        except OSError as e:  # (no temporary directory to make it in: git cannot answer)
            raise FatalError(f"no private directory to run git in: {e}") from e
        return git(args, cwd=where, env={**self.objects_env(), **(env or {}), **away}, **kw)

    def _see(self) -> None:
        """Let libgit2 read every object store this process wrote to."""
        if self._pg is None:
            return
        for d in self.store.read_dirs():
            if d not in self._pg_alts:
                self._pg.odb.add_disk_alternate(d)
                self._pg_alts.add(d)

    def _writer(self) -> Any:
        """A libgit2 handle whose writes go to the object store's current target (and
        that reads everything ``pg`` reads)."""
        target = self.store.current()
        if self._pgw is None or self._pgw_target != target:
            pygit2 = _pygit2()
            w = pygit2.Repository(self.gitdir)
            odb = pygit2.Odb(target)  # (its info/alternates: the store, the repository's)
            for d in self.store.read_dirs():
                if d != target:
                    odb.add_disk_alternate(d)
            w.set_odb(odb)
            self._pgw, self._pgw_target = w, target
        self._see()
        return self._pgw

    def _write_live(self, fn: Callable[[], T], need: int = 0) -> T:
        """``fn()`` writing objects of about ``need`` bytes where they go now (the store,
        or the scratch store while the store has no room); when the write was refused
        all the same (a full or read-only disk), once more in the scratch store: what a
        snapshot cannot write where it should it writes elsewhere, never judging less
        for want of a write."""
        self.store.target(need)
        try:
            return fn()
        except Exception as e:
            if not refused_write(str(e)) or not self.store.elsewhere(str(e)):
                raise
        self._see()
        return fn()

    def close(self) -> None:
        """Remove what this process alone used (the scratch object store, if any)."""
        if self._store is not None:
            self._store.close()
        self._pgw = None

    @property
    def ecm_dir(self) -> str:
        return layout.ecm_dir(self.common)

    # -- airspace -----------------------------------------------------------------------
    def worktrees(self) -> list[WorktreeInfo]:
        return listing.listed(self.common)

    def worktrees_from_files(self) -> list[WorktreeInfo] | None:
        """What `worktrees()` lists, read from the common dir's files (listing.from_files)."""
        return listing.from_files(self.common)

    def worktrees_fast(self) -> list[WorktreeInfo]:
        """Every worktree, from the common dir's files when they say (no `git worktree
        list`), else from git."""
        listed = self.worktrees_from_files()
        return self.worktrees() if listed is None else listed

    def no_remote_refs(self) -> bool:
        """Whether the files say there is no remote-tracking ref (listing.no_remote_refs)."""
        return listing.no_remote_refs(self.common)

    def trunk_of(self, remote: str) -> str | None:
        """The branch a remote's HEAD names (listing.trunk_of)."""
        return listing.trunk_of(self.pg, remote)

    def trunk_tips(self) -> list[str]:
        """The commits the remotes' trunks are at (listing.trunk_tips): landed work."""
        return listing.trunk_tips(self.pg, self.common)

    def current(self) -> WorktreeInfo:
        """This worktree, read from its own git dir (no `git worktree list`)."""
        wid = agent_id(self.gitdir, self.common)
        head, branch = self.read_head(self.gitdir)
        return WorktreeInfo(wid, self.workdir, self.gitdir, head, branch,
                            populating=populating(self.gitdir, self.common))

    def read_head(self, admin: str) -> tuple[str | None, str | None]:
        """(commit, branch) of a worktree's HEAD; files first, git as the fallback."""
        return listing.read_head(self.common, self.workdir, admin)


    def _scratch(self, stem: str, need: int = 0) -> str:
        """A fresh path for a private temporary file (an index, a patch) of about ``need``
        bytes: in the ledger's index directory, made if missing, else (read-only, or too
        full to take it) in the system's temporary directory, so a ledger that cannot be
        written never stops a snapshot being taken."""
        d = layout.index_dir(self.ecm_dir)
        if not _takes(d, need):
            import tempfile

            d = tempfile.gettempdir()
        return os.path.join(d, f".{stem}.{os.getpid()}.{os.urandom(4).hex()}")  # (SCRATCH)

    def _remember(self, key: tuple[Any, ...], ids: tuple[str, ...], value: Any) -> None:
        """Keep a result computed from object ids alone (never for names like HEAD)."""
        if all(len(i) in (40, 64) and all(c in "0123456789abcdef" for c in i) for i in ids):
            if len(self.memo) > MEMO_ENTRIES:
                self.memo.clear()
            self.memo[key] = value

    def pin(self, ref: str, commit: str) -> None:
        """Keep a snapshot's objects through the object store's gc: a ref of the store,
        never of the repository (whose `git gc` and fsck must never meet objects it does
        not hold). A snapshot written to a scratch store goes with this process: no pin."""
        if self.store.current() != self.store.objects:
            return
        # (failing, the next recorded event pins again; within the gc's grace nothing goes)
        with contextlib.suppress(OSError, ValueError):
            self.store.pin(ref, commit)

    def _remembered(self, kind: str, x: str, y: str) -> Any:
        """A remembered result for the unordered pair (x, y) (None: not remembered)."""
        got = self.memo.get((kind, x, y))
        return got if got is not None else self.memo.get((kind, y, x))
