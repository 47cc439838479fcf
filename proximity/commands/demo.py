"""`proximity demo`: a throwaway repository with three worktrees on collision courses."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import textwrap

from proximity import gitio
from proximity.commands import install, swarm
from proximity.commands.shop import MODELS, README, UTIL, VIEWS, write
from proximity.snapshot import recorder, workspace
from proximity.tcas import pipeline
from proximity.views import report, tables


def build(root: str) -> str:
    """Create the demo repository under ``root``; return the main worktree path."""
    main = os.path.join(root, "shop")
    os.makedirs(main)
    env = {"GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.com",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.com"}

    def g(*args: str, cwd: str = main) -> None:
        gitio.git(list(args), cwd=cwd, env=env)

    g("init", "-q", "-b", "main")
    for rel, text in (("app/__init__.py", ""), ("app/models.py", MODELS),
                      ("app/views.py", VIEWS), ("lib/util.py", UTIL), ("README.md", README)):
        write(main, rel, text)
    g("add", "-A")
    g("commit", "-q", "-m", "shop: models, views, helpers")
    for name in ("alice", "bob", "carol"):
        g("worktree", "add", "-q", "-b", f"feature/{name}", os.path.join(root, name))
    # alice makes find_user take a tenant, validates on save, and commits it
    alice = os.path.join(root, "alice")
    write(alice, "app/models.py", MODELS.replace(
        "    def save(self, db):\n        db.put(self.name, self.email)",
        "    def save(self, db):\n        assert '@' in self.email\n"
        "        db.put(self.name, self.email)").replace(
        "def find_user(db, name):\n    return db.get(name)",
        "def find_user(db, name, *, tenant):\n    return db.get((tenant, name))"))
    g("commit", "-q", "-am", "models: users belong to a tenant; validate e-mail on save",
      cwd=alice)
    # bob edits the very same lines, uncommitted
    bob = os.path.join(root, "bob")
    write(bob, "app/models.py", MODELS.replace(
        "        db.put(self.name, self.email)", "        db.put(self.name.strip(), self.email)"))
    # carol works in views: new code calls find_user the old way (uncommitted), and she
    # declares that she will touch the models next
    carol = os.path.join(root, "carol")
    write(carol, "app/views.py", VIEWS + textwrap.dedent('''

        def register(db, name):
            user = find_user(db, name)
            return show(db, user.name)
    '''))
    write(carol, "lib/util.py", UTIL + "\n\ndef titleize(text):\n    return text.title()\n")
    ctx = workspace.open_context(carol, need_ledger=True)
    try:
        assert ctx.ledger is not None
        ev = recorder.record_here(ctx, "intent")
        ctx.ledger.set_intents(ctx.here, {"app/models.py": None}, ev.clock if ev else {})
    finally:
        ctx.close()
    return main


def ready_to_push(root: str, main: str) -> None:
    """A kept demo: the hooks installed and a bare remote ``origin``, so what the README
    shows happens there (bob commits and pushes: blocked, he must yield to alice)."""
    install.install_hooks(gitio.Repo(main))
    remote = os.path.join(root, "origin.git")
    gitio.git(["init", "-q", "--bare", remote], cwd=root)
    gitio.git(["remote", "add", "origin", remote], cwd=main)


def next_steps(kept: str | None) -> list[str]:
    """What to do after the demo: where its repository is (or how to keep it), and the
    three commands that set proximity up on one's own repository."""
    where = (f"The demo repository stays in {kept} (cd there and try `proximity status`, "
             "`proximity check`, `proximity view --open`). Its hooks are installed, with a "
             f"bare remote `origin`: `cd {os.path.join(kept, 'bob')} && git commit -qam "
             "'trim names' && git push origin feature/bob` is blocked (bob must yield to "
             "alice)." if kept else
             "The demo repository was deleted; `proximity demo --keep` keeps it to explore.")
    return [where, "Now on your own repository:",
            "  cd your-repo && proximity install   # the git hooks",
            "  git worktree add ../x -b x          # one worktree per agent or person",
            "  proximity status                    # every pair, and who yields"]


def run_swarm(args: argparse.Namespace) -> int:
    """``--swarm``: the recording is the point, so its directory is always kept."""
    root = args.dir or tempfile.mkdtemp(prefix="proximity-swarm-")
    os.makedirs(root, exist_ok=True)
    out, log = swarm.run(root)
    if args.json:
        print(json.dumps({"recording": out, "steps": log}, indent=2))
        return 0
    print(f"swarm of {', '.join(swarm.AGENTS)} (agents) and {', '.join(swarm.PEOPLE)} "
          f"(in an editor) on the shop in {root}:")
    print("\n".join(log))
    print(f"\nthe recording (play it in a browser): {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.swarm:
        return run_swarm(args)
    root = args.dir or tempfile.mkdtemp(prefix="proximity-demo-")
    os.makedirs(root, exist_ok=True)
    kept = args.keep or args.dir
    try:
        main = build(root)
        if kept:
            ready_to_push(root, main)
        ctx = workspace.open_context(main)
        try:
            result = pipeline.run_scan(ctx)
        finally:
            ctx.close()
        if args.json:
            json.dump(report.scan_json(result), sys.stdout, indent=2)
            print()
        else:
            con = tables.console()
            con.print(f"demo repository: {main} (worktrees alice, bob, carol)\n")
            tables.status(result, con)
            by_id = {a.id: a for a in result.agents}
            for p in result.pairs:
                if p.advisory != "clear":
                    me = p.yielding or p.a
                    other = p.b if me == p.a else p.a
                    con.print(f"\n-- as worktree {me!r} sees it (its pair with {other!r}) --",
                              markup=False)
                    con.print(report.advisory_text(p, me, by_id), markup=False)
            con.print("\n" + "\n".join(next_steps(root if kept else None)), markup=False,
                      soft_wrap=True)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0
