"""Settings from ``[tool.proximity]`` in pyproject.toml or ``.proximity.toml``."""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

from proximity.errors import ConfigError

CHANNELS = ("conflict", "overlap", "symbol", "dependency", "tree")
DEFAULT_WEIGHTS = {
    "conflict": 1.0,  # exact: git's own merge says so
    "overlap": 1.0,  # touching ranges are what git's merge conflicts on
    "symbol": 0.9,  # a changed interface that the other side's new code uses
    "dependency": 0.5,  # an import alone warns (traffic), never blocks by itself
    "tree": 0.15,  # soft prior
}


class Config(NamedTuple):
    """Immutable settings (a NamedTuple: hooks import it on every commit, cheaply)."""

    weights: dict[str, float] = DEFAULT_WEIGHTS  # never mutated; from_table makes a copy
    tau_ta: float = 0.35
    tau_ra: float = 0.70
    gamma: float = 0.5
    depth_cap: int = 4
    hub_degree: int = 30  # a file with more importers than this is a hub: damped in transit
    near_lines: int = 6  # unchanged lines between two edits still counted as "approaching"
    max_diff_bytes: int = 8_000_000
    exclude: tuple[str, ...] = ()
    notify: str | None = None
    cooldown_hops: int = 4
    cooldown_seconds: float = 900.0
    block_commit: bool = False
    sync: bool = False
    sync_remote: str | None = None
    machine_id: str | None = None
    closure_escalate: float = 0.15  # risk gained per hop that escalates an advisory early
    retain_events: int = 500  # per worktree, before gc compacts
    sync_exclude: tuple[str, ...] = ()  # globs never published by `sync` (besides secrets)
    sync_max_bytes: int = 1_000_000  # files larger than this are never published by `sync`
    large_bytes: int = 2_000_000  # a file larger than this is "large": not hashed or parsed
    long_line: int = 5_000  # a source line longer than this marks generated/minified code

    def excluded(self, path: str) -> bool:
        if not self.exclude:
            return False
        import fnmatch

        return any(fnmatch.fnmatch(path, pat) for pat in self.exclude)


def _coerce(name: str, value: Any, default: Any) -> Any:
    if name == "weights":
        if not isinstance(value, dict):
            raise ConfigError("[tool.proximity] weights must be a table of channel = number")
        out = dict(DEFAULT_WEIGHTS)
        for k, v in value.items():
            if k not in CHANNELS:
                raise ConfigError(f"[tool.proximity.weights] unknown channel {k!r}; "
                                  f"known: {', '.join(CHANNELS)}")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
                raise ConfigError(f"[tool.proximity.weights] {k} must be a number in [0, 1]")
            out[k] = float(v)
        return out
    if name in ("exclude", "sync_exclude"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"[tool.proximity] {name} must be a list of glob strings")
        return tuple(value)
    if isinstance(default, bool) or name in ("block_commit", "sync"):
        if not isinstance(value, bool):
            raise ConfigError(f"[tool.proximity] {name} must be true or false")
        return value
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"[tool.proximity] {name} must be a non-negative number")
        return type(default)(value)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"[tool.proximity] {name} must be a string")
    return value


def from_table(table: dict[str, Any]) -> Config:
    defaults = Config()
    known = set(Config._fields)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in known:
            raise ConfigError(f"[tool.proximity] unknown setting {key!r}")
        changes[name] = _coerce(name, value, getattr(defaults, name))
    cfg = defaults._replace(**changes)
    if not 0 < cfg.tau_ta <= cfg.tau_ra <= 1:
        raise ConfigError("[tool.proximity] need 0 < tau_ta <= tau_ra <= 1")
    if not 0 < cfg.gamma <= 1:
        raise ConfigError("[tool.proximity] gamma must be in (0, 1]")
    return cfg


def load(root: str) -> Config:
    """Settings for the repository whose worktree is ``root`` (first file found wins)."""
    for name in (".proximity.toml", "pyproject.toml"):
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from e
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e}") from e
        table = data.get("tool", {}).get("proximity")
        if table is None and name == ".proximity.toml":
            table = {k: v for k, v in data.items() if k != "tool"}
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(f"{path}: [tool.proximity] must be a table")
            try:
                return from_table(table)
            except ConfigError as e:
                raise ConfigError(f"{path}: {e}") from e
    return Config()
