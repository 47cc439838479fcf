"""Whether paths match an ignore rule, asked of git once and remembered while nothing that
decides it changed: the ``.gitignore`` of every directory on a path's way down from its
worktree's top, the repository's ``info/exclude``, the user's excludes file and the git
config files that may name another (their stat: a file rewritten at the same size within
one tick of the filesystem's clock is not seen, as git's racy index), the files those
include (and HEAD, for an include that depends on the branch). A snapshot asks it of a
file the worktree gained and of the paths a commit's index adds, each commit, each time a
`git` process."""

from __future__ import annotations

import os
from collections.abc import Sequence

from proximity.gitio.base import RepoCore
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.policyfiles import config_files, xdg_git_dir
from proximity.gitio.run import Where, _b, git

IGNORES_KEPT = 4096  # answers kept before they are asked again

Stamp = tuple[tuple[int, int, int, int] | None, ...]


def _stat(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def any_ignored(workdir: Where, paths: Sequence[str]) -> bool:
    """Whether any of ``paths`` matches an ignore rule (tracked or not: --no-index)."""
    return bool(ignored(workdir, paths))


def ignored(workdir: Where, paths: Sequence[str]) -> set[str]:
    """Those of ``paths`` that match an ignore rule (tracked or not: --no-index)."""
    proc = git(["check-ignore", "--no-index", "--stdin", "-z"], cwd=workdir,
               input=b"".join(_b(p) + b"\0" for p in paths), ok=(0, 1))
    if proc.returncode:
        return set()
    return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}


class Ignores(RepoCore):
    """Ignore answers remembered in a long-lived process (the resident service)."""

    def any_ignored_in(self, wt: WorktreeInfo, paths: Sequence[str]) -> bool:
        """Whether any of ``paths`` (relative to ``wt``) matches an ignore rule, tracked or
        not (run.any_ignored). A process that has not opened libgit2 (a hook judging
        in process) asks git every time: it asks once."""
        common = self._sources(wt) if self.warm() else None
        if common is None:
            return any_ignored(wt.at, paths)
        kept: dict[tuple[str, str], tuple[Stamp, bool]] = self.memo.setdefault(
            ("ignores",), {})
        stamps = {p: common + self._dirs(wt.path, p) for p in paths}
        answers = {}
        for p in paths:
            was = kept.get((wt.path, p))
            if was is not None and was[0] == stamps[p]:
                answers[p] = was[1]
        asked = [p for p in paths if p not in answers]
        if asked:
            hit = ignored(wt.at, asked)
            if len(kept) + len(asked) > IGNORES_KEPT:
                kept.clear()
            for p in asked:
                answers[p] = p in hit
                kept[(wt.path, p)] = (stamps[p], answers[p])
        return any(answers.values())

    def _sources(self, wt: WorktreeInfo) -> Stamp | None:
        """The stat of what decides every path's answer in ``wt`` but its directories'
        ``.gitignore`` files: the config files, the files they include (and the
        worktree's HEAD, where an include depends on the branch), and the excludes files
        they name. None: a config entry comes from no file (the command line, a blob):
        nothing is kept."""
        gitdir = wt.admin or self.common
        configs = tuple(_stat(p) for p in config_files(self.common, gitdir))
        seen: dict[str, tuple[Stamp, list[str] | None]] = self.memo.setdefault(
            ("excludes",), {})
        was = seen.get(wt.path)
        stamp = configs + tuple(_stat(f) for f in was[1]) if was and was[1] else configs
        if was is None or was[0] != stamp:  # (an included file may include another now)
            files = self._deciding(wt, gitdir)
            stamp = configs + tuple(_stat(f) for f in files) if files else configs
            was = seen[wt.path] = (stamp, files)
        return None if was[1] is None else stamp

    def _deciding(self, wt: WorktreeInfo, gitdir: str) -> list[str] | None:
        """The files besides git's own config files whose change may change an ignore
        answer in ``wt``: ``info/exclude``, every file an ``include.path`` or
        ``includeIf`` names (a condition that holds or not: git lists both), HEAD for an
        ``onbranch:`` one, and the excludes file; None: one cannot be named."""
        out = git(["config", "--show-origin", "--path", "-z", "--get-regexp",
                   r"^(core\.excludesfile|include)"], cwd=wt.at, ok=(0, 1)).stdout
        parts = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0")]
        files = [os.path.join(self.common, "info", "exclude")]
        named = os.path.join(xdg_git_dir(), "ignore")
        for origin, entry in zip(parts[0::2], parts[1::2], strict=False):
            key, _, value = entry.partition("\n")
            if not origin.startswith("file:"):
                return None
            # (relative: an include to the including file's directory, git's rule)
            where = os.path.dirname(os.path.join(wt.path, origin[len("file:"):]))
            if key == "core.excludesfile":
                named = os.path.join(wt.path, value) if value else named
            else:
                files.append(os.path.join(where, value))
                if key.startswith("includeif.onbranch:"):
                    files.append(os.path.join(gitdir, "HEAD"))
        return [*files, named]

    @staticmethod
    def _dirs(top: str, rel: str) -> Stamp:
        """The stat of the ``.gitignore`` of each directory from ``top`` down to
        ``rel``'s own."""
        parts = rel.split("/")[:-1]
        return tuple(_stat(os.path.join(top, *parts[:i], ".gitignore"))
                     for i in range(len(parts) + 1))
