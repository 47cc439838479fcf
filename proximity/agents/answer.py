"""The pre-edit check's one answerer. Every front end asks it the same question the same
way — ``answer(CheckRequest) -> CheckAnswer`` — the command line, every agent harness's
hook, the MCP server, the resident service's check op and the editor's language server:
one set of facts (precheck), one decision (decision), one right-of-way.

A request asks about lines of files (``edits``), about merging a ref (``merge``), or
carries an agent harness's event as the hook read it (``harness``, ``event``). A harness
is always answered, in its own format: an event it cannot read, or a failure of ours, is
an allow that says why (a hook never blocks an agent because of a bug). An allow is no
objection, never an approval: each harness hears it as "no decision" and its own
permission flow decides (agents/harnesses/base.py). The other
requests raise FatalError for what they cannot answer (a directory, a path outside the
worktree or inside git's own directory, a ref that names no commit): the front end says it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from proximity import checkargs, gitfiles
from proximity.agents import incoming, shell
from proximity.agents.decision import ALLOW, ASK, DENY, Conflict, Decision
from proximity.agents.edits import Edit
from proximity.agents.harnesses import HARNESSES
from proximity.agents.harnesses.base import (
    Ask,
    BadEvent,
    Command,
    Edits,
    Harness,
    Json,
    Other,
    Reply,
    Said,
)
from proximity.agents.merging import MergePlan, check_merge, check_plan, incoming_plan
from proximity.agents.precheck import check
from proximity.analysis.intervals import bounded_specs, lines_typo, parse_spec
from proximity.errors import NotARepository, UsageError
from proximity.protocol import MAX_EVENT_CHARS
from proximity.safetext import text as shown
from proximity.snapshot import delivery, recorder, workspace
from proximity.views import messages

MAX_CONTEXT = 4000  # characters of messages handed to an agent after an edit


@dataclass(frozen=True)
class CheckRequest:
    """One question. ``cwd``: where the asker stands (relative paths are its; a harness
    event's own cwd wins). ``edits``: files and their lines now (None: the whole file),
    with the file after the edit where it is known (an editor's buffer, a harness's
    Write). ``skip``: PROXIMITY_SKIP=1, a harness's event is allowed unread. ``look``: a
    look at the siblings' lines in the files (an editor opening one), not an edit: nobody
    waits on anyone for it (no wait recorded, no wait cycle broken, nobody told)."""

    cwd: str
    edits: tuple[Edit, ...] = ()
    merge: str | None = None
    harness: str | None = None
    event: str | None = None
    deny_on: str | None = None
    skip: bool = False
    event_size: int | None = None  # the event's characters, where more than it carries
    look: bool = False


@dataclass(frozen=True)
class CheckAnswer:
    """allow / ask / deny with the reason and every sibling's evidence (``conflicts``);
    ``judged`` False: not judged (allowed, saying why); ``plan``: what a merge would bring
    in; ``reply``: a harness's answer, in its format."""

    decision: str
    reason: str
    conflicts: tuple[Conflict, ...] = ()
    judged: bool = True
    plan: MergePlan | None = None
    reply: Reply | None = None


def of_specs(cwd: str, specs: Sequence[str], deny_on: str | None = None,
             merge: str | None = None) -> CheckRequest:
    """The request PATH[:START-END] specs make (the command line, MCP, the service's
    wire), bounded before any is parsed (too many, too long, a NUL: UsageError)."""
    parsed = [parse_spec(s) for s in bounded_specs(specs)]
    for path, ranges in parsed:
        # (a typo in the lines read as part of the name would check a file nobody has
        # and allow it: "no sibling worktree is working on these lines")
        lines_typo(cwd, path, ranges)
    return CheckRequest(cwd, tuple(Edit(p, r, None) for p, r in parsed), merge=merge,
                        deny_on=deny_on)


def answer(req: CheckRequest) -> CheckAnswer:
    if req.harness is not None:
        return _harness(req)
    if req.merge is not None:
        return _merge(req.cwd, req.merge, req.deny_on)
    if not req.edits:
        raise UsageError("name at least one PATH[:START-END] to check (or --hook HARNESS, "
                         "or --merge REF)")
    d = check(req.cwd, [(e.path, e.ranges) for e in req.edits], req.deny_on,
              results={e.path: e.result for e in req.edits if e.result is not None},
              look=req.look)
    return CheckAnswer(d.decision, d.reason, d.conflicts)


def _merge(cwd: str, ref: str, deny_on: str | None) -> CheckAnswer:
    plan, d = check_merge(cwd, ref, deny_on)
    if d is None:
        return CheckAnswer(ALLOW, f"merging {ref!r} changes nothing here", plan=plan)
    return CheckAnswer(d.decision, d.reason, d.conflicts, plan=plan)


# -- agent harnesses ---------------------------------------------------------------------
def parse_event(raw: str) -> Json:
    """A harness's event as a JSON object; BadEvent saying why it is not one (empty: an
    empty event). Deep nesting and non-objects are reasons, never crashes."""
    if not raw.strip():
        return {}
    try:
        event = json.loads(raw)
    except RecursionError:
        raise BadEvent("the event is nested too deeply to read") from None
    except ValueError as e:
        raise BadEvent(str(e)) from None
    if not isinstance(event, dict):
        raise BadEvent("the event is not a JSON object")
    return event


def oversized(size: int) -> str:
    """The one line said of an event too large to check before the edit (a generated file
    written whole: read line by line, a 40 MB Write took 10 s and 250 MB)."""
    return (f"proximity: not checked: the event is {size / (1 << 20):.1f} MiB, over the "
            f"{MAX_EVENT_CHARS >> 20} MiB limit (the commit hooks and the push guard still "
            "judge the file)")


def _harness(req: CheckRequest) -> CheckAnswer:
    name = str(req.harness)
    post = checkargs.is_post(name)
    h = HARNESSES.get(name[:-len(checkargs.POST)] if post else name)
    if h is None:
        raise UsageError(f"--hook {name!r}: not a harness proximity answers")
    size = max(req.event_size or 0, len(req.event or ""))
    if size > MAX_EVENT_CHARS:  # no objection, never allow: the harness's own flow decides
        if post:
            return _after(h, {}, req.cwd)
        return _said(h, {}, ALLOW, oversized(size), judged=False)
    if not post and not (req.event or "").strip():  # (a hook wired without its event)
        return _said(h, {}, ALLOW, "proximity: no hook event on standard input; not checked",
                     judged=False)
    try:
        event = parse_event(req.event or "")
        if post:
            return _after(h, event, req.cwd)
        if req.skip:
            return _said(h, event, ALLOW, "proximity: PROXIMITY_SKIP=1")
        home = gitfiles.common_of(h.home(event, req.cwd))
        return _judged(h, event, h.read(event, req.cwd), req.deny_on, home)
    except BadEvent as e:  # (not "allowed": the harness's own permission flow decides)
        return _said(h, {}, ALLOW, f"proximity: unreadable hook event ({e}); not checked",
                     judged=False)
    except Exception as e:  # never block an agent because of our bug
        return _said(h, {}, ALLOW, f"proximity check failed ({type(e).__name__}: {e}); "
                     "not checked", judged=False)


def _said(h: Harness, event: Json, verdict: str, reason: str,
          conflicts: tuple[Conflict, ...] = (), judged: bool = True) -> CheckAnswer:
    first = reason.split("\n", 1)[0].removeprefix("proximity: ")
    summary = f"proximity: {verdict.upper()}: {first}" if judged else f"proximity: {first}"
    said = Said(verdict, reason, shown(summary, 400), judged)
    return CheckAnswer(verdict, reason, conflicts, judged, reply=h.reply(said, event))


def _judged(h: Harness, event: Json, ask: Ask, deny_on: str | None, home: str | None
            ) -> CheckAnswer:
    """``home``: the common dir of the repository the session works in (None: none)."""
    if isinstance(ask, Other):
        return _said(h, event, ALLOW, f"proximity: {ask.why}")
    if isinstance(ask, Command):
        return _command(h, event, ask, deny_on, home)
    return _files(h, event, ask, deny_on, home)


def foreign(where: str, home: str | None) -> str | None:
    """Why git is not run in directory ``where`` for a session whose repository's common
    dir is ``home``; None when ``where`` is in one of that repository's worktrees. Decided
    from files, before any git runs there: git in another repository (one nested in a
    worktree, one an agent made or unpacked) reads that repository's config, and reading
    its index runs the command its core.fsmonitor names, before the person is asked."""
    if home is not None and gitfiles.of_repository(where, home):
        return None
    w = shown(where, 300)
    if gitfiles.found_by_git(where) is None:
        return f"{w} is in no git repository"
    if home is None:
        return f"the session is in no git repository, so none is its own: {w} is not " \
            "(no git is run there)"
    return f"{w} is in another repository than this session's (no git is run there)"


def _command(h: Harness, event: Json, cmd: Command, deny_on: str | None, home: str | None
             ) -> CheckAnswer:
    """A shell command: each command in it that brings other work in (agents/incoming.py)
    is checked as the merge it is, the strictest answer with every reason; one that moves
    files, as edits of each whole file it moves; any other is no file edit."""
    brought = incoming.read(cmd.command, cmd.cwd)
    if brought:
        said = [_incoming(one, deny_on, home) for one in brought]
        order = {DENY: 0, ASK: 1, ALLOW: 2}
        worst = min(said, key=lambda x: order[x[0]])[0]
        # an allow with a part it could not read says so, that part's reason first (the
        # person sees the first line only): no objection must not read as "all checked"
        unread = worst == ALLOW and any(not j for *_, j in said)
        if unread:
            said.sort(key=lambda x: x[3])
        return _said(h, event, worst, "proximity: " + "\n".join(r for _, r, _, _ in said),
                     tuple(c for _, _, cs, _ in said for c in cs), judged=not unread)
    # (shell.py reads a move from a Claude Code Bash event: every harness's command is
    # put in that shape)
    moved = shell.claude_moves({"tool_name": "Bash", "tool_input": {"command": cmd.command},
                                "cwd": cmd.cwd})
    if moved:
        return _files(h, event, Edits(tuple(Edit(os.path.join(cmd.cwd, p), None, None)
                                            for p in moved)), deny_on, home)
    return _said(h, event, ALLOW, "proximity: not a file edit")


def _incoming(found: incoming.Found, deny_on: str | None, home: str | None
              ) -> tuple[str, str, tuple[Conflict, ...], bool]:
    """One command that brings work in: (decision, reason, evidence, judged)."""
    what = shown(found.text, 120)
    if isinstance(found, incoming.Unread):
        return ALLOW, f"`{what}` not checked: {found.why}", (), False
    elsewhere = foreign(found.cwd, home)
    if elsewhere is not None:
        return ALLOW, f"`{what}` not checked: {elsewhere}", (), False
    try:
        plan = incoming_plan(found)
        if plan is None:
            return ALLOW, f"`{what}` brings no other work in", (), True
        d = check_plan(found.cwd, plan, deny_on)
    except (NotARepository, UsageError) as e:
        return ALLOW, f"`{what}` not checked ({e})", (), False
    if d is None:
        return ALLOW, f"{plan.what} changes nothing here", (), True
    if d.decision == ALLOW:
        return ALLOW, f"{plan.what} meets no sibling's work", d.conflicts, True
    return d.decision, f"{plan.what} here: " + with_hunk(d), d.conflicts, True


def _files(h: Harness, event: Json, ask: Edits, deny_on: str | None, home: str | None
           ) -> CheckAnswer:
    """The edits judged per worktree (a call may write in more than one); the strictest
    decision answers. An edit the harness will refuse itself, or of a file outside any
    worktree of this repository, is not judged: said why (outside every repository: as
    no file edit)."""
    notes = [f"{shown(e.path, 300)}: {e.unplaced}, so the edit is refused by the harness "
             "itself" for e in ask.edits if e.unplaced is not None]
    by_dir: dict[str, list[Edit]] = {}
    for e in ask.edits:
        if e.unplaced is None:
            by_dir.setdefault(existing_dir(e.path), []).append(e)
    decisions = []
    for start, items in by_dir.items():
        if gitfiles.found_by_git(start) is None:
            continue  # (in no repository: git finds none either)
        elsewhere = foreign(start, home)
        if elsewhere is not None:
            notes.append(f"not checked: {elsewhere}")
            continue
        try:
            decisions.append(check(start, [(e.path, e.ranges) for e in items], deny_on,
                                   cwd=start, results={e.path: e.result for e in items
                                                       if e.result is not None}))
        except NotARepository:
            continue
        except UsageError as e:  # a path in git's own directory, a directory
            notes.append(f"not checked ({e})")
    if not decisions:  # (what was not judged is said where the person sees it)
        why = "; ".join(notes) if notes else ("not inside a git worktree" if by_dir
                                              else "not a file edit")
        return _said(h, event, ALLOW, f"proximity: {why}", judged=not notes)
    order = {DENY: 0, ASK: 1, ALLOW: 2}
    d = min(decisions, key=lambda x: order[x.decision])
    if d.decision == ALLOW and notes:  # what was not judged is said, first
        return _said(h, event, ALLOW, "proximity: " + "; ".join(notes) + "\n" + with_hunk(d),
                     d.conflicts, judged=False)
    more = "".join(f"\n{n}" for n in notes)
    return _said(h, event, d.decision, "proximity: " + with_hunk(d) + more, d.conflicts)


def with_hunk(d: Decision) -> str:
    """The reason, plus the other side's hunk for the first contested path (bounded)."""
    out = d.reason
    if d.conflicts and d.conflicts[0].hunk:
        c = d.conflicts[0]  # another worktree's names and lines: printable, bounded
        out += (f"\nTheir change ({shown(c.agent)}, {shown(c.path, 300)}):\n"
                + "\n".join(shown(ln, 300) for ln in c.hunk.split("\n")))
    return out


def existing_dir(path: str) -> str:
    """The nearest directory of ``path`` that exists (a new file's may not yet)."""
    d = os.path.dirname(path)
    while d and not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d or os.getcwd()


def _after(h: Harness, event: Json, cwd: str) -> CheckAnswer:
    """A post-edit event: record the worktree that was just written, so siblings see it
    at once, and hand the agent its undelivered messages (steer / hold / transmit, with the
    sender's hunk) where the harness reads them back."""
    msgs: list[Mapping[str, object]] = []
    try:
        starts = {existing_dir(p) for p in h.edited(event, cwd)} or {
            str(event.get("cwd") or cwd)}
        home = gitfiles.common_of(h.home(event, cwd))
        for start in starts:
            if foreign(start, home) is not None:
                continue  # (another repository's snapshot is not this one's to take)
            ctx = workspace.open_context(start, check_git=False, strict=False)
            try:
                recorder.record_here(ctx, "snapshot")
                if ctx.ledger is not None and h.context is not None:
                    msgs += delivery.take(ctx)
            finally:
                ctx.close()
    except Exception as e:
        print(f"proximity: warning: could not record the edit: {type(e).__name__}: {e}",
              file=sys.stderr)
    reply: Reply = {}
    if msgs and h.context is not None:
        reply = h.context("\n".join(messages.render(dict(m)) for m in msgs)[:MAX_CONTEXT])
    return CheckAnswer(ALLOW, "recorded", reply=reply)

