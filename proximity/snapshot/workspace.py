"""Opening a repository for a command: the repository, its policy, its ledger (or why there
is none), and which worktree we run in."""

from __future__ import annotations

import os
import sys

from proximity import config, gitio
from proximity.analysis import parsers
from proximity.errors import LedgerError, LedgerUnwritable
from proximity.ledger import Ledger
from proximity.policy import load_policy


class Context:
    """An open repository: its config, its ledger (or why there is none), and which
    worktree (agent id) we run in."""

    def __init__(self, repo: gitio.Repo, cfg: config.Config, ledger: Ledger | None,
                 ledger_error: str | None, here: str, recording_off: str | None = None
                 ) -> None:
        self.repo, self.cfg, self.ledger = repo, cfg, ledger
        self.ledger_error, self.here = ledger_error, here
        # why the ledger, open for reading only, records nothing (None: it is writable)
        self.recording_off = recording_off
        self.memo: dict[object, object] | None = None  # the resident service's (Facts.memo)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
        self.repo.close()


def open_context(path: str | None = None, *, need_ledger: bool = False,
                 check_git: bool = True, strict: bool = True, say: bool = True) -> Context:
    """``check_git=False``: the snapshot hook uses only plumbing older than the floor that
    scans need (merge-tree --write-tree), so it skips the `git --version` round trip.
    ``strict=False`` (hooks, the service): a bad setting in the policy is a warning and
    the rest judges; a command the user runs stops at it (ConfigError). ``say=False``: the
    policy's warnings are left to another hook of the same git command."""
    if check_git:
        gitio.require_git()
    repo = gitio.Repo(path or os.getcwd(), fast=not check_git)
    policy = load_policy(*gitio.policy_inputs(repo))
    cfg = policy.strict() if strict else policy.config
    for w in policy.warnings if say else ():
        warn(w)
    repo.large_bytes = cfg.large_bytes
    parsers.configure(cfg.large_bytes, cfg.long_line)
    ledger = None
    err = off = None
    try:
        ledger = Ledger(repo.ecm_dir)
    except LedgerUnwritable as e:
        if need_ledger:
            raise
        # what the other worktrees recorded can still be read, so what can be judged is
        ledger, off = _read_only(repo.ecm_dir), str(e)
        err = None if ledger is not None else off
    except LedgerError as e:
        if need_ledger:
            raise
        err = str(e)
    here = gitio.agent_id(repo.gitdir, repo.common)
    return Context(repo, cfg, ledger, err, here, off)


def _read_only(ecm_dir: str) -> Ledger | None:
    try:
        return Ledger(ecm_dir, create=False, read_only=True)
    except LedgerError:
        return None


def warning_line(msg: str) -> str:
    return f"proximity: warning: {msg}"


def warn(msg: str) -> None:
    print(warning_line(msg), file=sys.stderr)
