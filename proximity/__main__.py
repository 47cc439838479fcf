from __future__ import annotations

from proximity.main import main

raise SystemExit(main())
