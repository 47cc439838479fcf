"""The swarm's participants: agents and people, each replaying one line of work as edits.

A participant's habits say how it works. An agent (Claude Code's way) changes one file per
tool call, asks ``proximity check --hook claude`` before each, and commits each planned
commit. A person edits in bigger steps: several files between two saves, a commit for
several planned commits, a turn every other step; and before changing lines they read the
diagnostics their editor shows on them: a Warning or an Error there makes them edit
elsewhere or wait, as a deny does for an agent. The editor route is one function,
:func:`diagnostics`; until a language-server client drives it, it asks ``proximity check
PATH:LINES --json`` (the same answerer the editor's server uses) and turns the answer into
the diagnostics an editor would show on those lines.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarm_plan import Plan, blob, out


@dataclass(frozen=True)
class Habits:
    kind: str  # agent or human
    files_per_save: int  # files changed between two saves (an agent: one tool call)
    commits_per_commit: int  # planned commits folded into one real commit
    pace: int  # acts once every ``pace`` steps


AGENT = Habits("agent", 1, 1, 1)
HUMAN = Habits("human", 3, 2, 2)


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

    def eligible(self) -> list[Edit]:
        """Its pending edits it may do now: the next commit's first, then later commits'
        files that no earlier pending edit touches (steering does other work first)."""
        seen: set[str] = set()
        found = []
        for e in self.pending:
            if e.path not in seen:
                found.append(e)
            seen.add(e.path)
        return found


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


def changed_lines(current: bytes | None, new: bytes | None) -> list[tuple[int, int]]:
    """The lines of the file as it is (1-based, inclusive) that the change replaces; an
    insertion is the lines either side of it. Empty: the whole file (new, deleted, binary)."""
    if current is None or new is None:
        return []
    a, b = _lines(current), _lines(new)
    if a is None or b is None or not a:
        return []
    found = []
    for op, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        lo, hi = (max(1, i1), min(len(a), i1 + 1)) if i1 == i2 else (i1 + 1, i2)
        found.append((lo, hi))
    return found


# -- the editor route ----------------------------------------------------------------------
@dataclass(frozen=True)
class Diagnostic:
    start: int  # first and last line (1-based) of the buffer it sits on
    end: int
    severity: str  # Error, Warning, Information (the LSP's DiagnosticSeverity names)
    source: str  # the sibling worktree it names
    message: str


Proximity = Callable[[list[str], str], "subprocess.CompletedProcess[str]"]
SEVERITY = {"ra": "Error", "ta": "Warning"}


def diagnostics(proximity: Proximity, wt: str, path: str, lines: list[tuple[int, int]],
                buffer: bytes | None) -> list[Diagnostic]:
    """What the person's editor shows on ``lines`` of ``path`` (relative to the worktree
    ``wt``) as they start changing them into ``buffer`` (the unsaved text; None: the file
    goes). The stand-in for a language-server client: the check the server answers from,
    asked about those lines, its conflicts placed on them (an RA an Error, traffic a
    Warning, anything else Information); the buffer is not sent, as the check reads lines.
    Swapping in a real client (``proximity lsp`` over stdio: didOpen, didChange with
    ``buffer``, then the publishDiagnostics whose ranges meet ``lines``) is this function
    alone."""
    spec = [f"{path}:{lo}-{hi}" for lo, hi in lines] or [path]
    p = proximity(["check", "--json", *spec], wt)
    try:
        answer = json.loads(p.stdout)
    except ValueError:
        return []  # no answer: the editor shows nothing (the server never blocks a person)
    lo = min((r[0] for r in lines), default=1)
    hi = max((r[1] for r in lines), default=1)
    found = []
    for c in answer.get("conflicts", []) if isinstance(answer, dict) else []:
        level = str(c.get("level", ""))
        severity = SEVERITY.get(level, "Information")
        if answer.get("decision") == "deny" and level == "ra":
            severity = "Error"
        found.append(Diagnostic(lo, hi, severity, str(c.get("agent", "?")),
                                str(c.get("detail", ""))[:300]))
    return found
