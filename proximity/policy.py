"""The airspace's policy as commands and hooks read it, never raising: the committed file
and the repository's git config layered (``config`` parses and checks each), every setting
that cannot be used dropped and said with its file, key and line, so one merged typo never
switches the guard off in every worktree."""

from __future__ import annotations

import re
from typing import NamedTuple

from proximity.config import (
    GIT_NAMES,
    TRUSTED_ONLY,
    Config,
    Table,
    _coerce,
    disarms,
    from_layers,
    git_table,
    shown,
    table_of,
)
from proximity.errors import ConfigError


class Policy(NamedTuple):
    config: Config
    sources: list[str]  # where the settings came from, in order of precedence (lowest first)
    warnings: list[str]  # ignored keys and the like, for the user
    # the warnings that are errors in the configuration (a key dropped, a file unreadable):
    # hooks judge without them; a command the user runs stops at them (``strict``)
    faults: tuple[str, ...] = ()

    def strict(self) -> Config:
        """The config, or ConfigError naming every fault (for commands a user runs: they
        say so and stop, where a hook judges with what it could read)."""
        if self.faults:
            raise ConfigError("; ".join(self.faults))
        return self.config


def load_policy(committed: list[tuple[str, bytes | int]], shared: list[tuple[str, str]],
                local: list[tuple[str, str]], origin: str) -> Policy:
    """The airspace's policy from plain data: ``committed`` (file name, content, or the
    size of a file too large to read) found on the main checkout's HEAD (first with a
    table wins), ``shared`` the repository's git
    config entries, ``local`` every git config entry the user has (for trusted keys).

    Never raises: one merged typo must not switch the guard off in every worktree. A bad
    key (unknown, or a bad value) is dropped, a file that does not parse or a layer that
    contradicts itself counts as absent; each is a warning naming where (file and line)
    and is in ``faults``."""
    layers: list[tuple[str, Table]] = []
    sources: list[str] = []
    faults: list[str] = []
    texts: dict[str, str] = {}  # a committed file's content, by where: for line numbers
    for name, data in committed:
        where = f"{name} committed at {origin}"
        try:
            table = table_of(name, data, where)
        except ConfigError as e:
            faults.append(f"{e}; the defaults stand for it (fix it and commit)")
            break
        if table is not None and isinstance(data, bytes):
            # (a .proximity.toml without the header sets its keys at the top: line_of
            # looks anywhere when the header is absent)
            text = texts[where] = data.decode("utf-8", "replace")
            layers.append((where, _checked(table, where, text, "tool.proximity", faults)))
            sources.append(where)
            break
    bad: list[str] = []
    shared_table = {k: v for k, v in git_table(shared, bad).items() if k not in TRUSTED_ONLY}
    faults += bad
    shared_table = _checked(shared_table, "git config (repository)", None, None, faults)
    if shared_table:
        layers.append(("git config (repository)", shared_table))
        sources.append("git config (repository)")
    trusted_pairs = [(k, v) for k, v in local
                     if GIT_NAMES.get(k.lower().split(".")[-1]) in TRUSTED_ONLY]
    trusted = {k: v for k, v in git_table(trusted_pairs, faults).items()
               if k in TRUSTED_ONLY}
    trusted = _checked(trusted, "git config", None, None, faults)
    if trusted:
        sources.append("git config (trusted keys: " + ", ".join(sorted(trusted)) + ")")
    cfg, warnings = _lenient_layers(layers, trusted, faults, texts)
    # (an entry of the repository's own git config is read twice: as the shared layer and
    # among the user's entries for trusted keys; its fault is said once)
    faults = list(dict.fromkeys(faults))
    return Policy(cfg, sources or ["defaults"], list(dict.fromkeys(faults + warnings)),
                  tuple(faults))


def _checked(table: Table, where: str, text: str | None, section: str | None,
             faults: list[str]) -> Table:
    """``table`` without the keys that cannot be used (unknown, or a bad value), each
    said in ``faults`` with its line in ``text`` (the file's content) when there is one."""
    defaults = Config()
    known = set(Config._fields)
    good: Table = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        at = _at(where, text, key, section)
        if name not in known:
            faults.append(f"{at}: unknown setting {shown(key)} ignored (a typo, or a setting of "
                          "a newer proximity?)")
            continue
        if name == "weights" and isinstance(value, dict):
            kept = {}
            for channel, w in value.items():
                try:
                    _coerce(name, {channel: w}, None)
                except ConfigError as e:
                    sub = f"{section}.weights" if section else "weights"
                    faults.append(f"{_at(where, text, str(channel), sub)}: {e}; ignored")
                    continue
                kept[channel] = w
            good[key] = kept
            continue
        try:
            _coerce(name, value, getattr(defaults, name))
        except ConfigError as e:
            faults.append(f"{at}: {e}; {shown(key)} ignored")
            continue
        good[key] = value
    return good


def _lenient_layers(layers: list[tuple[str, Table]], trusted: Table,
                    faults: list[str], texts: dict[str, str]) -> tuple[Config, list[str]]:
    """from_layers, where the settings of a layer that contradict themselves or those
    below (tau_ta above tau_ra…), or that a committed file would disarm the guard with
    (config.disarms), are dropped with a fault naming their lines, instead of raising; the
    rest of that layer stands when it is sound without them. Disarming the guard is the
    local person's choice (git config, the environment, --no-verify), never a branch's."""
    kept: list[tuple[str, Table]] = []
    for where, table in layers:
        said = _unsound(kept, where, table)
        if said is None:
            kept.append((where, table))
            continue
        text = texts.get(where)
        culprits = [k for k in table if k.replace("-", "_") in said]
        rest = {k: v for k, v in table.items() if k not in culprits}
        lines = [f"line {n} ({k})" for k in culprits if text is not None
                 and (n := line_of(text, k, "tool.proximity")) is not None]
        at = f"{where}, {', '.join(lines)}" if lines else where
        if culprits and _unsound(kept, where, rest) is None:
            kept.append((where, rest))
            faults.append(f"{at}: {said}; {', '.join(map(repr, culprits))} ignored, the "
                          f"defaults stand for {'them' if len(culprits) > 1 else 'it'} "
                          "(fix it)")
            continue
        faults.append(f"{at}: {said}; every setting of it is ignored, the defaults "
                      "stand (fix it)")
    try:
        return from_layers(kept, trusted)
    except ConfigError as e:  # (each part was checked: a guard, never expected)
        faults.append(f"{e}; using the defaults")
        return Config(), []


def _unsound(kept: list[tuple[str, Table]], where: str, table: Table
             ) -> str | None:
    """What is wrong with ``table`` laid over ``kept`` (None: nothing): a contradiction,
    or, for a committed file, settings that disarm the guard."""
    try:
        cfg, _ = from_layers([*kept, (where, table)], {})
    except ConfigError as e:
        return str(e).removeprefix(f"{where}: ")
    return None if where.startswith("git config") else disarms(cfg)


def _at(where: str, text: str | None, key: str, section: str | None) -> str:
    """``where``, with the line of ``text`` that sets ``key`` when it can be found."""
    line = line_of(text, key, section) if text is not None else None
    return f"{where}, line {line}" if line else where


def line_of(text: str, key: str, section: str | None) -> int | None:
    """The line (from 1) of ``text`` (a TOML file) that sets ``key``: first looked for
    under the ``[section]`` header, then anywhere, then as a table of its own
    (``[section.key]``, ``[key]``); None when no line sets it."""
    if len(key) > 200:  # (no setting is named so: a branch's junk, not worth a search)
        return None
    lines = text.splitlines()
    setter = re.compile(r"\s*([\"']?)" + re.escape(key) + r"\1\s*=")
    start = 0
    if section is not None:
        header = re.compile(r"\s*\[\s*" + re.escape(section).replace(r"\.", r"\s*\.\s*")
                            + r"\s*\]")
        start = next((i + 1 for i, ln in enumerate(lines) if header.match(ln)), 0)
    for lo in (start, 0):
        for i in range(lo, len(lines)):
            if setter.match(lines[i]):
                return i + 1
    prefix = re.escape(section).replace(r"\.", r"\s*\.\s*") + r"\s*\.\s*" if section else ""
    table = re.compile(r"\s*\[\s*(?:" + prefix + r")?" + re.escape(key) + r"\s*\]")
    return next((i + 1 for i, ln in enumerate(lines) if table.match(ln)), None)
