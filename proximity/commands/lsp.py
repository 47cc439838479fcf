"""`proximity lsp`: the language server on stdio, for any editor (proximity.lsp)."""

from __future__ import annotations

import argparse

from proximity.errors import FatalError


def run(args: argparse.Namespace) -> int:
    try:
        from proximity.lsp import server  # lazy: pygls is imported by this command alone
    except ImportError as e:  # a dependency; a broken install says so clearly
        raise FatalError(f"the language server needs pygls and lsprotocol ({e}); "
                         "pip install 'pygls>=2' lsprotocol") from e
    server.serve()
    return 0
