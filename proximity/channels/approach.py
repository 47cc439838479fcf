"""Approach channel: two sides working the same region of a file, before git conflicts.

Git's merge (the exact channel) settles what collides *now*; this channel says how two
edits of one file are coming together. Per base path both sides modified and git's merge of
the live states does not conflict on, ``features`` finds in the base blob the innermost
definition (function, method, class or type, parsed by ``symbols.writes``) around each side's
changed lines and the fewest unchanged lines between the two sides' nearest hunks; and
``coverage`` how much of the file both sides changed. Evidence classes:

    cover    both sides changed at least 20 % of the base file's lines
    fn-near  both inside the same function or method, at most 20 unchanged lines apart
    fn-far   the same function or method, further apart
    cls      the same class or type, different members

(edits in different definitions get no approach finding: the overlap channel's ``near``,
``near-far`` and ``same-file`` say what line distance alone is worth). Each finding names
the definition and both sides' lines; its value is the class's calibrated probability that
the pair conflicts now or at a later step (``benchmarks/calibrate.py``, fitted on
commit-by-commit replays of real branch pairs). An approach is not a collision: the
channel's value is held below tau_RA, traffic at most. It is a forecast that can go stale
(a side that has not touched the region for many events has likely moved on), so each
finding is scaled by both sides' recency of the path: the one channel whose value decays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from proximity import calibration
from proximity.analysis import intervals
from proximity.analysis.symbols import writes
from proximity.channels.evidence import Evidence, Result
from proximity.model import TEXT, FileChange, Finding, Range, WorkingSet

NAME = "approach"
# priors, used until benchmarks/calibrate.py fits the table
DEFAULTS = {"cover": 0.2, "fn-near": 0.15, "fn-far": 0.05, "cls": 0.08}
GAP_NEAR = 20  # unchanged lines between the nearest hunks still "near"
COVER = 0.2  # both sides changed at least this share of the base file's lines
CAP_MARGIN = 0.01  # how far below tau_RA the channel is held: approach is never an RA
SPANNING = ("function", "method", "class", "symbol")


class Features(NamedTuple):
    gap: int  # fewest unchanged base lines between the two sides' nearest hunks
    level: str  # fn | cls | file
    shared: str  # the shared definition's qualified name ("" for file)
    near_a: tuple[Range, ...]  # a's ranges inside it (or nearest to b)
    near_b: tuple[Range, ...]


def prob(kind: str) -> float:
    return calibration.probability(NAME, kind, DEFAULTS[kind])


def _span(r: Range) -> tuple[int, int]:
    """Base lines a range occupies; an insertion after line p sits between p and p + 1."""
    s, e = r
    return (s, e) if e >= s else (s - 1, s)


def enclosing(defs: dict[str, list[Any]], r: Range) -> list[str]:
    """Innermost definitions (function/method/class/type) the range falls in or overlaps."""
    lo, hi = _span(r)
    hits = [(q, d[3], d[4]) for q, d in defs.items()
            if d and d[0] in SPANNING and isinstance(d[3], int) and d[3] <= hi and lo <= d[4]
            and not (r[1] < r[0] and (lo < d[3] or hi > d[4]))]
    return [q for q, s, e in hits
            if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for _, s2, e2 in hits)]


def _owner(q: str, defs: dict[str, list[Any]]) -> str:
    """The class/type a member belongs to (itself for a class or type)."""
    d = defs.get(q)
    if d and d[0] in ("class", "symbol"):
        return q
    return q.rsplit(".", 1)[0] if "." in q else ""


def features(ra: Sequence[Range], rb: Sequence[Range], defs: dict[str, list[Any]] | None
             ) -> Features | None:
    """How close two sides' edits of one base blob are; None when either side is empty."""
    g = intervals.gap(ra, rb)
    if g is None:
        return None
    da = {r: enclosing(defs, r) for r in ra} if defs else {}
    db = {r: enclosing(defs, r) for r in rb} if defs else {}
    fa = {q for qs in da.values() for q in qs if defs and defs[q][0] in ("function", "method")}
    fb = {q for qs in db.values() for q in qs if defs and defs[q][0] in ("function", "method")}
    both = sorted(fa & fb)
    if both and defs:
        q = min(both, key=lambda x: defs[x][4] - defs[x][3])
        return Features(g, "fn", q, tuple(r for r, qs in da.items() if q in qs),
                        tuple(r for r, qs in db.items() if q in qs))
    oa = {_owner(q, defs) for qs in da.values() for q in qs} - {""} if defs else set()
    ob = {_owner(q, defs) for qs in db.values() for q in qs} - {""} if defs else set()
    owners = sorted(oa & ob)
    if owners and defs:
        q = owners[0]
        return Features(g, "cls", q,
                        tuple(r for r, qs in da.items() if any(_owner(x, defs) == q for x in qs)),
                        tuple(r for r, qs in db.items() if any(_owner(x, defs) == q for x in qs)))
    near = [(x, y) for x in ra for y in rb if intervals.gap([x], [y]) == g]
    return Features(g, "file", "", tuple(sorted({x for x, _ in near})),
                    tuple(sorted({y for _, y in near})))


def kinds(f: Features, cover: float) -> list[str]:
    """Every evidence class the features show (the channel reports each)."""
    out = []
    if cover >= COVER:
        out.append("cover")
    if f.level == "fn":
        out.append("fn-near" if f.gap <= GAP_NEAR else "fn-far")
    elif f.level == "cls":
        out.append("cls")
    return out


def coverage(a: FileChange, b: FileChange) -> float:
    """The smaller of the two sides' shares of the base file's lines changed."""
    if not a.old_lines or not a.ranges or not b.ranges:
        return 0.0

    def size(rs: Sequence[Range]) -> int:
        return sum(max(1, e - s + 1) for s, e in rs)

    return min(size(a.ranges), size(b.ranges)) / a.old_lines


def describe(kind: str, f: Features, cover: float, path: str) -> str:
    if kind == "cover":
        what = f"both sides rewrote at least {cover:.0%} of {path}"
    elif kind == "cls":
        what = f"both edit members of {f.shared}"
    else:
        what = f"both edit {f.shared}()"
    return (f"{what}, nearest edits {f.gap} unchanged line(s) apart; git merges them cleanly "
            "so far")


def path_findings(path: str, fa: FileChange, fb: FileChange,
                  read: Callable[[str], bytes], cache: dict[str, Any]) -> list[Finding]:
    """The approach findings for one shared base path (none: no approach evidence)."""
    if fa.kind != TEXT or fb.kind != TEXT or not fa.ranges or not fb.ranges:
        return []
    if fa.status != "M" or fb.status != "M" or fa.old_oid != fb.old_oid:
        return []
    if fa.new_oid and fa.new_oid == fb.new_oid:
        return []  # identical result: nothing to approach
    facts = writes.facts(cache, read, path, fa.old_oid) if fa.old_oid else None
    f = features(fa.ranges, fb.ranges, facts["defs"] if facts else None)
    if f is None:
        return []
    cover = coverage(fa, fb)
    out = []
    for kind in kinds(f, cover):
        ra, rb = (fa.ranges, fb.ranges) if kind == "cover" else (f.near_a, f.near_b)
        why = describe(kind, f, cover, path)  # the lines are the finding's own ranges
        out.append(Finding(NAME, prob(kind), path, path, tuple(ra[:4]), tuple(rb[:4]), why,
                           kind=kind))
    return out


def value(a: WorkingSet, b: WorkingSet, read: Callable[[str], bytes], cache: dict[str, Any],
          tau_ra: float, exact: frozenset[str] | None = None,
          excluded: Callable[[str], bool] = lambda p: False) -> Result:
    ia = {fc.path: fc for fc in a.files.values()}
    ib = {fc.path: fc for fc in b.files.values()}
    findings: list[Finding] = []
    for path in sorted(set(ia) & set(ib)):
        if excluded(path) or (exact is not None and path in exact):
            continue  # git's merge conflicts here: the conflict channel has it
        for f in path_findings(path, ia[path], ib[path], read, cache):
            s = min(f.score * a.recency(path) * b.recency(path), tau_ra - CAP_MARGIN)
            if s > 0:
                findings.append(dataclasses.replace(f, score=s))
    findings.sort(key=lambda f: -f.score)
    return Result(findings[0].score if findings else 0.0, findings)


def run(ev: Evidence) -> Result:
    pw = ev.scope
    return value(ev.wa, ev.wb, pw.repo.blob, pw.facts.symbols_cache, ev.cfg.tau_ra, ev.exact(),
                 ev.cfg.excluded)
