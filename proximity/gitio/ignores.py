"""Whether paths match an ignore rule, asked of git once and remembered while nothing that
decides it changed: the ``.gitignore`` of every directory on a path's way down from its
worktree's top, the repository's ``info/exclude``, the user's excludes file and the git
config files that may name another (their stat: a file rewritten at the same size within
one tick of the filesystem's clock is not seen, as git's racy index; where the config
includes other files, nothing is kept). A snapshot asks it of a file the worktree gained
and of the paths a commit's index adds, each commit, each time a `git` process."""

from __future__ import annotations

import os
from collections.abc import Sequence

from proximity.gitio.base import RepoCore
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.run import Where, _b, git

IGNORES_KEPT = 4096  # answers kept before they are asked again

Stamp = tuple[tuple[int, int, int, int] | None, ...]


def _stat(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _config_files(common: str, gitdir: str) -> list[str]:
    """Every git config file git reads here (a change of any may name another excludes
    file), as the service's policy key lists them."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(common, "config"), os.path.join(common, "config.worktree"),
            os.path.join(gitdir, "config.worktree"),
            os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
            os.path.join(xdg, "git", "config"),
            os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]


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
        ``.gitignore`` files: the config files, and the excludes files they name. None:
        the config includes other files (``include.path``, ``includeIf``: another file,
        or the branch checked out, may name another excludes file unseen), so nothing is
        kept."""
        gitdir = wt.admin or self.common
        configs = tuple(_stat(p) for p in _config_files(self.common, gitdir))
        seen: dict[str, tuple[Stamp, list[str] | None]] = self.memo.setdefault(
            ("excludes",), {})
        was = seen.get(wt.path)
        if was is None or was[0] != configs:
            out = git(["config", "--path", "-z", "--get-regexp",
                       r"^(core\.excludesfile|include)"], cwd=wt.at, ok=(0, 1)).stdout
            entries = [e.decode("utf-8", "surrogateescape").partition("\n")
                       for e in out.split(b"\0") if e]
            named = [value for key, _, value in entries if key == "core.excludesfile"]
            home = os.path.expanduser("~")
            xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
            files = None if any(key.startswith("include") for key, _, _ in entries) else [
                os.path.join(self.common, "info", "exclude"),
                os.path.join(wt.path, named[-1]) if named and named[-1] else
                os.path.join(xdg, "git", "ignore")]
            was = seen[wt.path] = (configs, files)
        if was[1] is None:
            return None
        return configs + tuple(_stat(f) for f in was[1])

    @staticmethod
    def _dirs(top: str, rel: str) -> Stamp:
        """The stat of the ``.gitignore`` of each directory from ``top`` down to
        ``rel``'s own."""
        parts = rel.split("/")[:-1]
        return tuple(_stat(os.path.join(top, *parts[:i], ".gitignore"))
                     for i in range(len(parts) + 1))
