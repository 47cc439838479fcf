"""Overlap channel: do two working sets edit the same base lines (as git's merge sees them)?

Per shared base path, ``score_file`` maps the two changes to [0, 1]:

* ranges that touch (no unchanged base line between; git conflicts):
  ``0.75 + 0.25 * overlap coefficient`` — always at or above the RA threshold, because git
  conflicts on any touch, however small the shared part;
* the same multi-hunk edit on both sides (identical ranges): most likely the same patch
  (cherry-pick, backport), which git merges cleanly; with blob ids at hand this is decided
  exactly (same result blob: 0.2), without them it is 0.5 (traffic, not a block);
* not touching but within ``near_lines`` unchanged lines: approaching, up to 0.5;
* same file, far apart: 0.1.

Changes without line information keep a defined meaning: two different results for one
binary, symlink or submodule cannot be merged by git (1.0), the same result can (0.2); a
large text file changed by both is 0.6 (traffic; the conflict channel settles it exactly);
mode-only changes conflict only with a different mode change; delete/delete merges cleanly;
rename/rename to different names and rename/delete conflict.
"""

from __future__ import annotations

from collections.abc import Iterable

from proximity import intervals, model
from proximity.config import Config
from proximity.model import FileChange, Finding, WorkingSet

TOUCH_BASE = 0.75
NEAR_MAX = 0.5
SAME_FILE = 0.1
SAME_PATCH = 0.5
IDENTICAL = 0.2
LARGE_BOTH = 0.6
# with the tree prior of a shared file (0.15) these stay below tau_RA = 0.70: 1-(1-0.6)(0.85)
INTENT_HIT = 0.6  # declared lines touch the other's edit (or intent)
INTENT_FILE = 0.45  # intent on a file the other is editing, no lines given
INTENT_BOTH = 0.35  # both intend the same file
INTENT_NEAR = 0.2  # declared lines elsewhere in a file the other edits


def score_file(a: FileChange, b: FileChange, near_lines: int) -> tuple[float, str]:
    if a.status == "D" and b.status == "D":
        return IDENTICAL, "both deleted"
    if a.status == "R" or b.status == "R":
        if a.status == "R" and b.status == "R" and a.new_path != b.new_path:
            return 1.0, f"renamed to {a.new_path!r} and to {b.new_path!r}"
        if {a.status, b.status} == {"R", "D"}:
            return 1.0, "renamed on one side, deleted on the other"
    same_result = bool(a.new_oid) and a.new_oid == b.new_oid and a.new_mode == b.new_mode
    if a.ranges is None or b.ranges is None:
        if {a.kind, b.kind} & {model.LARGE} and not same_result:
            return LARGE_BOTH, "large file changed on both sides"
        if same_result:
            return IDENTICAL, f"same {a.kind} result on both sides"
        if a.status == "D" or b.status == "D":
            return 1.0, f"{a.kind if a.ranges is None else b.kind} changed and deleted"
        return 1.0, f"{a.kind if a.ranges is None else b.kind} changed differently on both sides"
    if a.kind == model.MODE or b.kind == model.MODE:
        if a.kind == b.kind == model.MODE and a.new_mode != b.new_mode:
            return 1.0, "file mode changed differently"
        if not (a.ranges and b.ranges):
            return 0.0, "mode change only"
    if not a.ranges or not b.ranges:
        return 0.0, "no line change on one side"
    touching = intervals.touching(a.ranges, b.ranges)
    if touching:
        if same_result:
            return IDENTICAL, "identical edit on both sides (git merges it cleanly)"
        if a.ranges == b.ranges and len(a.ranges) >= 2 and not (a.new_oid and b.new_oid):
            return SAME_PATCH, "the same multi-hunk edit on both sides (likely one patch)"
        coef = intervals.overlap_coefficient(a.ranges, b.ranges)
        return TOUCH_BASE + 0.25 * coef, "edits touch: git would conflict"
    g = intervals.gap(a.ranges, b.ranges)
    if g is not None and near_lines and g <= near_lines:
        return NEAR_MAX * (1 - (g - 1) / near_lines), f"{g} unchanged line(s) apart"
    return SAME_FILE, "same file, different regions"


def _index(ws: WorkingSet) -> dict[str, FileChange]:
    out: dict[str, FileChange] = {}
    for fc in ws.files.values():
        out.setdefault(fc.path, fc)
    return out


def _touching_ranges(a: FileChange, b: FileChange) -> tuple[tuple[intervals.Range, ...], ...]:
    if a.ranges is None or b.ranges is None:
        return (), ()
    pairs = intervals.touching(a.ranges, b.ranges)
    if not pairs:
        return tuple(a.ranges[:3]), tuple(b.ranges[:3])
    return tuple(sorted({p[0] for p in pairs})), tuple(sorted({p[1] for p in pairs}))


def channel(a: WorkingSet, b: WorkingSet, cfg: Config) -> tuple[float, list[Finding]]:
    ia, ib = _index(a), _index(b)
    findings: list[Finding] = []
    for path in sorted(set(ia) & set(ib)):
        if cfg.excluded(path):
            continue
        fa, fb = ia[path], ib[path]
        s, why = score_file(fa, fb, cfg.near_lines)
        s *= a.weight(path) * b.weight(path)
        if s > 0:
            ra, rb = _touching_ranges(fa, fb)
            findings.append(Finding("overlap", s, path, path, ra, rb, why))
    # intents are look-ahead, not work: they warn (traffic) but never reach tau_RA alone
    findings.extend(_intent_findings(a, b, ia, ib, cfg))
    findings.extend(f.swapped() for f in _intent_findings(b, a, ib, ia, cfg))
    findings.sort(key=lambda f: -f.score)
    return (findings[0].score if findings else 0.0), findings


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
                hit = intervals.touching(lines, other.ranges)
                s = INTENT_HIT if hit else INTENT_NEAR
            else:
                s = INTENT_FILE
            yield Finding("overlap", s * w * b.weight(path), path, path, tuple(lines or ()),
                          tuple(other.ranges or ()), "intent meets an edit")
        elif path in b.intents and path not in ia:
            theirs = b.intents[path]
            s = INTENT_HIT if lines and theirs and intervals.touching(lines, theirs) \
                else INTENT_BOTH
            w2 = b.intent_weights.get(path, 1.0)
            if w2 > 0:
                yield Finding("overlap", s * w * w2, path, path, tuple(lines or ()),
                              tuple(theirs or ()), "both intend to edit")
