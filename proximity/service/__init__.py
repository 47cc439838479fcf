"""The resident service: one process per repository that keeps the airspace warm (``server``
runs it; ``warm`` is its state; ``fswatch`` watches the worktrees) and the thin ``client``
that hooks and commands ask it through. Imported by the thin hook path: keep this light."""
