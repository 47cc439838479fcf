"""Unified-diff hunks: parse git's ``-U0`` output, map lines to base coordinates, and cut a
short, bounded excerpt of the other side's change for messages.

Base-side ranges follow :mod:`proximity.analysis.intervals`: a hunk that removes or replaces lines
``s..e`` of the base is ``(s, e)``; a pure insertion after base line ``p`` is ``(p + 1, p)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from proximity.analysis import intervals
from proximity.model import Range

MAX_LINES = 20
MAX_BYTES = 2048
MAX_LINE_CHARS = 160
HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Hunk(NamedTuple):
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: tuple[str, ...]  # "-old", "+new" (and " context") lines, without newlines

    @property
    def base(self) -> Range:
        """Base-side range as git's merge sees it."""
        if self.old_lines == 0:
            return (self.old_start + 1, self.old_start)
        return (self.old_start, self.old_start + self.old_lines - 1)

    @property
    def header(self) -> str:
        return (f"@@ -{self.old_start},{self.old_lines} "
                f"+{self.new_start},{self.new_lines} @@")

    def added(self) -> list[str]:
        return [ln[1:] for ln in self.lines if ln.startswith("+")]


class FileDiff(NamedTuple):
    """One path's change: its hunks, and whether git could show lines at all."""

    hunks: tuple[Hunk, ...]
    binary: bool = False
    new_file: bool = False
    deleted: bool = False
    retyped: bool = False  # a file made a link or a link a file (git merges no lines there)
    large: bool = False  # past what the check reads whole: compared whole, no lines (binary)

    @property
    def changed(self) -> bool:
        return bool(self.hunks) or self.binary

    def base_ranges(self) -> tuple[Range, ...] | None:
        """The base lines it changed; None when it has no line information (binary)."""
        if self.binary:
            return None
        return tuple(h.base for h in self.hunks)


def parse(text: str) -> dict[str, FileDiff]:
    """path (new side, or old side for a deletion) -> its diff, from `git diff` output."""
    out: dict[str, FileDiff] = {}
    path = ""
    hunks: list[Hunk] = []
    flags = {"binary": False, "new_file": False, "deleted": False}
    cur: list[str] | None = None
    head: tuple[int, int, int, int] | None = None

    def close_hunk() -> None:
        nonlocal cur, head
        if head is not None and cur is not None:
            hunks.append(Hunk(*head, tuple(cur)))
        cur, head = None, None

    def close_file() -> None:
        close_hunk()
        if path:
            out[path] = FileDiff(tuple(hunks), **flags)

    for line in text.split("\n"):
        if line.startswith("diff --git "):
            close_file()
            path, hunks = _git_path(line), []
            flags = {"binary": False, "new_file": False, "deleted": False}
            continue
        if cur is not None and line[:1] in ("+", "-", " ", "\\"):
            if line[:1] != "\\":
                cur.append(line)
            continue
        m = HEADER.match(line)
        if m:
            close_hunk()
            a, b, c, d = m.groups()
            head = (int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d))
            cur = []
        elif (line.startswith("+++ ") and line[4:] != "/dev/null") or (
                line.startswith("--- ") and line[4:] != "/dev/null" and not path):
            path = _strip_prefix(line[4:])
        elif line.startswith("new file mode"):
            flags["new_file"] = True
        elif line.startswith("deleted file mode"):
            flags["deleted"] = True
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            flags["binary"] = True
    close_file()
    return out


def _strip_prefix(p: str) -> str:
    p = p.rstrip("\t")
    if p.startswith('"') and p.endswith('"'):
        p = p[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode(
            "latin-1", "replace").decode("utf-8", "replace")
    return p[2:] if p[:2] in ("a/", "b/") else p


def _git_path(line: str) -> str:
    rest = line[len("diff --git "):]
    # "a/x b/x": the two halves are equal without renames; take the second
    half = len(rest) // 2
    return _strip_prefix(rest[half + 1:]) if rest[:half] and len(rest) % 2 == 1 else ""


def to_base(ranges: Iterable[Range], own: Sequence[Hunk]) -> list[Range]:
    """Map line ranges of the *current* file (after ``own`` changes) to base lines.

    Lines outside ``own`` hunks shift by the hunks above them; a line inside one of its
    hunks stands for that hunk's base range (an edit there rewrites those base lines).
    """
    hs = sorted(own, key=lambda h: h.new_start)

    def where(n: int, side: int) -> int:
        shift = 0
        for h in hs:
            last = h.new_start + h.new_lines - 1
            if h.new_lines and h.new_start <= n <= last:
                return h.base[side]
            if (last if h.new_lines else h.new_start) >= n:
                break
            shift += h.old_lines - h.new_lines
        return n + shift

    out = []
    for s, e in ranges:
        # an insertion (e < s) is read as touching the line below it too: one line clear
        # of another insertion is where git's diff of a trunk that holds several may slide
        # them together (a swarm of 20 on one changelog: 14 conflicts at landing when it
        # was read as only the place between)
        a, b = where(s, 0), where(max(e, s), 1)
        out.append((a, max(b, a - 1)))
    return out


def from_base(ranges: Iterable[Range], own: Sequence[Hunk]) -> list[Range]:
    """Map base lines to lines of the *current* file (after ``own`` changes): the reverse
    of ``to_base``. Lines outside ``own`` hunks shift by the hunks above them; a base line
    ``own`` rewrote stands for what replaced it (a deletion: the empty range where it was).
    An empty range (s, s-1), "after line s-1", stays empty after that line's new place."""
    hs = sorted(own, key=lambda h: h.old_start)

    def where(n: int, side: int) -> int:
        shift = 0
        for h in hs:
            if h.old_lines:
                first, last = h.old_start, h.old_start + h.old_lines - 1
                if first <= n <= last:
                    if h.new_lines:
                        return h.new_start + (h.new_lines - 1 if side else 0)
                    return h.new_start + (0 if side else 1)
                if first > n:
                    break
            elif h.old_start >= n:  # inserted after line old_start: below n
                break
            shift += h.new_lines - h.old_lines
        return n + shift

    out = []
    for s, e in ranges:
        if e < s:
            p = where(s - 1, 1)
            out.append((p + 1, p))
            continue
        a, b = where(s, 0), where(e, 1)
        out.append((a, max(b, a - 1)))
    return out


def contested(diff: FileDiff, mine: Sequence[Range] | None) -> list[Hunk]:
    """The other side's hunks that touch ``mine`` (None: the whole file)."""
    if mine is None:
        return list(diff.hunks)
    hit = {id(h) for h in diff.hunks
           if intervals.touching([h.base], list(mine))}
    return [h for h in diff.hunks if id(h) in hit]


def nearest(diff: FileDiff, mine: Sequence[Range], limit: int = 2) -> list[Hunk]:
    """The other side's hunks closest to ``mine`` (for traffic in the same file)."""
    def dist(h: Hunk) -> int:
        g = intervals.gap([h.base], list(mine))
        return 10**9 if g is None else g

    return sorted(diff.hunks, key=dist)[:limit]


def excerpt(hunks: Iterable[Hunk], max_lines: int = MAX_LINES,
            max_bytes: int = MAX_BYTES) -> str:
    """A short unified-diff excerpt: at most ``max_lines`` lines and ``max_bytes`` bytes."""
    lines: list[str] = []
    total = 0
    dropped = 0
    for h in hunks:
        for ln in (h.header, *h.lines):
            if len(ln) > MAX_LINE_CHARS:
                ln = ln[:MAX_LINE_CHARS] + "…"
            size = len(ln.encode("utf-8", "replace")) + 1
            if len(lines) >= max_lines - 1 or total + size > max_bytes - 40:
                dropped += 1
                continue
            lines.append(ln)
            total += size
    if dropped:
        lines.append(f"… ({dropped} more diff lines)")
    return "\n".join(lines)


def clip(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> str:
    """Bound an already rendered excerpt (for text arriving from elsewhere)."""
    lines = text.split("\n")
    out = "\n".join(lines[:max_lines])
    if len(out.encode("utf-8", "replace")) > max_bytes:
        out = out.encode("utf-8", "replace")[: max_bytes - 4].decode("utf-8", "ignore") + "…"
    return out


# -- the other side's hunk for a pair's contested lines (messages, advisories) -----------
PAIR_PATHS = 3
PAIR_LINES = 12
PAIR_BYTES = 1200


def of_pair(repo: Any, p: Any, other: Any) -> dict[str, str]:
    """path -> a bounded excerpt of ``other``'s change of the lines a pair contests.

    ``p`` is a model.PairResult, ``other`` the model.Agent whose change to show (its
    snapshot tree against the pair's merge base). Never raises: a message without a hunk
    is better than no message.
    """
    try:
        if not getattr(other, "tree", None):
            return {}
        first = other.id == p.a
        files: dict[str, list[Range]] = {}
        for f in p.findings:
            if f.score <= 0 or f.channel not in ("conflict", "overlap", "symbol"):
                continue
            path, ranges = f.side(first)
            if path:
                files.setdefault(path, []).extend(ranges)
        paths = list(files)[:PAIR_PATHS]
        if not paths:
            return {}
        parsed = parse(repo.tree_diff(p.base, other.tree, paths))
        moved = repo.moves(p.base, other.tree) \
            if any(d.new_file or d.deleted for d in parsed.values()) else {}
        back = {old: new for new, old in moved.items()}
        out = {}
        for path in paths:
            d = parsed.get(path)
            note = ""
            src, dst = moved.get(path, path), back.get(path, path)
            if src != path or dst != path:  # a move: its own changes, named as a move
                got = parse(repo.moved_diff(p.base, other.tree, src, dst))
                d = got.get(dst) or got.get(path)
                note = (f"(moved: {src} -> {dst}; "
                        f"{'its changes there' if d and d.hunks else 'no line changed'})")
            if d is None or (not d.hunks and not note):
                continue
            ranges = files[path]
            hs = (contested(d, ranges) or nearest(d, ranges)) if ranges and d.hunks \
                else list(d.hunks)
            shown = excerpt(hs, PAIR_LINES, PAIR_BYTES) if hs else ""
            out[path] = "\n".join(x for x in (note, shown) if x)
        return out
    except Exception:
        return {}
