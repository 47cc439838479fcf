"""The swarm's lines of work: drawn from a fetched repository's real history, all replayed
from one base T, and which pairs of them git cannot merge.

Two ways of drawing them (``--contention``):

* ``merges`` (the default): around a first-parent merge whose two sides git could not merge,
  the lines of work concurrent with it from its merge base T: each first-parent step of the
  trunk side (a pull request's own commits, or a commit made on the trunk directly; those
  touching a file the merge conflicted in first) and the merged side whole. Each is
  cherry-picked onto T (a commit that does not apply is dropped). A quiet sky: the planned
  conflicts are star-shaped around the merged side.
* ``hot``: the repository's most-changed files (first-parent history, each step's diff
  against the trunk it landed on) and the first-parent steps that touched them — real
  commits of real pull requests. A window of consecutive such steps is replayed onto the
  trunk just before its oldest (T); where a step's change meets what an earlier step of the
  window changed, the step's side is taken (``cherry-pick -X theirs``), as an author who
  started from T would have written it. Pull requests that followed one another on the
  changelog, the settings, the client module now all start from one base: many pairs
  conflict.

Of the pool, the N that conflict pairwise most (``git merge-tree``) are kept; of ``tries``
candidate merges or windows, the assignment whose N conflict most.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

IDENT = {"GIT_AUTHOR_NAME": "swarm", "GIT_AUTHOR_EMAIL": "swarm@example.com",
         "GIT_COMMITTER_NAME": "swarm", "GIT_COMMITTER_EMAIL": "swarm@example.com"}


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(IDENT, LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1")
    env.update(extra or {})
    return env


def run(args: Sequence[str], cwd: str, ok: Sequence[int] = (0,), stdin: str | None = None,
        extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(args), cwd=cwd, input=stdin, capture_output=True, text=True,
                       env=env_for(extra), errors="replace")
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(args)} in {cwd}: exit {p.returncode}: "
                           f"{p.stderr.strip()[:400]}")
    return p


def git(args: Sequence[str], cwd: str, ok: Sequence[int] = (0,),
        extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(["git", *args], cwd, ok, extra=extra)


def out(args: Sequence[str], cwd: str) -> str:
    return git(args, cwd).stdout.strip()


def blob(repo: str, commit: str, path: str) -> bytes | None:
    p = subprocess.run(["git", "cat-file", "blob", f"{commit}:{path}"], cwd=repo,
                       capture_output=True, env=env_for())
    return p.stdout if p.returncode == 0 else None


def conflict_files(repo: str, a: str, b: str) -> set[str] | None:
    """Files git's merge of a and b conflicts in (None: it merges cleanly)."""
    p = git(["merge-tree", "--write-tree", "--name-only", "--no-messages", a, b], repo,
            ok=(0, 1))
    if p.returncode == 0:
        return None
    return {ln for ln in p.stdout.split("\n")[1:] if ln.strip()}


def dropped_lines(repo: str, kept: str, taken: str) -> int:
    """Lines of ``kept``'s own work that a resolution taking ``taken``'s side of every
    conflict (``-X theirs``, as the swarm resolves a landing) throws away: in git's merge
    of the two (diff3 markers), the lines of ``kept``'s side of each conflict hunk that its
    base section does not hold. A landing's rebase replays the lane commit by commit; this
    is measured on the merge of the trunk with the lane's tip."""
    p = git(["-c", "merge.conflictStyle=diff3", "merge-tree", "--write-tree",
             "--name-only", "--no-messages", kept, taken], repo, ok=(0, 1))
    if p.returncode == 0:
        return 0
    lines = p.stdout.split("\n")
    tree, files = lines[0].strip(), [ln for ln in lines[1:] if ln.strip()]
    dropped = 0
    for path in dict.fromkeys(files):
        text = blob(repo, tree, path)
        if text is not None:
            dropped += _kept_side_lost(text.decode("utf-8", "replace").split("\n"))
    return dropped


def _kept_side_lost(lines: list[str]) -> int:
    """In one file's diff3 conflict markers: the first side's lines not in the base's."""
    lost, section = 0, ""
    ours: list[str] = []
    base: list[str] = []
    for ln in lines:
        if ln.startswith("<<<<<<< "):
            section, ours, base = "ours", [], []
        elif section == "ours" and ln.startswith("||||||| "):
            section = "base"
        elif section in ("ours", "base") and ln == "=======":
            section = "theirs"
        elif section == "theirs" and ln.startswith(">>>>>>> "):
            lost += sum((Counter(ours) - Counter(base)).values())
            section = ""
        elif section == "ours":
            ours.append(ln)
        elif section == "base":
            base.append(ln)
    return lost



@dataclass(frozen=True)
class Drawing:
    """How lines of work are drawn from history."""
    contention: str = "merges"  # merges or hot
    merges: int = 150  # newest first-parent merges (merges) or steps (hot) to draw from
    max_commits: int = 12  # per line of work
    max_files: int = 25  # per line of work
    pool: int | None = None  # lines of work to pick from (merges: 4 N, hot: 2 N)
    tries: int = 4  # merges (or windows) tried
    hot_files: int = 8  # the most-changed files a hot line of work touches one of
    hot_match: str | None = None  # a regular expression hot files must match

# -- lines of work ---------------------------------------------------------------------
@dataclass
class Branch:
    merge: str
    first_parent: str
    commits: list[str]  # the pull request's own commits, oldest first


@dataclass
class Plan:
    branch: Branch
    commits: list[str]  # cherry-picked onto T in the scratch repository, oldest first

    @property
    def tip(self) -> str:
        return self.commits[-1]


def rebase_onto(scratch: str, trunk: str, branch: Branch, theirs: bool = False) -> Plan | None:
    """The branch's commits replayed onto ``trunk``; what does not apply is dropped (with
    ``theirs``, where a commit meets a change ``trunk`` lacks, the commit's side is taken)."""
    git(["checkout", "-q", "--detach", "-f", trunk], scratch)
    strategy = ["-X", "theirs"] if theirs else []
    for c in branch.commits:
        p = git(["cherry-pick", "--allow-empty-message", *strategy, c], scratch, ok=(0, 1))
        if p.returncode != 0:
            git(["cherry-pick", "--abort"], scratch, ok=(0, 128))
            git(["reset", "-q", "--hard"], scratch)
    made = out(["rev-list", "--reverse", f"{trunk}..HEAD"], scratch).split()
    return Plan(branch, made) if made else None


def pairwise(scratch: str, plans: list[Plan]) -> dict[tuple[int, int], set[str]]:
    """(i, j) -> files where plan i's and plan j's tips conflict, conflicting pairs only."""
    found = {}
    for i in range(len(plans)):
        for j in range(i + 1, len(plans)):
            files = conflict_files(scratch, plans[i].tip, plans[j].tip)
            if files is not None:
                found[i, j] = found[j, i] = files
    return found


@dataclass
class Assignment:
    trunk: str
    plans: list[Plan]
    conflicts: dict[tuple[int, int], set[str]]
    broken_alone: list[str] = field(default_factory=list)  # lanes left out: CMD failed on them


# a lane's own tip alone passes the verification (True), fails it where T passes (False)
LaneCheck = Callable[[str, "Plan"], bool]


def scratch_repo(git_dir: str, where: str) -> str:
    """A work repository borrowing the fetched objects (the fetched one is never written)."""
    path = os.path.join(where, "scratch")
    git(["init", "-q", path], where)
    objects = os.path.join(os.path.abspath(git_dir), "objects")
    with open(os.path.join(path, ".git", "objects", "info", "alternates"), "w") as f:
        f.write(objects + "\n")
    return path


def pick(n: int, conflicts: dict[tuple[int, int], set[str]], size: int) -> list[int]:
    """N of the pool, greedily the ones that conflict with those already picked (real
    collisions are what the policies are for), then the rest in merge order."""
    degree = [sum((i, j) in conflicts for j in range(size)) for i in range(size)]
    chosen: list[int] = []
    while len(chosen) < n:
        rest = [i for i in range(size) if i not in chosen]
        chosen.append(max(rest, key=lambda i: (sum((i, j) in conflicts for j in chosen),
                                               degree[i] > 0, -i)))
    return sorted(chosen)


def steps_of(repo: str, base: str, tip: str, max_commits: int) -> list[Branch]:
    """Each first-parent step of base..tip as a line of work: a merged branch's own commits,
    or one commit made on that line directly."""
    found = []
    for line in out(["log", "--first-parent", "--reverse", "--format=%H %P", f"{base}..{tip}"],
                    repo).split("\n"):
        parts = line.split()
        if len(parts) == 2:
            found.append(Branch(parts[0], parts[1], [parts[0]]))
        elif len(parts) == 3:
            commits = out(["rev-list", "--reverse", "--no-merges", f"{parts[1]}..{parts[2]}"],
                          repo).split()
            if 1 <= len(commits) <= max_commits:
                found.append(Branch(parts[0], parts[1], commits))
    return found


def units(repo: str, merge: str, max_commits: int, max_files: int,
          per_side: int) -> tuple[str, list[Branch]]:
    """The lines of work concurrent with one conflicting merge, from its merge base T:
    ``per_side`` first-parent steps of the trunk side small enough to replay (those touching
    a file the merge conflicted in first, then the newest), and the merged side whole (its
    commits build on each other; up to three times the size), so that the conflict the merge
    met is among them."""
    p1, p2 = out(["rev-parse", f"{merge}^1", f"{merge}^2"], repo).split()
    base = out(["merge-base", p1, p2], repo)

    def files(b: Branch) -> list[str]:
        return out(["diff", "--name-only", f"{b.commits[0]}^", b.commits[-1]], repo).split()

    contested = conflict_files(repo, p1, p2) or set()
    steps = [(b, files(b)) for b in steps_of(repo, base, p1, max_commits)]
    steps = [(b, f) for b, f in steps if len(f) <= max_files]
    # the steps that touch what the merge conflicted in first, then the newest
    ranked = sorted(range(len(steps)), key=lambda i: (not contested & set(steps[i][1]), -i))
    found = [steps[i][0] for i in sorted(ranked[:per_side])]
    side = out(["rev-list", "--reverse", "--no-merges", f"{base}..{p2}"], repo).split()
    merged = Branch(merge, p1, side)
    if 1 <= len(side) <= 3 * max_commits and len(files(merged)) <= 3 * max_files:
        found.append(merged)
    return base, found


def conflicting_merges(repo: str, head: str, limit: int) -> tuple[list[str], list[str]]:
    """First-parent two-parent merges, newest first: those whose two sides git could not
    merge cleanly, and the others."""
    found: tuple[list[str], list[str]] = ([], [])
    for line in out(["log", "--first-parent", "--merges", f"-n{limit}", "--format=%H %P", head],
                    repo).split("\n"):
        parts = line.split()
        if len(parts) == 3:
            clean = conflict_files(repo, parts[1], parts[2]) is None
            found[clean].append(parts[0])
    return found


def choose(scratch: str, trunk: str, plans: list[Plan], n: int,
           lane_ok: LaneCheck | None) -> Assignment | None:
    """The N of ``plans`` that conflict pairwise most; with ``lane_ok``, a lane that fails
    the verification alone is left out (and another picked), so that what breaks the trunk
    at landing is the swarm's doing, not a lane's own."""
    every = pairwise(scratch, plans)
    left_out: set[int] = set()
    while True:
        keep = [i for i in range(len(plans)) if i not in left_out]
        if len(keep) < n:
            return None
        sub = {(keep.index(i), keep.index(j)): f for (i, j), f in every.items()
               if i in keep and j in keep}
        chosen = [keep[k] for k in pick(n, sub, len(keep))]
        bad = [i for i in chosen if lane_ok is not None and not lane_ok(trunk, plans[i])]
        if not bad:
            break
        left_out.update(bad)
    picked = [plans[i] for i in chosen]
    a = Assignment(trunk, picked, pairwise(scratch, picked),
                   [plans[i].branch.merge for i in sorted(left_out)])
    print(f"T {trunk[:10]}: {len(every) // 2} conflicting pairs in {len(plans)}, "
          f"{len(a.conflicts) // 2} among the {n} picked"
          + (f", {len(left_out)} lanes failing alone left out" if left_out else ""),
          file=sys.stderr)
    return a


def best_of(scratch: str, candidates: Sequence[Callable[[], tuple[str, list[Branch]]]],
            n: int, d: Drawing, lane_ok: LaneCheck | None) -> Assignment | None:
    """Of the first ``tries`` candidates offering N replayable lines of work, the assignment
    whose N conflict pairwise the most (the earliest of equals)."""
    best: Assignment | None = None
    tried = 0
    for candidate in candidates:
        if tried == d.tries:
            break
        trunk, pool = candidate()
        theirs = d.contention == "hot"
        plans = [p for p in (rebase_onto(scratch, trunk, b, theirs) for b in pool)
                 if p is not None]
        if len(plans) < n:
            continue
        tried += 1
        a = choose(scratch, trunk, plans, n, lane_ok)
        if a is not None and (best is None or len(a.conflicts) > len(best.conflicts)):
            best = a
    return best


def assign(scratch: str, head: str, n: int, d: Drawing, rng: random.Random,
           lane_ok: LaneCheck | None = None) -> Assignment:
    """N concurrent lines of work replayed onto one base T (``d.contention``: around a real
    conflicting merge, or from the history of the hottest files)."""
    if d.contention == "hot":
        best = best_of(scratch, hot_windows(scratch, head, n, d, rng), n, d, lane_ok)
        if best is None:
            raise SystemExit(f"no window of {n} replayable lines of work on the hot files")
        return best
    # a history where no conflicting merge offers N lines of work gets a swarm around a
    # clean merge instead (its lines of work may still conflict once rebased onto one base)
    conflicting, clean = conflicting_merges(scratch, head, d.merges)
    rng.shuffle(conflicting)
    best = best_of(scratch, around(scratch, conflicting, n, d), n, d, lane_ok)
    if best is None:
        rng.shuffle(clean)
        best = best_of(scratch, around(scratch, clean, n, d), n, d, lane_ok)
    if best is None:
        raise SystemExit(f"no merge with {n} replayable concurrent lines of work")
    return best


def around(scratch: str, merges: list[str], n: int, d: Drawing
           ) -> list[Callable[[], tuple[str, list[Branch]]]]:
    def one(merge: str) -> Callable[[], tuple[str, list[Branch]]]:
        def draw() -> tuple[str, list[Branch]]:
            return units(scratch, merge, d.max_commits, d.max_files, d.pool or 4 * n)
        return draw
    return [one(m) for m in merges]


# -- hot files ---------------------------------------------------------------------------
def first_parent_span(repo: str, head: str, steps: int) -> str:
    """The trunk ``steps`` first-parent steps before ``head`` (or its root)."""
    line = out(["rev-list", "--first-parent", f"-n{steps + 1}", head], repo).split()
    return line[-1]


def hottest(repo: str, base: str, head: str, k: int, match: str | None = None) -> list[str]:
    """The ``k`` files (of those ``match`` finds) the most first-parent steps of base..head
    changed (each step's diff against the trunk it landed on: a merged pull request counts
    once)."""
    log = out(["log", "--first-parent", "--diff-merges=first-parent", "--format=",
               "--name-only", f"{base}..{head}"], repo)
    pattern = re.compile(match) if match else None
    counts = Counter(ln for ln in log.split("\n")
                     if ln.strip() and (pattern is None or pattern.search(ln)))
    return [f for f, _ in counts.most_common(k)]


def hot_windows(repo: str, head: str, n: int, d: Drawing, rng: random.Random
                ) -> list[Callable[[], tuple[str, list[Branch]]]]:
    """Windows of ``pool`` consecutive first-parent steps touching a hot file, each with T
    the trunk just before its oldest step; the newest ``2 tries`` windows (half-overlapping),
    in an order drawn from the seed."""
    base = first_parent_span(repo, head, d.merges)
    hot = set(hottest(repo, base, head, d.hot_files, d.hot_match))
    print(f"hot files: {', '.join(sorted(hot))}", file=sys.stderr)

    def files(b: Branch) -> set[str]:  # what the pull request's own commits touched
        return set(out(["diff", "--name-only", f"{b.commits[0]}^", b.commits[-1]],
                       repo).split())

    steps = []
    for b in steps_of(repo, base, head, d.max_commits):
        touched = files(b)
        if touched & hot and len(touched) <= d.max_files:
            steps.append(b)
    size = max(d.pool or 2 * n, n)
    ends = list(range(len(steps), size - 1, -max(1, size // 2)))[:2 * d.tries]
    rng.shuffle(ends)

    def one(end: int) -> Callable[[], tuple[str, list[Branch]]]:
        def draw() -> tuple[str, list[Branch]]:
            window = steps[end - size:end]
            return window[0].first_parent, window
        return draw
    return [one(e) for e in ends]
