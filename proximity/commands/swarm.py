"""`proximity demo --swarm`: four agents and a person edit the demo's shop step by step
through the real hooks, `proximity check` and the editor's server, and the recording is
written as the timeline view.

Each agent asks `proximity check` before each edit and obeys it: allow or ask, it edits
(allow is the command's word for no objection, which a harness's hook hears as no decision
at all; ask: warned, as a harness would proceed); deny, it takes its other plan, away from
the contested lines. Its edit is then recorded the way a worktree records one: `git commit`
(through the installed hooks) or `proximity snapshot`, then the pre-commit stage's scan
(`proximity hook warn`), which samples every pair's risk and sends the messages. The order
of steps is fixed, so every run records the same story.

The person, erin, edits in her editor: a real `proximity lsp` session (lsp/client.py) on
her worktree. She types a change; where her editor shows a Warning or an Error on the typed
lines she takes it back and types her other plan. What she typed stays unsaved until a
later step saves it (didSave: her server records the worktree) and commits it; meanwhile
every agent's check sees her unsaved lines as her live work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

from proximity import gitio
from proximity.commands import shop, view
from proximity.lsp.client import Editor, Shown
from proximity.snapshot import workspace
from proximity.tcas import pipeline

GIT_ENV = {"GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.com",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.com"}
# no resident service: each hook judges in process, so the order of the ledger's rows is the
# order of the steps, and nothing is left running when the demo ends
RUN_ENV = {"PROXIMITY_SERVICE": "0", **GIT_ENV}
AGENTS = ("alice", "bob", "carol", "dave")
PEOPLE = ("erin",)  # edit in an editor, through `proximity lsp`

Edit = Callable[[str], str]  # a file's text -> the agent's edit of it


class Plan(NamedTuple):
    path: str  # the file it edits
    lines: str  # the lines it asks `proximity check` about
    edit: Edit
    what: str  # what it does, for the log


class Step(NamedTuple):
    agent: str
    plan: Plan
    fallback: Plan | None = None  # what it does instead when check denies the plan
    commit: str | None = None  # a commit message; None: the edit stays uncommitted
    together: bool = False  # it asked in the same moment as the step before (both allowed)
    asks: bool = True  # False: moving off lines it holds needs nobody's leave
    saves: bool = False  # a person's step: saves (and commits) what they typed unsaved


def _sub(old: str, new: str) -> Edit:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


REGISTER = '''

def register(db, name):
    user = find_user(db, name)
    return show(db, user.name)
'''
DOC = '"""Helpers nobody else touches."""'
TENANT = "def find_user(db, name, *, tenant):\n    return db.get((tenant, name))"
VALIDATE = "    def save(self, db):\n        assert '@' in self.email\n"
STRIP = _sub("db.put(self.name, self.email)", "db.put(self.name.strip(), self.email)")
# carol and dave both ask about save() before either has touched it, so both are allowed:
# two agents on converging courses, as TCAS sees them; carol commits first, dave yields
STEPS: tuple[Step, ...] = (
    Step("alice", Plan("app/models.py", "14-15", _sub(
        "def find_user(db, name):\n    return db.get(name)", TENANT),
        "makes find_user take a tenant"), commit="models: users belong to a tenant"),
    Step("bob", Plan("lib/util.py", "4-5", _sub(
        'text.lower().replace(" ", "-")', 'text.strip().lower().replace(" ", "-")'),
        "trims slugify's input"), commit="util: slugify trims"),
    Step("carol", Plan("app/models.py", "9-10", _sub("    def save(self, db):\n", VALIDATE),
                       "validates e-mail in save"), commit="models: validate e-mail on save"),
    Step("dave", Plan("app/models.py", "10", STRIP, "trims the name in save"), together=True),
    Step("dave", Plan("app/models.py", "14-15", _sub(
        "    return db.get(name)", "    return db.get(name.lower())"),
        "wants find_user case-blind"),
        Plan("app/__init__.py", "1", lambda t: t + '__version__ = "1.1"\n',
             "versions the package instead")),
    Step("dave", Plan("app/models.py", "10", _sub("self.name.strip()", "self.name"),
                      "steers away: reverts its edit of save"), asks=False),
    Step("carol", Plan("app/views.py", "8", lambda t: t + REGISTER,
                       "adds register(), calling find_user the old way")),
    # erin, in her editor, types on the line bob changed: her editor shows an Error there,
    # so she types a helper at the top instead; bob's check sees her unsaved lines
    Step("erin", Plan("lib/util.py", "5", _sub("text.lower()", "text.casefold()"),
                      "makes slugify case-fold"),
         Plan("lib/util.py", "1", _sub(DOC, '"""Text helpers: slugify."""'),
              "retitles the module instead")),
    Step("bob", Plan("lib/util.py", "1", _sub(DOC, '"""Helpers."""'),
                     "shortens util's docstring")),
    Step("erin", Plan("lib/util.py", "1", lambda t: t, "saves the new title"),
         commit="util: a truer title", saves=True),
    Step("bob", Plan("README.md", "3", _sub("A tiny shop.", "A tiny shop, per tenant."),
                     "documents tenants"), commit="readme: tenants"),
)


def proximity(cwd: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proximity", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, **RUN_ENV}, timeout=300)


def check(cwd: str, plan: Plan) -> tuple[str, str | None]:
    """`proximity check`'s decision for this plan (allow, ask or deny) and the worktree
    its first conflict names."""
    out = proximity(cwd, "check", "--json", f"{plan.path}:{plan.lines}")
    try:
        got = json.loads(out.stdout)
        first = got["conflicts"][0]["agent"] if got.get("conflicts") else None
        return str(got["decision"]), None if first is None else str(first)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "allow", None  # a check that cannot answer allows: it never stops an agent


def apply(cwd: str, plan: Plan) -> None:
    path = os.path.join(cwd, plan.path)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(plan.edit(text))


def ask(root: str, s: Step) -> tuple[Plan | None, str]:
    """What the agent will do after asking check (None: it waits), and the log line."""
    cwd = os.path.join(root, s.agent)
    if not s.asks:
        return s.plan, f"{s.agent} {s.plan.what} ({s.plan.path})"
    said, who = check(cwd, s.plan)
    line = f"{s.agent} asks check {s.plan.path}:{s.plan.lines} ({s.plan.what}): {said}"
    if said != "deny":
        return s.plan, line
    line += f" ({who}'s work there)" if who else ""
    if s.fallback is None:
        return None, line + " → waits"
    return s.fallback, f"{line} → waits on those lines, {s.fallback.what} ({s.fallback.path})"


def act(root: str, s: Step, plan: Plan) -> str:
    """Make the edit and record it as a worktree does; what the scan said after it."""
    cwd = os.path.join(root, s.agent)
    apply(cwd, plan)
    if s.commit:  # through the installed hooks: pre-commit judges, post-commit records
        gitio.git(["commit", "-q", "-am", s.commit], cwd=cwd, env=RUN_ENV, ok=(0, 1))
        return ", commits"
    proximity(cwd, "snapshot", "--kind", "edit")
    warned = proximity(cwd, "hook", "warn")  # the pre-commit stage: judges and messages
    ras = sorted({w.split("'")[1] for w in warned.stderr.splitlines() + warned.stdout.splitlines()
                  if "RESOLUTION ADVISORY with worktree '" in w})
    return f"; RA with {', '.join(ras)}" if ras else ""


def swarm(root: str) -> list[str]:
    """Run the steps in order (a step ``together`` with the one before asks before that
    one acts); the log, one line per step."""
    log: list[str] = []
    editors: dict[str, Editor] = {}
    try:
        i = 0
        while i < len(STEPS):
            group = [STEPS[i]]
            while i + len(group) < len(STEPS) and STEPS[i + len(group)].together:
                group.append(STEPS[i + len(group)])
            if group[0].agent in PEOPLE:
                s = group[0]
                if s.agent not in editors:
                    editors[s.agent] = Editor(os.path.join(root, s.agent),
                                              env={**os.environ, **RUN_ENV})
                editor = editors[s.agent]
                log.append(f"{len(log) + 1}. " + (save(root, editor, s) if s.saves
                                                  else type_in(editor, s)))
                i += 1
                continue
            asked = [ask(root, s) for s in group]
            for s, (plan, line) in zip(group, asked, strict=True):
                log.append(f"{len(log) + 1}. {line}{act(root, s, plan) if plan else ''}")
            i += len(group)
    finally:
        for editor in editors.values():
            editor.stop()
    return log


def shown_on(editor: Editor, plan: Plan, text: str) -> list[Shown]:
    """Type ``plan`` into the open buffer (whose text is ``text``): the Warnings and
    Errors the editor then shows on the plan's lines."""
    editor.change(plan.path, plan.edit(text))
    first, _, last = plan.lines.partition("-")
    lo, hi = int(first), int(last or first)
    diags, _ = editor.diagnostics(plan.path)
    return [d for d in diags if d["severity"] in ("error", "warning") and lo <= d["line"] <= hi]


def type_in(editor: Editor, s: Step) -> str:
    """A person types the step's plan in their editor, unsaved; where the editor shows a
    Warning or an Error on it, they take it back and type the fallback instead."""
    path = s.plan.path
    text = editor.text(path)
    if text is None:
        with open(os.path.join(editor.root, path)) as f:
            text = f.read()
        editor.open(path, text)
    stop = shown_on(editor, s.plan, text)
    line = f"{s.agent} types {path}:{s.plan.lines} in their editor ({s.plan.what})"
    if not stop:
        return line + ", unsaved"
    said = f"{stop[0]['severity']} from {stop[0]['agent']}"
    if s.fallback is None:
        editor.change(path, text)
        return f"{line}: the editor shows an {said} → takes it back"
    shown_on(editor, s.fallback, text)
    return (f"{line}: the editor shows an {said} → takes it back, "
            f"{s.fallback.what} ({s.fallback.path}:{s.fallback.lines}), unsaved")


def save(root: str, editor: Editor, s: Step) -> str:
    """A person saves what they typed (didSave: their editor's server records the
    worktree, waited for so the recording's order is the steps'), then commits it
    through the installed hooks."""
    path, cwd = s.plan.path, os.path.join(root, s.agent)
    text = editor.text(path)
    if text is None:
        return f"{s.agent} has nothing typed in {path}"
    before = recorded(cwd, s.agent)
    with open(os.path.join(cwd, path), "w") as f:
        f.write(text)
    editor.saved(path)
    deadline = time.monotonic() + 10.0
    while recorded(cwd, s.agent) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    line = f"{s.agent} saves {path} ({s.plan.what}; their editor's server records it)"
    if s.commit:
        gitio.git(["commit", "-q", "-am", s.commit], cwd=cwd, env=RUN_ENV, ok=(0, 1))
        line += ", commits"
    return line


def recorded(cwd: str, agent: str) -> int | None:
    """The worktree's last event in the ledger (its sequence number)."""
    ctx = workspace.open_context(cwd, check_git=False, strict=False)
    try:
        ev = ctx.ledger.last_event(agent) if ctx.ledger is not None else None
    finally:
        ctx.close()
    return ev.seq if ev else None


def build(root: str) -> str:
    """The shop with the hooks installed and one worktree per agent; the main path."""
    main = os.path.join(root, "shop")
    os.makedirs(main)
    for rel, text in (("app/__init__.py", ""), ("app/models.py", shop.MODELS),
                      ("app/views.py", shop.VIEWS), ("lib/util.py", shop.UTIL),
                      ("README.md", shop.README)):
        shop.write(main, rel, text)
    gitio.git(["init", "-q", "-b", "main"], cwd=main, env=GIT_ENV)
    gitio.git(["add", "-A"], cwd=main, env=GIT_ENV)
    gitio.git(["commit", "-q", "-m", "shop: models, views, helpers"], cwd=main, env=GIT_ENV)
    proximity(main, "install")
    for name in AGENTS + PEOPLE:  # post-checkout records each one's first event
        gitio.git(["worktree", "add", "-q", "-b", f"feature/{name}", os.path.join(root, name)],
                  cwd=main, env=RUN_ENV)
    return main


def run(root: str) -> tuple[str, list[str]]:
    """Run the swarm under ``root``; (the recording's path, the log of steps)."""
    main = build(root)
    log = swarm(root)
    ctx = workspace.open_context(main)
    try:
        result = pipeline.run_scan(ctx)
        payload = view.data(result, "shop", view.history(ctx))
    finally:
        ctx.close()
    out = os.path.join(root, "view.html")
    with open(out, "w") as f:
        f.write(view.html(payload))
    return out, log
