"""The pre-edit decision: may this worktree edit these lines now? Plain data in, decision out.

Evidence, per sibling worktree and path (all in the pair's base coordinates):

* ``conflict`` (RA level): the sibling changed the same or touching base lines (no
  unchanged line between, as git's merge sees it), or the request covers the whole file
  and the sibling changed it: the merge would conflict.
* ``near`` (TA): the sibling changed lines within ``NEAR`` unchanged lines of the request.
* ``merges``: the sibling changed the same lines, but the edit's result is known (the
  harness gave it) and git's own merge of the file with theirs is clean: information when
  the merge is the edit's own result (the same change on both sides), TA otherwise.
* ``same-file`` (information): the sibling changed this file elsewhere. Shown, with its
  hunk, but it never turns an allow into an ask: calibrated on real history, two sides
  changing one file apart collide a few percent of the time (``calibration_table``), and
  on replayed real branch pairs asking on it doubled the checks that warn on pairs that
  never conflict (``benchmarks/precheck_steps.py``).
* ``intent`` (TA): the sibling declared it will touch this file (`proximity intend`).
* ``symbol`` (TA): a definition in the requested lines is used by the sibling's new code;
  or the edit writes a call that no longer binds to a definition the sibling changed (the
  scan's symbol evidence: their new signature), RA when this worktree must yield to them.

Policy (``deny_on``): ``ra`` denies on conflict and asks on traffic (the default); ``ta``
denies on any evidence; ``never`` only asks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from proximity.analysis import hunks, intervals
from proximity.analysis.hunks import FileDiff
from proximity.analysis.intervals import fmt_ranges
from proximity.checkargs import DENY_ON
from proximity.model import Range
from proximity.safetext import text

if TYPE_CHECKING:
    from proximity.protocol import DecisionDoc

ALLOW, ASK, DENY = "allow", "ask", "deny"
RA, TA, INFO = "ra", "ta", "info"
NEAR = 3  # unchanged lines between two changes that still count as "near"


class Use(NamedTuple):
    """The sibling's new code uses ``symbol`` (defined in the requested lines)."""

    symbol: str
    path: str
    line: int
    hunk: tuple[hunks.Hunk, ...] = ()


class Call(NamedTuple):
    """A call the edit writes that no longer binds to a definition the sibling changed,
    in the scan's words (``detail``: the sibling's new signature and why);
    ``must_yield``: a standing Resolution Advisory told this worktree to yield to them."""

    path: str
    line: int
    detail: str
    must_yield: bool = False


class Side(NamedTuple):
    """What one sibling worktree does to one requested path."""

    agent: str
    branch: str | None
    path: str
    mine: tuple[Range, ...] | None  # the requested lines, base coordinates; None: whole file
    requested: tuple[Range, ...] | None  # the same, as the caller gave them (current file)
    diff: FileDiff | None = None  # the sibling's change of the path since the pair's base
    intent: tuple[Range, ...] | None = None
    has_intent: bool = False
    uses: tuple[Use, ...] = ()
    merge: str = ""  # git's merge of the file after the edit with theirs: same | clean | ""
    own: FileDiff | None = None  # this worktree's own change of the path since that base
    calls: tuple[Call, ...] = ()  # calls the edit writes that their change leaves unbound
    # ``own`` was read from an editor's unsaved buffer, which holds the very edit judged:
    # the change this worktree had made before it is the saved file's (``saved``)
    typed: bool = False
    saved: FileDiff | None = None


class Conflict(NamedTuple):
    agent: str
    branch: str | None
    path: str
    ranges: tuple[Range, ...]
    hunk: str
    level: str  # ra | ta
    evidence: str  # conflict | merges | near | same-file | intent | symbol
    detail: str
    # ``ranges`` as lines of this worktree's file now (where an editor shows them), for
    # evidence in the requested path; None: in another file (symbol), or not known
    lines: tuple[Range, ...] | None = None
    # the sibling yields to this worktree here (told to, or it entered a wait cycle after
    # this side): a collision this side goes on with, and the other steers
    right_of_way: bool = False


class Decision(NamedTuple):
    decision: str
    reason: str
    conflicts: tuple[Conflict, ...]


def _lines(r: Sequence[Range] | None) -> str:
    if r is None:
        return "the whole file"
    one = len(r) == 1 and r[0][0] == r[0][1]
    return f"line{'' if one else 's'} {fmt_ranges(list(r)) or '-'}"


def _touch(r: Sequence[Range] | None) -> str:
    """The verb agrees with `_lines`: one line or the whole file touches, lines touch."""
    return "touches" if r is None or (len(r) == 1 and r[0][0] == r[0][1]) else "touch"


def evidence(side: Side) -> list[Conflict]:
    """Every piece of evidence one sibling gives against one request."""
    out: list[Conflict] = []
    # names, branches and paths come from other people's worktrees: printable, bounded
    who = f"worktree {text(side.agent)!r}" + (f" (branch {text(side.branch)})"
                                               if side.branch else "")
    path = text(side.path, 300)
    d = side.diff
    if d is not None and d.changed:
        theirs = d.base_ranges()
        if side.merge:
            hit = hunks.nearest(d, side.mine, 2) if side.mine is not None else list(d.hunks)
            out.append(Conflict(
                side.agent, side.branch, side.path, tuple(h.base for h in hit),
                hunks.excerpt(hit), INFO if side.merge == "same" else TA, "merges",
                f"{who} changed {path} {_lines(theirs)} too; "
                + ("your edit makes the same change: git's merge takes it once"
                   if side.merge == "same" else
                   "your edit and theirs meet, but git's merge of the two is clean")))
        elif theirs is None or side.mine is None:
            hit = list(d.hunks)
            out.append(Conflict(side.agent, side.branch, side.path, tuple(h.base for h in hit),
                                hunks.excerpt(hit) or ("(a file made a link, or a link "
                                                       "a file)" if d.retyped else
                                                       "(a file too large to compare by "
                                                       "lines)" if d.large else
                                                       "(binary change)"), RA, "conflict",
                                f"{who} changed {path}"
                                + (" from a file to a link or back: git's merge stops at "
                                   "'distinct types'" if d.retyped else
                                   " (too large to compare by lines)" if d.large else
                                   " (binary)" if theirs is None else "")
                                + f"; an edit of "
                                f"{_lines(side.requested)} would conflict at merge"))
        else:
            hit = hunks.contested(d, side.mine)
            if hit:
                rs = tuple(h.base for h in hit)
                out.append(Conflict(side.agent, side.branch, side.path, rs, hunks.excerpt(hit),
                                    RA, "conflict",
                                    f"{who} changed {path} {_lines(rs)} (live work, "
                                    f"uncommitted included); your {_lines(side.requested)} "
                                    f"{_touch(side.requested)} that change: git's merge "
                                    "would conflict"))
            else:
                g = intervals.gap(theirs, list(side.mine))
                near = hunks.nearest(d, side.mine, 2)
                kind = "near" if g is not None and g <= NEAR else "same-file"
                where = (f"{g} unchanged line{'s' if g != 1 else ''} from your "
                         f"{_lines(side.requested)}" if kind == "near" else
                         f"in the same file as your {_lines(side.requested)}")
                out.append(Conflict(side.agent, side.branch, side.path,
                                    tuple(h.base for h in near), hunks.excerpt(near),
                                    TA if kind == "near" else INFO, kind,
                                    f"{who} changed {path} {_lines(theirs)}, {where}"))
    if side.has_intent:
        out.append(Conflict(side.agent, side.branch, side.path, side.intent or (), "", TA,
                            "intent", f"{who} declared it will touch {path} "
                            f"{_lines(side.intent)} (`proximity intend`)"))
    own = side.own.hunks if side.own is not None else ()
    out = [c._replace(lines=tuple(hunks.from_base(c.ranges, own))) for c in out]
    for u in side.uses:
        out.append(Conflict(side.agent, side.branch, u.path, ((u.line, u.line),),
                            hunks.excerpt(u.hunk), TA, "symbol",
                            f"{text(u.symbol)}, defined in your {_lines(side.requested)} of "
                            f"{path}, is used by {who}'s new code at {text(u.path, 300)}:{u.line}"))
    for c in side.calls:
        out.append(Conflict(side.agent, side.branch, c.path, ((c.line, c.line),), "",
                            RA if c.must_yield else TA, "symbol",
                            f"{who} changed what your edit calls: {text(c.detail, 600)}"
                            + ("" if not c.must_yield else
                               f" (you were told to yield to {text(side.agent)} here)"),
                            ((c.line, c.line),)))
    return out


def _overlap(a: Sequence[Range], b: Sequence[Range]) -> bool:
    """Whether two sets of base line ranges share a line (touching is not sharing)."""
    return any(max(lo, blo) <= min(hi, bhi) for lo, hi in a for blo, bhi in b)


def decide(sides: Sequence[Side], deny_on: str = "ra", behind: Collection[str] = (),
           ahead: Mapping[str, str] | None = None) -> Decision:
    """allow / ask / deny for one request, from every sibling's evidence. ``behind``: the
    siblings told to yield to this worktree (right-of-way): their collisions with this
    worktree's own change are asked, never denied, so the holder goes on and the yielding
    side steers; an edit onto lines only they changed is a new collision, where they came
    first, and is judged as anyone's. ``ahead``: siblings this request goes before in
    everything, each with the words why (a wait cycle it is first in, work a merge brings
    in, work it holds that was told to yield): asked, never denied."""
    if deny_on not in DENY_ON:
        raise ValueError(f"unknown check policy {deny_on!r} (want one of {', '.join(DENY_ON)})")
    first = ahead or {}
    found = []
    on: dict[int, bool] = {}  # found[i]: their lines are the very lines asked for
    for s in sides:
        for c in evidence(s):
            why = first.get(c.agent) if c.level == RA else None
            if why is None and c.level == RA and c.agent in behind and held(s, c):
                why = (f"{text(c.agent)} was told to yield to you here: you have "
                       "right-of-way, they steer")
            if why is not None:
                c = c._replace(level=TA, right_of_way=True, detail=f"{c.detail} ({why})")
            on[id(c)] = s.mine is not None and _overlap(c.ranges, s.mine)
            found.append(c)
    # the headline: the strongest evidence, and of equals the sibling whose lines are the
    # ones asked for before one whose lines only touch them (a neighbour's line)
    found.sort(key=lambda c: ({RA: 0, TA: 1}.get(c.level, 2), c.evidence != "conflict",
                              not on.get(id(c), False), c.agent, c.path))
    if not found:
        return Decision(ALLOW, "no sibling worktree is working on these lines", ())
    top = found[0]
    if top.level == INFO:
        return Decision(ALLOW, f"{top.detail}: no collision expected; their change is shown "
                        "below", tuple(found))
    decision = DENY if deny_on == "ta" or (deny_on == "ra" and top.level == RA) else ASK
    more = len({c.agent for c in found if c.level != INFO}) - 1  # shown-only: not counted
    reason = top.detail + (f" (and {more} more worktree{'s' if more > 1 else ''})"
                           if more > 0 else "")
    if decision == DENY:
        reason += (". Edit elsewhere, or coordinate with them first (`proximity inbox`, "
                   "`proximity intend`)")
    return Decision(decision, reason, tuple(found))


def held(side: Side, c: Conflict) -> bool:
    """Whether collision ``c`` is one this worktree's own change is in already: the
    sibling's lines the edit hits meet lines this worktree changed before (or there are
    no lines to tell apart). Right-of-way covers that collision, not lines the sibling
    reached first and this worktree never changed."""
    if c.evidence != "conflict" or c.path != side.path or side.diff is None:
        return True
    # a person's typed lines are the edit asked about, not a change made before it: what
    # they had saved is (else typing onto their lines would be covered by typing them)
    own = side.saved if side.typed else side.own
    if own is None or not own.changed:
        return False
    mine = own.base_ranges()
    if mine is None or side.diff.base_ranges() is None or not c.ranges:
        return True
    met = {h.base for h in hunks.contested(side.diff, mine)}
    return any(r in met for r in c.ranges)


def decision_json(d: Decision) -> DecisionDoc:
    return {"decision": d.decision, "reason": d.reason,
            "conflicts": [{"agent": c.agent, "branch": c.branch, "path": c.path,
                           "ranges": [list(r) for r in c.ranges], "hunk": c.hunk,
                           "level": c.level, "evidence": c.evidence, "detail": c.detail,
                           "lines": None if c.lines is None else [list(r) for r in c.lines],
                           "right_of_way": c.right_of_way}
                          for c in d.conflicts]}


def decision_text(d: Decision) -> str:
    lines = [f"proximity check: {d.decision.upper()}: {d.reason}"]
    for c in d.conflicts[:6]:
        rng = fmt_ranges(list(c.ranges))
        lines.append(f"  {text(c.agent)} ({text(c.branch or 'detached')}) {text(c.path, 300)}"
                     f"{':' + rng if rng else ''} [{c.evidence}]")
        lines += [f"    {text(ln, 300)}" for ln in c.hunk.split("\n") if c.hunk]
    if len(d.conflicts) > 6:
        lines.append(f"  … {len(d.conflicts) - 6} more")
    return "\n".join(lines)
