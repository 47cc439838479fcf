"""Overlap channel: do two working sets edit the same base lines (as git's merge sees them)?

Per shared base path, ``classify`` names the evidence: ranges that ``touch`` (no unchanged
base line between: git conflicts on that), ``near`` (a few unchanged lines apart),
``same-file``, an ``identical`` result, ``same-patch`` (the same multi-hunk edit without blob
ids: likely one patch on two branches), and, for changes without line information,
``binary-diff``, ``large-both``, ``mode-diff``, ``modify-delete``, ``rename-rename``,
``rename-delete``.

**The exact channel settles textual collisions.** When git's merge of the two live states ran
(``exact`` is a set of conflicted paths), a path it merged cleanly is approach evidence only:
``touch`` becomes ``touch-merged`` and the other stand-ins ``merged`` — their calibrated
probabilities are those of a later conflict, traffic at most. Only where the exact channel
could not run (intents, remote trees not fetched) do the stand-in classes speak for it.

Intents (declared, not yet made edits) are look-ahead: ``intent-hit``, ``intent-file``,
``intent-both``, ``intent-near``; they warn and never reach an RA alone.

The value of each edit finding is the calibrated probability of its class: lines both live
trees changed are a fact of both trees, held at full weight for as long as both hold them,
however many events pass (no recency decay). An intent is a claim: its finding is scaled by
the intent's forward decay. The channel's value is the largest.
"""

from __future__ import annotations

from collections.abc import Iterable

from proximity import calibration, model
from proximity.analysis import intervals
from proximity.channels.evidence import Evidence, Result
from proximity.config import Config
from proximity.model import FileChange, Finding, Range, WorkingSet

NAME = "overlap"
# prior probabilities, used until benchmarks/calibrate.py fits the table
DEFAULTS = {
    "touch": 0.85, "rename-rename": 0.9, "rename-delete": 0.9, "modify-delete": 0.9,
    "binary-diff": 0.9, "mode-diff": 0.8, "large-both": 0.5, "same-patch": 0.4,
    "identical": 0.02, "near": 0.3, "near-far": 0.15, "same-file": 0.06,
    "touch-merged": 0.4, "merged": 0.1,
    "intent-hit": 0.6, "intent-file": 0.45, "intent-both": 0.35, "intent-near": 0.2,
}
# stand-ins for git's merge: what they become where git's merge ran and was clean
STAND_IN = {"touch": "touch-merged", "rename-rename": "merged", "rename-delete": "merged",
            "modify-delete": "merged", "binary-diff": "merged", "mode-diff": "merged",
            "large-both": "merged", "same-patch": "merged"}


def prob(kind: str) -> float:
    return calibration.probability(NAME, kind, DEFAULTS[kind])


def classify(a: FileChange, b: FileChange, near_lines: int) -> tuple[str, str]:
    """(evidence class, why) for two changes of one base path; class "" = no evidence."""
    if a.status == "D" and b.status == "D":
        return "identical", "both deleted"
    if a.status == "R" or b.status == "R":
        if a.status == "R" and b.status == "R" and a.new_path != b.new_path:
            return "rename-rename", f"renamed to {a.new_path!r} and to {b.new_path!r}"
        if {a.status, b.status} == {"R", "D"}:
            return "rename-delete", "renamed on one side, deleted on the other"
    same_result = bool(a.new_oid) and a.new_oid == b.new_oid and a.new_mode == b.new_mode
    if a.ranges is None or b.ranges is None:
        what = a.kind if a.ranges is None else b.kind
        if {a.kind, b.kind} & {model.LARGE} and not same_result:
            return "large-both", "large file changed on both sides"
        if same_result:
            return "identical", f"same {a.kind} result on both sides"
        if a.status == "D" or b.status == "D":
            return "modify-delete", f"{what} changed and deleted"
        return "binary-diff", f"{what} changed differently on both sides"
    if a.kind == model.MODE or b.kind == model.MODE:
        if a.kind == b.kind == model.MODE and a.new_mode != b.new_mode:
            return "mode-diff", "file mode changed differently"
        if not (a.ranges and b.ranges):
            return "", "mode change only"
    if not a.ranges or not b.ranges:
        return "", "no line change on one side"
    if intervals.touching(a.ranges, b.ranges):
        if same_result:
            return "identical", "identical edit on both sides"
        if a.ranges == b.ranges and len(a.ranges) >= 2 and not (a.new_oid and b.new_oid):
            return "same-patch", "the same multi-hunk edit on both sides (likely one patch)"
        return "touch", "edits touch the same base lines"
    g = intervals.gap(a.ranges, b.ranges)
    if g is not None and near_lines and g <= near_lines:
        return ("near" if g <= 2 else "near-far"), f"{g} unchanged line(s) apart"
    return "same-file", "same file, different regions"


def settle(kind: str, why: str, path: str, exact: frozenset[str] | None) -> tuple[str, str]:
    """What git's own merge says about a stand-in class (see the module docstring)."""
    if exact is None:
        if kind == "touch":
            return kind, why + ": git would likely conflict"
        return kind, why
    if kind in STAND_IN and path not in exact:
        return STAND_IN[kind], why + "; git's merge of the live states is clean here"
    if path in exact:
        return kind, why + ": git's merge conflicts here"
    return kind, why


def _index(ws: WorkingSet) -> dict[str, FileChange]:
    out: dict[str, FileChange] = {}
    for fc in ws.files.values():
        out.setdefault(fc.path, fc)
    return out


def _touching_ranges(a: FileChange, b: FileChange) -> tuple[tuple[Range, ...], ...]:
    if a.ranges is None or b.ranges is None:
        return (), ()
    pairs = intervals.touching(a.ranges, b.ranges)
    if not pairs:
        return tuple(a.ranges[:3]), tuple(b.ranges[:3])
    return tuple(sorted({p[0] for p in pairs})), tuple(sorted({p[1] for p in pairs}))


def value(a: WorkingSet, b: WorkingSet, cfg: Config,
          exact: frozenset[str] | None = None) -> Result:
    """The channel on plain working sets; ``exact``: paths git's merge conflicts on, or
    None where the exact channel did not run."""
    ia, ib = _index(a), _index(b)
    findings: list[Finding] = []
    for path in sorted(set(ia) & set(ib)):
        if cfg.excluded(path):
            continue
        fa, fb = ia[path], ib[path]
        kind, why = classify(fa, fb, cfg.near_lines)
        if not kind:
            continue
        kind, why = settle(kind, why, path, exact)
        s = prob(kind)
        if s > 0:
            ra, rb = _touching_ranges(fa, fb)
            findings.append(Finding(NAME, s, path, path, ra, rb, why, kind=kind))
    # intents are look-ahead, not work: they warn (traffic) but never reach tau_RA alone
    findings.extend(_intent_findings(a, b, ia, ib, cfg))
    findings.extend(f.swapped() for f in _intent_findings(b, a, ib, ia, cfg))
    findings.sort(key=lambda f: -f.score)
    return Result(findings[0].score if findings else 0.0, findings)


def run(ev: Evidence) -> Result:
    return value(ev.wa, ev.wb, ev.cfg, ev.exact())


def _intent_findings(
    a: WorkingSet, b: WorkingSet, ia: dict[str, FileChange], ib: dict[str, FileChange],
    cfg: Config,
) -> Iterable[Finding]:
    """a's declared intents against b's edits and intents (forward-decayed)."""
    for path, lines in a.intents.items():
        w = a.intent_weights.get(path, 1.0)
        if w <= 0 or cfg.excluded(path):
            continue
        other = ib.get(path)
        if other is not None:
            if lines and other.ranges:
                kind = "intent-hit" if intervals.touching(lines, other.ranges) else "intent-near"
            else:
                kind = "intent-file"
            yield Finding(NAME, prob(kind) * w, path, path,
                          tuple(lines or ()), tuple(other.ranges or ()), "intent meets an edit",
                          kind=kind)
        elif path in b.intents and path not in ia:
            theirs = b.intents[path]
            kind = ("intent-hit" if lines and theirs and intervals.touching(lines, theirs)
                    else "intent-both")
            w2 = b.intent_weights.get(path, 1.0)
            if w2 > 0:
                yield Finding(NAME, prob(kind) * w * w2, path, path, tuple(lines or ()),
                              tuple(theirs or ()), "both intend to edit", kind=kind)
