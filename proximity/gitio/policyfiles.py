"""What the airspace policy is read from: the config files committed on the main checkout's
HEAD and every ``proximity.*`` git config entry, in two git calls."""

from __future__ import annotations

import os

from proximity.configlimits import MAX_CONFIG_BYTES
from proximity.gitio.base import RepoCore
from proximity.gitio.run import Where, git

POLICY_FILES = (".proximity.toml", "pyproject.toml")  # committed on the main checkout's HEAD


def xdg_git_dir() -> str:
    """git's directory under the user's XDG config home (its config, its ignore file)."""
    home = os.path.expanduser("~")
    return os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
                        "git")


def config_files(common: str, gitdir: str) -> list[str]:
    """Every git config file git reads for the worktree whose git dir is ``gitdir``
    (``common``: the repository's), whether it exists or not; the files they include
    are not among them."""
    return [os.path.join(common, "config"), os.path.join(common, "config.worktree"),
            os.path.join(gitdir, "config.worktree"),
            os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(os.path.expanduser("~"),
                                                                ".gitconfig"),
            os.path.join(xdg_git_dir(), "config"),
            os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]


def _config_entries(cwd: Where) -> list[tuple[str, str, str]]:
    """Every ``proximity.*`` git config entry as (scope, key, value), in one git call."""
    proc = git(["config", "-z", "--show-scope", "--get-regexp", r"^proximity\."], cwd=cwd,
               ok=(0, 1))
    items = proc.stdout.decode("utf-8", "replace").split("\0")
    out = []
    for scope, item in zip(items[0::2], items[1::2], strict=False):
        key, _, value = item.partition("\n")
        out.append((scope, key, value))
    return out


def policy_inputs(repo: RepoCore) -> tuple[list[tuple[str, bytes | int]],
                                          list[tuple[str, str]], list[tuple[str, str]], str]:
    """(config files committed on the main checkout's HEAD, the repository's shared git
    config entries, every git config entry the user has, a name for that HEAD). A
    committed file over the size limit is given as its size, unread: a branch that
    commits a huge file costs every hook one header, not the file."""
    names = tuple(f"HEAD:{name}" for name in POLICY_FILES)
    proc = git(["--git-dir", repo.common, "cat-file", "--batch-check"], cwd=repo.common,
               input="".join(n + "\n" for n in names).encode())
    found: list[tuple[str, int]] = []
    for name, line in zip(names, proc.stdout.decode("ascii", "replace").splitlines(),
                          strict=False):
        f = line.split()
        if len(f) == 3 and f[1] == "blob" and f[2].isdigit():
            found.append((name, int(f[2])))
    small = [n for n, size in found if size <= MAX_CONFIG_BYTES]
    contents: dict[str, bytes] = {}
    if small:
        data = git(["--git-dir", repo.common, "cat-file", "--batch"], cwd=repo.common,
                   input="".join(n + "\n" for n in small).encode()).stdout
        for name in small:
            nl = data.find(b"\n")
            header, data = data[:nl].split(), data[nl + 1:]
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                contents[name] = data[:size]
                data = data[size + 1:]
    committed: list[tuple[str, bytes | int]] = [
        (name.split(":", 1)[1], contents.get(name, size)) for name, size in found]
    entries = _config_entries(repo.here)
    # "local" is the repository's own config in the common dir, shared by every worktree
    shared = [(k, v) for scope, k, v in entries if scope == "local"]
    return committed, shared, [(k, v) for _, k, v in entries], "the main checkout's HEAD"
