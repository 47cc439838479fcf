"""Definitions an edit's lines hold and where a sibling's new code uses them: the pre-edit
check's symbol evidence (a definition's header in the requested lines, used by the other
side's added lines, is traffic: the edit may change what that code relies on)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import NamedTuple

from proximity.agents import decision
from proximity.analysis import hunks
from proximity.analysis.languages import registry
from proximity.analysis.symbols import hazard, writes
from proximity.model import Range

MAX_SYMBOLS = 40
MAX_SCAN_BYTES = 256 * 1024


def defined_at(worktree: str, path: str, ranges: Sequence[Range] | None,
               live: str | None = None) -> list[str]:
    """Short names of the definitions whose header (def line, signature, constant) lies in
    the requested lines of a worktree's file (read from ``live`` when given: the text it
    stands for, an editor's unsaved buffer): an edit there can change what other code
    relies on."""
    if registry.dialect_of(path) is None:
        return []
    try:
        with open(live or os.path.join(worktree, path), "rb") as f:
            data = f.read(MAX_SCAN_BYTES + 1)
    except OSError:
        return []
    return defined_in(path, data, ranges)


MODIFIERS, DEFINERS, DECLARERS = registry.header_words()
# a line that may start a definition in any language: its words, or an assignment
DEF_HINT = re.compile(
    rf"^\s*(?:(?:{'|'.join(MODIFIERS)})\s+)*(?:{'|'.join(DEFINERS + DECLARERS)})\b"
    r"|^[A-Za-z_][\w.]*\s*(?::[^=]*)?=[^=]")
# the end of a line's text just before a definition's name: a definer
DEFINES = re.compile(rf"\b({'|'.join(DEFINERS)})\s+$")


def defined_in(path: str, data: bytes, ranges: Sequence[Range] | None) -> list[str]:
    """``defined_at`` over the file's bytes (``ranges``: lines of ``data``; None: all)."""
    if registry.dialect_of(path) is None or len(data) > MAX_SCAN_BYTES:
        return []
    rows = data.decode("utf-8", "replace").split("\n")
    wanted = [(1, len(rows))] if ranges is None else list(ranges)
    if not any(DEF_HINT.match(rows[i - 1]) for s, e in wanted
               for i in range(max(1, s), min(e, len(rows)) + 1)):
        return []  # no definition header in these lines: skip the parser entirely
    try:
        facts = writes.analyse(path, data)
        if facts is None:
            return []  # does not parse (half-typed): no symbol evidence, never "removed"
        defs = facts["defs"]
        ambient = hazard.AMBIENT
    except Exception:  # the symbol machinery is optional evidence, never a failure
        return []
    names = {q.rsplit(".", 1)[-1] for q, v in defs.items()
             if len(v) >= 5 and any(s <= int(v[3]) <= e for s, e in wanted)}
    return sorted(n for n in names if n not in ambient and len(n) > 2)[:MAX_SYMBOLS]


def new_uses(diff_text: str, names: list[str], skip: str) -> list[decision.Use]:
    """Where the sibling's new code (added lines of its diff) uses one of ``names``."""
    word = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    found: list[decision.Use] = []
    seen: set[tuple[str, str]] = set()
    for path, d in hunks.parse(diff_text).items():
        if path == skip:
            continue  # the same file: its line evidence says more
        for h in d.hunks:
            line = h.new_start
            for text in h.lines:
                if text.startswith("-"):
                    continue
                body = text[1:]
                for m in word.finditer(body):
                    if DEFINES.search(body[:m.start()]):
                        continue  # their own definition of a same-named symbol
                    if (m.group(1), path) not in seen:
                        seen.add((m.group(1), path))
                        found.append(decision.Use(m.group(1), path, line, (h,)))
                line += 1
    return found[:10]


class Signature(NamedTuple):
    """A definition whose header a sibling rewrote: calls elsewhere may no longer match."""

    name: str
    path: str  # the file it is defined in
    line: int  # its header's line there, in the sibling's file
    header: str  # the new header, as the sibling wrote it


DEF_NAME = re.compile(
    r"^\s*(?:export\s+|pub(?:\([^)]*\))?\s+|async\s+|default\s+)*"
    r"(?:def|function|fn|func(?:\s*\([^)]*\))?)\s+([A-Za-z_]\w*)\s*[(<]")


def changed_signatures(diff_text: str) -> list[Signature]:
    """The definitions whose header line a diff rewrote in place (the old header removed
    and one of the same name added in the same hunk): a new function, or a body edit, is
    not one."""
    out: list[Signature] = []
    for path, d in hunks.parse(diff_text).items():
        for h in d.hunks:
            old = {m.group(1) for ln in h.lines if ln.startswith("-")
                   if (m := DEF_NAME.match(ln[1:]))}
            line = h.new_start
            for ln in h.lines:
                if ln.startswith("-"):
                    continue
                m = DEF_NAME.match(ln[1:])
                if m and m.group(1) in old and ln[1:] not in {x[1:] for x in h.lines
                                                               if x.startswith("-")}:
                    out.append(Signature(m.group(1), path, line, ln[1:].strip()))
                line += 1
    return out[:MAX_SYMBOLS]


def calls(text: str, names: Sequence[str]) -> list[tuple[int, str]]:
    """(line, name) of each call of one of ``names`` in ``text`` (``name(`` that is not
    its own definition)."""
    if not names:
        return []
    call = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, names)) + r")\s*\(")
    out = []
    for n, row in enumerate(text.split("\n"), 1):
        if DEF_NAME.match(row):
            continue
        out += [(n, m.group(1)) for m in call.finditer(row)]
    return out
