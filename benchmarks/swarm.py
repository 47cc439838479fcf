"""N agents on one repository at once: conflicts at landing, waiting and deadlocks per policy.

Assignments come from real history. Around a first-parent merge of a fetched repository
whose two sides git could not merge, the lines of work concurrent with it are taken from its
merge base T: each first-parent step of the trunk side (a pull request's own commits, or a
commit made on the trunk directly; those touching a file the merge conflicted in first) and
the merged side whole. Each is cherry-picked onto T (a commit that does not apply is
dropped), and the N that conflict pairwise most (``git merge-tree``) are kept; of ``--tries``
such merges, the one whose N conflict most. Each policy then gets a fresh setup: a bare
remote whose ``main`` is T, a clone with ``python -m proximity install``, and one worktree
per agent. Coordinated agents (reservations, proximity) rebase before their next edit once
the trunk moved (``--no-sync``: they do not); a landed agent's worktree is removed.

Agents replay their branch's commits as edits, in a step-based closed loop (each step every
agent that is not done acts once, in an order drawn from ``--seed``). Before each edit (one
file of one commit: its new content, asked as a Claude Code ``MultiEdit`` of the changed hunks
where the file is text, else ``Write``) the agent asks:

* ``proximity``: ``proximity check --hook claude`` with the PreToolUse JSON (and, after the
  edit, ``--hook claude-post``, as the documented settings run it);
* ``reservations``: denied while another live (not yet landed) agent has changed the file;
* ``none``: always allowed.

Allow and ask edit (asks are counted); a deny steers the agent to another pending edit of its
own, and when none is allowed it waits (a waiting step) until the holder named in the deny has
landed, then rebases onto the new trunk. A commit's edits done, it commits through the real
hooks. All its commits made, it lands in finishing order: ``check --merge origin/main``
(proximity), fetch, rebase onto the trunk, push to the remote's ``main`` through the real
pre-push guard (only the ``proximity`` policy obeys it: the others push with
``PROXIMITY_ALLOW=1``); a blocked push waits a step. Counted: conflicts of that rebase
(``conflicts_at_landing``; resolved with the agent's side, ``-X theirs``, so the run goes on),
landings after which a changed file no longer compiles (``python -m py_compile``, ``node
--check``; Go is not checked: no toolchain here), waiting steps, the makespan, deadlocks (no
agent moved for ``--stall`` steps; broken by letting the longest waiter go ahead), needless
denies (the denied file is not among the files where the agent's planned branch and the
holder's conflict under ``git merge-tree``) and lost events (commits made with no
``kind='commit'`` event in the ledger).

    python benchmarks/swarm.py --git-dir DIR --agents 5 --policy all --seed 1 --json OUT
    python benchmarks/swarm.py --plot benchmarks/swarm.png OUT...
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

POLICIES = ("none", "reservations", "proximity")
IDENT = {"GIT_AUTHOR_NAME": "swarm", "GIT_AUTHOR_EMAIL": "swarm@example.com",
         "GIT_COMMITTER_NAME": "swarm", "GIT_COMMITTER_EMAIL": "swarm@example.com"}
HOLDER = re.compile(r"worktree '([^']+)'")


# -- git ---------------------------------------------------------------------------------
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


# -- assignments -------------------------------------------------------------------------
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


def rebase_onto(scratch: str, trunk: str, branch: Branch) -> Plan | None:
    """The branch's commits replayed onto ``trunk``; what does not apply is dropped."""
    git(["checkout", "-q", "--detach", "-f", trunk], scratch)
    for c in branch.commits:
        p = git(["cherry-pick", "--allow-empty-message", c], scratch, ok=(0, 1))
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


def best_of(scratch: str, merges: list[str], n: int, args: argparse.Namespace
            ) -> Assignment | None:
    """Of the first ``--tries`` merges offering N replayable lines of work, the assignment
    whose N conflict pairwise the most (the earliest of equals)."""
    best: Assignment | None = None
    tried = 0
    for merge in merges:
        if tried == args.tries:
            break
        trunk, pool = units(scratch, merge, args.max_commits, args.max_files,
                            args.pool or 4 * n)
        plans = [p for p in (rebase_onto(scratch, trunk, b) for b in pool) if p is not None]
        if len(plans) < n:
            continue
        tried += 1
        every = pairwise(scratch, plans)
        chosen = pick(n, every, len(plans))
        plans = [plans[i] for i in chosen]
        a = Assignment(trunk, plans, pairwise(scratch, plans))
        print(f"around merge {merge[:10]}: T {trunk[:10]}, {len(every) // 2} conflicting "
              f"pairs in {len(pool)}, {len(a.conflicts) // 2} among the {n} picked",
              file=sys.stderr)
        if best is None or len(a.conflicts) > len(best.conflicts):
            best = a
    return best


def assign(scratch: str, head: str, n: int, args: argparse.Namespace,
           rng: random.Random) -> Assignment:
    """N concurrent lines of work around a real conflicting merge, rebased onto its merge
    base; a history where no conflicting merge offers N of them gets a swarm around a clean
    merge instead (its lines of work may still conflict once rebased onto one base)."""
    conflicting, clean = conflicting_merges(scratch, head, args.merges)
    rng.shuffle(conflicting)
    best = best_of(scratch, conflicting, n, args)
    if best is None:
        rng.shuffle(clean)
        best = best_of(scratch, clean, n, args)
    if best is None:
        raise SystemExit(f"no merge with {n} replayable concurrent lines of work")
    return best


# -- one agent ---------------------------------------------------------------------------
@dataclass
class Edit:
    commit: int  # index into the plan's commits
    path: str
    status: str  # A, M, D (renames are split into D + A)


@dataclass
class Agent:
    idx: int
    name: str
    wt: str
    plan: Plan
    pending: list[Edit]
    sizes: dict[int, int] = field(default_factory=dict)  # edits per commit
    done: dict[int, int] = field(default_factory=dict)
    committed: int = 0
    state: str = "work"  # work, wait, land, landed
    holder: str | None = None
    waited: int = 0
    touched: set[str] = field(default_factory=set)
    shas: list[str] = field(default_factory=list)
    synced: int = 0  # landings on the trunk when it last rebased


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
    agent redoes its change on top (the commit's side wins), as it would by hand."""
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


def tool_input(path: str, current: bytes | None, new: bytes | None) -> dict[str, Any]:
    """The Claude Code tool call an agent would make: MultiEdit of the changed hunks of a
    text file, Write of a new, deleted or binary one."""
    write = {"tool_name": "Write", "tool_input": {"file_path": path, "content": ""}}
    if current is None or new is None or not current:
        return write
    try:
        a = current.decode().splitlines(keepends=True)
        b = new.decode().splitlines(keepends=True)
    except UnicodeDecodeError:
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


# -- the swarm ---------------------------------------------------------------------------
@dataclass
class Tally:
    policy: str
    agents: int
    landed: int = 0
    conflicts_at_landing: int = 0
    conflict_files: list[str] = field(default_factory=list)
    conflicts_midway: int = 0
    broken_at_landing: int = 0
    broken_files: list[str] = field(default_factory=list)
    waiting_steps: int = 0
    makespan_steps: int = 0
    deadlocks: int = 0
    needless_denies: int = 0
    denies: int = 0
    asks: int = 0
    edits: int = 0
    commits: int = 0
    lost_events: int = 0
    doubled_events: int = 0
    lost_shas: list[str] = field(default_factory=list)
    merge_denies: int = 0
    push_blocks: int = 0
    forced: int = 0
    deny_log: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


class Swarm:
    def __init__(self, root: str, scratch: str, a: Assignment, policy: str,
                 rng: random.Random, stall: int, post: bool, sync: bool) -> None:
        self.root, self.scratch, self.a, self.policy = root, scratch, a, policy
        self.rng, self.stall, self.post = rng, stall, post
        self.t = Tally(policy, len(a.plans))
        self.repo = os.path.join(root, "repo")
        self.env = {"PROXIMITY_SERVICE_IDLE": "120"}
        self.agents: list[Agent] = []
        self.finished: list[Agent] = []
        self.landings = 0
        self.reason = ""  # the last check's reason, kept with a deny
        self.sync = sync

    # setup: a bare remote at T, a clone with the hooks, one worktree per agent
    def setup(self) -> None:
        remote = os.path.join(self.root, "remote.git")
        git(["init", "-q", "--bare", remote], self.root)
        alt = os.path.join(self.scratch, ".git", "objects")
        with open(os.path.join(remote, "objects", "info", "alternates"), "w") as f:
            f.write(alt + "\n")
        git(["update-ref", "refs/heads/main", self.a.trunk], remote)
        git(["symbolic-ref", "HEAD", "refs/heads/main"], remote)
        git(["clone", "-q", "--shared", remote, self.repo], self.root)
        run([sys.executable, "-m", "proximity", "install"], self.repo, extra=self.env)
        for i, plan in enumerate(self.a.plans):
            name = f"a{i}"
            wt = os.path.join(self.root, name)
            git(["worktree", "add", "-q", "-b", f"agent/{name}", wt, "origin/main"], self.repo,
                extra=self.env)
            ag = Agent(i, name, wt, plan, edits_of(self.scratch, plan))
            for e in ag.pending:
                ag.sizes[e.commit] = ag.sizes.get(e.commit, 0) + 1
            self.agents.append(ag)

    def proximity(self, args: list[str], cwd: str, stdin: str | None = None,
                  extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run([sys.executable, "-m", "proximity", *args], cwd, ok=(0, 1, 2), stdin=stdin,
                   extra={**self.env, **(extra or {})})

    # asking before an edit
    def ask(self, ag: Agent, e: Edit, event: dict[str, Any]) -> tuple[str, str | None]:
        if self.policy == "none":
            return "allow", None
        if self.policy == "reservations":
            for other in self.agents:
                if other is not ag and other.state != "landed" and e.path in other.touched:
                    return "deny", other.name
            return "allow", None
        p = self.proximity(["check", "--hook", "claude"], ag.wt, json.dumps(event))
        try:
            ans = json.loads(p.stdout)["hookSpecificOutput"]
        except (ValueError, KeyError):
            return "allow", None  # the hook's own rule: a failure never blocks the agent
        reason = str(ans.get("permissionDecisionReason", ""))
        self.reason = reason[:600]
        m = HOLDER.search(reason)
        return str(ans.get("permissionDecision", "allow")), m.group(1) if m else None

    def event(self, ag: Agent, e: Edit, current: bytes | None,
              new: bytes | None) -> dict[str, Any]:
        path = os.path.join(ag.wt, e.path)
        return {"hook_event_name": "PreToolUse", "cwd": ag.wt, "session_id": ag.name,
                **tool_input(path, current, new)}

    def needless(self, ag: Agent, e: Edit, holder: str | None) -> bool | None:
        h = next((o for o in self.agents if o.name == holder), None)
        if h is None:
            return None
        return e.path not in self.a.conflicts.get((ag.idx, h.idx), set())

    def eligible(self, ag: Agent) -> list[Edit]:
        """Its pending edits it may do now: the next commit's first, then later commits'
        files that no earlier pending edit touches (steering does other work first)."""
        seen: set[str] = set()
        found = []
        for e in ag.pending:
            if e.path not in seen:
                found.append(e)
            seen.add(e.path)
        return found

    def work(self, ag: Agent, tries: int = 3) -> bool:
        # the trunk moved: rebase before editing on, as a coordinated agent does, since
        # neither a reservation nor the check sees work that already landed
        if self.sync and self.policy != "none" and ag.synced != self.landings and \
                not self.rebase(ag):
            self.t.conflicts_midway += 1
        first_holder: str | None = None
        for e in self.eligible(ag)[:tries]:
            path = os.path.join(ag.wt, e.path)
            current = read(path)
            new = target(self.scratch, ag.plan, e, current)
            ev = self.event(ag, e, current, new)
            decision, holder = self.ask(ag, e, ev)
            if decision == "deny":
                self.t.denies += 1
                nl = self.needless(ag, e, holder)
                self.t.needless_denies += bool(nl)
                self.t.deny_log.append({"agent": ag.name, "path": e.path, "holder": holder,
                                        "needless": nl, "commit": ag.plan.commits[e.commit],
                                        "step": self.t.makespan_steps,
                                        "reason": self.reason if self.policy == "proximity"
                                        else ""})
                first_holder = first_holder or holder or "?"
                continue
            self.t.asks += decision == "ask"
            self.apply(ag, e, path, new, ev)
            return True
        ag.state, ag.holder = "wait", first_holder
        self.t.waiting_steps += 1
        return False

    def apply(self, ag: Agent, e: Edit, path: str, new: bytes | None,
              ev: dict[str, Any]) -> None:
        if new is None:
            if os.path.lexists(path):
                os.remove(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(new)
        if self.policy == "proximity" and self.post:
            self.proximity(["check", "--hook", "claude-post"], ag.wt,
                           json.dumps({**ev, "hook_event_name": "PostToolUse"}))
        self.t.edits += 1
        ag.touched.add(e.path)
        ag.pending.remove(e)
        ag.done[e.commit] = ag.done.get(e.commit, 0) + 1
        while ag.committed < len(ag.plan.commits) and \
                ag.done.get(ag.committed, 0) == ag.sizes.get(ag.committed, 0):
            self.commit(ag, ag.committed)
            ag.committed += 1
        if ag.committed == len(ag.plan.commits):
            ag.state = "land"
            self.finished.append(ag)

    def commit(self, ag: Agent, k: int) -> None:
        c = ag.plan.commits[k]
        paths = sorted({line.split("\t", 1)[1] for line in out(
            ["diff-tree", "-r", "--no-renames", "--name-status", f"{c}^", c],
            self.scratch).split("\n") if line.strip()})
        git(["add", "-A", "--", *paths], ag.wt)
        msg = out(["log", "-1", "--format=%B", c], self.scratch) or "replayed commit"
        git(["commit", "-q", "--allow-empty", "-m", msg], ag.wt, extra=self.env)
        ag.shas.append(out(["rev-parse", "HEAD"], ag.wt))
        self.t.commits += 1

    # rebasing and landing
    def rebase(self, ag: Agent) -> bool:
        """Onto the new trunk, its uncommitted edits kept; False when git conflicted (the
        agent's side then wins, as a resolver who redoes its change would have it)."""
        git(["fetch", "-q", "origin"], ag.wt)
        ag.synced = self.landings
        clean = True
        stashed = git(["stash", "push", "-q", "--include-untracked"], ag.wt, ok=(0, 1))
        has_stash = bool(out(["stash", "list"], ag.wt))
        if git(["rebase", "-q", "origin/main"], ag.wt, ok=(0, 1), extra=self.env).returncode:
            clean = False
            git(["rebase", "--abort"], ag.wt, ok=(0, 1, 128))
            if git(["rebase", "-q", "-X", "theirs", "origin/main"], ag.wt, ok=(0, 1),
                   extra=self.env).returncode:
                git(["rebase", "--abort"], ag.wt, ok=(0, 1, 128))
                git(["merge", "-q", "-X", "theirs", "--no-edit", "origin/main"], ag.wt,
                    ok=(0, 1), extra=self.env)
                if out(["diff", "--name-only", "--diff-filter=U"], ag.wt):
                    # modify/delete and the like: the agent's tree as it was, on the trunk
                    git(["checkout", "--theirs", "--", "."], ag.wt, ok=(0, 1))
                    git(["add", "-A"], ag.wt)
                    git(["commit", "-q", "--no-edit", "--no-verify"], ag.wt, ok=(0, 1))
        if stashed.returncode == 0 and has_stash and \
                git(["stash", "pop", "-q"], ag.wt, ok=(0, 1)).returncode:
            clean = False
            git(["checkout", "--theirs", "--", "."], ag.wt, ok=(0, 1))
            git(["reset", "-q"], ag.wt)
            git(["stash", "drop", "-q"], ag.wt, ok=(0, 1))
        return clean

    def land(self, ag: Agent) -> bool:
        if self.policy == "proximity":
            git(["fetch", "-q", "origin"], ag.wt)
            p = self.proximity(["check", "--merge", "origin/main", "--json"], ag.wt)
            if p.returncode == 1 and '"deny"' in p.stdout and not ag.waited >= self.stall:
                self.t.merge_denies += 1
                return False
        before = out(["rev-parse", "HEAD"], ag.wt)
        if not self.rebase(ag):
            self.t.conflicts_at_landing += 1
            files = conflict_files(ag.wt, before, "origin/main") or set()
            self.t.conflict_files += sorted(f"{ag.name}:{f}" for f in files)
        onto = out(["rev-parse", "origin/main"], ag.wt)
        extra = dict(self.env)
        if self.policy != "proximity" or ag.waited >= self.stall:
            extra["PROXIMITY_ALLOW"] = "1"  # the guard is proximity's: the others ignore it
        if git(["push", "-q", "origin", "HEAD:main"], ag.wt, ok=(0, 1),
               extra=extra).returncode:
            self.t.push_blocks += 1
            return False
        self.broken(ag, onto)
        ag.state = "landed"
        self.t.landed += 1
        self.landings += 1
        # a landed agent's worktree is gone, as a finished agent's is
        git(["worktree", "remove", "--force", ag.wt], self.repo, ok=(0, 128), extra=self.env)
        for other in self.agents:
            if other.state == "wait" and other.holder in (ag.name, "?"):
                other.holder = "landed"
        return True

    def broken(self, ag: Agent, onto: str) -> None:
        """Does every file this landing changed still compile (where it did at T)?"""
        changed = out(["diff", "--name-only", "--diff-filter=AM", onto, "HEAD"],
                      ag.wt).split("\n")
        bad = []
        for f in changed:
            if f.endswith(".py"):
                cmd = [sys.executable, "-m", "py_compile", f]
            elif f.endswith((".js", ".mjs", ".cjs")) and shutil.which("node"):
                cmd = ["node", "--check", f]
            else:
                continue
            if subprocess.run(cmd, cwd=ag.wt, capture_output=True).returncode and \
                    f not in self.t.broken_files:
                bad.append(f)
        if bad:
            self.t.broken_at_landing += 1
            self.t.broken_files += bad

    def step(self) -> bool:
        moved = False
        live = [a for a in self.agents if a.state in ("work", "wait")]
        self.rng.shuffle(live)
        for ag in live:
            if ag.state == "wait":
                if ag.holder == "landed" or ag.holder is None:
                    if not self.rebase(ag):
                        self.t.conflicts_midway += 1
                    ag.state, ag.holder, ag.waited = "work", None, 0
                    moved = True
                else:
                    ag.waited += 1
                    self.t.waiting_steps += 1
                    continue
            if ag.state == "work":
                if ag.waited >= self.stall:  # the deadlock breaker's pick goes ahead
                    moved |= self.force(ag)
                    continue
                moved |= self.work(ag)
        for ag in list(self.finished):
            if ag.state == "land":
                if self.land(ag):
                    moved = True
                else:
                    ag.waited += 1
                    self.t.waiting_steps += 1
        return moved

    def force(self, ag: Agent) -> bool:
        e = self.eligible(ag)[0]
        path = os.path.join(ag.wt, e.path)
        current = read(path)
        new = target(self.scratch, ag.plan, e, current)
        self.t.forced += 1
        self.apply(ag, e, path, new, self.event(ag, e, current, new))
        ag.waited = 0
        return True

    def unstick(self) -> None:
        """A deadlock: the agent that has waited longest goes ahead (edit or push)."""
        self.t.deadlocks += 1
        stuck = [a for a in self.agents if a.state in ("wait", "land")]
        if not stuck:
            return
        ag = max(stuck, key=lambda a: (a.waited, -a.idx))
        ag.waited = self.stall
        if ag.state == "wait":
            ag.state, ag.holder = "work", None

    def run(self, max_steps: int) -> Tally:
        start = time.monotonic()
        self.setup()
        idle = 0
        for step in range(max_steps):
            if all(a.state == "landed" for a in self.agents):
                break
            self.t.makespan_steps = step + 1
            if self.step():
                idle = 0
            else:
                idle += 1
                if idle >= self.stall:
                    self.unstick()
                    idle = 0
        self.finish()
        self.t.seconds = round(time.monotonic() - start, 1)
        return self.t

    def finish(self) -> None:
        """Stop the service (it writes what it holds) and count the commits the ledger lost."""
        self.proximity(["service", "stop"], self.repo)
        db = os.path.join(self.repo, ".git", "ecm", "ledger.sqlite3")
        seen: dict[str, int] = {}
        if os.path.exists(db):
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                for head, n in con.execute(
                        "select head, count(*) from events where kind='commit' group by head"):
                    seen[str(head)] = int(n)
            finally:
                con.close()
        shas = [s for a in self.agents for s in a.shas]
        self.t.lost_shas = [s for s in shas if s not in seen]
        self.t.lost_events = len(self.t.lost_shas)
        self.t.doubled_events = sum(seen.get(s, 0) > 1 for s in shas)


def report(t: Tally, a: Assignment, extra: dict[str, Any]) -> dict[str, Any]:
    d = dict(t.__dict__)
    d.update(extra, trunk=a.trunk, merges=[p.branch.merge for p in a.plans],
             planned_commits=sum(len(p.commits) for p in a.plans),
             planned_conflicting_pairs=len(a.conflicts) // 2)
    return d


def plot(files: Sequence[str], png: str) -> None:
    """Waiting steps and conflicts at landing per policy, one group per repository and N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        runs += d.get("runs", [d])
    groups = sorted({(os.path.basename(os.path.dirname(r["repository"].rstrip("/")))
                      .replace("+", "/"), r["agents"]) for r in runs})
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.2))
    width = 0.8 / len(POLICIES)
    for ax, key, title in ((axes[0], "waiting_steps", "agent-steps spent waiting"),
                           (axes[1], "conflicts_at_landing", "conflicts at landing")):
        for k, policy in enumerate(POLICIES):
            ys = []
            for repo, n in groups:
                ys.append(next((r[key] for r in runs if r["policy"] == policy and
                                r["agents"] == n and repo.replace("/", "+") in
                                r["repository"]), 0))
            ax.bar([i + k * width for i in range(len(groups))], ys, width, label=policy)
        ax.set_xticks([i + width for i in range(len(groups))])
        ax.set_xticklabels([f"{repo.split('/')[-1].split('_')[-1]}\nN={n}"
                            for repo, n in groups], fontsize=8)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_title(title)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-dir", help="a fetched repository (bare or not)")
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--policy", default="all", choices=[*POLICIES, "all"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", dest="out", help="write the results here")
    ap.add_argument("--rev", default="HEAD", help="draw merges from this commit's history")
    ap.add_argument("--merges", type=int, default=150, help="newest merges to draw from")
    ap.add_argument("--max-commits", type=int, default=12, help="per branch")
    ap.add_argument("--max-files", type=int, default=25, help="per branch")
    ap.add_argument("--pool", type=int, help="lines of work to pick from (4 N)")
    ap.add_argument("--tries", type=int, default=4, help="conflicting merges tried")
    ap.add_argument("--stall", type=int, default=4, help="steps without a move = deadlock")
    ap.add_argument("--max-steps", type=int, default=400)
    ap.add_argument("--no-post", action="store_true", help="skip the PostToolUse hook")
    ap.add_argument("--no-sync", action="store_true",
                    help="coordinated agents do not rebase when the trunk moved")
    ap.add_argument("--keep", help="keep the repositories under this directory")
    ap.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"),
                    help="draw PNG from earlier --json outputs instead of running")
    args = ap.parse_args(argv)
    if args.plot:
        plot(args.plot[1:], args.plot[0])
        return 0
    if not args.git_dir:
        ap.error("--git-dir is required")
    git_dir = os.path.abspath(args.git_dir)
    if os.path.isdir(os.path.join(git_dir, ".git")):
        git_dir = os.path.join(git_dir, ".git")
    work = args.keep or tempfile.mkdtemp(prefix="swarm-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    try:
        scratch = scratch_repo(git_dir, work)
        head = run(["git", "--git-dir", git_dir, "rev-parse", args.rev], work).stdout.strip()
        a = assign(scratch, head, args.agents, args, rng)
        results = []
        for policy in POLICIES if args.policy == "all" else (args.policy,):
            root = os.path.join(work, policy)
            os.makedirs(root)
            s = Swarm(root, scratch, a, policy, random.Random(args.seed), args.stall,
                      not args.no_post, not args.no_sync)
            t = s.run(args.max_steps)
            results.append(report(t, a, {"repository": git_dir, "seed": args.seed}))
            print(f"{policy:13} landed {t.landed}/{t.agents} conflicts {t.conflicts_at_landing}"
                  f" broken {t.broken_at_landing} waiting {t.waiting_steps} makespan "
                  f"{t.makespan_steps} deadlocks {t.deadlocks} denies {t.denies} "
                  f"(needless {t.needless_denies}) lost {t.lost_events} ({t.seconds} s)",
                  file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results[0] if len(results) == 1 else {"runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
