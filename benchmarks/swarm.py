"""N participants on one repository at once: conflicts and breaks at landing, waiting and
deadlocks per policy.

Lines of work come from real history, all replayed from one base T (``swarm_plan.py``:
around a conflicting merge, or with ``--contention hot`` from the history of the
repository's most-changed files, so that many pairs conflict). Each policy then gets a fresh
setup: a bare remote whose ``main`` is T, a clone with ``python -m proximity install`` (the
main checkout), and one worktree per participant. ``--humans M`` of the N are people, the
rest agents (``swarm_people.py``: their habits, and the editor route a person reads before
changing lines). Coordinated participants (reservations, proximity) rebase before their next
edit once the trunk moved (``--no-sync``: they do not); a landed one's worktree is removed.

Participants replay their branch's commits as edits, in a step-based closed loop (each step
every participant that is not done acts once, in an order drawn from ``--seed``; a person
every other step). Before each edit (one file of one commit: its new content, asked as a
Claude Code ``MultiEdit`` of the changed hunks where the file is text, else ``Write``) an
agent asks:

* ``proximity``: ``proximity check --hook claude`` with the PreToolUse JSON (and, after the
  edit, ``--hook claude-post``, as the documented settings run it); a person types the
  change in their editor, a real ``proximity lsp`` session (``lsp_human.py``), and reads the
  diagnostics published on the typed lines (a Warning or an Error: they take it back, as a
  deny); what they keep stays unsaved until their next turn, live work every agent's check
  sees, then is saved (didSave: the server records the worktree, as does ``proximity
  snapshot`` here) and committed;
* ``reservations``: denied while another live (not yet landed) participant changed the file;
* ``none``: always allowed.

No objection (the hook's reply carries no decision: proximity only ever asks or denies,
it never approves) and ask edit (asks are counted); a deny steers the participant to
another pending edit of its own, and when none is allowed it waits (a waiting step),
asking again every ``--reask`` steps (the advice may turn its way, another of its edits
come free), until the holder named in the deny has landed, then rebases onto the new
trunk. A denied edit that adds one entry to a changelog or a docs list (a text file of
lists, one block of lines that is a list item, nothing removed) is first asked for at the
other items' places of its section, nearest first, and made at the first one not denied,
as an agent or a person told "edit elsewhere" puts such an entry among the others
(``--no-elsewhere``: it waits, as in the runs before that was the default); code is never
moved. Told that a wait cycle's first member goes over its live lines (GOES FIRST: its
inbox, what its hooks hand it, its deny), it sets its uncommitted change of the files
named aside and redoes it once that work has landed (``--ignore-goes-first``: it does not,
as in the runs before that was the default). Told that others wait for its lines alone
(WAITED ON) while it waits on others itself, it sets its uncommitted change there aside
and redoes it after its other work only with ``--yield-lines`` (it shortened a single hot
file's chain and lengthened contention over many files). A commit's edits done, it commits through
the real hooks (a person: several planned commits at once). All its commits made, it
lands in finishing order, ``--land-from``:

* ``own``: from its own worktree: ``check --merge origin/main`` (proximity), fetch, rebase
  onto the trunk, push to the remote's ``main`` through the real pre-push guard;
* ``main``: a person integrating in the main checkout: fetch, ``check --merge BRANCH``
  (proximity; where it says git's merge would stop with conflicts here, the lane's author
  rebases onto the trunk first and the merge waits a step), ``git merge`` the lane's branch,
  ``git push origin main`` from there through the real pre-push guard.

Only the ``proximity`` policy obeys the guard (the others push with ``PROXIMITY_ALLOW=1``); a
blocked push waits a step. Counted: landings whose rebase or merge conflicted
(``conflicts_at_landing``; resolved with the lane's side, ``-X theirs``, so the run goes on;
``--resolve redo``: the lane's author redoes its change of each conflicting file on top of
the trunk, both sides' lines kept, one file a step at its own pace, ``resolve_steps``, and
the landing is tried again, where it may meet work landed meanwhile),
landings after which the trunk is broken (``broken_at_landing``: ``--verify CMD``, the
repository's own tests, fails where it passed before, and passes on the lane's own tip
alone -- else ``broken_by_own_lane``: the lane broke itself, its change redone on a trunk
that moved; without CMD, a changed file no longer compiles: ``python -m py_compile``,
``node --check``), waiting steps, the makespan, deadlocks
(no participant moved for ``--stall`` steps, or a cycle of waiters -- each waiting on the
next's work -- stood for ``--stall`` re-asks while others moved; either broken by letting
the longest waiter go ahead), needless denies (the denied file is not among the files
where the participant's planned branch and the holder's conflict under ``git merge-tree``),
lost and doubled events (commits made with no, or more than one, ``kind='commit'`` event
in the ledger), and of proximity itself (``swarm_measure.py``): the service's peak RSS, the
pre-edit check's and each hook's latency.

    python benchmarks/swarm.py --git-dir DIR --agents 10 --policy all --seed 1 \\
        --contention hot --verify CMD --humans 2 --land-from main --json OUT
    python benchmarks/swarm.py --plot benchmarks/swarm.png OUT...
    python benchmarks/swarm.py --table OUT...
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_human import Human
from swarm_measure import ServiceMemory, hook_times, percentile, shim_hooks, summary
from swarm_people import (
    AGENT,
    HUMAN,
    LATER,
    Edit,
    Participant,
    buffer_text,
    diagnostics,
    edits_of,
    elsewhere,
    read,
    target,
    tool_input,
)
from swarm_plan import (
    Assignment,
    Branch,
    Drawing,
    Plan,
    assign,
    conflict_files,
    dropped_lines,
    git,
    out,
    run,
    scratch_repo,
)
from swarm_report import plot, report, table
from swarm_verify import Verifier, uncompiled

POLICIES = ("none", "reservations", "proximity")
HOLDER = re.compile(r"worktree '([^']+)'")
# a holder told that others wait for its live lines alone (WAITED ON: all they wait for;
# one waiting on others' lines as well would still wait) sets its uncommitted change there
# aside and redoes it last while it waits on others itself for its other work (it would
# hold the lines while it waits: one link of every gridlock), with --yield-lines
WAITED = re.compile(r"WAITED ON: '([^']+)' waits for your live lines in (.+?) \(denied "
                    r"there until your work lands; your lines are all they wait for\)")
# a wait cycle's first member going over this reader's lines: its inbox message, its deny
GOES_FIRST = re.compile(r"GOES FIRST: '([^']+)' goes on over your live lines in (.+?): you")
FIRST = re.compile(r"'([^']+)' goes first over your live lines in (.+?): you")


@dataclass
class Tally:
    policy: str
    agents: int
    humans: int = 0
    land_from: str = "own"
    landed: int = 0
    conflicts_at_landing: int = 0
    conflict_files: list[str] = field(default_factory=list)
    conflicts_midway: int = 0
    # lines of landed work the landings' resolutions threw away (each conflict resolved with
    # the lane's side: the trunk's side of each conflict hunk, where it is not the base's)
    dropped_at_landing: int = 0
    # steps lanes spent redoing their change of conflicting files on top of the trunk before
    # landing again (``--resolve redo``; with ``theirs`` a resolution costs nothing)
    resolve_steps: int = 0
    conflict_log: list[dict[str, Any]] = field(default_factory=list)  # each, and the check's word
    broken_at_landing: int = 0
    broken_files: list[str] = field(default_factory=list)
    broken_log: list[dict[str, Any]] = field(default_factory=list)
    # landings after which CMD failed, where the lane's own tip failed it alone too
    broken_by_own_lane: int = 0
    broken_own_log: list[dict[str, Any]] = field(default_factory=list)
    waiting_steps: int = 0
    makespan_steps: int = 0
    deadlocks: int = 0
    # of those, cycles of waiters (each waiting on the next's work) that stood for --stall
    # re-asks while others moved on: a gridlock the global stall count cannot see
    wait_cycles: int = 0
    cycle_log: list[dict[str, Any]] = field(default_factory=list)
    needless_denies: int = 0
    denies: int = 0
    asks: int = 0
    edits: int = 0
    commits: int = 0
    lost_events: int = 0
    doubled_events: int = 0
    lost_shas: list[str] = field(default_factory=list)
    merge_denies: int = 0
    merge_deny_log: list[dict[str, Any]] = field(default_factory=list)
    push_blocks: int = 0
    push_block_log: list[dict[str, Any]] = field(default_factory=list)
    forced: int = 0
    editor_looks: int = 0  # a person's edits judged through their `proximity lsp` session
    editor_ms: dict[str, Any] = field(default_factory=dict)  # ... typed -> diagnostics shown
    # the people's `proximity lsp` servers: processor seconds, and seconds they ran
    editor_cpu_s: float = 0.0
    editor_alive_s: float = 0.0
    editor_unanswered: int = 0  # ... for which the editor showed nothing in time
    # an agent's check that denied or asked naming a person who had typed lines unsaved
    unsaved_seen: int = 0
    # every edit made (typed, for a person), with the word it was made on: what a
    # conflict at landing is traced back to (swarm_report.crossings)
    edit_log: list[dict[str, Any]] = field(default_factory=list)
    land_log: list[dict[str, Any]] = field(default_factory=list)  # who landed, at which step
    deny_log: list[dict[str, Any]] = field(default_factory=list)
    ask_log: list[dict[str, Any]] = field(default_factory=list)  # the asks, gone on with
    # GOES FIRST obeyed: a file's uncommitted change set aside until the wait cycle's first
    # member, which goes over it, landed
    steered: int = 0
    # of those, a change set aside to be redone last, its holder told others wait for it
    yielded: int = 0
    steer_log: list[dict[str, Any]] = field(default_factory=list)
    # denied edits made at once elsewhere in their file: a changelog or docs entry put
    # among the section's other items, where the check allowed it (``--elsewhere``)
    placed_elsewhere: int = 0
    elsewhere_log: list[dict[str, Any]] = field(default_factory=list)
    peak_service_rss_mb: float | None = None
    check_p95_ms: float | None = None
    check_ms: dict[str, Any] = field(default_factory=dict)
    hook_p95_ms: float | None = None
    hook_ms: dict[str, Any] = field(default_factory=dict)
    verify_seconds: float = 0.0
    # where each participant ended: state, whom it waited on, edits and commits left
    final: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False  # stopped before every participant landed
    seconds: float = 0.0


@dataclass(frozen=True)
class Rules:
    """How one run is played, whatever the policy."""
    stall: int = 4  # steps without a move = deadlock
    post: bool = True  # agents run the PostToolUse hook after each edit
    sync: bool = True  # coordinated participants rebase when the trunk moved
    land_from: str = "own"  # own or main
    humans: frozenset[int] = frozenset()  # which participants are people
    verify: str | None = None  # CMD run on the trunk after each landing
    reask: int = 2  # a waiting participant asks again every this many steps
    # participants gone over in a wait cycle set their change there aside (GOES FIRST)
    follow_first: bool = True
    # how a conflict at landing is resolved: ``theirs``, the lane's side of each hunk at no
    # cost in steps (the trunk's side thrown away); ``redo``, the lane's author redoes its
    # change of each conflicting file on top of the trunk, keeping both sides' lines (git's
    # union merge), one file a step at its own pace, then the landing is tried again
    resolve: str = "theirs"
    # a holder told that others wait for its lines alone sets them aside while it waits on
    # others itself (WAITED ON; off by default: it shortened a single hot file's chain and
    # lengthened many files' contention in the runs it was tried in)
    yield_lines: bool = False
    # a participant denied a new changelog or docs entry asks for it at the section's
    # other items' places (nearest first) and makes it at the first one allowed
    elsewhere: bool = True


class Swarm:
    def __init__(self, root: str, scratch: str, a: Assignment, policy: str,
                 rng: random.Random, rules: Rules, verifier: Verifier | None) -> None:
        self.root, self.scratch, self.a, self.policy = root, scratch, a, policy
        self.rng, self.rules, self.verifier = rng, rules, verifier
        self.stall = rules.stall
        self.t = Tally(policy, len(a.plans), len(rules.humans), rules.land_from)
        self.repo = os.path.join(root, "repo")  # the main checkout
        self.remote = os.path.join(root, "remote.git")
        self.env = {"PROXIMITY_SERVICE_IDLE": "120"}
        self.people: list[Participant] = []
        self.editors: dict[str, Human] = {}  # each person's editor session, while working
        self.heard: dict[str, str] = {}  # messages its hooks handed each agent, unread yet
        self.cycle_age: dict[frozenset[str], int] = {}  # standing wait cycles, steps stood
        self.finished: list[Participant] = []
        self.landings = 0
        self.reason = ""  # the last check's reason, kept with a deny
        self.check_ms: list[float] = []
        self.look_ms: list[float] = []  # (the editor's share of check_ms)
        self.hook_log = os.path.join(root, "hooks.log")
        self.memory = ServiceMemory(os.path.join(self.repo, ".git"))
        self.trunk_ok = True  # the verification passed on the trunk as it stands
        self.verify_from = len(verifier.runs) if verifier else 0  # (planning's runs before)

    # setup: a bare remote at T, a clone with the hooks, one worktree per participant
    def setup(self) -> None:
        git(["init", "-q", "--bare", self.remote], self.root)
        alt = os.path.join(self.scratch, ".git", "objects")
        with open(os.path.join(self.remote, "objects", "info", "alternates"), "w") as f:
            f.write(alt + "\n")
        git(["update-ref", "refs/heads/main", self.a.trunk], self.remote)
        git(["symbolic-ref", "HEAD", "refs/heads/main"], self.remote)
        git(["clone", "-q", "--shared", self.remote, self.repo], self.root)
        run([sys.executable, "-m", "proximity", "install"], self.repo, extra=self.env)
        # every hook timed: the installed hooks run through a shim (see swarm_measure)
        shims = os.path.join(self.root, "hook-shims")
        shim_hooks(os.path.join(self.repo, ".git", "hooks"), shims, self.hook_log)
        git(["config", "core.hooksPath", shims], self.repo)
        for i, plan in enumerate(self.a.plans):
            human = i in self.rules.humans
            name = f"{'h' if human else 'a'}{i}"
            wt = os.path.join(self.root, name)
            git(["worktree", "add", "-q", "-b", self.branch_of(name), wt, "origin/main"],
                self.repo, extra=self.env)
            p = Participant(i, name, wt, plan, edits_of(self.scratch, plan),
                            HUMAN if human else AGENT)
            for e in p.pending:
                p.sizes[e.commit] = p.sizes.get(e.commit, 0) + 1
            self.people.append(p)
        if self.verifier is not None:
            self.trunk_ok = self.verifier.passes_at(self.a.trunk)

    @staticmethod
    def branch_of(name: str) -> str:
        return f"{'human' if name.startswith('h') else 'agent'}/{name}"

    def proximity(self, args: list[str], cwd: str, stdin: str | None = None,
                  extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run([sys.executable, "-m", "proximity", *args], cwd, ok=(0, 1, 2), stdin=stdin,
                   extra={**self.env, **(extra or {})})

    def timed_check(self, args: list[str], cwd: str, stdin: str | None = None
                    ) -> subprocess.CompletedProcess[str]:
        start = time.perf_counter()
        p = self.proximity(args, cwd, stdin)
        self.check_ms.append((time.perf_counter() - start) * 1000)
        return p

    # asking before an edit
    def reserved(self, p: Participant, e: Edit) -> tuple[str, str | None]:
        for other in self.people:
            if other is not p and other.state != "landed" and e.path in other.touched:
                return "deny", other.name
        return "allow", None

    def ask(self, p: Participant, e: Edit, event: dict[str, Any]) -> tuple[str, str | None]:
        if self.policy == "none":
            return "allow", None
        if self.policy == "reservations":
            return self.reserved(p, e)
        r = self.timed_check(["check", "--hook", "claude"], p.wt, json.dumps(event))
        try:
            reply = json.loads(r.stdout)
        except ValueError:
            return "allow", None  # the hook's own rule: a failure never blocks the agent
        # proximity only asks or denies: a reply with no decision is no objection, and the
        # agent goes ahead as Claude Code's own permission flow lets it
        ans = reply.get("hookSpecificOutput") if isinstance(reply, dict) else None
        if not isinstance(ans, dict) or "permissionDecision" not in ans:
            return "allow", None
        reason = str(ans.get("permissionDecisionReason", ""))
        self.reason = reason[:600]
        if self.rules.follow_first and ans["permissionDecision"] == "deny" and \
                "goes first over your" in reason:
            self.heard[p.name] = self.heard.get(p.name, "") + reason + "\n"
        m = HOLDER.search(reason)
        return str(ans["permissionDecision"]), m.group(1) if m else None

    def look(self, p: Participant, e: Edit, current: bytes | None,
             new: bytes | None) -> tuple[str, str | None]:
        """A person types the change in their editor: a Warning or an Error on the typed
        lines makes them take it back (a deny); else the text stays typed, unsaved."""
        if self.policy == "none":
            return "allow", None
        if self.policy == "reservations":
            return self.reserved(p, e)
        editor = self.editor(p)
        start = time.perf_counter()
        shown = diagnostics(editor, e.path, current, new)
        self.check_ms.append((time.perf_counter() - start) * 1000)
        self.look_ms.append(self.check_ms[-1])
        self.t.editor_looks += 1
        if shown is None:
            self.t.editor_unanswered += 1
            return "allow", None
        stop = [d for d in shown if d.severity in ("Error", "Warning")]
        if not stop:
            ahead = [d for d in shown if "right-of-way" in d.message]
            if ahead:  # asked where it would be denied: theirs to go on with, logged so
                self.reason = ahead[0].message
                return "ask", ahead[0].source
            return "allow", None
        editor.close(e.path)  # taken back: closed unsaved, the file on disk is as it was
        self.reason = stop[0].message
        return "deny", stop[0].source

    def editor(self, p: Participant) -> Human:
        """The person's editor: a `proximity lsp` session rooted at their worktree."""
        if p.name not in self.editors:
            self.editors[p.name] = Human(p.wt, sys.executable, {**os.environ, **self.env})
        return self.editors[p.name]

    def save(self, p: Participant) -> None:
        """A person's turn starts with saving what they typed in the last one: each file
        written as the edit's change carried onto what the worktree holds now (a rebase
        may have moved it), the editor told (didSave: its server records the worktree's
        state, the buffer stops being shared) and the file closed, the worktree recorded
        here as well (so the next check sees it whatever the server's timing), and the
        commits made that are ready."""
        if not p.typed:
            return
        editor = self.editors.get(p.name)
        for e in p.typed:
            path = os.path.join(p.wt, e.path)
            now = read(path)
            typed_on, placed = p.placed.pop((e.commit, e.path), (None, None))
            # an entry typed elsewhere is saved there while the file is as it was typed on
            new = placed if placed is not None and now == typed_on else \
                target(self.scratch, p.plan, e, now)
            self.write(p, e, path, new)
            if editor is None or editor.text(e.path) is None:
                continue
            text = buffer_text(new)
            if new is None or text is None:
                editor.close(e.path)  # deleted, or not text: nothing left to show
                continue
            if text != editor.text(e.path):
                editor.change(e.path, text)  # the buffer holds what was written
            editor.saved(e.path)
            editor.close(e.path)  # (each open file is judged again at every sibling's move)
        p.typed = []
        self.proximity(["snapshot"], p.wt)
        self.commit_ready(p)

    def close_editor(self, p: Participant) -> None:
        editor = self.editors.pop(p.name, None)
        if editor is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                self.t.editor_cpu_s += editor.cpu_seconds()
                self.t.editor_alive_s += time.monotonic() - editor.started
            editor.stop()

    def unsaved_of(self, name: str | None) -> bool:
        return any(o.name == name and o.typed for o in self.people)

    def event(self, p: Participant, e: Edit, current: bytes | None,
              new: bytes | None) -> dict[str, Any]:
        path = os.path.join(p.wt, e.path)
        return {"hook_event_name": "PreToolUse", "cwd": p.wt, "session_id": p.name,
                **tool_input(path, current, new)}

    def needless(self, p: Participant, e: Edit, holder: str | None) -> bool | None:
        h = next((o for o in self.people if o.name == holder), None)
        if h is None:
            return None
        return e.path not in self.a.conflicts.get((p.idx, h.idx), set())

    def denied(self, p: Participant, e: Edit, holder: str | None) -> None:
        self.t.denies += 1
        nl = self.needless(p, e, holder)
        self.t.needless_denies += bool(nl)
        self.t.deny_log.append({"agent": p.name, "path": e.path, "holder": holder,
                                "needless": nl, "commit": p.plan.commits[e.commit],
                                "step": self.t.makespan_steps,
                                "reason": self.reason if self.policy == "proximity" else ""})

    def work(self, p: Participant) -> bool:
        editing = self.policy == "proximity" and p.human  # through the editor's server
        if editing:
            self.save(p)
            if p.state == "land":  # (that save made its last commit)
                return True
        # the trunk moved: rebase before editing on, as a coordinated participant does,
        # since neither a reservation nor the check sees work that already landed
        if self.rules.sync and self.policy != "none" and p.synced != self.landings and \
                not self.rebase(p):
            self.t.conflicts_midway += 1
        first_holder: str | None = None
        made: list[tuple[Edit, str, bytes | None, dict[str, Any]]] = []
        per_save = p.habits.files_per_save
        for e in p.eligible()[:3 * per_save]:
            if len(made) == per_save:
                break
            path = os.path.join(p.wt, e.path)
            current = read(path)
            new = target(self.scratch, p.plan, e, current)
            ev = self.event(p, e, current, new)
            decision, holder = self.look(p, e, current, new) if p.human else \
                self.ask(p, e, ev)
            self.t.unsaved_seen += decision != "allow" and self.unsaved_of(holder)
            if decision == "deny":
                self.denied(p, e, holder)
                placed = self.place_elsewhere(p, e, current, new)
                if placed is None:
                    first_holder = first_holder or holder or "?"
                    continue
                new, ev, decision, holder = placed
            self.t.asks += decision == "ask"
            if decision == "ask":
                self.t.ask_log.append({"agent": p.name, "path": e.path, "holder": holder,
                                       "step": self.t.makespan_steps,
                                       "reason": self.reason[:300]})
            made.append((e, path, new, ev))
            self.log_edit(p, e, decision, holder)
        if not made:
            # (nothing denied, but files set aside: it waits on their holder)
            first_holder = first_holder or next(
                (h for h in p.aside.values() if h != LATER), None)
            p.state, p.holder = "wait", first_holder
            self.t.waiting_steps += 1
            return False
        if editing:  # typed, unsaved until their next turn: live work the agents see
            p.typed = [e for e, *_ in made]
            return True
        for e, path, new, ev in made:
            self.write(p, e, path, new)
            if self.policy == "proximity" and self.rules.post and not p.human:
                self.post(p, ev)
        self.commit_ready(p)
        return True

    def place_elsewhere(self, p: Participant, e: Edit, current: bytes | None,
                        new: bytes | None
                        ) -> tuple[bytes, dict[str, Any], str, str | None] | None:
        """Told to edit elsewhere, a participant whose change adds one changelog or docs
        entry asks for it at the section's other items' places, nearest first, and takes
        the first one its check or its editor does not object to (None: none was). A
        person's entry stays where it was typed until they save (``p.placed``)."""
        if self.policy != "proximity" or not self.rules.elsewhere:
            return None
        for alt in elsewhere(e.path, current, new):
            ev = self.event(p, e, current, alt)
            decision, holder = self.look(p, e, current, alt) if p.human else \
                self.ask(p, e, ev)
            if decision == "deny":
                continue
            self.t.placed_elsewhere += 1
            self.t.elsewhere_log.append({"agent": p.name, "path": e.path,
                                         "step": self.t.makespan_steps,
                                         "decision": decision})
            if p.human:
                p.placed[(e.commit, e.path)] = (current, alt)
            return alt, ev, decision, holder
        return None

    def post(self, p: Participant, ev: dict[str, Any]) -> None:
        """The PostToolUse hook after an edit: it records the worktree and hands the agent
        its new messages, which it reads (a GOES FIRST among them is obeyed next turn)."""
        r = self.proximity(["check", "--hook", "claude-post"], p.wt,
                           json.dumps({**ev, "hook_event_name": "PostToolUse"}))
        try:
            said = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
        except (ValueError, KeyError, TypeError):
            return
        if isinstance(said, str) and self.rules.follow_first:
            self.heard[p.name] = self.heard.get(p.name, "") + said + "\n"

    def steer(self, p: Participant) -> None:
        """Told that a wait cycle's first member goes over its live lines (GOES FIRST: its
        inbox, what its hooks handed it, its last deny), a participant sets its uncommitted
        change of each such file aside: the file back as its last commit has it, those
        edits queued again and left until that work lands (its checks would deny them
        meanwhile), then redone on top of it. The first goes on; no conflict is left for
        either landing (a committed change there is resolved at the rebase, as before)."""
        said = self.heard.pop(p.name, "") + self.proximity(["inbox"], p.wt).stdout
        orders = steer_orders(said)
        alive = {o.name for o in self.people if o.state != "landed"}
        moved = False
        for path in waited_on(said) if self.rules.yield_lines else ():
            held = any(e.path == path for e in p.typed) or any(
                e.path == path and e.commit >= p.committed for e in p.written)
            if not held or path in orders or path in p.aside or p.state != "wait" or \
                    not p.other_work(path):
                continue
            orders[path] = LATER  # (others wait for these lines: done last, they go on)
        for path, holder in orders.items():
            if holder != LATER and (holder not in alive or path in p.aside):
                continue
            typed = [e for e in p.typed if e.path == path]
            if typed:  # unsaved in the editor: the buffer closed without saving
                p.typed = [e for e in p.typed if e.path != path]
                editor = self.editors.get(p.name)
                if editor is not None and editor.text(path) is not None:
                    editor.close(path)
            undone = p.set_aside(path, holder)
            if undone:
                moved = True
                self.t.steered += 1
                self.t.yielded += holder == LATER
                self.t.steer_log.append({"agent": p.name, "path": path, "holder": holder,
                                         "step": self.t.makespan_steps,
                                         "edits": len(undone)})
                if git(["cat-file", "-e", f"HEAD:{path}"], p.wt, ok=(0, 1, 128)).returncode:
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(p.wt, path))
                else:
                    git(["checkout", "-q", "HEAD", "--", path], p.wt)
        if moved:
            self.proximity(["snapshot"], p.wt)

    def log_edit(self, p: Participant, e: Edit, decision: str, holder: str | None) -> None:
        """An edit made, with the word it was made on; for an ask, why the check asked
        where it would have denied ('' when it would have asked anyway)."""
        self.t.edit_log.append({"agent": p.name, "path": e.path, "step": self.t.makespan_steps,
                                "decision": decision, "holder": holder, "human": p.human,
                                "why": relaxed(self.reason) if decision == "ask" else ""})

    def write(self, p: Participant, e: Edit, path: str, new: bytes | None) -> None:
        if new is None:
            if os.path.lexists(path):
                os.remove(path)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(new)
        self.t.edits += 1
        if p.aside.get(e.path) == LATER:
            del p.aside[e.path]  # (its other work is done: the file is its own again)
        p.touched.add(e.path)
        p.pending.remove(e)
        p.written.append(e)
        p.done[e.commit] = p.done.get(e.commit, 0) + 1

    def commit_ready(self, p: Participant) -> None:
        while (group := p.next_commit()) is not None:
            self.commit(p, group)
            p.committed = group[-1] + 1
        if p.committed == len(p.plan.commits) and p.state != "land":
            p.state = "land"
            self.finished.append(p)

    def commit(self, p: Participant, group: list[int]) -> None:
        paths: set[str] = set()
        for k in group:
            c = p.plan.commits[k]
            paths |= {line.split("\t", 1)[1] for line in out(
                ["diff-tree", "-r", "--no-renames", "--name-status", f"{c}^", c],
                self.scratch).split("\n") if line.strip()}
        # a path the commit deletes that this worktree never had (the trunk it rebased
        # onto deleted it first) matches nothing, and `git add` would stop the run on it
        tracked = set(out(["ls-files", "-z", "--", *sorted(paths)], p.wt).split("\0"))
        paths = {q for q in paths if q in tracked or os.path.lexists(os.path.join(p.wt, q))}
        if paths:
            git(["add", "-A", "--", *sorted(paths)], p.wt)
        msg = out(["log", "-1", "--format=%B", p.plan.commits[group[-1]]], self.scratch) or \
            "replayed commit"
        git(["commit", "-q", "--allow-empty", "-m", msg], p.wt, extra=self.env)
        p.shas.append(out(["rev-parse", "HEAD"], p.wt))
        self.t.commits += 1

    # rebasing and landing
    def rebase(self, p: Participant, keep_both: bool = False) -> bool:
        """Onto the new trunk, its uncommitted edits kept; False when git conflicted (the
        participant's side then wins, as a resolver who redoes its change would have it;
        ``keep_both``: both sides' lines of each conflict hunk are kept, as a resolver who
        redoes its change on top of the trunk's has it)."""
        git(["fetch", "-q", "origin"], p.wt)
        p.synced = self.landings
        clean = True
        stashed = git(["stash", "push", "-q", "--include-untracked"], p.wt, ok=(0, 1))
        has_stash = bool(out(["stash", "list"], p.wt))
        if git(["rebase", "-q", "origin/main"], p.wt, ok=(0, 1), extra=self.env).returncode:
            clean = False
            git(["rebase", "--abort"], p.wt, ok=(0, 1, 128))
            with self.union(keep_both):
                self.resolve_rebase(p)
        if stashed.returncode == 0 and has_stash and \
                git(["stash", "pop", "-q"], p.wt, ok=(0, 1)).returncode:
            clean = False
            git(["checkout", "--theirs", "--", "."], p.wt, ok=(0, 1))
            git(["reset", "-q"], p.wt)
            git(["stash", "drop", "-q"], p.wt, ok=(0, 1))
        return clean

    @contextlib.contextmanager
    def union(self, on: bool) -> Any:
        """While on, git's merges in every checkout keep both sides of a conflict hunk (the
        built-in union driver, set for every path in the repository's info/attributes)."""
        if not on:
            yield
            return
        attrs = os.path.join(self.repo, ".git", "info", "attributes")
        before = read(attrs)
        os.makedirs(os.path.dirname(attrs), exist_ok=True)
        with open(attrs, "wb") as f:
            f.write((before or b"") + b"\n* merge=union\n")
        try:
            yield
        finally:
            if before is None:
                os.remove(attrs)
            else:
                with open(attrs, "wb") as f:
                    f.write(before)

    def resolve_rebase(self, p: Participant) -> None:
        """The rebase git stopped, done again with the lane's side of each hunk (or, under
        ``union``, both sides' lines); what that leaves unmerged, by a merge the same way."""
        if git(["rebase", "-q", "-X", "theirs", "origin/main"], p.wt, ok=(0, 1),
               extra=self.env).returncode:
            git(["rebase", "--abort"], p.wt, ok=(0, 1, 128))
            git(["merge", "-q", "-X", "theirs", "--no-edit", "origin/main"], p.wt,
                ok=(0, 1), extra=self.env)
            self.take_theirs(p.wt)

    def take_theirs(self, checkout: str) -> None:
        """What ``-X theirs`` left unmerged (modify/delete and the like): the incoming side's
        tree, committed."""
        if out(["diff", "--name-only", "--diff-filter=U"], checkout):
            git(["checkout", "--theirs", "--", "."], checkout, ok=(0, 1))
            git(["add", "-A"], checkout)
            git(["commit", "-q", "--no-edit", "--no-verify"], checkout, ok=(0, 1))

    def forced(self, p: Participant) -> bool:
        return p.waited >= self.stall

    def push_env(self, p: Participant) -> dict[str, str]:
        extra = dict(self.env)
        if self.policy != "proximity" or self.forced(p):
            extra["PROXIMITY_ALLOW"] = "1"  # the guard is proximity's: the others ignore it
        return extra

    def push(self, p: Participant, checkout: str, ref: str) -> bool:
        r = git(["push", "-q", "origin", ref], checkout, ok=(0, 1), extra=self.push_env(p))
        if r.returncode:
            self.t.push_blocks += 1
            self.t.push_block_log.append({"agent": p.name, "from": self.rules.land_from,
                                          "step": self.t.makespan_steps,
                                          "stderr": r.stderr.strip()[-600:]})
            return False
        return True

    def merge_denied(self, p: Participant, answer: str) -> None:
        self.t.merge_denies += 1
        try:
            reason = str(json.loads(answer).get("reason", ""))
        except (ValueError, AttributeError):
            reason = answer
        self.t.merge_deny_log.append({"agent": p.name, "from": self.rules.land_from,
                                      "step": self.t.makespan_steps, "reason": reason[:600]})

    def land_own(self, p: Participant) -> str | None:
        """From its own worktree; the trunk it landed on, None while it may not."""
        if self.policy == "proximity":
            git(["fetch", "-q", "origin"], p.wt)
            r = self.proximity(["check", "--merge", "origin/main", "--json"], p.wt)
            if r.returncode == 1 and '"deny"' in r.stdout and not self.forced(p):
                self.merge_denied(p, r.stdout)
                return None
        self.rebase_to_land(p)
        if p.resolving:
            return None
        onto = out(["rev-parse", "origin/main"], p.wt)
        return onto if self.push(p, p.wt, "HEAD:main") else None

    def rebase_to_land(self, p: Participant, said: str = "") -> None:
        """The lane rebased onto the trunk to land; a conflict there is this landing's
        (counted, its files and what the merge check said, if it was asked, logged)."""
        before = out(["rev-parse", "HEAD"], p.wt)
        if self.rebase(p, keep_both=self.redo):
            return
        self.t.conflicts_at_landing += 1
        files = sorted(conflict_files(p.wt, before, "origin/main") or ())
        self.t.conflict_files += [f"{p.name}:{f}" for f in files]
        dropped = self.dropped(p.wt, "origin/main", before)
        self.t.dropped_at_landing += dropped
        if self.redo:
            p.resolving = self.resolve_cost(p, files)
        # the two commits met (with --keep, the remote and the lane's branch hold both)
        self.t.conflict_log.append({"agent": p.name, "files": files, "step":
                                    self.t.makespan_steps, "check": said, "rebased": True,
                                    "dropped": dropped,
                                    "lane": before, "onto": out(["rev-parse", "origin/main"],
                                                                p.wt)})

    def land_main(self, p: Participant) -> str | None:
        """A person integrating in the main checkout: merge the lane's branch, push main."""
        main, branch = self.repo, self.branch_of(p.name)
        git(["fetch", "-q", "origin"], main)
        git(["merge", "-q", "--ff-only", "origin/main"], main, ok=(0, 1, 128), extra=self.env)
        onto = out(["rev-parse", "origin/main"], main)
        merged = git(["merge-base", "--is-ancestor", branch, "HEAD"], main,
                     ok=(0, 1)).returncode == 0
        if not merged:  # (merged and then blocked at the push: push again)
            said = ""
            if self.policy == "proximity" and not self.forced(p):
                r = self.proximity(["check", "--merge", branch, "--json"], main)
                if r.returncode == 1 and '"deny"' in r.stdout:
                    self.merge_denied(p, r.stdout)
                    return None
                said = r.stdout[:600]
                if own_conflicts(r.stdout):
                    # told the merge would stop with conflicts here: the person has the lane's
                    # author rebase onto the trunk first (its conflicts are resolved there,
                    # and counted as this landing's), and merges it on a later step
                    self.rebase_to_land(p, said)
                    return None
            files = conflict_files(main, "HEAD", branch)
            if git(["merge", "-q", "--no-edit", branch], main, ok=(0, 1),
                   extra=self.env).returncode:
                self.t.conflicts_at_landing += 1
                self.t.conflict_files += sorted(f"{p.name}:{f}" for f in files or ())
                dropped = self.dropped(main, "HEAD", branch)
                self.t.dropped_at_landing += dropped
                self.t.conflict_log.append({"agent": p.name, "step": self.t.makespan_steps,
                                            "files": sorted(files or ()), "check": said,
                                            "dropped": dropped,
                                            "lane": out(["rev-parse", branch], main),
                                            "onto": out(["rev-parse", "HEAD"], main)})
                git(["merge", "--abort"], main, ok=(0, 1, 128))
                if self.redo:
                    # the person hands it back: its author redoes the change on top of the
                    # trunk in the lane's worktree, and the merge is tried again after
                    self.rebase(p, keep_both=True)
                    p.resolving = self.resolve_cost(p, sorted(files or ()))
                    return None
                git(["merge", "-q", "-X", "theirs", "--no-edit", branch], main, ok=(0, 1),
                    extra=self.env)
                self.take_theirs(main)
        return onto if self.push(p, main, "main") else None

    @property
    def redo(self) -> bool:
        """Conflicts at landing are redone on top of the trunk (``--resolve redo``)."""
        return self.rules.resolve == "redo"

    def dropped(self, checkout: str, kept: str, taken: str) -> int:
        """Lines of ``kept``'s landed work a resolution of this conflict throws away:
        taking ``taken``'s side (swarm_plan.dropped_lines); none when it is redone on top of
        the trunk, both sides' lines kept."""
        return 0 if self.redo else dropped_lines(checkout, kept, taken)

    @staticmethod
    def resolve_cost(p: Participant, files: list[str]) -> int:
        """Steps to redo its change of ``files`` on top of the trunk: one file an edit, as
        many edits a turn as it makes between two saves, a turn every ``pace`` steps (at
        least one step: a conflict is never free)."""
        per = p.habits.files_per_save
        return max(1, -(-len(files) // per)) * p.habits.pace

    def land(self, p: Participant) -> bool:
        lander = self.land_main if self.rules.land_from == "main" else self.land_own
        onto = lander(p)
        if onto is None:
            return False
        self.judge(p, onto, self.repo if self.rules.land_from == "main" else p.wt)
        self.close_editor(p)
        p.state = "landed"
        self.t.landed += 1
        self.t.land_log.append({"agent": p.name, "step": self.t.makespan_steps})
        self.landings += 1
        # a landed participant's worktree is gone, as a finished agent's is
        git(["worktree", "remove", "--force", p.wt], self.repo, ok=(0, 128), extra=self.env)
        for other in self.people:
            other.aside = {f: h for f, h in other.aside.items() if h != p.name}
            if other.state == "wait" and other.holder in (p.name, "?"):
                other.holder = "landed"
        return True

    def judge(self, p: Participant, onto: str, checkout: str) -> None:
        """Is the trunk broken by this landing? CMD where given, else the compile check."""
        if self.verifier is None:
            bad = uncompiled(checkout, onto, "HEAD", set(self.t.broken_files))
            if bad:
                self.t.broken_at_landing += 1
                self.t.broken_files += bad
            return
        o = self.verifier.run("main", remote=self.remote)
        if self.trunk_ok and not o.ok:
            # the lane's own tip, as it landed: a lane that fails there alone broke itself
            # (its change redone by hand on a trunk that moved under it), which is not a
            # collision of two sides and not the swarm's doing
            alone = self.verifier.run(self.branch_of(p.name), remote=self.repo)
            entry = {"agent": p.name, "step": self.t.makespan_steps, "tail": o.tail,
                     "lane_alone_ok": alone.ok}
            if alone.ok:
                self.t.broken_at_landing += 1
                self.t.broken_log.append(entry)
            else:
                self.t.broken_by_own_lane += 1
                self.t.broken_own_log.append({**entry, "lane_tail": alone.tail})
        self.trunk_ok = o.ok

    def step(self, n: int) -> bool:
        moved = False
        live = [p for p in self.people if p.state in ("work", "wait")]
        self.rng.shuffle(live)
        for p in live:
            if self.policy == "proximity" and self.rules.follow_first:
                self.steer(p)
            if p.state == "wait":
                if p.holder == "landed" or p.holder is None:
                    if not self.rebase(p):
                        self.t.conflicts_midway += 1
                    p.state, p.holder, p.waited = "work", None, 0
                    moved = True
                elif p.waited % self.rules.reask != self.rules.reask - 1:
                    p.waited += 1
                    self.t.waiting_steps += 1
                    continue
                else:
                    # it asks again, as an agent retries: the standing advice may have
                    # turned its way, or another of its edits may have come free
                    p.waited += 1
                    if self.work(p):
                        if p.state == "wait":  # (its last edit may have made it ready to land)
                            p.state, p.holder = "work", None
                        p.waited = 0
                        moved = True
                    continue
            if p.state == "work":
                if self.forced(p):  # the deadlock breaker's pick goes ahead
                    moved |= self.force(p)
                    continue
                if (n + p.idx) % p.habits.pace:
                    moved = True  # a person between two saves: busy, not stuck
                    continue
                moved |= self.work(p)
        for p in list(self.finished):
            if p.state == "land" and p.resolving:  # at work on its conflicts: not waiting
                p.resolving -= 1
                self.t.resolve_steps += 1
                moved = True
            elif p.state == "land":
                # (a landing that met a conflict is at work on it from here: not a wait)
                if self.land(p) or p.resolving:
                    moved = True
                else:
                    p.waited += 1
                    self.t.waiting_steps += 1
        self.cycles()
        self.memory.sample()
        return moved

    def cycles(self) -> None:
        """Count and break the cycles of waiters: each waits on the next's work (its holder),
        and the cycle stood for ``stall`` re-asks of its members. Each waits on one holder,
        so a cycle is a walk that comes back; it is counted once and its longest waiter goes
        ahead, as in a global stall."""
        on = {p.name: p.holder for p in self.people if p.state == "wait" and p.holder}
        standing = wait_cycles(on)
        self.cycle_age = {c: self.cycle_age.get(c, 0) + 1 for c in standing}
        limit = self.stall * self.rules.reask
        for c, age in self.cycle_age.items():
            if age != limit:
                continue
            self.t.deadlocks += 1
            self.t.wait_cycles += 1
            self.t.cycle_log.append({"step": self.t.makespan_steps, "members": sorted(c),
                                     "holders": {n: on[n] for n in sorted(c)}})
            p = max((q for q in self.people if q.name in c), key=lambda q: (q.waited, -q.idx))
            p.waited, p.state, p.holder = self.stall, "work", None

    def force(self, p: Participant) -> bool:
        if p.typed:  # (a person saves what they typed first)
            self.save(p)
            p.waited = 0
            return True
        todo = p.eligible(aside_too=True)
        if not todo:
            return False
        e = todo[0]
        p.aside.pop(e.path, None)  # (the deadlock breaker's pick: its file is its own again)
        path = os.path.join(p.wt, e.path)
        current = read(path)
        new = target(self.scratch, p.plan, e, current)
        self.t.forced += 1
        self.log_edit(p, e, "forced", None)
        self.write(p, e, path, new)
        if self.policy == "proximity" and self.rules.post and not p.human:
            self.post(p, self.event(p, e, current, new))
        self.commit_ready(p)
        p.waited = 0
        return True

    def unstick(self) -> None:
        """A deadlock: the participant that has waited longest goes ahead (edit or push)."""
        self.t.deadlocks += 1
        stuck = [p for p in self.people if p.state in ("wait", "land")]
        if not stuck:
            return
        p = max(stuck, key=lambda p: (p.waited, -p.idx))
        p.waited = self.stall
        if p.state == "wait":
            p.state, p.holder = "work", None

    def run(self, max_steps: int) -> Tally:
        start = time.monotonic()
        self.setup()
        idle = 0
        try:
            for n in range(max_steps):
                if all(p.state == "landed" for p in self.people):
                    break
                self.t.makespan_steps = n + 1
                if n and n % 10 == 0:  # (a run of 50 takes long: show it moving)
                    print(f"{self.policy} step {n}: landed {self.t.landed}/{self.t.agents}, "
                          f"waiting {self.t.waiting_steps}, conflicts at landing "
                          f"{self.t.conflicts_at_landing}", file=sys.stderr, flush=True)
                if self.step(n):
                    idle = 0
                else:
                    idle += 1
                    if idle >= self.stall:
                        self.unstick()
                        idle = 0
        except KeyboardInterrupt:
            # stopped (Ctrl-C, or SIGTERM: see main): what was measured so far is reported
            self.t.interrupted = True
        self.finish()
        self.t.seconds = round(time.monotonic() - start, 1)
        return self.t

    def finish(self) -> None:
        """Stop the service (it writes what it holds), count the commits the ledger lost,
        and sum up what proximity itself cost."""
        self.memory.sample()
        self.t.final = [{"name": p.name, "state": p.state, "holder": p.holder,
                         "pending": len(p.pending), "typed": len(p.typed),
                         "commits_left": len(p.plan.commits) - p.committed}
                        for p in self.people]
        for p in self.people:
            self.close_editor(p)
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
        shas = [s for p in self.people for s in p.shas]
        self.t.lost_shas = [s for s in shas if s not in seen]
        self.t.lost_events = len(self.t.lost_shas)
        self.t.doubled_events = sum(seen.get(s, 0) > 1 for s in shas)
        self.t.peak_service_rss_mb = self.memory.peak_mb
        self.t.check_ms = summary(self.check_ms)
        self.t.check_p95_ms = percentile(self.check_ms, 95)
        self.t.editor_ms = summary(self.look_ms)
        hooks = hook_times(self.hook_log)
        self.t.hook_ms = {name: summary(xs) for name, xs in sorted(hooks.items())}
        self.t.hook_p95_ms = percentile([x for xs in hooks.values() for x in xs], 95)
        if self.verifier is not None:
            self.t.verify_seconds = round(sum(self.verifier.runs[self.verify_from:]), 1)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def save_assignment(base: str, key: dict[str, object], a: Assignment) -> None:
    """The drawn lines of work (their commits stay in ``base``'s scratch repository)."""
    data = {"key": key, "trunk": a.trunk, "broken_alone": a.broken_alone,
            "plans": [{"merge": p.branch.merge, "first_parent": p.branch.first_parent,
                       "branch_commits": p.branch.commits, "commits": p.commits}
                      for p in a.plans],
            "conflicts": [[i, j, sorted(f)] for (i, j), f in a.conflicts.items()]}
    with open(os.path.join(base, "assignment.json"), "w") as f:
        json.dump(data, f)


def saved_assignment(base: str, key: dict[str, object]) -> Assignment | None:
    """What ``save_assignment`` kept, when it was drawn the same way (else None)."""
    try:
        with open(os.path.join(base, "assignment.json")) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    if data["key"] != json.loads(json.dumps(key)):
        return None
    plans = [Plan(Branch(p["merge"], p["first_parent"], p["branch_commits"]), p["commits"])
             for p in data["plans"]]
    conflicts = {(i, j): set(f) for i, j, f in data["conflicts"]}
    print(f"lines of work reused from {base}", file=sys.stderr)
    return Assignment(data["trunk"], plans, conflicts, data["broken_alone"])


RELAXED = (("cycle of waits", "wait cycle"), ("this merge brings in", "merge"),
           ("holds work that was told", "holding"), ("was told to yield to you", "held"))


def relaxed(reason: str) -> str:
    """Why the check asked where it would have denied (in its own words), or ''."""
    return next((kind for words, kind in RELAXED if words in reason), "")


def steer_orders(said: str) -> dict[str, str]:
    """The files where the first member of a wait cycle goes over the reader's live
    lines, each with that member, as its GOES FIRST message and the reader's denies say
    them: the reader sets its uncommitted change there aside until that work lands."""
    orders: dict[str, str] = {}
    for rx in (FIRST, GOES_FIRST):
        for m in rx.finditer(said):
            for path in m.group(2).split(", "):
                orders.setdefault(path, m.group(1))
    return orders


def waited_on(said: str) -> list[str]:
    """The files where others wait for the reader's live lines and nothing else, as its
    WAITED ON messages name them."""
    found: dict[str, None] = {}
    for m in WAITED.finditer(said):
        for path in m.group(2).split(", "):
            found.setdefault(path)
    return list(found)


def own_conflicts(answer: str) -> list[str]:
    """The paths a `check --merge --json` answer says git's merge itself would conflict in."""
    try:
        got = json.loads(answer).get("merge", {}).get("own_conflicts", [])
    except (ValueError, AttributeError):
        return []
    return [str(x) for x in got] if isinstance(got, list) else []


def wait_cycles(on: dict[str, str]) -> set[frozenset[str]]:
    """The cycles of waiters, each waiting on one holder (``on``: waiter -> holder)."""
    standing: set[frozenset[str]] = set()
    for start in on:
        seen, at = [start], on[start]
        while at in on and at not in seen:
            seen.append(at)
            at = on[at]
        if at == start:
            standing.add(frozenset(seen))
    return standing


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-dir", help="a fetched repository (bare or not)")
    ap.add_argument("--agents", type=int, default=5, help="participants, people included")
    ap.add_argument("--humans", type=int, default=0, help="how many of them are people")
    ap.add_argument("--policy", default="all", choices=[*POLICIES, "all"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", dest="out", help="write the results here")
    ap.add_argument("--rev", default="HEAD", help="draw lines of work from this history")
    ap.add_argument("--contention", default="merges", choices=("merges", "hot"),
                    help="around conflicting merges, or on the most-changed files")
    ap.add_argument("--hot-files", type=int, default=8, help="how many most-changed files")
    ap.add_argument("--hot-match", metavar="REGEX",
                    help="hot files are among the paths this matches (e.g. the code, not CI)")
    ap.add_argument("--merges", type=int, default=150,
                    help="newest merges (hot: first-parent steps) to draw from")
    ap.add_argument("--max-commits", type=int, default=12, help="per branch")
    ap.add_argument("--max-files", type=int, default=25, help="per branch")
    ap.add_argument("--pool", type=int, help="lines of work to pick from (4 N; hot: 2 N)")
    ap.add_argument("--tries", type=int, default=4, help="merges (hot: windows) tried")
    ap.add_argument("--verify", metavar="CMD",
                    help="a fast subset of the repository's tests, run by sh -c on the "
                         "trunk after every landing (default: compile the changed files)")
    ap.add_argument("--verify-timeout", type=float, default=600.0)
    ap.add_argument("--land-from", default="own", choices=("own", "main"),
                    help="each lane pushes its own branch, or a person merges it in the "
                         "main checkout and pushes main from there")
    ap.add_argument("--resolve", default="theirs", choices=("theirs", "redo"),
                    help="a conflict at landing: the lane's side of each hunk at no cost "
                         "(the trunk's thrown away), or redone by the lane's author on top "
                         "of the trunk, both sides kept, one file a step, then landed again")
    ap.add_argument("--stall", type=int, default=4, help="steps without a move = deadlock")
    ap.add_argument("--reask", type=int, default=2,
                    help="a waiting participant asks again every this many steps")
    ap.add_argument("--max-steps", type=int, default=400)
    ap.add_argument("--no-post", action="store_true", help="skip the PostToolUse hook")
    ap.add_argument("--follow-goes-first", dest="follow_goes_first", action="store_true",
                    default=True,
                    help="a participant gone over in a wait cycle sets its uncommitted change "
                    "of the files named aside until the first member lands, as its GOES "
                    "FIRST says (the default)")
    ap.add_argument("--ignore-goes-first", dest="follow_goes_first", action="store_false",
                    help="participants ignore GOES FIRST (the runs before the default changed)")
    ap.add_argument("--yield-lines", action="store_true",
                    help="a holder told that others wait for its lines alone (WAITED ON) sets "
                    "its uncommitted change there aside while it waits on others itself, "
                    "and redoes it after its other work")
    ap.add_argument("--no-elsewhere", dest="elsewhere", action="store_false",
                    help="a participant denied a new changelog or docs entry waits for its "
                    "holder rather than asking for it among the section's other items "
                    "(the runs before it was the default)")
    ap.add_argument("--no-sync", action="store_true",
                    help="coordinated participants do not rebase when the trunk moved")
    ap.add_argument("--keep", help="keep the repositories under this directory")
    ap.add_argument("--plan-dir", metavar="DIR",
                    help="keep the drawn lines of work here and reuse them when a later run "
                         "draws the same way (so the policies of one grid cell can run apart)")
    ap.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"),
                    help="draw PNG from earlier --json outputs instead of running")
    ap.add_argument("--table", nargs="+", metavar="JSON",
                    help="print the Markdown table of earlier --json outputs")
    args = ap.parse_args(argv)
    if args.plot:
        plot(args.plot[1:], args.plot[0])
        return 0
    if args.table:
        print(table(args.table))
        return 0
    if not args.git_dir:
        ap.error("--git-dir is required")
    if not 0 <= args.humans <= args.agents:
        ap.error("--humans must be between 0 and --agents")
    git_dir = os.path.abspath(args.git_dir)
    if os.path.isdir(os.path.join(git_dir, ".git")):
        git_dir = os.path.join(git_dir, ".git")
    work = args.keep or tempfile.mkdtemp(prefix="swarm-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    # a stopped run still stops its service and writes what it measured (--json)
    signal.signal(signal.SIGTERM, _interrupt)
    drawing = Drawing(args.contention, args.merges, args.max_commits, args.max_files,
                      args.pool, args.tries, args.hot_files, args.hot_match)
    results = []
    try:
        base = os.path.abspath(args.plan_dir) if args.plan_dir else work
        os.makedirs(base, exist_ok=True)
        scratch = scratch_repo(git_dir, base)
        head = run(["git", "--git-dir", git_dir, "rev-parse", args.rev], work).stdout.strip()
        verifier = None
        if args.verify:
            verifier = Verifier(scratch, os.path.join(work, "verify"), args.verify,
                                args.verify_timeout)
        key = {"repository": git_dir, "head": head, "agents": args.agents, "seed": args.seed,
               "drawing": dataclasses.asdict(drawing), "verify": args.verify}
        a = saved_assignment(base, key)
        if a is None:
            a = assign(scratch, head, args.agents, drawing, rng,
                       verifier.lane_ok if verifier else None)
            if args.plan_dir:
                save_assignment(base, key, a)
        humans = frozenset(random.Random(args.seed).sample(range(args.agents), args.humans))
        rules = Rules(args.stall, not args.no_post, not args.no_sync, args.land_from, humans,
                      args.verify, args.reask, args.follow_goes_first, args.resolve,
                      args.yield_lines, args.elsewhere)
        for policy in POLICIES if args.policy == "all" else (args.policy,):
            root = os.path.join(work, policy)
            os.makedirs(root)
            s = Swarm(root, scratch, a, policy, random.Random(args.seed), rules, verifier)
            t = s.run(args.max_steps)
            results.append(report(t, a, {"repository": git_dir, "seed": args.seed,
                                         "contention": args.contention,
                                         "follow_goes_first": args.follow_goes_first,
                                         "yield_lines": args.yield_lines,
                                         "elsewhere": args.elsewhere,
                                         "resolve": args.resolve,
                                         "verify": args.verify or "compile"}))
            print(f"{policy:13} landed {t.landed}/{t.agents} conflicts {t.conflicts_at_landing}"
                  f" broken {t.broken_at_landing} waiting {t.waiting_steps} makespan "
                  f"{t.makespan_steps} deadlocks {t.deadlocks} denies {t.denies} "
                  f"(needless {t.needless_denies}) elsewhere {t.placed_elsewhere} lost "
                  f"{t.lost_events} push blocks "
                  f"{t.push_blocks} rss {t.peak_service_rss_mb} MB check p95 "
                  f"{t.check_p95_ms} ms hook p95 {t.hook_p95_ms} ms"
                  + (f" editor cpu {t.editor_cpu_s / t.editor_alive_s:.0%}"
                     if t.editor_alive_s else "")
                  + f" ({t.seconds} s)" + (" INTERRUPTED" if t.interrupted else ""),
                  file=sys.stderr)
            if t.interrupted:
                break
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results[0] if len(results) == 1 else {"runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
