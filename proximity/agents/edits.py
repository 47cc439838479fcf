"""What an agent's edit does to a file, from the harness's event alone: the lines of the
current file it replaces (git's coordinates, the context an agent adds to make a string
unique left out) and, where the event carries it, the file's text after the edit. Pure but
for reading the file as it is now."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import NamedTuple

from proximity.agents.scratch import MAX_READ, TooLarge, read_capped
from proximity.model import Range


def _target(path: str) -> bytes | TooLarge | None:
    """A file an edit targets, read to place the edit; past MAX_READ its size: the edit is
    judged as the whole file, unread (a path an agent names may be a log of gigabytes)."""
    return read_capped(path, MAX_READ)


class Edit(NamedTuple):
    path: str
    ranges: tuple[Range, ...] | None  # lines of the current file; None: the whole file
    result: str | None  # the whole file after the edit; None: not known from the event
    # why the harness will refuse this edit itself (its text is not in the file): nothing
    # is edited, so nothing is judged
    unplaced: str | None = None


class Target(NamedTuple):
    """An edit as the check reads it: its path from the worktree's root."""

    path: str  # relative to the worktree root, '/'-separated
    ranges: tuple[Range, ...] | None  # lines of the current file; None: the whole file
    result: bytes | None = None  # the whole file after the edit, when the harness says


class Applied(NamedTuple):
    ranges: tuple[Range, ...] | None
    result: str | None
    unplaced: str | None = None  # the text of an edit that is nowhere in the file


def lines_of(text: str, needle: str, every: bool = False) -> list[Range] | None:
    """1-based line ranges where ``needle`` occurs in ``text`` (None: not found/empty)."""
    if not needle:
        return None
    out: list[Range] = []
    at = text.find(needle)
    while at >= 0:
        first = text.count("\n", 0, at) + 1
        body = needle[:-1] if needle.endswith("\n") else needle
        out.append((first, first + body.count("\n")))
        if not every:
            break
        at = text.find(needle, at + len(needle))
    return out or None


def read_text(path: str) -> str | None:
    """The file as text, its line ends made "\n" as a harness shows them (None: no file,
    or one past MAX_READ)."""
    data = _target(path)
    return None if data is None or isinstance(data, TooLarge) else _decoded(data, False)[0]


def _decoded(data: bytes, raw: bool) -> tuple[str, bool]:
    """The file's bytes as text (``raw``: its line ends as they are, for an edit whose
    strings carry "\r\n"), and whether that text is the file's exactly: bytes that are
    not UTF-8 are read as replacement characters, and a result built from them would not
    be what the edit writes (a U+FFFD the file itself holds is read as it is)."""
    try:
        return _ends(data.decode("utf-8"), raw), True
    except UnicodeDecodeError:
        return _ends(data.decode("utf-8", "replace"), raw), False


def encoded(result: str) -> bytes | None:
    """A file's text after an edit as its bytes: a byte that was not UTF-8 stands in it as
    itself (surrogateescape, as edits_of reads such a file); a text that cannot be bytes
    (a lone surrogate a front end sent) has no result."""
    try:
        return result.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None


def _ends(text: str, raw: bool) -> str:
    """Line ends as a harness shows them ("\n", Python's universal newlines), or as
    they are (``raw``)."""
    return text if raw else text.replace("\r\n", "\n").replace("\r", "\n")


def _kept(old: str, new: str) -> tuple[int, int]:
    """How many whole lines an edit leaves as they were at the start and at the end of its
    ``old_string``: the context an agent adds to make the string unique (Claude Code
    requires it) is not an edit of those lines. A pure insertion keeps all of them: its
    range is then the empty one at the insertion point."""
    return common_ends(_lines(old), _lines(new))


def _lines(text: str) -> list[str]:
    """``text``'s lines, each with its newline (a last one without): a whole line that an
    edit deletes (new_string "") is not the same line as the nothing it leaves."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def common_ends(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """How many lines ``a`` and ``b`` share at the start, then how many more at the end
    (never the same line twice: the end is counted in what the start left)."""
    lead = 0
    while lead < min(len(a), len(b)) and a[lead] == b[lead]:
        lead += 1
    trail = 0
    while trail < min(len(a), len(b)) - lead and a[-1 - trail] == b[-1 - trail]:
        trail += 1
    return lead, trail


def apply(text: str, edits: Sequence[tuple[str, str, bool]]) -> Applied:
    """Where each ``old_string`` lies in ``text`` and the text after the edits. An edit
    that matches only text an earlier edit of the same call produced lies in that earlier
    edit's lines already; one whose text is nowhere (or empty, in a file that exists) is
    refused by the harness itself: ``unplaced`` says so, and nothing is edited."""
    now: str | None = text
    out: list[Range] = []
    for n, (old, new, every) in enumerate(edits):
        found = lines_of(text, old, every)
        if found is None and (not old or now is None or old not in now):
            which = f"edit {n + 1} of {len(edits)}: its" if len(edits) > 1 else "its"
            return Applied(None, None, f"{which} old_string is empty" if not old else
                           f"{which} old_string is not in the file")
        lead, trail = _kept(old, new)
        out += [(lo + lead, hi - trail) for lo, hi in found or []]
        if now is not None:  # (text an earlier edit removed: the result is not known)
            now = (None if old not in now else
                   now.replace(old, new) if every else now.replace(old, new, 1))
    return Applied(tuple(sorted(set(out))) or None, now)


def edits_of(path: str, edits: Sequence[tuple[str, str, bool]]) -> Edit:
    """The lines of the current file an Edit / MultiEdit (old_string → new_string)
    replaces, and the file it leaves. A file that does not exist is made by an edit of an
    empty old_string (the whole file); any other edit of it, and one whose text is nowhere
    in the file, the harness refuses itself (``unplaced``)."""
    data = _target(path)  # (once: each reading below is of these bytes)
    if isinstance(data, TooLarge):
        return Edit(path, None, None)  # (the whole file, unread)
    if data is None:
        if edits and not edits[0][0]:
            return Edit(path, None, edits[0][1] if len(edits) == 1 else None)
        return Edit(path, None, None, "the file does not exist")
    text, exact = _decoded(data, False)
    got = apply(text, edits)
    if got.unplaced is not None and any("\r" in old for old, _new, _all in edits):
        again = apply(_decoded(data, True)[0], edits)  # a CRLF file's edit given with its ends
        if again.unplaced is None:
            got = again
    if got.unplaced is not None:
        return Edit(path, None, None, got.unplaced)
    # the result only of a file read as it is (see _decoded); one that is not UTF-8 has
    # it where every string is ASCII, applied to its bytes as they are (each byte that is
    # not UTF-8 kept as itself: surrogateescape), which any encoding writes alike
    result = got.result if exact else None
    if not exact and all(old.isascii() and new.isascii() for old, new, _all in edits):
        kept = apply(_ends(data.decode("utf-8", "surrogateescape"), False), edits)
        result = kept.result if kept.unplaced is None else None
    return Edit(path, got.ranges, result)


def write_of(path: str, content: object) -> list[Edit]:
    """A whole-file write judged by the lines it changes in the file as it is now: all of
    a new file; nothing when the content is the same."""
    if not isinstance(content, str):
        return [Edit(path, None, None)]
    data = _target(path)
    if isinstance(data, TooLarge):
        return [Edit(path, None, None)]  # (the whole file, unread)
    current = None if data is None else _decoded(data, False)[0]
    if current is None:
        return [Edit(path, None, content)]  # a new file: all of it is the edit
    changed = written_lines(current, content)
    return [Edit(path, changed, content)] if changed != () else []


def written_lines(current: str, content: str) -> tuple[Range, ...] | None:
    """The lines of ``current`` a whole-file write of ``content`` changes, as git's diff
    would name them (a pure insertion before line s is the empty range (s, s-1)); () when
    nothing changes, None when the file is too large to diff here (then: the whole file)."""
    old, new = current.splitlines(keepends=True), content.splitlines(keepends=True)
    if len(old) + len(new) > WRITE_DIFF_LINES:
        return None
    out: list[Range] = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, old, new,
                                                          autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out.append((i1 + 1, i2))  # (insert: i1 == i2, the empty range before line i1+1)
    return tuple(out)


WRITE_DIFF_LINES = 200_000  # lines past which a Write is judged as the whole file
