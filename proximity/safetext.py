"""Text that came from somebody else's tree, branch, remote or file, made safe to show: one
printable line, no control characters or terminal escape sequences, bounded length. Every
front end (hook output, check answers, the editor's diagnostics, views) shows foreign text
through these. Standard library only."""

from __future__ import annotations

import re

SHOW = 200  # characters shown of a foreign string unless the caller says otherwise

# escape sequences first (CSI, OSC, two-byte ESC, 8-bit CSI), then any lone control
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069"
                       "\ufeff\ud800-\udfff]+")


def text(value: object, limit: int = SHOW) -> str:
    """``value`` as one printable line: no control characters or escape sequences, at most
    ``limit`` characters (a longer string ends with "…")."""
    s = value if isinstance(value, str) else str(value)
    if len(s) > 4 * limit + 64:  # bound the work before looking at it
        s = s[: 4 * limit + 64]
    s = _CONTROLS.sub("?", _ESCAPES.sub("", s))
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "…"


def opt_text(value: object, limit: int = SHOW) -> str | None:
    return None if value is None else text(value, limit)


def is_clean(s: str) -> bool:
    return _CONTROLS.search(s) is None and _ESCAPES.search(s) is None


def depth(raw: str) -> int:
    """Maximum nesting of ``[``/``{`` in a JSON text, without parsing it (strings skipped)."""
    deepest = level = 0
    in_str = escaped = False
    for ch in raw:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest
