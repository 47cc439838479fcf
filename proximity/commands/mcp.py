"""`proximity mcp`: serve the check / check_merge / status / intend / inbox tools over MCP on
stdio."""

from __future__ import annotations

import argparse
import os

from proximity.errors import FatalError


def run(args: argparse.Namespace) -> int:
    try:
        from proximity.mcp import server as mcp_server  # lazy: a broken SDK install is reported
    except ImportError as e:  # the SDK is a dependency; a broken install says so clearly
        raise FatalError(f"the MCP server needs the `mcp` package ({e}); "
                         "pip install 'mcp>=2'") from e
    mcp_server.serve(os.path.abspath(args.repo or os.getcwd()))
    return 0
