"""``python -m proximity.service COMMON_GIT_DIR``: how a client starts the resident service
(the name the shell hook and clients recognise the process by)."""

from __future__ import annotations

from proximity.service.server import main

if __name__ == "__main__":
    raise SystemExit(main())
