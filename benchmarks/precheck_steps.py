"""Would the pre-edit check warn before the first conflict? ``steps.py``'s pairs, commit by commit.

For every pair of a ``steps.py --out`` file (same sample, same labels), the first-parent commits
of both sides are interleaved by committer time (as ``steps.py`` does, unsampled). Before each
commit c (parent p) of side X is applied, X asks ``proximity check`` for each path c changes,
with the lines c changes in p's coordinates (what an agent's edit of those lines asks: a
replaced range as is, a pure insertion its anchor line, a file c adds or a binary file the
whole file; a merge commit asks nothing: it is no agent's edit), against the other side Y as
it is at that moment (its tip). The check's facts are built the way ``precheck.gather``
builds them, from git objects instead of worktree files: the pair's base is
``git merge-base p Y``; Y's change of the path is git's ``-U0`` diff base..Y; the request
maps to base lines through X's own diff base..p (``hunks.to_base``); symbols defined in the
requested lines of p's blob (``definitions.defined_in``) used by Y's new code
(``definitions.new_uses`` over the diff base..Y). ``decision.decide`` answers; no intents are
declared in a replay.

    python benchmarks/precheck_steps.py benchmarks/out/steps.jsonl CASES... [--git-dir N=DIR]
        [--out benchmarks/out/precheck.jsonl] [--validate 10] [--json]
    python benchmarks/precheck_steps.py STEPS CASES... --load benchmarks/out/precheck.jsonl

Reported (fit / held-out / per repository): (a) eligible conflicting pairs (first conflicting
step > 0, as ``steps.py``) warned strictly before their first conflicting step, by an advisory
at an earlier step or by a check answered ask/deny before the commit that first made the
tips conflict (the earliest conflicting commit after the last clean sampled step) or earlier;
(b) on never-conflicting pairs the share of checks, commits and sampled steps answered
ask/deny, by evidence; (c) the same with "same-file" evidence answered allow.
``--validate N`` sets N sampled calls up as real worktrees (both at the base, uncommitted
edits; Y's state recorded by ``proximity snapshot``) and runs ``proximity check --json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay
import steps

from proximity import gitio
from proximity.agents import decision, definitions, filemerge, precheck
from proximity.analysis import hunks
from proximity.model import Range

KINDS = ("conflict", "near", "same-file", "symbol")


class Replayer:
    """Git reads for one repository, cached per commit pair."""

    def __init__(self, src: replay.Source) -> None:
        self.src = src
        self.cache: dict[tuple[str, ...], Any] = {}

    def git(self, args: list[str]) -> str:
        return gitio.git(args, cwd=self.src.path).stdout.decode("utf-8", "replace")

    def diff(self, old: str, new: str, paths: Sequence[str] = ()) -> str:
        key = ("diff", old, new, *paths)
        if key not in self.cache:
            self.cache[key] = self.git([*gitio.DIFF_ARGS, old, new, "--", *paths] if paths
                                       else gitio.tree_diff_args(old, new))
        return str(self.cache[key])

    def merge_base(self, x: str, y: str) -> str:
        key = ("mb", *sorted((x, y)))
        if key not in self.cache:
            self.cache[key] = self.git(["merge-base", x, y]).strip()
        return str(self.cache[key])

    def blob(self, commit: str, path: str) -> bytes | None:
        proc = gitio.git(gitio.blob_args(commit, path), cwd=self.src.path, ok=(0, 128))
        return proc.stdout if proc.returncode == 0 else None


requests = precheck.edits_of  # the check calls one commit's edits make (one implementation)
MERGES = False  # --merges: merge commits ask too (`check --merge`)


def sides_for(g: Replayer, p: str, y: str, calls: list[tuple[str, tuple[Range, ...] | None]],
              merging: str | None = None, merged: str | None = None) -> list[decision.Side]:
    """One decision.Side per call: X at p asks, Y's live state is its tip y. ``merging``:
    X is about to merge that commit into ``merged`` (`check --merge`): the pair's base is
    the later of the two merge bases, and against a base from the merged side only the
    merged tree's lines count, as precheck.gather takes them."""
    base = g.merge_base(p, y)
    after: dict[str, hunks.FileDiff] | None = None
    if merging:
        b2 = g.merge_base(merging, y)
        if b2 and b2 != base and (not base or g.src.repo.is_ancestor_cli(base, b2)):
            base = b2
            if merged:
                after = hunks.parse(g.diff(b2, merged, [c[0] for c in calls]))
    paths = [c[0] for c in calls]
    theirs = hunks.parse(g.diff(base, y, paths)) if base != y else {}
    mine = hunks.parse(g.diff(base, p, paths)) if base != p else {}
    out = []
    for path, ranges in calls:
        own = mine.get(path)
        base_ranges = None if ranges is None else filemerge.joined(
            tuple(hunks.to_base(ranges, own.hunks if own else ())), own)
        if after is not None:
            if path not in after:
                continue  # the merged tree leaves this file as that base has it
            base_ranges = precheck.edits_of({path: after[path]})[0][1]
        uses: tuple[decision.Use, ...] = ()
        if base != y:
            data = g.blob(p, path)
            names = definitions.defined_in(path, data, ranges) if data is not None else []
            if names:
                uses = tuple(definitions.new_uses(g.diff(base, y), names, path))
        out.append(decision.Side("y", None, path, base_ranges, ranges, theirs.get(path),
                                None, False, uses))
    return out


def merges(g: Replayer, base: str, tip: str) -> set[str]:
    return set(g.git(["rev-list", "--first-parent", "--merges", f"{base}..{tip}"]).split())


def events_of(g: Replayer, case: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(side, commit, parent, other side's tip) of every commit, interleaved as steps.py."""
    base = case["base"]
    ev = sorted([(t, 0, c) for t, c in steps.chain(g.src, base, case["a"]["commit"])]
                + [(t, 1, c) for t, c in steps.chain(g.src, base, case["b"]["commit"])])
    tips = [base, base]
    out = []
    for _, side, c in ev:
        out.append((side, c, tips[side], tips[1 - side]))
        tips[side] = c
    return out


def replay_pair(g: Replayer, case: dict[str, Any], rows: list[dict[str, Any]]
                ) -> dict[str, Any]:
    """Every check of one pair, with the labels of its ``steps.py`` rows."""
    evs = events_of(g, case)
    after: dict[tuple[str, str], int] = {}
    tips = [case["base"], case["base"]]
    for i, (side, c, _, _) in enumerate(evs):
        tips[side] = c
        after.setdefault((tips[0], tips[1]), i)
    step_at = [after[r["a"], r["b"]] for r in rows]
    first = next((k for k, r in enumerate(rows) if r["conflict_now"]), None)
    cut = len(evs) - 1
    at_cut: list[str] = []
    if first is not None:  # the commit that first made the tips conflict
        lo = step_at[first - 1] + 1 if first > 0 else 0
        cut = step_at[first]
        tips = [case["base"], case["base"]]
        for i, (side, c, _, _) in enumerate(evs[:step_at[first] + 1]):
            tips[side] = c
            if i >= lo and case["base"] not in tips and g.src.conflicts(tips[0], tips[1]):
                cut = i
                break
        cut_tips = [case["base"], case["base"]]
        for side, c, _, _ in evs[:cut + 1]:
            cut_tips[side] = c
        at_cut = g.src.repo.merge_conflicts(cut_tips[0], cut_tips[1]) or []
    checks = []
    merged = merges(g, case["base"], case["a"]["commit"]) | merges(
        g, case["base"], case["b"]["commit"])
    then: dict[tuple[str, str], bool] = {}
    for i, (side, c, p, y) in enumerate(evs[:cut + 1]):
        merging = None
        if c in merged:
            if not MERGES:
                continue  # a merge brings others' work in: no agent edits, no check
            # `check --merge`: asked before merging, with what the merge changes here
            merging = next(iter(g.git(["rev-list", "--parents", "-n1", c]).split()[2:]), None)
        calls = requests(hunks.parse(g.diff(p, c)))
        if not calls:
            continue
        for s in sides_for(g, p, y, calls, merging, c if merging else None):
            d = decision.decide([s])
            kinds = sorted({f.evidence for f in d.conflicts})
            if d.decision == decision.DENY and (c, y) not in then:
                then[c, y] = bool(g.src.conflicts(c, y))  # the tips right after c
            checks.append({"event": i, "side": "ab"[side], "commit": c, "parent": p,
                           "other": y, "path": s.path, "then_conflicts": then.get((c, y)),
                           "lines": None if s.requested is None else [list(r) for r in
                                                                     s.requested],
                           "decision": d.decision, "evidence": kinds})
    return {"id": case["id"], "repo": case["repo"], "events": len(evs), "cut": cut,
            "merges": sum(c in merged for _, c, _, _ in evs[:cut + 1]),
            "first_conflict_step": first, "step_events": step_at, "conflict_paths": at_cut,
            "advisory": [r["advisory"] for r in rows], "checks": checks}


def relaxed(c: dict[str, Any]) -> str:
    """The candidate policy: same-file evidence alone is answered allow."""
    return "allow" if set(c["evidence"]) <= {"same-file"} else str(c["decision"])


def summary(pairs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    pairs = list(pairs)
    elig = [p for p in pairs if p["first_conflict_step"] not in (None, 0)]
    never = [p for p in pairs if p["first_conflict_step"] is None]

    def warned(p: dict[str, Any], how: str) -> bool:
        f = p["first_conflict_step"]
        adv = any(a != "clear" for a in p["advisory"][:f])
        chk = any((relaxed(c) if how.endswith("relaxed") else c["decision"]) != "allow"
                  for c in p["checks"])
        on_file = any(c["decision"] != "allow" and c["path"] in p["conflict_paths"]
                      for c in p["checks"])
        return {"advisory": adv, "check": chk, "either": adv or chk, "check-on-file": on_file,
                "check-relaxed": chk, "either-relaxed": adv or chk}[how]

    def share(n: int, d: int) -> float | None:
        return round(n / d, 4) if d else None

    out: dict[str, Any] = {"pairs": len(pairs), "eligible_conflicting_pairs": len(elig)}
    for how in ("advisory", "check", "either", "check-on-file", "check-relaxed",
                "either-relaxed"):
        out[f"warned_early_{how}"] = share(sum(warned(p, how) for p in elig), len(elig))
    at_last = 0  # the only check warning was the one asked for the conflicting commit
    for p in elig:
        hits = [c["event"] for c in p["checks"] if c["decision"] != "allow"]
        at_last += bool(hits) and min(hits) == p["cut"]
    out["warned_early_check_only_at_conflicting_commit"] = share(at_last, len(elig))
    first_ev: Counter[str] = Counter()
    for p in elig:
        hit = next((c for c in p["checks"] if c["decision"] != "allow"), None)
        if hit is not None:
            first_ev["+".join(hit["evidence"])] += 1
    out["first_check_warning_evidence"] = dict(first_ev.most_common())
    checks = [c for p in never for c in p["checks"]]
    out["never_conflict_pairs"] = len(never)
    out["never_checks"] = len(checks)
    for pol, fn in (("", lambda c: c["decision"]), ("relaxed_", relaxed)):
        out[f"{pol}check_ask"] = share(sum(fn(c) == "ask" for c in checks), len(checks))
        out[f"{pol}check_deny"] = share(sum(fn(c) == "deny" for c in checks), len(checks))
        commits: dict[tuple[str, int], bool] = {}
        for p in never:
            for c in p["checks"]:
                key = (p["id"], c["event"])
                commits[key] = commits.get(key, False) or fn(c) != "allow"
        out[f"{pol}commits_warned"] = share(sum(commits.values()), len(commits))
        per_pair = [[v for k, v in commits.items() if k[0] == p["id"]] for p in never]
        per_pair = [v for v in per_pair if v]
        out[f"{pol}commits_warned_pair_mean"] = round(
            sum(sum(v) / len(v) for v in per_pair) / len(per_pair), 4) if per_pair else None
        st = st_chk = st_any = 0
        for p in never:
            prev = -1
            for k, at in enumerate(p["step_events"]):
                chk = any(prev < c["event"] <= at and fn(c) != "allow" for c in p["checks"])
                st += 1
                st_chk += chk
                st_any += chk or p["advisory"][k] != "clear"
                prev = at
        out[f"{pol}steps_warned_by_check"] = share(st_chk, st)
        out[f"{pol}steps_warned_check_or_advisory"] = share(st_any, st)
    denies = [c for c in checks if c["decision"] == decision.DENY]
    out["never_denies_then_conflicting"] = share(
        sum(bool(c.get("then_conflicts")) for c in denies), len(denies))
    out["never_commits"] = len({(p["id"], c["event"]) for p in never for c in p["checks"]})
    out["never_steps"] = sum(len(p["step_events"]) for p in never)
    out["check_evidence_share"] = {k: share(sum(k in c["evidence"] for c in checks),
                                            len(checks)) for k in KINDS}
    out["check_evidence_only_share"] = {k: share(sum(c["evidence"] == [k] for c in checks),
                                                 len(checks)) for k in KINDS}
    return out


# -- real worktrees ------------------------------------------------------------------------
def _state(g: Replayer, repo: str, wt: str, base: str, tip: str) -> None:
    """Worktree at ``base`` with ``tip``'s tree as uncommitted (staged) edits."""
    gitio.git(["worktree", "add", "-q", "--detach", wt, base], cwd=repo)
    if tip != base:
        gone = g.git(["diff", "--no-renames", "--name-only", "--diff-filter=D", base, tip,
                      "--"]).split("\n")
        gone = [x for x in gone if x]
        for k in range(0, len(gone), 200):
            gitio.git(["rm", "-q", "--", *gone[k:k + 200]], cwd=wt)
        gitio.git(["checkout", tip, "--", "."], cwd=wt)


def validate(g: Replayer, sample: list[dict[str, Any]], prox: list[str]) -> dict[str, Any]:
    agree, rows = 0, []
    for c in sample:
        base = g.merge_base(c["parent"], c["other"])
        tmp = tempfile.mkdtemp(prefix="precheck-val-")
        repo, x, y = (os.path.join(tmp, n) for n in ("repo", "x", "y"))
        try:  # a fresh repository borrowing the fetched objects: nothing else lives there
            gitio.git(["init", "-q", repo], cwd=tmp)
            with open(os.path.join(repo, ".git", "objects", "info", "alternates"), "w") as f:
                f.write(os.path.join(os.path.abspath(g.src.git_dir), "objects") + "\n")
            _state(g, repo, x, base, c["parent"])
            _state(g, repo, y, base, c["other"])
            subprocess.run([*prox, "snapshot"], cwd=y, capture_output=True, check=True)
            spec = c["path"] if c["lines"] is None else c["path"] + ":" + ",".join(
                f"{s}-{e}" for s, e in c["lines"])
            proc = subprocess.run([*prox, "check", "--json", spec], cwd=x,
                                  capture_output=True, text=True)
            got: dict[str, Any] = (json.loads(proc.stdout) if proc.stdout.strip()
                                   else {"decision": proc.stderr})
            real = got.get("decision")
            kinds = sorted({h["evidence"] for h in got.get("conflicts", [])})
            ok = real == c["decision"] and kinds == c["evidence"]
            agree += ok
            rows.append({"repo": g.src.name, "spec": spec, "replayed": c["decision"],
                         "real": real, "evidence": kinds, "agree": ok})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"agree": agree, "n": len(sample), "calls": rows}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", help="a steps.py --out file (its pairs and labels)")
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--git-dir", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--repos", help="comma-separated repository names (default: all)")
    ap.add_argument("--validate", type=int, default=10, help="calls re-run in real worktrees")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out")
    ap.add_argument("--load", help="report on a previous --out file instead of replaying")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--merges", action="store_true",
                    help="merge commits ask too, as `proximity check --merge` before merging")
    args = ap.parse_args(argv)
    global MERGES
    MERGES = args.merges
    by_id = {c["id"]: c for c in replay.load_cases(args.cases)}
    dirs = replay.git_dirs(args.cases, args.git_dir)
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with open(args.steps) as f:
        for line in f:
            r = json.loads(line)
            rows[r["id"]].append(r)
    want = set(args.repos.split(",")) if args.repos else None
    pairs: list[dict[str, Any]] = []
    errors = []
    reps: dict[str, Replayer] = {}
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 -- written as we go
    if args.load:
        with open(args.load) as f:
            loaded = [json.loads(line) for line in f if line.strip()]
        rows = defaultdict(list)  # nothing to replay
        pairs = [p for p in loaded if not want or p["repo"] in want]
        for name in {p["repo"] for p in pairs}:
            reps[name] = Replayer(replay.Source(name, dirs[name],
                                                os.path.join(replay.OUT, "scratch-precheck")))
    for pid, rs in rows.items():
        case = by_id[pid]
        name = case["repo"]
        if (want and name not in want) or name not in dirs:
            continue
        if name not in reps:
            reps[name] = Replayer(replay.Source(name, dirs[name],
                                                os.path.join(replay.OUT, "scratch-precheck")))
        try:
            got = replay_pair(reps[name], case, sorted(rs, key=lambda r: r["step"]))
        except Exception as e:  # reported, never hidden
            errors.append([pid, repr(e)[:160]])
            continue
        pairs.append(got)
        if sink:
            sink.write(json.dumps(got) + "\n")
            sink.flush()
    if sink:
        sink.close()
    names = sorted({p["repo"] for p in pairs})
    report: dict[str, Any] = {
        "overall": summary(pairs),
        "fit": summary(p for p in pairs if p["repo"] in replay.FIT),
        "held_out": summary(p for p in pairs if p["repo"] not in replay.FIT),
        "per_repo": {n: summary(p for p in pairs if p["repo"] == n) for n in names},
        "fit_repos": list(replay.FIT), "errors": errors,
    }
    if args.validate:
        rnd = random.Random(args.seed)
        calls = [(p["repo"], c) for p in pairs for c in p["checks"]]
        pick: list[tuple[str, dict[str, Any]]] = []  # a third of each answer
        for k, answer in enumerate((decision.DENY, decision.ASK, decision.ALLOW)):
            these = [x for x in calls if x[1]["decision"] == answer]
            want_n = (args.validate - len(pick)) // (3 - k)
            pick += rnd.sample(these, min(want_n, len(these)))
        exe = shutil.which("proximity", path=os.path.dirname(sys.executable))
        prox = [exe] if exe else [sys.executable, "-m", "proximity"]
        agree, n = 0, 0
        out: list[dict[str, Any]] = []
        for repo, c in pick:
            v = validate(reps[repo], [c], prox)
            agree, n, out = agree + v["agree"], n + v["n"], out + v["calls"]
        report["validated"] = {"agree": agree, "n": n, "calls": out}
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        cols = ("pairs", "eligible_conflicting_pairs", "warned_early_advisory",
                "warned_early_check", "warned_early_either", "warned_early_either-relaxed",
                "never_checks", "check_ask", "check_deny", "steps_warned_by_check",
                "relaxed_steps_warned_by_check")
        print(f"{'':14}" + "".join(f"{c[-14:]:>15}" for c in cols))
        for n, s in [*report["per_repo"].items(), ("FIT", report["fit"]),
                     ("HELD-OUT", report["held_out"]), ("OVERALL", report["overall"])]:
            print(f"{n:14}" + "".join(f"{'-' if s[c] is None else s[c]!s:>15}" for c in cols))
        if "validated" in report:
            print(f"real worktrees agree: {report['validated']['agree']}"
                  f"/{report['validated']['n']}")
        print(f"errors: {errors[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
