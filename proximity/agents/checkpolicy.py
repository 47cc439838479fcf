"""Which decisions the pre-edit check denies on: ``--deny-on``, else git config
``proximity.checkPolicy`` (read only when a configuration file git reads has changed),
else Resolution Advisories only."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from proximity.checkargs import DENY_ON
from proximity.errors import ConfigError

if TYPE_CHECKING:
    from proximity import gitio


def deny_policy(given: str | None) -> str:
    """``--deny-on`` or git config ``proximity.checkPolicy`` (given), else ``ra``."""
    value = given or "ra"
    if value not in DENY_ON:
        raise ConfigError(f"proximity.checkPolicy = {value!r}: want one of "
                          f"{', '.join(DENY_ON)}")
    return value


# git config --get proximity.checkPolicy, kept by the state of every file git reads it
# from; a configuration that includes other files (their states are not known here) is
# asked every time
POLICY: dict[tuple[tuple[str, int, int, int] | None, ...], bytes] = {}


def config_files(repo: gitio.Repo) -> tuple[tuple[str, int, int, int] | None, ...] | None:
    """The state (inode, size, mtime) of each configuration file git reads for this
    worktree, or None when one includes others."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    names = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
             os.path.join(xdg, "git", "config"),
             os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             os.path.join(repo.common, "config"), os.path.join(repo.gitdir, "config.worktree")]
    out: list[tuple[str, int, int, int] | None] = []
    for name in names:
        try:
            st = os.stat(name)
            with open(name, "rb") as f:
                if b"include" in f.read().lower():
                    return None
        except OSError:
            out.append(None)
            continue
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)

