"""Live state: opening a repository's workspace for a command (repository, policy, ledger and
the facts a scan needs) and recording a worktree's state as a ledger event."""
