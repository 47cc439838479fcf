"""The PROXIMITY_* environment variables a person sets, each read here and checked against
its range: a value out of range is the default, said once per process in one line (a typo
must neither switch something off unannounced nor turn a time limit into "stop at once").

Standard library only: the hook's thin client reads these. docs/configuration.md lists
every variable with its range.
"""

from __future__ import annotations

import os
import sys

_SAID: set[str] = set()  # variables warned about in this process


def _warn(name: str, raw: str, expected: str, using: str) -> None:
    if name in _SAID:
        return
    _SAID.add(name)
    shown = raw if len(raw) <= 40 and raw.isprintable() else repr(raw[:40]) + "…"
    print(f"proximity: warning: {name}={shown} is not {expected}; {using}", file=sys.stderr)


def switch(name: str, default: bool, meaning: str) -> bool:
    """A variable that is 1 (on) or 0 (off); unset or empty: ``default``, and anything
    else too, said once (``meaning``: what that default does, for the warning)."""
    raw = os.environ.get(name, "")
    if raw in ("0", "1"):
        return raw == "1"
    if raw:
        _warn(name, raw, "1 or 0", meaning)
    return default


def seconds(name: str, low: float, high: float) -> float | None:
    """A number of seconds in [``low``, ``high``]; None when unset (the caller's default)
    or out of range (said once)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")  # (math's own is one more library for every hook)
    if low <= value <= high:  # (NaN is in no range)
        return value
    _warn(name, raw, f"a number of seconds from {low:g} to {high:g}", "using the default")
    return None


def skip() -> bool:
    """PROXIMITY_SKIP=1: every proximity hook does nothing for this command."""
    return switch("PROXIMITY_SKIP", False, "proximity runs (PROXIMITY_SKIP=1 skips it)")


def allow() -> bool:
    """PROXIMITY_ALLOW=1: let a blocked commit or push through."""
    return switch("PROXIMITY_ALLOW", False, "a push that must yield stays blocked "
                  "(PROXIMITY_ALLOW=1 lets it through)")


def service() -> bool:
    """PROXIMITY_SERVICE=0 turns the resident service off (on by default)."""
    return switch("PROXIMITY_SERVICE", True, "the resident service is used "
                  "(PROXIMITY_SERVICE=0 turns it off)")


GIT_TIMEOUT = (1.0, 86_400.0)  # a git call stopped sooner than a second is no limit but a fault
SERVICE_IDLE = (1.0, 7 * 86_400.0)


def machine_id() -> str | None:
    """PROXIMITY_MACHINE_ID: this machine's id among those sharing a remote, a ref name
    component (None: unset, or not such a name, said once: the next source decides)."""
    raw = os.environ.get("PROXIMITY_MACHINE_ID", "")
    if not raw:
        return None
    if len(raw) <= 64 and raw[0] not in ".-" and all(
            c.isascii() and (c.isalnum() or c in "._-") for c in raw):
        return raw
    _warn("PROXIMITY_MACHINE_ID", raw, "a name of at most 64 letters, digits, '.', '_' "
          "and '-'", "using the configured or generated machine id")
    return None


def git_timeout() -> float | None:
    """PROXIMITY_GIT_TIMEOUT: the time limit of every git call (None: each call's own)."""
    return seconds("PROXIMITY_GIT_TIMEOUT", *GIT_TIMEOUT)


def service_idle(default: float) -> float:
    """PROXIMITY_SERVICE_IDLE: how long an idle service lives."""
    value = seconds("PROXIMITY_SERVICE_IDLE", *SERVICE_IDLE)
    return default if value is None else value
