"""Settings: one policy per airspace, and what only local configuration may say.

**Policy** (thresholds, weights, exclusions, block settings) is the same for every worktree
of a repository, so both sides of a pair always compute the same advisory and no worktree
can switch its own guard off: it is read from the config file *committed on the main
checkout's HEAD* (``.proximity.toml``, else ``[tool.proximity]`` of ``pyproject.toml``),
then overridden by ``proximity.*`` keys of the repository's shared git config. A worktree's
uncommitted edit of the file, or a branch's committed one, changes nothing until it is
committed on the main checkout.

**Trusted keys** run a command, send data or claim an identity (``notify``, ``sync``,
``sync_remote``, ``machine_id``): they come only from ``git config`` (the user's own
configuration, any scope), never from a file that a checked-out branch provides; such a
key in a committed file is ignored with a warning. ``load`` reads a file from a directory
(tests, ``doctor``); ``policy.load_policy`` is what commands and hooks use.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from proximity import configlimits
from proximity.errors import ConfigError

CHANNELS = ("conflict", "overlap", "approach", "symbol", "dependency", "tree")
# Channel values are calibrated probabilities (proximity/calibration_table.py), so every
# channel enters the noisy-OR at face value; a weight below 1 says "trust this channel less".
DEFAULT_WEIGHTS = dict.fromkeys(CHANNELS, 1.0)


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
    # a teammate's snapshot holding an object larger than this is never fetched by `sync`
    sync_fetch_max_bytes: int = 4_000_000
    large_bytes: int = 2_000_000  # a file larger than this is "large": not hashed or parsed
    long_line: int = 5_000  # a source line longer than this marks generated/minified code

    def excluded(self, path: str) -> bool:
        if not self.exclude:
            return False
        return _matcher(self.exclude)(path) is not None


@functools.lru_cache(maxsize=8)
def _matcher(globs: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    """One regular expression for a whole glob list, compiled once per list: fnmatch's own
    cache holds 256 patterns, so a longer list recompiled every glob for every path."""
    import fnmatch

    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)).match


MAX_NUMBER = 1e12  # larger settings are typos, and would overflow ints
# a glob list is compiled into one expression every process reads it with: bounded so a
# committed list costs a hook milliseconds (256 globs compile in ~30 ms)
MAX_GLOBS = 256
MAX_GLOB_CHARS = 256
# paths of every shape a repository holds: an exclude list that matches each of them
# leaves the guard nothing to judge
PROBE_PATHS = ("f", "f.py", "src/f.py", "docs/guide/f.md", ".f", "a/b/c/d/e/f.c",
               "Makefile", "pkg/__init__.py", "x y/z-1.txt", "UPPER/CASE.RS", "-")
TRUSTED_ONLY = ("notify", "sync", "sync_remote", "machine_id")
POLICY_FILES = (".proximity.toml", "pyproject.toml")
# a settings table as a file (TOML) or git config gives it: data a branch provides,
# narrowed where each value is read
Table = dict[str, object]


def _finite(v: float) -> bool:
    """Whether a number is finite (an integer of thousands of digits is not a setting:
    math.isfinite cannot even convert it)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _coerce(name: str, value: object, default: object) -> object:
    if name == "weights":
        if not isinstance(value, dict):
            raise ConfigError("[tool.proximity] weights must be a table of channel = number")
        out = dict(DEFAULT_WEIGHTS)
        for k, v in value.items():
            if k not in CHANNELS:
                raise ConfigError(f"[tool.proximity.weights] unknown channel {shown(k)}; "
                                  f"known: {', '.join(CHANNELS)}")
            if (not isinstance(v, (int, float)) or isinstance(v, bool) or not _finite(v)
                    or not 0 <= v <= 1):
                raise ConfigError(f"[tool.proximity.weights] {k} must be a number in [0, 1]")
            out[k] = float(v)
        return out
    if name in ("exclude", "sync_exclude"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"[tool.proximity] {name} must be a list of glob strings")
        if len(value) > MAX_GLOBS:
            raise ConfigError(f"[tool.proximity] {name} has {len(value)} globs (at most "
                              f"{MAX_GLOBS})")
        long = next((v for v in value if len(v) > MAX_GLOB_CHARS), None)
        if long is not None:
            raise ConfigError(f"[tool.proximity] {name} has a glob of {len(long)} characters "
                              f"(at most {MAX_GLOB_CHARS}): {shown(long)}")
        return tuple(value)
    if isinstance(default, bool) or name in ("block_commit", "sync"):
        if not isinstance(value, bool):
            raise ConfigError(f"[tool.proximity] {name} must be true or false")
        return value
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not _finite(value) or value < 0 or value > MAX_NUMBER):
            raise ConfigError(f"[tool.proximity] {name} must be a finite non-negative number "
                              f"(got {shown(value)})")
        return type(default)(value)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"[tool.proximity] {name} must be a string")
    return value


def shown(value: object) -> str:
    """A value from a config file as a message may quote it: short, on one line, however
    long or deeply nested it is (a file is data a branch provides)."""
    import reprlib

    class Short(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            # (a hexadecimal one of 5,000 digits parses; its decimal form is past Python's
            # limit on converting it, and quoting it raised)
            if x.bit_length() > 256:
                return f"<an integer of {x.bit_length()} bits>"
            return super().repr_int(x, level)

    r = Short()
    r.maxstring, r.maxother, r.maxlevel, r.maxlist, r.maxdict = 60, 60, 2, 4, 4
    return r.repr(value)


def disarms(cfg: Config) -> str | None:
    """Why settings leave the guard nothing it could ever block, or None. Every channel
    certain (each r = 1) gives the highest risk the weights allow; below tau_ra no pair
    is ever a resolution advisory. An exclude list that matches paths of every shape
    leaves nothing to judge."""
    best = 1.0 - math.prod(1.0 - w for w in cfg.weights.values())
    if best < cfg.tau_ra:
        return (f"weights that can never reach tau_ra = {cfg.tau_ra:g} (at most {best:.2f} "
                "with every channel certain): the guard could never block a push")
    if cfg.exclude and all(cfg.excluded(p) for p in PROBE_PATHS):
        return "an exclude that matches every path: the guard would judge nothing"
    return None


def from_table(table: Table) -> Config:
    defaults = Config()
    known = set(Config._fields)
    changes: dict[str, Any] = {}  # each value checked against its field's default (_coerce)
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in known:
            raise ConfigError(f"[tool.proximity] unknown setting {shown(key)}")
        changes[name] = _coerce(name, value, getattr(defaults, name))
    cfg = defaults._replace(**changes)
    if not 0 < cfg.tau_ta <= cfg.tau_ra <= 1:
        raise ConfigError("[tool.proximity] need 0 < tau_ta <= tau_ra <= 1")
    if not 0 < cfg.gamma <= 1:
        raise ConfigError("[tool.proximity] gamma must be in (0, 1]")
    return cfg


def _toml(data: bytes | int, where: str) -> Table:
    """The parsed document, refused before any parsing when it is too large or nests too
    deeply (``data`` an int: the size of a file that was not read, being too large)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    why = configlimits.too_large(data if isinstance(data, int) else len(data))
    if why is not None or isinstance(data, int):
        raise ConfigError(f"{where}: {why or 'not read'}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML: {e}") from e
    why = configlimits.too_deep(text)
    if why is not None:
        raise ConfigError(f"{where}: {why}")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = _error_line(str(e), data)
        at = f"{where}, line {line}" if line else where
        raise ConfigError(f"{at}: not valid TOML: {e}") from e
    except RecursionError as e:  # (a guard: the nesting is bounded above)
        raise ConfigError(f"{where}: nested too deeply to parse") from e
    except ValueError as e:  # a value the parser refuses past its syntax: an integer of
        # thousands of digits (Python's limit on converting them)
        raise ConfigError(f"{where}: not valid TOML: {str(e).split(';')[0]}") from e


def _error_line(message: str, data: bytes) -> int | None:
    """The line a TOML error is at: tomllib's "(at line N, …)", or the last line for
    "(at end of document)" (an unclosed list or table, where it gives no number)."""
    import re

    m = re.search(r"at line (\d+)", message)
    if m:
        return int(m.group(1))
    if "end of document" in message:
        return data.count(b"\n") + (0 if data.endswith(b"\n") else 1) or 1
    return None


def table_of(name: str, data: bytes | int, where: str) -> Table | None:
    """The proximity table of one config file's content (None: the file has none);
    ``data`` an int: the size of a file too large to have been read. A pyproject.toml that
    never names proximity has no table of it, and is not parsed (another tool's large
    tables cost no hook anything)."""
    if name == "pyproject.toml" and isinstance(data, bytes) and b"proximity" not in data:
        return None
    doc = _toml(data, where)
    tool = doc.get("tool", {})
    table = tool.get("proximity") if isinstance(tool, dict) else None
    if table is None and name == ".proximity.toml":
        table = {k: v for k, v in doc.items() if k != "tool"}
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.proximity] must be a table")
    return table


def load(root: str) -> Config:
    """Settings of the config file in directory ``root`` (first file found wins), with
    trusted-only keys ignored. For the policy commands use, see ``load_policy``."""
    for name in POLICY_FILES:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data: bytes | int = f.read(size + 1) if size <= configlimits.MAX_CONFIG_BYTES \
                    else size
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e}") from e
        table = table_of(name, data, path)
        if table is not None:
            return from_layers([(path, table)], {})[0]
    return Config()


GIT_NAMES = {f.replace("_", ""): f for f in Config._fields}
# proximity.* git config keys that are not airspace policy: the command that reads the key
# checks it (check: proximity.checkPolicy); here they are no unknown setting
READ_ELSEWHERE = frozenset(("checkpolicy",))


def git_table(pairs: list[tuple[str, str]], bad: list[str] | None = None
              ) -> Table:
    """``proximity.*`` git config entries (key, value as git prints them) as a table:
    numbers and booleans parsed, repeated keys (``exclude``) as lists, ``weights.X``.
    ``bad``: where an entry that cannot be read is dropped and said (None: it raises)."""
    table: Table = {}
    for key, raw in pairs:
        try:
            _git_entry(table, key, raw)
        except ConfigError as e:
            if bad is None:
                raise
            bad.append(f"{e}; ignored (fix it, or `git config --unset {key}`)")
    return table


def _git_entry(table: Table, key: str, raw: str) -> None:
    parts = key.lower().split(".")
    if len(parts) == 3 and parts[1] == "weights":
        weights = table.setdefault("weights", {})
        assert isinstance(weights, dict)  # (only this function writes the table)
        weights[parts[2]] = _scalar(raw, key)
        return
    if len(parts) == 2 and parts[1] in READ_ELSEWHERE:
        return
    name = GIT_NAMES.get(parts[-1]) if len(parts) == 2 else None
    if name is None:
        raise ConfigError(f"git config {key}: unknown proximity setting")
    if name in ("exclude", "sync_exclude"):
        globs = table.setdefault(name, [])
        assert isinstance(globs, list)
        globs.append(raw)
    elif isinstance(getattr(Config(), name), (bool, int, float)):
        table[name] = _scalar(raw, key)
    else:
        table[name] = raw


def _scalar(raw: str, key: str) -> bool | int | float:
    low = raw.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(low)
    except ValueError:
        pass
    try:
        return float(low)
    except ValueError:
        raise ConfigError(f"git config {key}: {raw!r} is not a number or boolean") from None


def from_layers(policy: list[tuple[str, Table]], trusted: Table
                ) -> tuple[Config, list[str]]:
    """Merge policy tables (later wins) and the trusted table into one Config."""
    merged: Table = {}
    warnings: list[str] = []
    for where, table in policy:
        for key, value in table.items():
            name = key.replace("-", "_")
            if name in TRUSTED_ONLY and not where.startswith("git config"):
                warnings.append(f"{where}: '{key}' ignored: it runs or sends, so only "
                                f"`git config proximity.{key.replace('_', '')}` may set it")
                continue
            before = merged.get("weights")
            if name == "weights" and isinstance(value, dict) and isinstance(before, dict):
                value = {**before, **value}
            merged[name] = value
        try:
            from_table(merged)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from e
    for key, value in trusted.items():
        if key in TRUSTED_ONLY:
            merged[key] = value
    return from_table(merged), warnings
