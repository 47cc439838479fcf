"""JSON text of plain data without the `json` package: the hook's thin path writes its
requests and pending notes with it, and importing `json` (re, enum, decoder...) costs a hook
more than its whole request. Standard library only (the C accelerator `_json`)."""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # (not typing's: hooks import this module)
if TYPE_CHECKING:
    from typing import Any


def dumps(value: Any) -> str:
    """JSON text of plain data (str, int, float, bool, None, lists, dicts), without the
    `json` package (whose import costs a hook more than its whole request)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if isinstance(value, (int, float)):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            raise ValueError("not a JSON number")
        return text
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot send {type(value).__name__}")
