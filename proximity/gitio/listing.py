"""Every worktree of the repository and its HEAD: from `git worktree list`, or read from
the common dir's files without a git process (what the resident service asks on every
hook), and a worktree's HEAD from its own git dir."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from proximity.gitfiles import MAIN_ID, _read, linked_populating, populating, worktree_id
from proximity.gitio.run import At, git


class WorktreeInfo(NamedTuple):
    id: str
    path: str
    admin: str  # the worktree's own git dir
    head: str | None
    branch: str | None
    prunable: bool = False
    locked: bool = False
    populating: bool = False  # git has not finished writing it (gitfiles.populating)

    @property
    def at(self) -> At:
        """Where git runs in this worktree, its repository named (run.At)."""
        return At(self.path, self.admin)


def listed(common: str) -> list[WorktreeInfo]:
    """Every worktree as `git worktree list` gives it (the main checkout first)."""
    # (the repository named: the common dir; `worktree list` reads only its files)
    out = git(["worktree", "list", "--porcelain", "-z"], cwd=common,
              env={"GIT_DIR": common}).stdout
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
            wid, admin = MAIN_ID, common
        else:
            found = admin_dir(common, path)
            wid = worktree_id(os.path.basename(found) if found else os.path.basename(path))
            admin = found or ""
        gone = not os.path.isdir(path)
        infos.append(
            WorktreeInfo(
                id=wid, path=os.path.realpath(path) if not gone else path,
                admin=admin, head=head, branch=branch,
                prunable="prunable" in kv or gone, locked="locked" in kv,
                populating=not gone and populating(admin, common),
            )
        )
    return infos


def from_files(common: str) -> list[WorktreeInfo] | None:
    """What `worktrees()` lists, read from the common dir's files (no git process),
    for the resident service that asks on every hook; in `git worktree list`'s order
    (the main checkout, then by path). None: a layout only git should read (bare,
    core.worktree, reftable, a HEAD that is not a plain ref or commit)."""
    try:
        config = _read(os.path.join(common, "config"))
    except OSError:
        return None
    if os.path.basename(common) != ".git" or any(
            w in config for w in ("worktree =", "worktree=", "bare = true", "reftable")):
        return None
    try:
        packed = _read(os.path.join(common, "packed-refs")).splitlines()
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
            sha = _read(os.path.join(common, ref)).strip()
        except OSError:
            sha = next((ln.split()[0] for ln in packed
                        if ln.endswith(" " + ref) and not ln.startswith(("#", "^"))), "")
        if sha.startswith("ref:"):
            return None
        return (sha or None), branch  # no commit yet: an unborn branch

    main = head_of(common)
    if main is None:
        return None
    out = [WorktreeInfo(MAIN_ID, os.path.realpath(os.path.dirname(common)),
                        common, main[0], main[1])]
    base = os.path.join(common, "worktrees")
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
            locked=locked, populating=not gone and linked_populating(admin)))
    return out + sorted(linked, key=lambda w: w.path)


def no_remote_refs(common: str) -> bool:
    """Whether the common dir's files say there is no remote-tracking ref at all (then
    `git for-each-ref refs/remotes` would list nothing); False whenever they cannot
    say so (reftable, an unreadable file, a remote's directory, even an empty one)."""
    try:
        if "reftable" in _read(os.path.join(common, "config")):
            return False
    except OSError:
        return False
    try:
        if os.listdir(os.path.join(common, "refs", "remotes")):
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        packed = _read(os.path.join(common, "packed-refs"))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return " refs/remotes/" not in packed


def read_head(common: str, workdir: str, admin: str) -> tuple[str | None, str | None]:
    """(commit, branch) of a worktree's HEAD; files first, git as the fallback."""
    try:
        text = _read(os.path.join(admin, "HEAD")).strip()
    except OSError:
        text = ""
    if text.startswith("ref: "):
        ref = text[5:]
        branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ref
        try:
            return _read(os.path.join(common, ref)).strip() or None, branch
        except OSError:
            pass
        try:
            for line in _read(os.path.join(common, "packed-refs")).splitlines():
                if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                    return line.split()[0], branch
        except OSError:
            pass
    elif len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
        return text, None
    else:
        branch = None
    # unborn branch, reftable, or a layout the files do not show: ask git, of that git
    # dir (its HEAD, not the one of the worktree we run in)
    out = git(["rev-parse", "-q", "--verify", "HEAD"], cwd=admin or workdir,
              env={"GIT_DIR": admin} if admin else None, ok=(0, 1))
    return (out.stdout.decode().strip() or None), branch


def admin_dir(common: str, path: str) -> str | None:
    """A linked worktree's own git dir: the admin dir under the common dir's
    ``worktrees/`` whose ``gitdir`` file names the worktree at ``path`` (what `git
    worktree list` reads), never the worktree's own `.git` file. That file is the
    worktree's data: its agent can point it at a git dir of its own making, whose config
    git would then read, and run, in every sibling's hooks (run.At)."""
    base = os.path.join(common, "worktrees")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return None
    want = os.path.realpath(path)
    for name in names:
        admin = os.path.join(base, name)
        try:
            target = _read(os.path.join(admin, "gitdir")).strip()
        except OSError:
            continue
        if target and os.path.realpath(os.path.dirname(
                os.path.normpath(os.path.join(admin, target)))) == want:
            return admin
    return None


def trunk_of(pg: Any, remote: str) -> str | None:
    """The branch a remote's HEAD names (``refs/remotes/<remote>/HEAD``, as a clone or
    `git remote set-head` leaves it): its trunk, as a full ref; None when not known (a
    URL no configured remote has, or never asked). ``remote``: a configured remote's name,
    or the URL a push names (git hands the pre-push hook either); ``pg``: the repository
    (pygit2). Read from its config and refs only."""
    if not remote:
        return None
    import pygit2  # (the repository given is pygit2's: loaded already)

    try:
        names: dict[str, str] = {str(r.name): str(r.url or "") for r in pg.remotes}
        if remote not in names:  # a push by URL: the configured remote with that URL
            remote = next((n for n, url in names.items() if url == remote), "")
        ref = pg.references.get(f"refs/remotes/{remote}/HEAD") if remote else None
    except (ValueError, KeyError, pygit2.GitError):
        return None
    target = ref.target if ref is not None else None
    prefix = f"refs/remotes/{remote}/"
    if not isinstance(target, str) or not target.startswith(prefix):
        return None
    return "refs/heads/" + target.removeprefix(prefix)


def tracking_tip(pg: Any, remote: str, dest: str) -> str | None:
    """The commit this clone's remote-tracking ref for ``dest`` (a ref on ``remote``, a
    configured remote's name, as its fetch refspecs map it under refs/remotes/) is at now,
    "" when that ref is not there yet; None when no such ref maps it. A successful push to
    the remote by its name moves that ref to the pushed commit (a push by URL moves none,
    even the URL of a configured remote: None). Read from the config and refs only;
    ``pg``: the repository (pygit2)."""
    import pygit2  # (the repository given is pygit2's: loaded already)

    try:
        if remote not in {str(r.name) for r in pg.remotes} or not dest.startswith("refs/"):
            return None
        spec = pg.remotes[remote]
        for i in range(spec.refspec_count):
            one = spec.get_refspec(i)
            if one.src_matches(dest):
                tracking = str(one.transform(dest))
                if not tracking.startswith("refs/remotes/"):
                    return None  # (fetched into local branches: they say nothing of a push)
                ref = pg.references.get(tracking)
                return str(ref.resolve().target) if ref is not None else ""
    except (ValueError, KeyError, pygit2.GitError):
        return None
    return None


def trunk_tips(pg: Any, common: str) -> list[str]:
    """The commits the remotes' trunks are at, as this clone last fetched or pushed them:
    per configured remote, the branch its HEAD names (trunk_of), else the branch of the
    main checkout's name (``refs/remotes/<remote>/<branch>``). What they hold has landed.
    Read from the config and refs only; ``pg``: the repository (pygit2)."""
    import pygit2  # (the repository given is pygit2's: loaded already)

    try:
        with open(os.path.join(common, "HEAD")) as f:
            head = f.read().strip()
    except (OSError, UnicodeDecodeError):
        head = ""
    own = head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else ""
    tips: list[str] = []
    try:
        for remote in pg.remotes:
            name = str(remote.name)
            trunk = trunk_of(pg, name)
            branch = trunk.removeprefix("refs/heads/") if trunk else own
            ref = pg.references.get(f"refs/remotes/{name}/{branch}") if branch else None
            if ref is None:
                continue
            target = ref.resolve().target
            if str(target) not in tips:
                tips.append(str(target))
    except (ValueError, KeyError, pygit2.GitError):
        return tips
    return tips
