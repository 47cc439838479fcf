"""Agent harness adapters: one function per harness and direction.

A *targets* function turns a harness's pre-edit event (JSON from stdin) into the paths and
current-file line ranges an edit will touch; an *answer* function turns a decision into the
JSON that harness reads back. Supported (formats confirmed from their public docs):

* Claude Code: ``PreToolUse`` (Edit, MultiEdit, Write, NotebookEdit) answered with
  ``hookSpecificOutput.permissionDecision`` allow / ask / deny; ``PostToolUse`` records. A
  ``Bash`` call that is a plain ``git merge REF`` or ``git rebase REF`` is checked as
  ``check --merge REF`` (what it would bring in, before it does).
* Gemini CLI: ``BeforeTool`` (replace, write_file) answered with ``decision`` allow /
  deny and ``reason``; it has no "ask", so ask becomes allow plus a ``systemMessage`` to
  the user (Gemini CLI confirms file edits with the user itself). ``AfterTool`` records.

After an edit both post hooks also hand the agent its undelivered inbox messages as
``hookSpecificOutput.additionalContext`` (bounded), so a steer reaches it between commits.

Codex CLI's hooks intercept only its shell tool and OpenCode's are JavaScript plugins, so
those harnesses use ``proximity mcp`` instead. A hook never blocks an agent because of a
bug of ours: any internal error answers allow, with the error as the reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from proximity.agents import verdict
from proximity.agents.merging import check_merge
from proximity.agents.precheck import check
from proximity.analysis.intervals import Range
from proximity.errors import NotARepository, UsageError
from proximity.remote.untrusted import text as shown
from proximity.snapshot import recorder, workspace
from proximity.tcas import actions

MAX_CONTEXT = 4000  # characters of messages handed to an agent after an edit
Targets = list[tuple[str, tuple[Range, ...] | None]]  # absolute path, current-file lines


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


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _kept(old: str, new: str) -> tuple[int, int]:
    """How many whole lines an edit leaves as they were at the start and at the end of its
    ``old_string``: the context an agent adds to make the string unique (Claude Code
    requires it) is not an edit of those lines. A pure insertion keeps all of them: its
    range is then the empty one at the insertion point."""
    if old.endswith("\n") and new.endswith("\n"):  # (no line after the last newline)
        old, new = old[:-1], new[:-1]
    a, b = old.split("\n"), new.split("\n")
    lead = 0
    while lead < min(len(a), len(b)) and a[lead] == b[lead]:
        lead += 1
    trail = 0
    while trail < min(len(a), len(b)) - lead and a[-1 - trail] == b[-1 - trail]:
        trail += 1
    return lead, trail


def _edits(path: str, edits: list[tuple[str, str, bool]]) -> tuple[Range, ...] | None:
    """Ranges of each ``old_string`` in the current file; the whole file when one cannot be
    placed (a new file, or text that is nowhere). An edit that matches only text an earlier
    edit of the same call produced lies in that earlier edit's lines already."""
    text = _read(path)
    if text is None:
        return None
    now = text
    out: list[Range] = []
    for old, new, every in edits:
        found = lines_of(text, old, every)
        if found is None and (not old or old not in now):
            return None
        lead, trail = _kept(old, new)
        out += [(lo + lead, hi - trail) for lo, hi in found or []]
        now = now.replace(old, new) if every else now.replace(old, new, 1)
    return tuple(sorted(set(out))) or None


def write_targets(path: str, content: object) -> Targets:
    """A whole-file write judged by the lines it changes in the file as it is now: all of
    a new file; nothing when the content is the same."""
    if not isinstance(content, str):
        return [(path, None)]
    current = _read(path)
    if current is None:
        return [(path, None)]  # a new file: all of it is the edit
    changed = written_lines(current, content)
    return [(path, changed)] if changed != () else []


def written_lines(current: str, content: str) -> tuple[Range, ...] | None:
    """The lines of ``current`` a whole-file write of ``content`` changes, as git's diff
    would name them (a pure insertion before line s is the empty range (s, s-1)); () when
    nothing changes, None when the file is too large to diff here (then: the whole file)."""
    import difflib

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


def _abs(event: dict[str, Any], path: str) -> str:
    return os.path.join(str(event.get("cwd") or os.getcwd()), path)


# -- Claude Code -------------------------------------------------------------------------
def claude_targets(event: dict[str, Any]) -> Targets:
    tool = event.get("tool_name", "")
    ti = event.get("tool_input") or {}
    if tool == "NotebookEdit":
        return [(_abs(event, ti["notebook_path"]), None)]
    if tool == "Bash":
        return [(_abs(event, src), None) for src in claude_moves(event)]
    if tool not in ("Edit", "MultiEdit", "Write"):
        return []
    path = _abs(event, ti["file_path"])
    if tool == "Write":
        return write_targets(path, ti.get("content"))
    edits = ti.get("edits") if tool == "MultiEdit" else [ti]
    triples = [(str(e.get("old_string", "")), str(e.get("new_string", "")),
                bool(e.get("replace_all"))) for e in edits or []]
    return [(path, _edits(path, triples))]


MOVED_FILES = 200  # files of moved directories checked, at most


def claude_moves(event: dict[str, Any]) -> list[str]:
    """The files a Bash tool call is about to move (``git mv SRC… DST`` or ``mv SRC…
    DST``, one plain command): a move is an edit of each whole file it moves (the text is
    data: only split, never run)."""
    import shlex

    cmd = str((event.get("tool_input") or {}).get("command") or "")
    if len(cmd) > MAX_COMMAND or any(c in cmd for c in ";&|`$()<>\n"):
        return []
    try:
        words = shlex.split(cmd)
    except ValueError:
        return []
    if words and os.path.basename(words[0]) == "git" and words[1:2] == ["mv"]:
        args = words[2:]
    elif words and os.path.basename(words[0]) == "mv":
        args = words[1:]
    else:
        return []
    names = [w for w in args if not w.startswith("-")]
    if len(names) < 2:
        return []
    cwd = str(event.get("cwd") or os.getcwd())
    out: list[str] = []
    for src in names[:-1]:
        full = os.path.join(cwd, src)
        if os.path.isdir(full):
            for d, dirs, files in os.walk(full):
                dirs[:] = [x for x in dirs if x != ".git"]
                out += [os.path.relpath(os.path.join(d, f), cwd) for f in files]
        elif os.path.isfile(full):
            out.append(src)
    return out[:MOVED_FILES]


def claude_merge(event: dict[str, Any]) -> str | None:
    """The branch a Bash tool call is about to merge into the worktree: ``git merge REF``
    or ``git rebase REF`` (one plain command, one ref; anything else: None). The text is
    data: only split, never run."""
    import shlex

    if event.get("tool_name") != "Bash":
        return None
    cmd = str((event.get("tool_input") or {}).get("command") or "")
    if len(cmd) > MAX_COMMAND or any(c in cmd for c in ";&|`$()<>\n"):
        return None  # a compound (or huge) command: not read
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if not words or os.path.basename(words[0]) != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):  # git's own options
        i += 2 if words[i] in ("-c", "-C") else 1
    if i >= len(words) or words[i] not in ("merge", "rebase"):
        return None
    rest, refs = words[i + 1:], []
    while rest:
        w = rest.pop(0)
        if w in ("--abort", "--continue", "--skip", "--quit", "--onto", "--root") \
                or w.startswith("--onto="):
            return None  # not a merge of one branch into this one
        if w in _TAKES_VALUE:
            if rest:
                rest.pop(0)
        elif w == "--":
            refs += rest
            break
        elif not w.startswith("-"):
            refs.append(w)
    return refs[0] if len(refs) == 1 else None


MAX_COMMAND = 4096  # a longer command line is not read (splitting it is not free)
# git merge / git rebase options whose value is the next word
_TAKES_VALUE = frozenset(("-m", "-F", "--file", "-s", "--strategy", "-X", "--strategy-option",
                          "-x", "--exec", "--cleanup", "--into-name"))


def claude_answer(decision: str, reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}


# -- Gemini CLI --------------------------------------------------------------------------
def gemini_targets(event: dict[str, Any]) -> Targets:
    tool = event.get("tool_name", "")
    ti = event.get("tool_input") or {}
    if tool not in ("replace", "write_file"):
        return []
    path = _abs(event, ti["file_path"])
    if tool == "write_file":
        return write_targets(path, ti.get("content"))
    every = int(ti.get("expected_replacements") or 1) > 1
    return [(path, _edits(path, [(str(ti.get("old_string", "")),
                                   str(ti.get("new_string", "")), every)]))]


def gemini_answer(decision: str, reason: str) -> dict[str, Any]:
    if decision == "deny":
        return {"decision": "deny", "reason": reason}
    if decision == "ask":
        return {"decision": "allow", "systemMessage": f"proximity: {reason}"}
    return {"decision": "allow", "reason": reason}  # (why: read by whoever looks)


PRE: dict[str, tuple[Callable[[dict[str, Any]], Targets],
                     Callable[[str, str], dict[str, Any]]]] = {
    "claude": (claude_targets, claude_answer),
    "gemini": (gemini_targets, gemini_answer),
}
POST: dict[str, Callable[[dict[str, Any]], Targets]] = {
    "claude-post": claude_targets, "gemini-post": gemini_targets,
}


# -- running ---------------------------------------------------------------------------
def _existing_dir(path: str) -> str:
    d = os.path.dirname(path)
    while d and not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d or os.getcwd()


def pre(name: str, event: dict[str, Any], deny_on: str | None = None) -> dict[str, Any]:
    """The harness answer for one pre-edit event (allow on any internal error)."""
    targets_of, answer = PRE[name]
    try:
        if os.environ.get("PROXIMITY_SKIP") == "1":
            return answer("allow", "proximity: PROXIMITY_SKIP=1")
        merging = claude_merge(event) if name == "claude" else None
        if merging is not None:
            return _merge(event, merging, answer, deny_on)
        targets = targets_of(event)
        if not targets:
            return answer("allow", "proximity: not a file edit")

        by_dir: dict[str, Targets] = {}
        for path, ranges in targets:
            by_dir.setdefault(_existing_dir(path), []).append((path, ranges))
        decisions = []
        for start, items in by_dir.items():
            try:
                decisions.append(check(start, items, deny_on, cwd=start))
            except NotARepository:
                continue
        if not decisions:
            return answer("allow", "proximity: not inside a git worktree")
        order = {verdict.DENY: 0, verdict.ASK: 1, verdict.ALLOW: 2}
        d = min(decisions, key=lambda x: order[x.decision])
        return answer(d.decision, "proximity: " + _with_hunk(d))
    except Exception as e:  # never block an agent because of our bug
        return answer("allow", f"proximity check failed ({type(e).__name__}: {e}); "
                      "allowing the edit")


def _merge(event: dict[str, Any], ref: str, answer: Callable[[str, str], dict[str, Any]],
           deny_on: str | None) -> dict[str, Any]:
    """`check --merge REF` for a Bash tool call about to merge or rebase onto REF."""
    try:
        _plan, d = check_merge(str(event.get("cwd") or os.getcwd()), ref, deny_on)
    except (NotARepository, UsageError) as e:
        return answer("allow", f"proximity: not checked ({e})")
    if d is None:
        return answer("allow", f"proximity: merging {ref!r} changes nothing here")
    if d.decision == verdict.ALLOW:
        return answer("allow", f"proximity: merging {ref!r} meets no sibling's work")
    return answer(d.decision, f"proximity: merging {ref!r} here: " + _with_hunk(d))


def _with_hunk(d: Any) -> str:
    """The reason, plus the other side's hunk for the first contested path (bounded)."""
    out = str(d.reason)
    if d.conflicts and d.conflicts[0].hunk:
        c = d.conflicts[0]  # another worktree's names and lines: printable, bounded
        out += (f"\nTheir change ({shown(c.agent)}, {shown(c.path, 300)}):\n"
                + "\n".join(shown(ln, 300) for ln in c.hunk.split("\n")))
    return out


def post(name: str, event: dict[str, Any]) -> dict[str, Any]:
    """Record the worktree that was just written, so siblings see it at once; hand the
    agent its undelivered messages (steer / hold / transmit, with the sender's hunk)."""
    msgs: list[dict[str, Any]] = []
    try:
        if os.environ.get("PROXIMITY_SKIP") == "1":
            return {}
        targets = POST[name](event) if event.get("tool_input") else []
        starts = {_existing_dir(p) for p, _ in targets} or {str(event.get("cwd") or ".")}

        for start in starts:
            ctx = workspace.open_context(start, check_git=False, strict=False)
            try:
                recorder.record_here(ctx, "snapshot")
                if ctx.ledger is not None:
                    msgs += ctx.ledger.take(ctx.here)
            finally:
                ctx.close()
    except Exception as e:
        print(f"proximity: warning: could not record the edit: {type(e).__name__}: {e}",
              file=sys.stderr)
    if not msgs:
        return {}

    text = "\n".join(actions.render(m) for m in msgs)[:MAX_CONTEXT]
    event_name = "PostToolUse" if name == "claude-post" else "AfterTool"
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def parse_event(stdin: str) -> tuple[dict[str, Any], str | None]:
    """The harness's event as an object, and why it could not be read (None: it was). An
    empty input is an empty event; malformed or hostile JSON (nested past the parser's
    depth, not an object) is an empty event with the reason."""
    if not stdin.strip():
        return {}, None
    try:
        event = json.loads(stdin)
    except RecursionError:
        return {}, "the event is nested too deeply to read"
    except ValueError as e:
        return {}, str(e)
    if not isinstance(event, dict):
        return {}, "the event is not a JSON object"
    return event, None


def unreadable(name: str, why: str) -> dict[str, Any]:
    """The answer to a pre-edit event that could not be read: allow, saying why."""
    return PRE[name][1]("allow", f"proximity: unreadable hook event ({why}); allowing "
                        "the edit")


def run(name: str, stdin: str, deny_on: str | None = None) -> int:
    """``proximity check --hook NAME``: read the event, print the answer, exit 0. A
    pre-edit hook answers whatever it is given: anything that goes wrong (the event, our
    own bug) is an allow with the reason, never a crash the harness cannot read."""
    try:
        event, why = parse_event(stdin)
        if why is not None and name in PRE:
            out = unreadable(name, why)
        else:
            out = post(name, event) if name in POST else pre(name, event, deny_on)
        text = json.dumps(out)
    except Exception as e:  # (RecursionError, MemoryError's kin): fail open all the same
        if name not in PRE:
            raise
        text = json.dumps(unreadable(name, f"{type(e).__name__}: {e}"))
    print(text)
    return 0
