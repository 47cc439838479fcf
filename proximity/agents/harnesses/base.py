"""What an agent harness adapter is: how to read the harness's tool event (what the call
is about to do: edit files, run a shell command, something else) and how to answer it in
the harness's own format. The decision itself is never the adapter's: every harness gets
the one answerer's (agents/answer.py).

An answer only ever narrows what the agent may do: a deny, or an ask. "allow" means
proximity has no objection, and a hook that said allow in its harness's terms would grant
a permission the person did not (Claude Code's allow skips the person's prompt). So every
adapter answers an allow with its harness's "no opinion" form, no decision field at all,
and the harness's own permission flow decides; a call that could not be judged says why
only where the harness shows text without deciding.

Events are other programs' JSON, read as data: a field of the wrong type is a
:class:`BadEvent` (the call is let through, saying why), never a crash.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from proximity.agents.edits import Edit, edits_of

Json = Mapping[str, object]  # a JSON object as read
Reply = dict[str, object]  # what the hook prints, as JSON


class BadEvent(ValueError):
    """An event that is not of the documented shape (the reason says what is wrong)."""


@dataclass(frozen=True)
class Edits:
    """A call that edits files: for each, its lines now and (where the event says) the
    file after the edit; an edit the harness will refuse itself is ``unplaced``."""

    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Command:
    """A call that runs a shell command (its text is data: only split, never run)."""

    command: str
    cwd: str


@dataclass(frozen=True)
class Other:
    """A call that edits no file of a worktree (``why`` says what it is)."""

    why: str


Ask = Edits | Command | Other


@dataclass(frozen=True)
class Said:
    """The one answerer's answer, before a harness's format: ``summary`` is one line for
    the person (the reason's first line), ``judged`` False when the call could not be
    judged, or not all of it (an unreadable event, a command it cannot read, an error of
    ours): let through, saying why."""

    decision: str  # allow | ask | deny
    reason: str
    summary: str
    judged: bool = True


@dataclass(frozen=True)
class Harness:
    """One agent harness: its name (``--hook NAME``), how it reads a pre-edit event
    (``read(event, default cwd)``), how it answers (``reply(said, event)``: a deny or an
    ask in the harness's terms, an allow as no decision at all), the files a
    post-edit event wrote (``edited``), how it hands the agent its messages after an
    edit (``context``; None: the harness reads nothing back from that hook), and the
    session's own directory (``home``: the event's cwd, never a directory the tool call
    itself names), whose repository is the one the hook judges for."""

    name: str
    read: Callable[[Json, str], Ask]
    reply: Callable[[Said, Json], Reply]
    edited: Callable[[Json, str], list[str]]
    context: Callable[[str], Reply] | None = None
    home: Callable[[Json, str], str] = lambda event, default: cwd_of(event, default)


def obj(value: object, what: str) -> Json:
    """``value`` as a JSON object, or BadEvent naming ``what``."""
    if not isinstance(value, Mapping):
        raise BadEvent(f"{what} is not an object")
    return value


def text(event: Json, key: str, default: str = "") -> str:
    """A string field (``default`` when absent); BadEvent when it is not a string."""
    value = event.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadEvent(f"{key} is not a string")
    return value


def flag(event: Json, key: str) -> bool:
    value = event.get(key, False)
    if not isinstance(value, bool):
        raise BadEvent(f"{key} is not true or false")
    return value


def path(event: Json, key: str, cwd: str) -> str:
    """A required file path field, absolute (relative ones are the event's cwd's)."""
    got = text(event, key)
    if not got:
        raise BadEvent(f"{key} is missing")
    if "\0" in got:
        raise BadEvent(f"{key} holds a NUL byte")
    return os.path.join(cwd, got)


def cwd_of(event: Json, default: str, key: str = "cwd") -> str:
    """The event's working directory, else the hook's own."""
    return text(event, key) or default


def whole(paths: list[str]) -> Edits:
    """Edits of whole files (a move, a deletion, a notebook): every line of each."""
    return Edits(tuple(Edit(p, None, None) for p in paths))


def replacement(ti: Json, file: str, old: str, new: str, every: bool = False) -> Edits:
    """An edit that replaces the text ``ti[old]`` by ``ti[new]`` in ``file`` (every
    occurrence with ``every``), by the lines it lies on now."""
    return Edits((edits_of(file, [(text(ti, old), text(ti, new), every)]),))
