"""Errors with a defined exit code and a message meant for a person."""

from __future__ import annotations


class FatalError(RuntimeError):
    """A known failure: printed as one clear line, exit code 1."""

    exit_code = 1


class DamagedObject(FatalError):
    """A loose object of the repository's that libgit2 would wedge on (gitio/loose.py)."""


class NotARepository(FatalError):
    pass


class NoSuchDirectory(NotARepository):
    """The directory named to run in (``-C``) does not exist: bad usage."""

    exit_code = 2


class GitTooOld(FatalError):
    pass


class LedgerError(FatalError):
    """The ledger cannot be used (corrupt, newer schema, unwritable)."""

    exit_code = 4


class LedgerUnwritable(LedgerError):
    """The ledger is intact but cannot be written (a read-only mount, a full disk, no
    permission): it can still be read."""


class LedgerBusy(LedgerError):
    """Another process held the ledger's write lock for longer than this command waits."""


class GitTimeout(FatalError):
    """A git subprocess ran past its time limit (it was killed)."""


class ConfigError(FatalError):
    exit_code = 2


class UsageError(FatalError):
    """A request the command cannot answer as given (a directory where a file is wanted,
    a path outside the worktree, a malformed line range): exit code 2, never 1 (which
    `check` uses for ask/deny)."""

    exit_code = 2
