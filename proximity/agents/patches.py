"""What an ``apply_patch`` call will do to each file, read from the patch alone: Codex's (and
GitHub Copilot's) patch language (``*** Begin Patch`` … ``*** End Patch`` with ``Add File``,
``Delete File``, ``Update File`` and ``Move to`` sections of ``@@`` hunks).

Each hunk is placed in the file as it is now the way Codex's own ``apply_patch`` places
it (its lines sought in order, exactly first, then ignoring trailing, then surrounding
whitespace), so the lines it changes are named in the current file's coordinates and the
file after the patch is known: the pre-edit check then judges them like any other edit.
A hunk that cannot be placed is one Codex refuses too: nothing of that file is edited.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import NamedTuple

from proximity.agents.edits import Edit, read_text
from proximity.model import Range

MAX_PATCH = 4 << 20  # characters of one patch read (a larger one is not judged)


class BadPatch(ValueError):
    """Not a patch in that language: the call is allowed with the reason."""


class Chunk(NamedTuple):
    context: str | None  # the text after ``@@``: a line the hunk lies after
    lines: tuple[tuple[str, str], ...]  # (" " | "-" | "+", text)
    eof: bool  # ``*** End of File``: the hunk ends the file


class FileOp(NamedTuple):
    kind: str  # add | delete | update
    path: str
    move_to: str | None = None
    chunks: tuple[Chunk, ...] = ()
    content: str = ""  # add: the new file


HEREDOC = re.compile(r"\A\s*apply_patch\s+<<-?\s*(['\"]?)(\w+)\1[ \t]*\n(.*)\n\2\s*\Z", re.S)


def patch_text(command: str) -> str | None:
    """The patch a shell command ``apply_patch <<'EOF' … EOF`` carries (None: not one)."""
    m = HEREDOC.match(command)
    return m.group(3) if m else None


def parse(text: str) -> list[FileOp]:
    """The file sections of a patch; BadPatch when it is not one."""
    if len(text) > MAX_PATCH:
        raise BadPatch(f"a patch of {len(text)} characters is not read")
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines or lines[0].strip() != "*** Begin Patch" or \
            lines[-1].strip() != "*** End Patch":
        raise BadPatch("not an apply_patch patch (*** Begin Patch … *** End Patch)")
    body, ops, i = lines[1:-1], [], 0
    while i < len(body):
        head = body[i].strip()
        i += 1
        if head.startswith("*** Add File: "):
            added = []
            while i < len(body) and body[i].startswith("+"):
                added.append(body[i][1:])
                i += 1
            ops.append(FileOp("add", _path(head), content="".join(s + "\n" for s in added)))
        elif head.startswith("*** Delete File: "):
            ops.append(FileOp("delete", _path(head)))
        elif head.startswith("*** Update File: "):
            move = None
            if i < len(body) and body[i].strip().startswith("*** Move to: "):
                move = _path(body[i].strip())
                i += 1
            chunks, i = _chunks(body, i)
            ops.append(FileOp("update", _path(head), move, tuple(chunks)))
        elif head:
            raise BadPatch(f"unexpected line in a patch: {head[:80]!r}")
    return ops


def _path(header: str) -> str:
    path = header.split(": ", 1)[1].strip()
    if not path or "\0" in path:
        raise BadPatch("a file section names no file")
    return path


SECTION = ("*** Add File: ", "*** Delete File: ", "*** Update File: ")


def _chunks(body: Sequence[str], i: int) -> tuple[list[Chunk], int]:
    """The hunks of an Update File section from ``body[i]``, and where the section ends."""
    chunks: list[Chunk] = []
    context: str | None = None
    lines: list[tuple[str, str]] = []
    eof = started = False

    def close() -> None:
        if started:
            chunks.append(Chunk(context, tuple(lines), eof))

    while i < len(body) and not body[i].strip().startswith(SECTION):
        line, i = body[i], i + 1
        if line.strip().startswith("@@"):
            close()
            context, lines, eof, started = line.strip()[2:].strip() or None, [], False, True
        elif line.strip() == "*** End of File":
            eof = True
        elif line[:1] in (" ", "-", "+"):
            started = True
            lines.append((line[0], line[1:]))
        elif not line:
            started = True
            lines.append((" ", ""))
        else:
            raise BadPatch(f"not a hunk line: {line[:80]!r}")
    close()
    if not chunks:
        raise BadPatch("an Update File section has no hunk")
    return chunks, i


def seek(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """Where ``pattern`` starts in ``lines`` at or after ``start`` (``eof``: try the end
    first), matched exactly, then ignoring trailing, then surrounding whitespace: as
    Codex's apply_patch seeks it."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    for first in ((len(lines) - len(pattern), start) if eof else (start,)):
        for norm in (_exact, str.rstrip, str.strip):
            want = [norm(p) for p in pattern]
            for at in range(first, len(lines) - len(pattern) + 1):
                if all(norm(lines[at + k]) == w for k, w in enumerate(want)):
                    return at
    return None


def _exact(s: str) -> str:
    return s


class Placed(NamedTuple):
    ranges: tuple[Range, ...]  # lines of the current file the hunks change
    result: str  # the file after the patch


def place(text: str, chunks: Sequence[Chunk]) -> Placed | None:
    """The hunks placed in ``text`` (None: one cannot be, and Codex refuses the patch)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    at, ranges = 0, []
    edits: list[tuple[int, int, list[str]]] = []
    for ch in chunks:
        if ch.context is not None:
            found = seek(lines, [ch.context], at, False)
            if found is None:
                return None
            at = found + 1
        body = list(ch.lines)
        old = [t for op, t in body if op != "+"]
        if not old:  # a pure addition: after its @@ line, else at the end of the file
            where = at if ch.context is not None and not ch.eof else len(lines)
            edits.append((where, 0, [t for _, t in body]))
            ranges.append((where + 1, where))
            continue
        start = seek(lines, old, at, ch.eof)
        if start is None and old[-1] == "":
            body = body[:max(i for i, (op, _) in enumerate(body) if op != "+")]
            old = old[:-1]
            start = seek(lines, old, at, ch.eof)
        if start is None:
            return None
        ranges += _changed(body, start)
        edits.append((start, len(old), [t for op, t in body if op != "-"]))
        at = start + len(old)
    for start, n, new in sorted(edits, reverse=True):
        lines[start:start + n] = new
    return Placed(tuple(sorted(set(ranges))), "".join(s + "\n" for s in lines))


def _changed(body: Sequence[tuple[str, str]], start: int) -> list[Range]:
    """The current file's lines one placed hunk changes: its removed lines, and an empty
    range (p+1, p) where it only adds lines after line p."""
    out: list[Range] = []
    pos, run_from, removed = start, None, False  # pos: 0-based line the hunk is at
    for op, _ in (*body, (" ", "")):
        if op == "-":
            if run_from is None:
                run_from = pos
            removed = True
            pos += 1
        elif op == "+":
            if run_from is None:
                run_from = pos
        else:
            if run_from is not None:
                out.append((run_from + 1, pos) if removed else (run_from + 1, run_from))
            run_from, removed = None, False
            pos += 1
    return out


def edits_of(text: str, cwd: str) -> list[Edit]:
    """What a patch does to each file, as edits of the files as they are now (paths made
    absolute from ``cwd``): an added file is all new; a deleted one is edited whole; a
    moved one is an edit of all of its old path and a new file at the new one. BadPatch
    when ``text`` is not a patch."""
    out: list[Edit] = []
    for op in parse(text):
        path = os.path.join(cwd, op.path)
        if op.kind == "add":
            out.append(Edit(path, None, op.content))
        elif op.kind == "delete":
            out.append(Edit(path, None, None))
        else:
            current = read_text(path)
            placed = None if current is None else place(current, op.chunks)
            if placed is None:
                out.append(Edit(path, None, None, "the file does not exist" if current is None
                                else "its hunks are not in the file"))
            elif op.move_to is not None:
                out += [Edit(path, None, None),
                        Edit(os.path.join(cwd, op.move_to), None, placed.result)]
            else:
                out.append(Edit(path, placed.ranges, placed.result))
    return out


def paths_of(text: str, cwd: str) -> list[str]:
    """Every file a patch writes or removes (absolute), for recording after it ran."""
    out: list[str] = []
    for op in parse(text):
        out.append(os.path.join(cwd, op.path))
        if op.move_to is not None:
            out.append(os.path.join(cwd, op.move_to))
    return out
