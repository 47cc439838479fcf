"""Errors with a defined exit code and a message meant for a person."""

from __future__ import annotations


class FatalError(RuntimeError):
    """A known failure: printed as one clear line, exit code 1."""

    exit_code = 1


class NotARepository(FatalError):
    pass


class GitTooOld(FatalError):
    pass


class LedgerError(FatalError):
    """The ledger cannot be used (corrupt, newer schema, unwritable)."""

    exit_code = 4


class LedgerBusy(LedgerError):
    """Another process held the ledger's write lock for longer than this command waits."""


class GitTimeout(FatalError):
    """A git subprocess ran past its time limit (it was killed)."""


class ConfigError(FatalError):
    exit_code = 2
