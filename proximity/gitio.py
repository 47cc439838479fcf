"""The only module that talks to git: pygit2 in process, the git CLI where git's own
behaviour is the truth (ignore rules for snapshots, ``merge-tree`` for exact conflicts).

Every git subprocess runs with the repository-locating ``GIT_*`` variables scrubbed, so a
hook that git started for one worktree can look at its siblings safely.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from proximity.errors import FatalError, GitTimeout, GitTooOld, NotARepository

# the file-only helpers live in gitfiles.py (light enough for the hooks' thin client)
from proximity.gitfiles import MAIN_ID as MAIN_ID
from proximity.gitfiles import _read as _read
from proximity.gitfiles import agent_id as agent_id
from proximity.gitfiles import checkout_of as checkout_of
from proximity.gitfiles import common_dir as common_dir
from proximity.gitfiles import find_git_dir as find_git_dir
from proximity.gitfiles import operation_in_progress as operation_in_progress
from proximity.gitfiles import safe_name as safe_name
from proximity.gitfiles import steps_left as steps_left
from proximity.gitfiles import worktree_id as worktree_id

if TYPE_CHECKING:
    from proximity import model

MIN_GIT = (2, 38)
_TREE = 0o040000  # a tree entry's mode
SOLE_BASE_WALK = 500  # commits walked per side to tell that a merge base is the only one
MEMO_ENTRIES = 4096  # results a Repo keeps (see Repo._remember)
OVERLAY_MAX = 64  # paths a snapshot builds in process (Repo.snapshot_overlay); more: git
LARGE_STUB = "proximity: large untracked file, not hashed: "
LOOSE_LIMIT = 2048  # loose objects (estimated as git does) before snapshots pack them
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


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCATING_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


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
              "prune-packed": "snapshot"}


CALLS: dict[str, int] = {}  # git subcommand -> calls made by this process (service status)


def time_limit(args: Sequence[str]) -> float:
    """The time limit of a git call; PROXIMITY_GIT_TIMEOUT (seconds) overrides all."""
    env = os.environ.get("PROXIMITY_GIT_TIMEOUT")
    if env:
        try:
            value = float(env)
            if 0 < value < 1e6:
                return value
        except ValueError:
            pass
    return TIMEOUTS[CALL_CLASS.get(args[0] if args else "", "plumbing")]


def git(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    ok: tuple[int, ...] = (0,),
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run git; a call past its time limit is killed (with anything it started) and
    raises GitTimeout."""
    cmd = ["git", "-c", "core.quotePath=false", "-c", "advice.addEmbeddedRepo=false", *args]
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
    try:
        out, err = p.communicate(input, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(p)
        raise GitTimeout(f"git {' '.join(args[:2])} took longer than {limit:g} s in {cwd} "
                         "and was stopped (PROXIMITY_GIT_TIMEOUT sets the limit)") from None
    except BaseException:
        _kill(p)
        raise
    proc = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    if proc.returncode not in ok:
        msg = proc.stderr.decode(errors="replace").strip() or f"exit {proc.returncode}"
        raise FatalError(f"git {' '.join(args[:2])} failed in {cwd}: {msg}")
    return proc


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


def _pygit2() -> Any:
    import pygit2

    return pygit2


class WorktreeInfo(NamedTuple):
    id: str
    path: str
    admin: str  # the worktree's own git dir
    head: str | None
    branch: str | None
    prunable: bool = False
    locked: bool = False


class Repo:
    """A repository, opened from any of its worktrees."""

    large_bytes = 2_000_000  # untracked files over this are stubbed, not hashed

    def __init__(self, start: str | os.PathLike[str], fast: bool = False) -> None:
        start = os.path.abspath(start)
        if not os.path.isdir(start):
            raise NotARepository(f"{start}: no such directory")
        self._pg: Any = None
        self.memo: dict[tuple[Any, ...], Any] = {}  # results keyed by object ids
        if fast and self._discover(start):
            return
        proc = git(["rev-parse", "--is-bare-repository", "--absolute-git-dir",
                    "--git-common-dir", "--show-toplevel"], cwd=start, ok=(0, 128))
        out = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
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
    def pg(self) -> Any:
        """The pygit2 repository, opened on first use (a snapshot hook never needs it)."""
        if self._pg is None:
            self._pg = _pygit2().Repository(self.gitdir)
        return self._pg

    @property
    def ecm_dir(self) -> str:
        return os.path.join(self.common, "ecm")

    # -- airspace -----------------------------------------------------------------------
    def worktrees(self) -> list[WorktreeInfo]:
        out = git(["worktree", "list", "--porcelain", "-z"], cwd=self.workdir).stdout
        infos: list[WorktreeInfo] = []
        for n, record in enumerate(out.split(b"\0\0")):
            fields = [f.decode("utf-8", "surrogateescape") for f in record.split(b"\0") if f]
            if not fields:
                continue
            kv: dict[str, str] = {}
            for f in fields:
                key, _, val = f.partition(" ")
                kv[key] = val
            if "bare" in kv or "worktree" not in kv:
                continue
            path = kv["worktree"]
            branch = kv.get("branch")
            if branch and branch.startswith("refs/heads/"):
                branch = branch[len("refs/heads/"):]
            head = kv.get("HEAD")
            head = None if not head or set(head) == {"0"} else head
            if n == 0:
                wid, admin = MAIN_ID, self.common
            else:
                found = self._admin_dir(path)
                wid = worktree_id(os.path.basename(found) if found else os.path.basename(path))
                admin = found or ""
            gone = not os.path.isdir(path)
            infos.append(
                WorktreeInfo(
                    id=wid, path=os.path.realpath(path) if not gone else path,
                    admin=admin, head=head, branch=branch,
                    prunable="prunable" in kv or gone, locked="locked" in kv,
                )
            )
        return infos

    def worktrees_from_files(self) -> list[WorktreeInfo] | None:
        """What `worktrees()` lists, read from the common dir's files (no git process),
        for the resident service that asks on every hook; in `git worktree list`'s order
        (the main checkout, then by path). None: a layout only git should read (bare,
        core.worktree, reftable, a HEAD that is not a plain ref or commit)."""
        try:
            config = _read(os.path.join(self.common, "config"))
        except OSError:
            return None
        if os.path.basename(self.common) != ".git" or any(
                w in config for w in ("worktree =", "worktree=", "bare = true", "reftable")):
            return None
        try:
            packed = _read(os.path.join(self.common, "packed-refs")).splitlines()
        except OSError:
            packed = []

        def head_of(admin: str) -> tuple[str | None, str | None] | None:
            try:
                text = _read(os.path.join(admin, "HEAD")).strip()
            except OSError:
                return None
            if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
                return text, None
            if not text.startswith("ref: refs/"):
                return None
            ref = text[5:]
            branch = ref.removeprefix("refs/heads/")
            try:
                sha = _read(os.path.join(self.common, ref)).strip()
            except OSError:
                sha = next((ln.split()[0] for ln in packed
                            if ln.endswith(" " + ref) and not ln.startswith(("#", "^"))), "")
            if sha.startswith("ref:"):
                return None
            return (sha or None), branch  # no commit yet: an unborn branch

        main = head_of(self.common)
        if main is None:
            return None
        out = [WorktreeInfo(MAIN_ID, os.path.realpath(os.path.dirname(self.common)),
                            self.common, main[0], main[1])]
        base = os.path.join(self.common, "worktrees")
        try:
            names = os.listdir(base)
        except FileNotFoundError:
            names = []
        except OSError:
            return None
        linked = []
        for name in names:
            admin = os.path.join(base, name)
            try:
                target = _read(os.path.join(admin, "gitdir")).strip()
            except OSError:
                return None
            got = head_of(admin)
            if not target or got is None:
                return None
            target = os.path.normpath(os.path.join(admin, target))
            path = os.path.dirname(target)
            locked = os.path.exists(os.path.join(admin, "locked"))
            gone = not os.path.isdir(path)
            linked.append(WorktreeInfo(
                worktree_id(name), path if gone else os.path.realpath(path), admin, got[0],
                got[1], prunable=gone or (not locked and not os.path.exists(target)),
                locked=locked))
        return out + sorted(linked, key=lambda w: w.path)

    def current(self) -> WorktreeInfo:
        """This worktree, read from its own git dir (no `git worktree list`)."""
        wid = agent_id(self.gitdir, self.common)
        head, branch = self.read_head(self.gitdir)
        return WorktreeInfo(wid, self.workdir, self.gitdir, head, branch)

    def read_head(self, admin: str) -> tuple[str | None, str | None]:
        """(commit, branch) of a worktree's HEAD; files first, git as the fallback."""
        try:
            text = _read(os.path.join(admin, "HEAD")).strip()
        except OSError:
            text = ""
        if text.startswith("ref: "):
            ref = text[5:]
            branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ref
            try:
                return _read(os.path.join(self.common, ref)).strip() or None, branch
            except OSError:
                pass
            try:
                for line in _read(os.path.join(self.common, "packed-refs")).splitlines():
                    if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                        return line.split()[0], branch
            except OSError:
                pass
        elif len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
            return text, None
        else:
            branch = None
        # unborn branch, reftable, or a layout the files do not show: ask git
        out = git(["rev-parse", "-q", "--verify", "HEAD"], cwd=self.workdir, ok=(0, 1))
        return (out.stdout.decode().strip() or None), branch

    def _admin_dir(self, path: str) -> str | None:
        try:
            text = _read(os.path.join(path, ".git")).strip()
        except OSError:
            # missing worktree: find the admin dir whose gitdir file points here
            base = os.path.join(self.common, "worktrees")
            for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
                try:
                    target = _read(os.path.join(base, name, "gitdir")).strip()
                except OSError:
                    continue
                if os.path.dirname(target) == path:
                    return os.path.join(base, name)
            return None
        if text.startswith("gitdir:"):
            return os.path.realpath(os.path.join(path, text[len("gitdir:"):].strip()))
        return None

    # -- snapshots ----------------------------------------------------------------------
    def snapshot_tree(self, wt: WorktreeInfo, index_file: str | None = None,
                      start_tree: list[str] | None = None, from_user_index: bool = False,
                      keep: bool = True) -> str:
        """The tree of everything in the worktree that git would keep (add -A).

        Works on a private copy of a per-worktree shadow index, never the user's index;
        the shadow keeps git's stat cache between runs so unchanged files are not re-read.
        Untracked files over ``self.large_bytes`` are never hashed: the tree holds a small
        stub naming their size and mtime instead (a change still shows). ``keep``: the
        private copy becomes the shadow (False: the shadow is left as it was).
        """
        user_index = index_file or os.path.join(wt.admin, "index")
        shadow_dir = os.path.join(self.ecm_dir, "index")
        tmp = self._scratch(safe_name(wt.id))
        shadow = os.path.join(shadow_dir, f"{safe_name(wt.id)}.idx")
        src = user_index
        try:
            if not (from_user_index and os.path.exists(user_index)) and os.path.exists(
                    shadow) and (
                not os.path.exists(user_index)
                or os.stat(shadow).st_mtime_ns >= os.stat(user_index).st_mtime_ns
            ):
                src = shadow
        except OSError:
            src = user_index
        try:
            if os.path.exists(src):
                _copy(src, tmp)
            env = {"GIT_INDEX_FILE": tmp}
            if start_tree is not None and src == user_index and os.path.exists(tmp):
                # the tree of the user's index this snapshot starts from (the resident
                # service compares a commit's index with it: see warm.Airspace)
                start_tree.append(git(["write-tree"], cwd=wt.path, env=env
                                      ).stdout.decode().strip())  # tmp is private already
            large = self._large_untracked(wt, env, user_index)
            if large:
                git(["update-index", "-z", "--force-remove", "--stdin"], cwd=wt.path, env=env,
                    input=b"".join(_b(p) + b"\0" for p in large))
                specs = b"".join(b":(exclude,literal)" + _b(p) + b"\0" for p in large)
                git(["add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                     "--pathspec-file-nul"], cwd=wt.path, env=env, ok=(0, 1),
                    input=b".\0" + specs)
                self._add_stubs(wt, env, large)
            else:
                git(["add", "-A", "--ignore-errors", "."], cwd=wt.path, env=env, ok=(0, 1))
            tree = git(["write-tree"], cwd=wt.path, env=env).stdout.decode().strip()
            if os.path.dirname(tmp) == shadow_dir and keep:
                os.replace(tmp, shadow)
            return tree
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
            with contextlib.suppress(FatalError, OSError):  # housekeeping never fails it
                self.pack_loose_objects()

    def snapshot_paths(self, wt: WorktreeInfo, paths: Sequence[str], keep: bool) -> str:
        """The tree of `add -A` over the worktree when only ``paths`` (relative: files or
        directories, existing or deleted) changed since its shadow index was written: the
        shadow plus `add -A -- <paths>` (literal pathspecs). ``keep``: the result becomes
        the shadow (else it is left as it was). The caller knows the rest is unchanged
        (the resident service's watcher) and that none of ``paths`` is a large file."""
        shadow = os.path.join(self.ecm_dir, "index", f"{safe_name(wt.id)}.idx")
        tmp = self._scratch(safe_name(wt.id))  # beside the shadow, which is there
        try:
            _copy(shadow, tmp)
            env = {"GIT_INDEX_FILE": tmp}
            here = [p for p in paths if os.path.lexists(os.path.join(wt.path, p))]
            present = set(here)
            gone = [p for p in paths if p not in present]
            if gone:  # a deleted path is named only when the index has it (or under it)
                out = git(["ls-files", "-z", "--", *(":(literal)" + p for p in gone)],
                          cwd=wt.path, env=env).stdout.decode("utf-8", "surrogateescape")
                had = [q for q in out.split("\0") if q]
                here += [p for p in gone if any(q == p or q.startswith(p + "/") for q in had)]
            if here:
                git(["add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                     "--pathspec-file-nul"], cwd=wt.path, env=env, ok=(0, 1),
                    input=b"".join(b":(literal)" + _b(p) + b"\0" for p in here))
            tree = git(["write-tree"], cwd=wt.path, env=env).stdout.decode().strip()
            if keep:
                os.replace(tmp, shadow)
            return tree
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def snapshot_overlay(self, wt: WorktreeInfo, base_tree: str, paths: Sequence[str],
                         hashing: tuple[list[str], subprocess.Popen[bytes]] | None = None
                         ) -> str | None:
        """The tree `add -A -- <paths>` gives over an index that holds ``base_tree`` (the
        worktree's shadow index, see snapshot_paths), built in process from ``base_tree``
        without reading or writing an index: regular files hashed by `git hash-object`
        (the filters and attributes `git add` applies), deleted paths dropped. None where
        that is not certain to be git's tree -- libgit2 not open, a directory, a link or
        another special file, a file where the base has a directory or a submodule (or
        the reverse), a new file in a nested repository or one git ignores, core.fileMode
        off, core.ignoreCase on, per-worktree config: then the caller asks git.
        ``hashing``: (files, `git hash-object -w -- files` started already: hash_start);
        its ids are taken when those are exactly the files to hash, and it is always
        waited for."""
        try:
            return self._overlay(wt, base_tree, paths, hashing)
        finally:
            if hashing is not None:
                reap(hashing[1])

    def hash_start(self, cwd: str, files: Sequence[str]) -> subprocess.Popen[bytes]:
        """`git hash-object -w -- files` started (snapshot_overlay takes its answer)."""
        return git_start(["hash-object", "-w", "--", *files], cwd)

    def _overlay(self, wt: WorktreeInfo, base_tree: str, paths: Sequence[str],
                 hashing: tuple[list[str], subprocess.Popen[bytes]] | None) -> str | None:
        if not self.warm() or not paths or len(paths) > OVERLAY_MAX:
            return None
        pygit2 = _pygit2()
        try:
            cfg = self.pg.config
            if (not _cfg_bool(cfg, "core.fileMode", True) or _cfg_bool(cfg, "core.ignoreCase",
                                                                      False)
                    or _cfg_bool(cfg, "extensions.worktreeConfig", False)):
                return None
            base = self.pg[base_tree].peel(pygit2.Tree)
        except (KeyError, ValueError, pygit2.GitError):
            return None
        files: list[tuple[str, int]] = []
        gone: list[str] = []
        new: list[str] = []
        for rel in paths:
            parts = rel.split("/")
            if (not rel or "\n" in rel or rel.startswith("/") or any(
                    x in ("", ".", "..", ".git") for x in parts)):
                return None
            kind = _tree_kind(base, parts)
            if kind == "blocked":  # a parent is a file or a submodule in the base
                return None
            try:
                st = os.lstat(os.path.join(wt.path, rel))
            except FileNotFoundError:
                if kind is not None:
                    gone.append(rel)
                continue
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode) or kind not in (None, "blob"):
                return None
            if kind is None:
                if _in_nested_repo(wt.path, base, parts):
                    return None
                new.append(rel)
            files.append((rel, 0o100755 if st.st_mode & stat.S_IXUSR else 0o100644))
        if new and any_ignored(wt.path, new):
            return None
        changes: dict[tuple[str, ...], tuple[str, int] | None] = {
            tuple(p.split("/")): None for p in gone}
        if files:
            got = None
            if hashing is not None and hashing[0] == [p for p, _ in files]:
                got = git_finish(hashing[1], ok=(0,))
            out = got.split() if got is not None else git(
                ["hash-object", "-w", "--stdin-paths"], cwd=wt.path,
                input=b"".join(_b(p) + b"\n" for p, _ in files)).stdout.split()
            if len(out) != len(files):
                return None
            for (rel, mode), oid in zip(files, out, strict=True):
                changes[tuple(rel.split("/"))] = (oid.decode(), mode)
        try:
            return str(_tree_with(self.pg, base, changes) or EMPTY_TREE)
        except (KeyError, ValueError, TypeError, pygit2.GitError):
            return None

    def index_tree(self, index_file: str, cwd: str) -> str:
        """The tree an index file holds (`git write-tree`), from a private copy: the
        index itself is never written. Remembered by the file's identity and stat (git
        replaces an index file whole, never in place)."""
        try:
            st = os.stat(index_file)
            key: tuple[Any, ...] = ("index-tree", os.path.realpath(index_file), st.st_ino,
                                    st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = ()
        if key and key in self.memo:
            return str(self.memo[key])
        tree = self._index_tree(index_file, cwd)
        if key:
            if len(self.memo) > MEMO_ENTRIES:
                self.memo.clear()
            self.memo[key] = tree
        return tree

    def _index_tree(self, index_file: str, cwd: str) -> str:
        tmp = f"{index_file}.proximity-{os.getpid()}-{os.urandom(4).hex()}"
        tmp = os.path.join(self.ecm_dir, "index", os.path.basename(tmp)) \
            if os.path.isdir(os.path.join(self.ecm_dir, "index")) else tmp
        try:
            _copy(index_file, tmp)
            return git(["write-tree"], cwd=cwd, env={"GIT_INDEX_FILE": tmp}
                       ).stdout.decode().strip()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _scratch(self, stem: str) -> str:
        """A fresh path for a private temporary file (an index, a patch): in the ledger's
        index directory, made if missing, else in the system's temporary directory."""
        d = os.path.join(self.ecm_dir, "index")
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            import tempfile

            d = tempfile.gettempdir()
        return os.path.join(d, f".{stem}.{os.getpid()}.{os.urandom(4).hex()}")

    def tree_with_patch(self, tree: str, patch: str, cwd: str) -> str | None:
        """``tree`` with a `git diff --binary` patch of tracked files applied, in a
        temporary index (a hook host's stashed unstaged edits: stash.py): the files of
        the patch that ``tree`` holds as the patch found them (each file's blob before
        it), so nothing is applied twice, and a file a hook rewrote meanwhile keeps what
        was read; None when no file fits or git cannot apply them. The worktree and the
        user's index are never touched."""
        fits = self._patch_fits(tree, patch)
        if not fits:
            return None
        tmp = self._scratch("unstash")
        env = {"GIT_INDEX_FILE": tmp}
        part = f"{tmp}.patch"
        try:
            with open(part, "xb") as f:  # the fitting files' sections, in their order
                f.write(b"".join(fits))
            git(["read-tree", tree], cwd=cwd, env=env)
            for extra in ([], ["-c", "core.autocrlf=false"]):  # as the hosts retry it
                if git([*extra, "apply", "--cached", "--whitespace=nowarn", "--", part],
                       cwd=cwd, env=env, ok=(0, 1, 128)).returncode == 0:
                    return git(["write-tree"], cwd=cwd, env=env).stdout.decode().strip()
            return None
        except (FatalError, OSError):
            return None
        finally:
            for path in (tmp, part):
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def _patch_fits(self, tree: str, patch: str) -> list[bytes]:
        """The sections (one per file) of a `diff --binary` patch whose file is, in
        ``tree``, the blob the patch starts from: its `index` line's id (abbreviated for
        text), absent for a new file, present for a mode change alone."""
        import re

        pygit2 = _pygit2()
        try:
            with open(patch, "rb") as f:
                data = f.read()
            deltas = list(pygit2.Diff.parse_diff(data).deltas)
            sections = [b"diff --git " + x for x in re.split(rb"^diff --git ", data,
                                                            flags=re.M)[1:]]
            if not deltas or len(sections) != len(deltas):
                return []
            root = self.pg[tree].peel(pygit2.Tree)
            out = []
            for d, section in zip(deltas, sections, strict=True):
                try:
                    have = str(root[d.old_file.path].id)
                except KeyError:
                    have = ""
                m = re.search(rb"^index ([0-9a-f]+)\.\.[0-9a-f]+", section, flags=re.M)
                before = m.group(1).decode() if m else None
                if before is None:
                    fits = bool(have)
                elif before.strip("0") == "":
                    fits = not have
                else:
                    fits = have.startswith(before)
                if fits:
                    out.append(section)
            return out
        except (OSError, ValueError, KeyError, TypeError, pygit2.GitError):
            return []

    def _large_untracked(self, wt: WorktreeInfo, env: Mapping[str, str], user_index: str
                         ) -> dict[str, os.stat_result]:
        """Untracked files (not in the user's index) larger than ``large_bytes``: new ones
        (not in the shadow either) and the shadow's own untracked entries, which may have
        grown since. Index reads and a walk git does anyway; no content is read."""
        def listing(args: list[str], index: str) -> set[bytes]:
            out = git(["ls-files", "-z", *args], cwd=wt.path, env={"GIT_INDEX_FILE": index},
                      ok=(0, 1)).stdout
            return {p for p in out.split(b"\0") if p}

        tmp_index = env["GIT_INDEX_FILE"]
        cands = listing(["--others", "--exclude-standard"], tmp_index)
        theirs = listing([], user_index) if os.path.exists(user_index) else set()
        if os.path.exists(tmp_index):
            cands |= listing([], tmp_index) - theirs
        cands -= theirs  # a large file the user has staged is theirs to hash
        large: dict[str, os.stat_result] = {}
        root = os.fsencode(wt.path)
        for raw in cands:
            try:
                st = os.lstat(os.path.join(root, raw))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.large_bytes:
                large[raw.decode("utf-8", "surrogateescape")] = st
        return large

    def _add_stubs(self, wt: WorktreeInfo, env: Mapping[str, str],
                   large: Mapping[str, os.stat_result]) -> None:
        lines = []
        for path, st in sorted(large.items()):
            stub = (f"{LARGE_STUB}size={st.st_size} mtime_ns={st.st_mtime_ns}\n").encode()
            oid = git(["hash-object", "-w", "--stdin"], cwd=wt.path, env=env,
                      input=stub).stdout.decode().strip()
            mode = "100755" if st.st_mode & 0o111 else "100644"
            lines.append(f"{mode} {oid}\t".encode() + _b(path) + b"\0")
        git(["update-index", "-z", "--index-info"], cwd=wt.path, env=env,
            input=b"".join(lines))

    def pack_loose_objects(self, limit: int = 0) -> int:
        """Pack the repository's loose objects once there are many (snapshots write them
        on every commit; left loose they pile up until git warns and stops auto-gc).
        Returns how many were packed. Never waits: one process at a time, others skip."""
        import fcntl

        objects = os.path.join(self.common, "objects")
        limit = limit or LOOSE_LIMIT
        try:
            sample = len(os.listdir(os.path.join(objects, "17")))
        except OSError:
            sample = 0
        if sample * 256 < limit:
            return 0
        try:
            os.makedirs(self.ecm_dir, exist_ok=True)
            lock = open(os.path.join(self.ecm_dir, ".pack.lock"), "a+")  # noqa: SIM115
        except OSError:
            return 0
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return 0
            oids = []
            for d in os.listdir(objects):
                if len(d) == 2 and all(c in "0123456789abcdef" for c in d):
                    with contextlib.suppress(OSError):
                        oids += [d + n for n in os.listdir(os.path.join(objects, d))
                                 if len(n) in (38, 62)]
            if not oids:
                return 0
            git(["pack-objects", "-q", os.path.join(objects, "pack", "pack")],
                cwd=self.common, input="\n".join(oids).encode() + b"\n")
            git(["prune-packed", "-q"], cwd=self.common)
            return len(oids)

    def snapshot_commit(self, tree: str, head: str | None,
                        message: str = "proximity snapshot") -> str:
        """A content-addressed commit of ``tree`` on ``head``: same state and message, same
        id (fixed identity and dates). Written in process: the very object `git
        commit-tree` writes with SNAPSHOT_IDENT (tests/test_faults.py compares them)."""
        if self.warm():
            pygit2 = _pygit2()
            try:
                sig = pygit2.Signature("proximity", "proximity@localhost", 0, 0)
                oid = self.pg.create_commit(None, sig, sig, message + "\n",
                                            pygit2.Oid(hex=tree),
                                            [pygit2.Oid(hex=head)] if head else [])
                return str(oid)
            except (ValueError, KeyError, pygit2.GitError):
                pass
        args = ["commit-tree", tree, "-m", message]
        if head:
            args[2:2] = ["-p", head]
        out = git(args, cwd=self.workdir, env=SNAPSHOT_IDENT)
        return out.stdout.decode().strip()

    def changed_paths(self, old_tree: str, new_tree: str) -> dict[str, str]:
        """path -> new blob id ("" when deleted) between two tree-ishes, via git plumbing
        (remembered for object ids: what they name never changes)."""
        return {p: oid for p, (_st, oid) in self.tree_delta(old_tree, new_tree).items()}

    def committed_path(self, old_head: str, new_head: str, path: str) -> bool:
        """Whether ``path`` changed between two commits (False when unsure)."""
        try:
            return path in self.tree_delta(old_head, new_head)
        except FatalError:
            return False

    def tree_delta(self, old_tree: str, new_tree: str) -> dict[str, tuple[str, str]]:
        """path -> (status A/D/M/T, new blob id or "" when deleted) between two tree-ishes,
        no rename detection (`diff-tree -r --no-renames`); in process through libgit2, by
        git when libgit2 cannot read them; remembered for object ids."""
        if old_tree == new_tree:
            return {}
        key = ("tree_delta", old_tree, new_tree)
        if key in self.memo:
            return dict(self.memo[key])
        result: dict[str, tuple[str, str]] | None = None
        if self.warm():
            try:
                pygit2 = _pygit2()
                old, new = self.pg.revparse_single(old_tree), self.pg.revparse_single(new_tree)
                result = {}
                _walk_delta(old.peel(pygit2.Tree), new.peel(pygit2.Tree), "", result)
            except (KeyError, ValueError, TypeError, _pygit2().GitError):
                result = None
        if result is None:
            result = {}
            out = git(["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree],
                      cwd=self.workdir).stdout
            parts = out.split(b"\0")
            for meta, raw in zip(parts[0::2], parts[1::2], strict=False):
                fields = meta.decode().split()
                if len(fields) >= 5:
                    result[raw.decode("utf-8", "surrogateescape")] = (
                        fields[4][:1], "" if fields[4] == "D" else fields[3])
        self._remember(key, (old_tree, new_tree), dict(result))
        return result

    def _remember(self, key: tuple[Any, ...], ids: tuple[str, ...], value: Any) -> None:
        """Keep a result computed from object ids alone (never for names like HEAD)."""
        if all(len(i) in (40, 64) and all(c in "0123456789abcdef" for c in i) for i in ids):
            if len(self.memo) > MEMO_ENTRIES:
                self.memo.clear()
            self.memo[key] = value

    def pin(self, ref: str, commit: str) -> None:
        try:
            if _read(os.path.join(self.common, ref)).strip() == commit:
                return  # pinned already
        except OSError:
            pass
        if self.warm():
            try:  # libgit2 writes the loose ref under its lock, as update-ref does
                self.pg.references.create(ref, commit, force=True)
                return
            except (ValueError, _pygit2().GitError):
                pass
        git(["update-ref", ref, commit], cwd=self.workdir)

    def is_ancestor_cli(self, anc: str, desc: str) -> bool:
        return is_ancestor_cli(anc, desc, self.workdir)

    def parents_cli(self, commit: str) -> list[str]:
        """Parents of a commit: from its loose object when it is one (a fresh commit is),
        else from git."""
        import zlib

        try:
            with open(os.path.join(self.common, "objects", commit[:2], commit[2:]), "rb") as f:
                data = zlib.decompress(f.read())
            header, _, body = data.partition(b"\0")
            if header.startswith(b"commit "):
                head = body.split(b"\n\n", 1)[0].split(b"\n")
                return [ln.split()[1].decode() for ln in head if ln.startswith(b"parent ")]
        except (OSError, zlib.error, IndexError):
            pass
        out = git(["rev-list", "--parents", "-n", "1", commit], cwd=self.workdir).stdout
        return out.decode().split()[1:]

    # -- history ------------------------------------------------------------------------
    def merge_base(self, a: str | None, b: str | None) -> str | None:
        if not a or not b:
            return None
        key = ("merge-base", a, b)
        if key in self.memo:
            return cast("str | None", self.memo[key])
        got = self._base_by_step(a, b)
        if got is None:
            oid = self.pg.merge_base(a, b)
            got = str(oid) if oid is not None else None
        self._remember(key, (a, b), got)  # commits never change: neither do their bases
        return got

    def sole_merge_base(self, a: str | None, b: str | None) -> str | None:
        """The merge base of ``a`` and ``b`` when it is their only one (git's merge then
        merges against it, not against a virtual base made of several); None: there are
        several, or the commits since it are too many to tell cheaply."""
        base = self.merge_base(a, b)
        if base is None or not a or not b:
            return None
        if base in (a, b):
            return base
        key = ("sole-base", a, b)
        if key in self.memo:
            return base if self.memo[key] else None
        known = self._sole_by_step(a, b, base)
        if known is not None:
            self._remember(key, (a, b), known)
            return base if known else None
        pygit2 = _pygit2()
        since = []
        for tip in (a, b):
            seen: set[str] = set()
            walker = self.pg.walk(tip, pygit2.enums.SortMode.NONE)
            walker.hide(base)
            for c in walker:
                seen.add(str(c.id))
                if len(seen) > SOLE_BASE_WALK:
                    self._remember(key, (a, b), False)  # too many to tell: not claimed
                    return None
            since.append(seen)
        # every common ancestor is an ancestor of base unless the two sides share a commit
        # that base does not contain: then git sees more than one merge base
        sole = not since[0] & since[1]
        self._remember(key, (a, b), sole)
        return base if sole else None

    def ahead(self, head: str | None, base: str | None) -> int:
        if not head:
            return 0
        if not base:
            return sum(1 for _ in self.pg.walk(head))
        return int(self.pg.ahead_behind(head, base)[0])

    def commit_tree(self, commit: str | None) -> str:
        if not commit:
            return EMPTY_TREE
        return str(self.pg[commit].peel(_pygit2().Tree).id)

    def subject(self, commit: str | None) -> str:
        if not commit:
            return ""
        return str(self.pg[commit].message).splitlines()[0] if self.pg[commit].message else ""

    def is_ancestor(self, anc: str, desc: str) -> bool:
        """Remembered; a single-parent commit's answer is its parent's when that one is
        remembered (its ancestors are itself and its parent's)."""
        if anc == desc:
            return True
        got = self.memo.get(("ancestor", anc, desc))
        if got is None:
            parent = self._only_parent(desc) if self.warm() else None
            if parent is not None:
                got = self.memo.get(("ancestor", anc, parent)) if parent != anc else True
        if got is None:
            try:
                got = bool(self.pg.descendant_of(desc, anc))
            except Exception:
                return False
        self._remember(("ancestor", anc, desc), (anc, desc), got)
        return bool(got)

    def steps_alike(self, old: str, new: str, other: str) -> bool:
        """Whether ``new`` has the same merge bases with ``other`` as ``old`` has: it is
        ``old``, or a commit whose only parent is ``old`` that ``other`` does not contain
        (its ancestors are then itself and ``old``'s). False when unsure."""
        if new == old:
            return True
        try:
            c = self.pg[new]
            return ([str(p) for p in c.parent_ids] == [old] and new != other
                    and not self._may_contain(other, old, new))
        except Exception:
            return False

    def _may_contain(self, other: str, parent: str, child: str) -> bool:
        """Whether ``other`` contains ``child`` (whose only parent is ``parent``): not when
        their remembered merge base is not ``parent`` (``other`` lacks the parent, so the
        child too); else asked of libgit2."""
        known = self._remembered("merge-base", parent, other)
        if isinstance(known, str) and known != parent:
            return False
        return other == child or bool(self.pg.descendant_of(other, child))

    def _remembered(self, kind: str, x: str, y: str) -> Any:
        """A remembered result for the unordered pair (x, y) (None: not remembered)."""
        got = self.memo.get((kind, x, y))
        return got if got is not None else self.memo.get((kind, y, x))

    def _only_parent(self, commit: str) -> str | None:
        """The parent of a single-parent commit; None for a root, a merge or unknown."""
        try:
            parents = [str(p) for p in self.pg[commit].parent_ids]
        except (KeyError, ValueError):
            return None
        return parents[0] if len(parents) == 1 else None

    def _sole_by_step(self, a: str, b: str, base: str) -> bool | None:
        """Whether ``base`` is the only merge base of ``a`` and ``b``, known from one of
        them being a single-parent step, absent from the other, on a commit whose merge
        base with the other was ``base`` too: the shared ancestors are the same, so is the
        answer (True: the only one; False: several, or too many commits since it to tell,
        one more now). None: not known that way."""
        for x, y in ((a, b), (b, a)):
            p = self._only_parent(x)
            if p is None or p == base:
                continue
            for k in ((p, y), (y, p)):
                sole = self.memo.get(("sole-base", *k))
                if sole is not None and self.memo.get(("merge-base", *k)) == base:
                    return bool(sole)
        return None

    def _base_by_step(self, a: str, b: str) -> str | None:
        """The merge base of ``a`` and ``b`` from a remembered one, when one of them is a
        single-parent step the other does not contain (a new commit on a worktree whose
        base with the other was asked before); None: not known that way."""
        for x, y in ((a, b), (b, a)):
            p = self._only_parent(x)
            got = self._remembered("merge-base", p, y) if p is not None else None
            if isinstance(got, str) and got != p:
                return got  # y lacks x's parent, so x too: the same ancestors shared
        return None

    def tree_diff(self, old: str | None, new: str, paths: Sequence[str]) -> str:
        """The `git diff -U0` text between two tree-ishes for ``paths`` (message and
        advisory hunks: shown, never judged), made by libgit2 in process from the paths'
        blobs with git's indent heuristic, so it costs what the shown files do (a spawned
        `git diff` cost more than the rest of a message); from git itself when libgit2
        cannot read the objects."""
        pygit2 = _pygit2()
        try:
            trees = [self.pg[t].peel(pygit2.Tree) for t in (old or EMPTY_TREE, new)]
            out = []
            for path in paths:
                a, b = (self._blob_at(t, path) for t in trees)
                if (a is None and b is None) or (a is not None and b is not None
                                               and a.id == b.id):
                    continue
                # the blobs stay referenced while libgit2 reads them
                patch = pygit2.Patch.create_from(
                    a, b, old_as_path=path, new_as_path=path, context_lines=0,
                    interhunk_lines=0, flag=pygit2.enums.DiffOption.INDENT_HEURISTIC)
                out.append(str(patch.text or ""))
            return "".join(out)
        except Exception:
            return tree_diff(self.workdir, old, new, paths)

    def _blob_at(self, tree: Any, path: str) -> Any:
        """The blob at ``path`` in ``tree`` (None: absent, a directory, a submodule)."""
        try:
            entry = tree[path]
        except (KeyError, ValueError):
            return None
        return self.pg[entry.id] if entry.type_str == "blob" else None

    def tree_has(self, tree: str, path: str) -> bool:
        """Whether ``path`` is an entry (file, link or submodule) of ``tree``."""
        try:
            self.pg[tree].peel(_pygit2().Tree)[path]
            return True
        except (KeyError, ValueError, TypeError, _pygit2().GitError):
            return False

    def has_object(self, oid: str) -> bool:
        try:
            return oid in self.pg
        except (ValueError, TypeError):
            return False

    def blob(self, oid: str) -> bytes:
        return bytes(self.pg[oid].data)

    def blob_size(self, oid: str) -> int:
        """The size from the object's header: a 300 MB blob is not inflated to learn it
        (``pg[oid].size`` reads the whole object: seconds per hook for one large file)."""
        try:
            return int(self.pg.odb.read_header(oid)[1])
        except (AttributeError, KeyError, ValueError):  # an odb without header reads
            return int(self.pg[oid].size)

    def files(self, tree: str) -> dict[str, str]:
        """path -> blob id of every regular file in a tree (recursive)."""
        pygit2 = _pygit2()
        out: dict[str, str] = {}
        stack: list[tuple[str, Any]] = [("", self.pg[tree])]
        while stack:
            prefix, t = stack.pop()
            for e in t:
                if e.type_str == "tree":
                    stack.append((prefix + e.name + "/", self.pg[e.id]))
                elif e.type_str == "blob" and e.filemode != pygit2.enums.FileMode.LINK:
                    out[prefix + e.name] = str(e.id)
        return out

    # -- diffs and merges ---------------------------------------------------------------
    def changes(self, old_tree: str, new_tree: str, max_bytes: int) -> list[model.FileChange]:
        """What changed from ``old_tree`` to ``new_tree``, in old-side line coordinates."""
        pygit2 = _pygit2()
        if old_tree == new_tree:
            return []
        key = ("changes", old_tree, new_tree, max_bytes)
        if key in self.memo:
            return list(self.memo[key])
        diff = self.pg.diff(
            self.pg[old_tree], self.pg[new_tree], context_lines=0, interhunk_lines=0,
            flags=pygit2.enums.DiffOption.PATIENCE,
        )
        diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES)
        out = [fc for fc in _changes(self, diff, max_bytes)]
        self._remember(key, (old_tree, new_tree), tuple(out))
        return out

    def merge_result(self, a: str, b: str, unrelated: bool = False
                     ) -> tuple[str, list[str]] | None:
        """git's merge of two commits, written nowhere but the object store: (its tree --
        with conflict markers where it conflicts -- and the paths it leaves conflicted);
        None if git cannot merge them (``unrelated``: histories with no common commit
        are merged too, as the scan's snapshots may be)."""
        args = ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages"]
        try:
            proc = git([*args, a, b], cwd=self.workdir, ok=(0, 1))
        except FatalError as e:
            if not (unrelated and "unrelated histories" in str(e)):
                return None
            try:
                proc = git([*args, "--allow-unrelated-histories", a, b],
                           cwd=self.workdir, ok=(0, 1))
            except FatalError:
                return None
        parts = proc.stdout.split(b"\0")
        tree = parts[0].decode("ascii", "replace").strip()
        if len(tree) not in (40, 64):
            return None
        out = set()
        for raw in parts[1:] if proc.returncode else ():
            if raw:
                path = raw.decode("utf-8", "surrogateescape")
                for side in (a, b):  # a file moved aside for a directory: "path~<side>"
                    path = path.removesuffix(f"~{side}")
                out.add(path)
        return tree, sorted(out)

    def merge_conflicts(self, a: str, b: str) -> list[str] | None:
        """Paths git's own merge of two snapshot commits leaves conflicted; None if unknown."""
        got = self.merge_result(a, b, unrelated=True)
        return None if got is None else got[1]


def _cfg_bool(cfg: Any, key: str, default: bool) -> bool:
    try:
        return bool(cfg.get_bool(key)) if key in cfg else default
    except (ValueError, KeyError, _pygit2().GitError):
        return not default  # unreadable: the answer that declines the fast path


def _tree_kind(base: Any, parts: Sequence[str]) -> str | None:
    """What ``parts`` names in tree ``base``: "blob" (a file or link), "tree", "commit"
    (a submodule), None (nothing), or "blocked" (a parent is not a directory)."""
    tree = base
    for i, name in enumerate(parts):
        try:
            entry = tree[name]
        except KeyError:
            return None
        if i == len(parts) - 1:
            return {"blob": "blob", "tree": "tree", "commit": "commit"}.get(entry.type_str,
                                                                          "blocked")
        if entry.type_str != "tree":
            return "blocked"
        tree = entry
    return None


def _in_nested_repo(root: str, base: Any, parts: Sequence[str]) -> bool:
    """Whether a new file sits in a directory the base does not have that holds a `.git`
    (`add -A` would record that repository, not the file)."""
    for i in range(len(parts) - 1, 0, -1):
        if _tree_kind(base, parts[:i]) == "tree":
            return False
        if os.path.lexists(os.path.join(root, *parts[:i], ".git")):
            return True
    return False


def any_ignored(workdir: str, paths: Sequence[str]) -> bool:
    """Whether any of ``paths`` matches an ignore rule (tracked or not: --no-index)."""
    proc = git(["check-ignore", "--no-index", "--stdin", "-z"], cwd=workdir,
               input=b"".join(_b(p) + b"\0" for p in paths), ok=(0, 1))
    return proc.returncode == 0 and bool(proc.stdout.strip(b"\0"))


def _tree_with(pg: Any, tree: Any, changes: Mapping[tuple[str, ...], tuple[str, int] | None]
               ) -> Any:
    """The id of ``tree`` (None: empty) with ``changes`` made (path parts -> (blob id,
    mode), or None to remove), written through libgit2; None when the result is empty
    (git writes no empty directories)."""
    pygit2 = _pygit2()
    tb = pg.TreeBuilder(tree) if tree is not None else pg.TreeBuilder()
    below: dict[str, dict[tuple[str, ...], tuple[str, int] | None]] = {}
    for parts, val in changes.items():
        if len(parts) > 1:
            below.setdefault(parts[0], {})[parts[1:]] = val
        elif val is None:
            if tb.get(parts[0]) is not None:
                tb.remove(parts[0])
        else:
            tb.insert(parts[0], pygit2.Oid(hex=val[0]), val[1])
    for name, sub in below.items():
        entry = tb.get(name)
        old = pg[entry.id] if entry is not None and entry.filemode == pygit2.GIT_FILEMODE_TREE \
            else None
        got = _tree_with(pg, old, sub)
        if got is None:
            if entry is not None:
                tb.remove(name)
        else:
            tb.insert(name, got, pygit2.GIT_FILEMODE_TREE)
    if tree is not None and not changes:
        return tree.id
    oid = tb.write()
    return None if len(pg[oid]) == 0 else oid


def _copy(src: str, dst: str) -> None:
    """Copy an index file *with its timestamps*: git decides which entries are "racily
    clean" (changed within the same second, same size) by comparing them with the index
    file's mtime; a fresh mtime on the copy would make it trust stale stat data and miss
    an edit."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while chunk := fi.read(1 << 20):
            fo.write(chunk)
        st = os.fstat(fi.fileno())
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))


def _b(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _kind(mode: int) -> str:
    from proximity import model

    if mode == 0o120000:
        return model.SYMLINK
    if mode == 0o160000:
        return model.SUBMODULE
    return model.TEXT


def _changes(repo: Repo, diff: Any, max_bytes: int) -> Iterator[model.FileChange]:
    from proximity import model

    for i, delta in enumerate(diff.deltas):
        status = delta.status_char()
        if status not in "ADMRT":
            status = "A" if status == "C" else "M"
        old, new = delta.old_file, delta.new_file
        old_oid = "" if status == "A" else str(old.id)
        new_oid = "" if status == "D" else str(new.id)
        path = new.path if status == "A" else old.path
        new_path = new.path if status == "R" else ""
        common = dict(
            path=path, status=status, new_path=new_path, old_oid=old_oid, new_oid=new_oid,
            old_mode=0 if status == "A" else int(old.mode),
            new_mode=0 if status == "D" else int(new.mode),
        )
        kinds = {_kind(int(old.mode)) if status != "A" else model.TEXT,
                 _kind(int(new.mode)) if status != "D" else model.TEXT}
        special = kinds - {model.TEXT}
        if special:
            yield model.FileChange(kind=special.pop(), ranges=None, **common)
            continue
        if status == "M" and old_oid == new_oid:
            yield model.FileChange(kind=model.MODE, ranges=(), **common)
            continue
        sizes = [repo.blob_size(o) for o in (old_oid, new_oid) if o]
        if max(sizes, default=0) > max_bytes or (
                new_oid and sizes[-1] < 200
                and repo.blob(new_oid).startswith(LARGE_STUB.encode())):
            yield model.FileChange(kind=model.LARGE, ranges=None, **common)
            continue
        patch = diff[i]
        if patch.delta.is_binary:
            yield model.FileChange(kind=model.BINARY, ranges=None, **common)
            continue
        ranges: list[tuple[int, int]] = []
        new_ranges: list[tuple[int, int]] = []
        old_lines = 0
        for h in patch.hunks:
            if h.old_lines == 0:
                ranges.append((h.old_start + 1, h.old_start))
            else:
                ranges.append((h.old_start, h.old_start + h.old_lines - 1))
            if h.new_lines == 0:
                new_ranges.append((h.new_start + 1, h.new_start))
            else:
                new_ranges.append((h.new_start, h.new_start + h.new_lines - 1))
            old_lines = max(old_lines, h.old_start + h.old_lines - 1)
        if status == "A":
            ranges = [(1, 0)]
        yield model.FileChange(
            ranges=tuple(ranges), new_ranges=tuple(new_ranges), old_lines=old_lines,
            **common,
        )


# --- the airspace policy's inputs (see config.load_policy) --------------------------------

def _config_entries(cwd: str) -> list[tuple[str, str, str]]:
    """Every ``proximity.*`` git config entry as (scope, key, value), in one git call."""
    proc = git(["config", "-z", "--show-scope", "--get-regexp", r"^proximity\."], cwd=cwd,
               ok=(0, 1))
    items = proc.stdout.decode("utf-8", "replace").split("\0")
    out = []
    for scope, item in zip(items[0::2], items[1::2], strict=False):
        key, _, value = item.partition("\n")
        out.append((scope, key, value))
    return out


def policy_inputs(repo: Repo) -> tuple[list[tuple[str, bytes]], list[tuple[str, str]],
                                      list[tuple[str, str]], str]:
    """(config files committed on the main checkout's HEAD, the repository's shared git
    config entries, every git config entry the user has, a name for that HEAD)."""
    names = ("HEAD:.proximity.toml", "HEAD:pyproject.toml")
    proc = git(["--git-dir", repo.common, "cat-file", "--batch"], cwd=repo.common,
               input="".join(n + "\n" for n in names).encode())
    committed: list[tuple[str, bytes]] = []
    data = proc.stdout
    for name in names:
        nl = data.find(b"\n")
        header, data = data[:nl].split(), data[nl + 1:]
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            committed.append((name.split(":", 1)[1], data[:size]))
            data = data[size + 1:]
    entries = _config_entries(repo.workdir)
    # "local" is the repository's own config in the common dir, shared by every worktree
    shared = [(k, v) for scope, k, v in entries if scope == "local"]
    return committed, shared, [(k, v) for _, k, v in entries], "the main checkout's HEAD"

# -- pre-edit check (`proximity check`): one path at a time, git CLI only -----------------
# A check runs before every edit an agent makes, so it never loads libgit2 and never
# snapshots a whole worktree: it asks git for the few facts one path needs.

DIFF_ARGS = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "-U0")


def _type_bits(mode: int) -> int:
    """An entry's type as `diff-tree` compares them: tree, file (either exec bit), link,
    submodule."""
    return mode & 0o170000


def _walk_delta(old: Any, new: Any, prefix: str, out: dict[str, tuple[str, str]]) -> None:
    """`diff-tree -r --no-renames` of two libgit2 trees into ``out`` (path -> status,
    new id or "" when deleted), descending only into subtrees whose ids differ: a small
    change in a large tree costs its depth, not the tree (libgit2's diff spent ~1 ms on
    setup for any pair of 10k-file trees). A file that becomes a link or a submodule is
    "T", as git says; a file that becomes a directory is its deletion and the additions."""
    a = {e.name: e for e in old} if old is not None else {}
    b = {e.name: e for e in new} if new is not None else {}
    for name in sorted(a.keys() | b.keys()):
        x, y = a.get(name), b.get(name)
        if x is not None and y is not None and x.id == y.id and x.filemode == y.filemode:
            continue
        path = prefix + name
        xt = x is not None and _type_bits(x.filemode) == _TREE
        yt = y is not None and _type_bits(y.filemode) == _TREE
        if xt or yt:
            _walk_delta(x if xt else None, y if yt else None, path + "/", out)
        if x is not None and not xt and y is not None and not yt:
            same = _type_bits(x.filemode) == _type_bits(y.filemode)
            out[path] = ("M" if same else "T", str(y.id))
        elif x is not None and not xt:
            out[path] = ("D", "")
        elif y is not None and not yt:
            out[path] = ("A", str(y.id))


def untracked(worktree: str, paths: Sequence[str] = ()) -> list[str]:
    """Untracked, not ignored files (what `add -A` would add), limited to ``paths``."""
    out = git(["ls-files", "-z", "--others", "--exclude-standard", "--", *paths],
              cwd=worktree).stdout
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def new_file_diff(worktree: str, path: str) -> str:
    """The whole of an untracked file as an addition (`git diff --no-index`)."""
    return git([*DIFF_ARGS, "--no-index", "--", "/dev/null", path], cwd=worktree,
               ok=(0, 1)).stdout.decode("utf-8", "replace")


def commit_of(ref: str, cwd: str) -> str | None:
    """The commit a name says (git's answer; the name is never read as an option), or
    None."""
    try:
        out = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                  cwd=cwd, ok=(0, 1, 128))
    except (FatalError, OSError):
        return None
    sha = out.stdout.decode("ascii", "replace").strip()
    return sha if out.returncode == 0 and len(sha) in (40, 64) else None


def is_ancestor_cli(anc: str, desc: str, cwd: str) -> bool:
    """Whether ``anc`` is ``desc`` or one of its ancestors, by git (no libgit2)."""
    if anc == desc:
        return True
    return git(["merge-base", "--is-ancestor", anc, desc], cwd=cwd,
               ok=(0, 1, 128)).returncode == 0


def tree_diff(cwd: str, old: str | None, new: str, paths: Sequence[str]) -> str:
    """`git diff -U0` between two tree-ishes, limited to ``paths`` (Repo.tree_diff's
    answer when libgit2 cannot read the objects)."""
    return git([*DIFF_ARGS, old or EMPTY_TREE, new, "--", *paths], cwd=cwd,
               ok=(0, 1)).stdout.decode("utf-8", "replace")


def git_start(args: Sequence[str], cwd: str) -> subprocess.Popen[bytes]:
    """Start a git command without waiting for it (see git_finish)."""
    name = args[0] if args else ""
    CALLS[name] = CALLS.get(name, 0) + 1
    try:
        return subprocess.Popen(["git", "-c", "core.quotePath=false", *args], cwd=cwd,
                                env=clean_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError as e:
        raise FatalError(f"cannot run git: {e}") from e


def git_finish(proc: subprocess.Popen[bytes], ok: tuple[int, ...] = (0, 1)) -> bytes | None:
    """Its stdout, or None when it failed."""
    data, _ = proc.communicate()
    return data if proc.returncode in ok else None


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Stop and wait for a git process started by git_start, unless it was waited for."""
    if proc.returncode is None:
        proc.kill()
        with contextlib.suppress(OSError, ValueError):
            proc.communicate()


def git_many(jobs: Sequence[tuple[Sequence[str], str]], ok: tuple[int, ...] = (0, 1)
             ) -> list[bytes | None]:
    """Run several git commands at once (processes, not threads): stdout of each, or None
    when it failed. A check's facts come from a handful of small, independent git calls."""
    procs = []
    try:
        for args, cwd in jobs:
            procs.append(git_start(args, cwd))
    except FatalError:
        for p in procs:
            p.kill()
        raise
    return [git_finish(p, ok) for p in procs]


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
