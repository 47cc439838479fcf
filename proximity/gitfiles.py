"""Facts about a worktree read from files alone (no git process, no pygit2): where its git
dir and common dir are, its agent id, what multi-step operation is under way.

Standard library only and cheap: the hooks' thin client (thin.py) uses it before anything
heavy is imported; gitio re-exports every name.
"""

from __future__ import annotations

import os

MAIN_ID = "main"


def worktree_id(name: str) -> str:
    """The agent id of a linked worktree whose admin dir (``.git/worktrees/<name>``) is
    ``name``: the name itself when it is plain (lower-case letters, digits, ``._-``) and
    not "main"; otherwise its sanitised lower-case form plus a short hash of the exact
    name. So ids never collide with the main checkout's, nor with each other after case
    folding or sanitising (ref names, shadow-index files), and stay the same across runs.
    """
    if name != MAIN_ID and name and safe_name(name) == name and name == name.lower() \
            and not name.startswith("."):
        return name
    import hashlib

    digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return f"{safe_name(name).lower().lstrip('.') or 'wt'}-{digest}"


def agent_id(gitdir: str, common: str) -> str:
    """The agent id of the worktree whose git dir is ``gitdir``."""
    if os.path.realpath(gitdir) == os.path.realpath(common):
        return MAIN_ID
    return worktree_id(os.path.basename(os.path.normpath(gitdir)))


def populating(admin_dir: str, common: str) -> bool:
    """Whether git is still populating this linked worktree: `git worktree add` writes the
    admin dir and HEAD, then every file, then the index, and only then runs post-checkout.
    Until the index exists the worktree looks like one that deleted everything; it is not
    recorded or judged until then (a worktree added with ``--no-checkout`` has no files to
    judge either, until its first checkout writes them and the index)."""
    if not admin_dir or os.path.realpath(admin_dir) == os.path.realpath(common):
        return False  # the main checkout is never being added
    return linked_populating(admin_dir)


def linked_populating(admin_dir: str) -> bool:
    """``populating`` for an admin dir known to be a linked worktree's (one under the common
    dir's ``worktrees/``): no real path to resolve to tell it from the main checkout's."""
    return not os.path.exists(os.path.join(admin_dir, "index"))


def steps_left(admin_dir: str) -> int:
    """Steps a cherry-pick or revert range still has to make, the current one included
    (its ``sequencer/todo``); 0 when there is none."""
    try:
        todo = _read(os.path.join(admin_dir, "sequencer", "todo"))
    except OSError:
        return 0
    return sum(1 for ln in todo.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))


def find_git_dir(start: str) -> str | None:
    """The git dir of the worktree at ``start`` from files alone ($GIT_DIR, a `.git`
    directory, or a `.git` file), or None; cheap enough for a hook's first step."""
    env = os.environ.get("GIT_DIR")
    if env:
        return os.path.join(start, env)
    found = checkout_of(start)
    return found[1] if found else None


def checkout_of(start: str) -> tuple[str, str] | None:
    """(worktree root, git dir) of the checkout containing ``start``, walking up to a `.git`
    directory or a `.git` file naming a linked worktree's git dir; None when there is none
    or the `.git` file is unreadable or not a ``gitdir:`` line."""
    d = os.path.abspath(start)
    while True:
        dotgit = os.path.join(d, ".git")
        if os.path.isdir(dotgit):
            return d, dotgit
        if os.path.isfile(dotgit):
            try:
                text = _read(dotgit).strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            return d, os.path.join(d, text[len("gitdir:"):].strip())
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def found_by_git(start: str) -> str | None:
    """The git dir git's own search finds from ``start``, from files alone; None when it
    finds none. Git searches from the physical directory (a link on the way is followed
    first) and, at each level up, takes a `.git` (a directory, or a file's ``gitdir:``
    line), else the directory itself when it looks like a git dir (a bare repository, or
    the inside of one). Where git would be stricter (an invalid `.git` it passes by), this
    still stops there: the answer names a repository git could use, never misses one."""
    d = os.path.realpath(start)
    while True:
        dotgit = os.path.join(d, ".git")
        if os.path.isdir(dotgit):
            return dotgit
        if os.path.isfile(dotgit):
            try:
                text = _read(dotgit).strip()
            except OSError:
                return dotgit  # (git stops at it too: unreadable is an error there)
            if not text.startswith("gitdir:"):
                return dotgit
            return os.path.join(d, text[len("gitdir:"):].strip())
        if os.path.lexists(os.path.join(d, "HEAD")) and (
                os.path.isdir(os.path.join(d, "objects"))
                or os.path.lexists(os.path.join(d, "commondir"))):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def of_repository(start: str, common: str) -> bool:
    """Whether git run in ``start`` works in the repository whose common dir is
    ``common``: in its main checkout or one of its linked worktrees (their git dirs are
    the common dir itself and the admin dirs under its ``worktrees/``), as git's own
    search finds it and as proximity's (checkout_of, which does not follow links first)
    does. A nested repository, a submodule or a `.git` file naming a git dir elsewhere is
    another repository: its config is not this repository's, and git reading that
    repository's index runs what its config names (core.fsmonitor)."""
    try:
        mine = os.path.realpath(common)
        found = [found_by_git(start), (checkout_of(start) or ("", None))[1]]
        return all(g is not None and _own_git_dir(os.path.realpath(g), mine)
                   for g in found)
    except (OSError, ValueError):
        return False


def _own_git_dir(gitdir: str, common: str) -> bool:
    if gitdir == common:
        return True
    return os.path.dirname(gitdir) == os.path.join(common, "worktrees") and \
        os.path.realpath(common_dir(gitdir)) == common


def common_of(start: str) -> str | None:
    """The common dir (real path) of the repository git's own search finds from
    ``start``, from files alone; None when there is none."""
    gitdir = found_by_git(start)
    return os.path.realpath(common_dir(gitdir)) if gitdir is not None else None


def operation_in_progress(admin_dir: str) -> str | None:
    """The multi-step git operation under way in a worktree, from its git dir alone.

    ``admin_dir`` is the worktree's own git dir (the common dir for the main checkout).
    Returns "rebase", "am", "cherry-pick", "revert", "merge" or "bisect", or None when
    nothing is in progress. Only ``stat`` calls (and one small read): hooks ask it before
    importing anything heavy.
    """
    j = os.path.join
    if os.path.isdir(j(admin_dir, "rebase-merge")):
        return "rebase"
    if os.path.isdir(j(admin_dir, "rebase-apply")):
        return "am" if os.path.exists(j(admin_dir, "rebase-apply", "applying")) else "rebase"
    if os.path.exists(j(admin_dir, "CHERRY_PICK_HEAD")):
        return "cherry-pick"
    if os.path.exists(j(admin_dir, "REVERT_HEAD")):
        return "revert"
    if os.path.isdir(j(admin_dir, "sequencer")):
        # a cherry-pick or revert of a range, between two of its commits
        try:
            first = _read(j(admin_dir, "sequencer", "todo")).split(None, 1)
        except OSError:
            first = []
        return "revert" if first[:1] in (["revert"], ["r"]) else "cherry-pick"
    if os.path.exists(j(admin_dir, "MERGE_HEAD")):
        return "merge"
    if os.path.exists(j(admin_dir, "BISECT_LOG")):
        return "bisect"
    return None


def head_commit(gitdir: str, common: str) -> str | None:
    """The commit HEAD names, from files (HEAD, then its loose branch ref); None when a
    packed ref or anything else would need git to say."""
    try:
        head = _read(os.path.join(gitdir, "HEAD")).strip()
        if head.startswith("ref: refs/heads/"):
            head = _read(os.path.join(common, head[5:])).strip()
    except (OSError, ValueError):
        return None
    ok = len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head)
    return head if ok else None


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def common_dir(gitdir: str) -> str:
    """The common git dir of the worktree whose git dir is ``gitdir`` (its ``commondir``
    file, else the git dir itself)."""
    try:
        rel = _read(os.path.join(gitdir, "commondir")).strip()
    except OSError:
        return gitdir
    return os.path.join(gitdir, rel) if rel else gitdir
