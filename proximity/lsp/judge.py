"""What the editor shows for one document: the check's decisions turned into findings on
the buffer's lines. Two questions, both through ``answer.ask``: the whole file (where does
any sibling work in it: information on their lines) and the person's own work in it (the
lines the buffer changed since HEAD, with the buffer as the edit's result: a warning or an
error where it would conflict, in the check's own words)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import NamedTuple

from proximity.agents import decision, definitions
from proximity.agents.edits import WRITE_DIFF_LINES, written_lines
from proximity.analysis import hunks, intervals
from proximity.model import Range
from proximity.safetext import text as shown

ERROR, WARNING, INFO = "error", "warning", "info"


class Finding(NamedTuple):
    """One thing to show on lines of the buffer (1-based, inclusive; an empty range
    (s, s-1) is the place after line s-1)."""

    lines: Range
    severity: str  # error | warning | info
    message: str
    agent: str
    branch: str | None
    hunk: str  # the sibling's change there, as the check shows it
    evidence: str
    decision: str  # the check's decision for the person's edit (allow for information)


def own_lines(buffer: str, head: str | None) -> tuple[Range, ...] | None:
    """The buffer's lines that differ from HEAD's file: the person's live work in it
    (saved or not, uncommitted). () when none; None: too large to diff (the whole file)."""
    return written_lines(buffer, head or "")


def too_large(buffer: str, head: str) -> bool:
    """Whether the two are too large to diff here (the whole file is the person's then)."""
    return buffer.count("\n") + head.count("\n") > WRITE_DIFF_LINES


def typed_lines(diff: str) -> tuple[Range, ...]:
    """The new side's lines of a `git diff -U0` from HEAD's file to the buffer (a pure
    deletion: the empty range where it was)."""
    return tuple(sorted((h.new_start, h.new_start + h.new_lines - 1) if h.new_lines
                        else (h.new_start + 1, h.new_start)
                        for d in hunks.parse(diff).values() for h in d.hunks))


def siblings(info: decision.Decision, rel: str, buffer_lines: int) -> list[Finding]:
    """Information on each sibling's lines, from the whole-file decision (``info``)."""
    out: list[Finding] = []
    for c in info.conflicts:
        if c.path != rel or c.evidence not in ("conflict", "intent") or c.lines is None:
            continue
        pieces = split_hunk(c.hunk, len(c.lines))
        for rng, piece in zip(c.lines, pieces, strict=True):
            what = ("declared it will touch these lines (`proximity intend`)"
                    if c.evidence == "intent" else
                    "is changing these lines (live work, uncommitted included)")
            first = next((ln[1:] for ln in piece.split("\n") if ln.startswith("+")), "")
            out.append(Finding(
                clamp(rng, buffer_lines), INFO,
                f"{who(c)} {what}" + (f": {shown(first.strip(), 120)}" if first.strip() else ""),
                c.agent, c.branch, piece, c.evidence, decision.ALLOW))
    return out


def conflicts(edit: decision.Decision | None, mine: Sequence[Range], buffer_lines: int
              ) -> list[Finding]:
    """Warnings and errors on the person's own lines, from the decision for them
    (``edit``; None: they have no lines of their own in the file)."""
    out: list[Finding] = []
    if edit is not None and edit.decision != decision.ALLOW:
        top = edit.conflicts[0] if edit.conflicts else None
        for c in edit.conflicts:
            if c.level == decision.INFO:
                continue
            if c.right_of_way:
                # this side's to go on with (they steer): information, never a warning a
                # person would stop at while the other side waits on them
                severity, message = INFO, f"proximity: you have right-of-way here: {c.detail}"
            else:
                severity = ERROR if edit.decision == decision.DENY and c.level == decision.RA \
                    else WARNING
                words = edit.reason if c is top else c.detail
                message = f"proximity check: {edit.decision.upper()}: {words}"
            for rng in placed(c, mine):
                out.append(Finding(clamp(rng, buffer_lines), severity, message, c.agent,
                                   c.branch, c.hunk, c.evidence, edit.decision))
    return out


def broken_calls(sigs: Sequence[tuple[str, str | None, definitions.Signature]], text: str,
                 rel: str, buffer_lines: int) -> list[Finding]:
    """A warning on each call in the buffer of a function a sibling changed the header of
    (defined in another file: one changed here is the line evidence's), with the new
    signature: the call may no longer match it at merge."""
    theirs = [(a, b, s) for a, b, s in sigs if s.path != rel]
    out: list[Finding] = []
    for line, name in definitions.calls(text, sorted({s.name for _, _, s in theirs})):
        for agent, branch, s in theirs:
            if s.name != name:
                continue
            c = Finding((line, line), WARNING, "", agent, branch,
                        f"+{s.header}", "symbol", decision.ASK)
            out.append(c._replace(
                lines=clamp((line, line), buffer_lines),
                message=f"{who(c)} changed the signature of {shown(name)} in "
                        f"{shown(s.path, 300)}:{s.line}: `{shown(s.header, 200)}`; this call "
                        "may no longer match it at merge"))
    return out


def remap(found: Sequence[Finding], old: str, new: str, buffer_lines: int) -> list[Finding]:
    """Findings made for the buffer's text ``old``, moved to where their lines are in
    ``new`` (the same sibling lines, after the person's keystrokes: no question asked)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    steps = [hunks.Hunk(i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1,
                        j2 - j1, ())
             for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
                 None, a, b, autojunk=False).get_opcodes() if tag != "equal"]
    return [f._replace(lines=clamp(hunks.from_base([f.lines], steps)[0], buffer_lines))
            for f in found]


def placed(c: decision.Conflict, mine: Sequence[Range]) -> list[Range]:
    """Where a conflict with the person's edit is shown: their own lines that touch the
    sibling's (a conflict, traffic near it), the call a sibling's change leaves unbound,
    else their first changed lines."""
    if c.evidence == "symbol" and c.lines:
        return list(c.lines[:1])  # a call the edit writes that their change leaves unbound
    if c.lines is not None and c.path and c.evidence in ("conflict", "near", "merges"):
        hit = sorted({m for m, _ in intervals.touching(list(mine), list(c.lines))})
        if hit:
            return hit
        if c.lines:
            return list(c.lines[:1])
    return list(mine[:1]) or [(1, 1)]


def split_hunk(hunk: str, count: int) -> list[str]:
    """The check's excerpt of several hunks, one piece per hunk (in order; the pieces it
    cut off are empty)."""
    pieces: list[list[str]] = []
    for ln in hunk.split("\n") if hunk else []:
        if ln.startswith("@@") or not pieces:
            pieces.append([])
        pieces[-1].append(ln)
    got = ["\n".join(p) for p in pieces[:count]]
    return got + [""] * (count - len(got))


def clamp(rng: Range, buffer_lines: int) -> Range:
    """A range that lies in the buffer (an empty range stays empty)."""
    last = max(1, buffer_lines)
    s, e = rng
    if e < s:
        p = min(max(0, e), last)
        return (p + 1, p)
    return (min(max(1, s), last), min(max(1, e), last))


def covers(f: Finding, first: int, last: int | None = None) -> bool:
    """Whether the finding is shown on any of lines ``first``..``last`` (an empty range
    is shown on the line after which the change goes)."""
    s, e = f.lines
    if e < s:
        s = e = max(1, e)
    return s <= (first if last is None else last) and e >= first


def who(c: decision.Conflict | Finding) -> str:
    """The sibling, named as the check names it (printable: another worktree's names)."""
    return f"worktree {shown(c.agent)!r}" + (f" (branch {shown(c.branch)})" if c.branch else "")
