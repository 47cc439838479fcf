"""The swarm's participants: agents and people, each replaying one line of work as edits.

A participant's habits say how it works. An agent (Claude Code's way) changes one file per
tool call, asks ``proximity check --hook claude`` before each, and commits each planned
commit. A person edits in bigger steps: several files between two saves, a commit for
several planned commits, a turn every other step; and before changing lines they read the
diagnostics their editor shows on them: a Warning or an Error there makes them edit
elsewhere or wait, as a deny does for an agent. The editor route is one function,
:func:`diagnostics`: a real ``proximity lsp`` session per person (``lsp_human.Human``, a
language-server client over stdio) opens the file, sends the typed text unsaved and reads the
diagnostics published for it; the text stays unsaved until the person's next turn, live work
every agent's check sees.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from lsp_human import Human
from swarm_plan import Plan, blob, out


@dataclass(frozen=True)
class Habits:
    kind: str  # agent or human
    files_per_save: int  # files changed between two saves (an agent: one tool call)
    commits_per_commit: int  # planned commits folded into one real commit
    pace: int  # acts once every ``pace`` steps


AGENT = Habits("agent", 1, 1, 1)
HUMAN = Habits("human", 3, 2, 2)


# the holder an edit set aside waits for when it was set aside to be done last, after the
# participant's other work (told that others wait for its lines there)
LATER = "(its other work)"


@dataclass
class Edit:
    commit: int  # index into the plan's commits
    path: str
    status: str  # A, M, D (renames are split into D + A)


@dataclass
class Participant:
    idx: int
    name: str
    wt: str
    plan: Plan
    pending: list[Edit]
    habits: Habits = AGENT
    sizes: dict[int, int] = field(default_factory=dict)  # edits per planned commit
    done: dict[int, int] = field(default_factory=dict)
    committed: int = 0  # planned commits already committed
    state: str = "work"  # work, wait, land, landed
    holder: str | None = None
    waited: int = 0
    touched: set[str] = field(default_factory=set)
    shas: list[str] = field(default_factory=list)
    synced: int = 0  # landings on the trunk when it last rebased
    typed: list[Edit] = field(default_factory=list)  # a person's unsaved edits (the editor)
    # files whose change it set aside when told to steer away, by the holder it yields to:
    # redone once that holder's work has landed
    aside: dict[str, str] = field(default_factory=dict)
    written: list[Edit] = field(default_factory=list)  # edits written, in order
    # steps of conflict resolution left before its landing is tried again (``--resolve
    # redo``: the lane redoes its change of each conflicting file on top of the trunk)
    resolving: int = 0
    # a person's entries typed elsewhere than the plan's place (told to edit elsewhere), by
    # (commit, path): the file's content they were typed on, and what they typed
    placed: dict[tuple[int, str], tuple[bytes | None, bytes]] = field(default_factory=dict)

    @property
    def human(self) -> bool:
        return self.habits.kind == "human"

    def next_commit(self) -> list[int] | None:
        """The planned commits its next real commit holds, once all their edits are done."""
        k = self.committed
        group = list(range(k, min(k + self.habits.commits_per_commit, len(self.plan.commits))))
        if group and all(self.done.get(c, 0) == self.sizes.get(c, 0) for c in group):
            return group
        return None

    def eligible(self, aside_too: bool = False) -> list[Edit]:
        """Its pending edits it may do now: the next commit's first, then later commits'
        files that no earlier pending edit touches (steering does other work first), and
        none in a file it set aside for a holder still working, nor in one set aside to
        be done last while other work is left (``aside_too``: those as well, for the
        deadlock breaker)."""
        rest = any(e.path not in self.aside for e in self.pending)
        seen: set[str] = set()
        found = []
        for e in self.pending:
            free = e.path not in self.aside or (self.aside[e.path] == LATER and not rest)
            if e.path not in seen and (aside_too or free):
                found.append(e)
            seen.add(e.path)
        return found

    def other_work(self, but: str) -> bool:
        """Whether it has edits still to do on files other than ``but`` (and those set
        aside)."""
        return any(e.path != but and e.path not in self.aside for e in self.pending)

    def set_aside(self, path: str, holder: str) -> list[Edit]:
        """Its written, uncommitted edits of ``path`` queued again (the caller puts the
        file back as its last commit has it), the file set aside until ``holder`` lands."""
        mine = [e for e in self.written if e.path == path and e.commit >= self.committed]
        for e in mine:
            self.written.remove(e)
            self.done[e.commit] -= 1
        self.pending = sorted(self.pending + mine, key=lambda e: (e.commit, e.path))
        self.aside[path] = holder
        return mine


def edits_of(scratch: str, plan: Plan) -> list[Edit]:
    found = []
    for k, c in enumerate(plan.commits):
        diff = out(["diff-tree", "-r", "--no-renames", "--name-status", f"{c}^", c], scratch)
        for line in diff.split("\n"):
            if line.strip():
                status, path = line.split("\t", 1)
                found.append(Edit(k, path, status[0]))
    return found


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def target(scratch: str, plan: Plan, e: Edit, current: bytes | None) -> bytes | None:
    """The file's content after this edit: the commit's change carried onto what the
    worktree holds now (it may have moved with a rebase); where the two overlap, the
    participant redoes its change on top (the commit's side wins), as it would by hand."""
    c = plan.commits[e.commit]
    new = blob(scratch, c, e.path)
    old = blob(scratch, f"{c}^", e.path)
    if new is None or current is None or current == old or old is None:
        return new
    with tempfile.TemporaryDirectory() as d:
        names = []
        for name, data in (("cur", current), ("old", old), ("new", new)):
            names.append(os.path.join(d, name))
            with open(names[-1], "wb") as f:
                f.write(data)
        p = subprocess.run(["git", "merge-file", "-p", *names], capture_output=True)
        if p.returncode == 0:
            return p.stdout
        p = subprocess.run(["git", "merge-file", "-p", "--theirs", *names],
                           capture_output=True)
        return p.stdout


def unique_window(lines: list[str], lo: int, hi: int) -> tuple[int, int]:
    """Widen [lo, hi) until its text occurs once in the file, as an agent's old_string must."""
    text = "".join(lines)
    for _ in range(8):
        if lo < hi and text.count("".join(lines[lo:hi])) == 1:
            break
        lo, hi = max(0, lo - 1), min(len(lines), hi + 1)
    return lo, hi


def _lines(data: bytes) -> list[str] | None:
    try:
        return data.decode().splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


# -- an entry placed elsewhere ----------------------------------------------------------------
# files whose entries keep no order that matters: a changelog, the docs' lists
LISTS = (".rst", ".md", ".txt", ".adoc")
ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s")  # a list item's first line
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")  # an RST title's underline
HEADING = re.compile(r"^#{1,6}\s")  # a Markdown title


def _title(lines: list[str], k: int) -> bool:
    """Whether line ``k`` starts a section: a Markdown title, or an RST title (the line an
    underline follows, or the underline itself)."""
    return bool(HEADING.match(lines[k]) or UNDERLINE.match(lines[k]) or (
        k + 1 < len(lines) and lines[k].strip() and UNDERLINE.match(lines[k + 1])))


def elsewhere(path: str, current: bytes | None, new: bytes | None, most: int = 4
              ) -> list[bytes]:
    """The same change with its new entry at another place in its section: what an agent
    or a person told "edit elsewhere" does with a changelog or docs entry. Only a text file
    of lists (``LISTS``) whose change adds one block of lines and removes none, the block
    a list item (its first line one, as deep as the items it goes among). The places are
    the other items' starts and the end of the section's last one, between its titles;
    nearest first, at most ``most``. Empty: no such change, or nowhere else to put it."""
    if not path.endswith(LISTS) or current is None or new is None:
        return []
    a, b = _lines(current), _lines(new)
    if a is None or b is None:
        return []
    ops = [o for o in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
           if o[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "insert":
        return []
    _, at, _, j1, j2 = ops[0]
    block = b[j1:j2]
    first = next((ln for ln in block if ln.strip()), "")
    item = ITEM.match(first)
    if item is None:
        return []
    lo = next((k + 1 for k in range(at - 1, -1, -1) if _title(a, k)), 0)
    hi = next((k for k in range(at, len(a)) if _title(a, k)), len(a))
    starts = [k for k in range(lo, hi)
              if (m := ITEM.match(a[k])) is not None and m.group(1) == item.group(1)]
    places = set(starts)
    if starts:  # after the last item: its last line that is not blank
        end = starts[-1] + 1
        while end < hi and a[end].strip() and not ITEM.match(a[end]):
            end += 1
        places.add(end)
    places.discard(at)
    return [("".join(a[:k] + block + a[k:])).encode()
            for k in sorted(places, key=lambda k: (abs(k - at), k))[:most]]


def tool_input(path: str, current: bytes | None, new: bytes | None) -> dict[str, Any]:
    """The Claude Code tool call an agent would make: MultiEdit of the changed hunks of a
    text file, Write of a new, deleted or binary one."""
    write = {"tool_name": "Write", "tool_input": {"file_path": path, "content": ""}}
    if current is None or new is None or not current:
        return write
    a, b = _lines(current), _lines(new)
    if a is None or b is None:
        return write
    edits = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        lo, hi = unique_window(a, i1 - (i1 == i2 and i1 > 0), i2 + (i1 == i2 and i1 == 0))
        edits.append({"old_string": "".join(a[lo:hi]),
                      "new_string": "".join(a[lo:i1] + b[j1:j2] + a[i2:hi])})
    if not edits:
        return write
    return {"tool_name": "MultiEdit", "tool_input": {"file_path": path, "edits": edits}}


# -- the editor route ----------------------------------------------------------------------
@dataclass(frozen=True)
class Diagnostic:
    start: int  # first and last line (1-based) of the buffer it sits on
    end: int
    severity: str  # Error, Warning, Information (the LSP's DiagnosticSeverity names)
    source: str  # the sibling worktree it names
    message: str


SEVERITY = {"error": "Error", "warning": "Warning", "info": "Information", "hint": "Hint"}


def buffer_text(data: bytes | None) -> str | None:
    """The text an editor holds for ``data`` (None: the file goes, an emptied buffer is
    how that looks in an editor); None when it is not text an editor sends (binary)."""
    if data is None:
        return ""
    if b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def typed_lines(current: bytes | None, new: bytes | None) -> list[tuple[int, int]]:
    """The lines of the buffer after the change (1-based, inclusive) that the change
    wrote; a deletion is the lines either side of where it was. Empty: the whole buffer."""
    a = _lines(current) if current is not None else None
    b = _lines(new) if new is not None else None
    if a is None or b is None or not a or not b:
        return []
    found = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            found.append((max(1, j1), min(len(b), j1 + 1)) if j1 == j2 else (j1 + 1, j2))
    return found


def diagnostics(editor: Human, path: str, current: bytes | None, new: bytes | None
                ) -> list[Diagnostic] | None:
    """What the person's editor shows on the lines they type as they change ``path``
    (relative to the editor's worktree) from ``current`` into ``new`` (None: they empty
    it, to delete it), from a real ``proximity lsp`` session: didOpen with the file's text
    (unless it is open), didChange to the new text (unsaved: from then on every sibling's
    check reads it as this worktree's live work), then the publishDiagnostics for that
    very version, those on the typed lines kept (a whole-file change: all of them). None:
    the editor showed nothing in time, or cannot hold the file (binary): the person goes
    on, as a server that cannot judge never blocks a person."""
    before, after = buffer_text(current) or "", buffer_text(new)
    if after is None:
        return None
    if editor.text(path) is None:
        editor.open(path, before)
    editor.change(path, after)
    try:
        shown, _when = editor.diagnostics(path)
    except TimeoutError:
        return None
    where = typed_lines(current, new)
    return [Diagnostic(d["line"], d["line"], SEVERITY.get(d["severity"], "Information"),
                       str(d.get("agent") or "?"), str(d["message"])[:300])
            for d in shown if not where or any(lo - 1 <= d["line"] <= hi + 1
                                                for lo, hi in where)]
