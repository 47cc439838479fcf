"""A person in an editor, for the benchmarks: the package's own client of `proximity lsp`
(proximity/lsp/client.py), which drives the server over stdio as an editor does.

    from lsp_human import Human
    with Human(worktree) as h:
        h.open("src/app.py")
        h.change("src/app.py", new_text)          # unsaved
        ds = h.diagnostics("src/app.py")
"""

from __future__ import annotations

from proximity.lsp.client import Editor as Human

__all__ = ["Human"]
