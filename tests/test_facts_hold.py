"""Facts do not age; claims do: evidence about the two live trees holds at full weight
through any number of events that change nothing, and ends the moment either tree drops it.
Only the approach band (a forecast) decays with the hops since a side last changed a file.

Real worktrees, the installed plain hooks, real `git commit`s (aborted ones included) and
`proximity snapshot` processes, judged by `proximity scan --json`."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

from conftest import git, pair

BODY = "".join(f"    total += {i}  # step {i}\n" for i in range(1, 41))
MODELS = f'''"""Models."""


def find_user(db, name):
    return db.get(name)


def process(items):
    total = 0
{BODY}    return total
'''
VIEWS = '''"""Views."""
from app.models import find_user


def show(db, name):
    return find_user(db, name)
'''
ADMIN = '''"""Admin views, new on carol's side."""
from app.models import find_user


def promote(db, name):
    user = find_user(db, name)
    return user
'''
TENANT = "def find_user(db, name, *, tenant):\n    return db.get((tenant, name))"
OLD = "def find_user(db, name):\n    return db.get(name)"
FACTS = ("conflict", "overlap", "dependency", "symbol", "tree")


def px(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proximity", *args], cwd=cwd, text=True,
                          capture_output=True, check=True)


def scan(where: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(px(where, "scan", "--json").stdout)  # type: ignore[no-any-return]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def no_change(where: Path, i: int) -> None:
    """One event of ``where`` that changes nothing: a snapshot, or a commit that aborts
    after its pre-commit hook (empty message) -- both are recorded and tick its clock."""
    if i % 2:
        px(where, "snapshot")
    else:
        r = git(where, "commit", "--allow-empty", "-m", "", check=False)
        assert r.returncode != 0 and "empty commit message" in r.stderr, r.stderr


def airspace(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """main with the hooks; alice commits a new required keyword argument of find_user
    (callers updated), an edit at the top of process() and of README line 1; carol's new
    uncommitted file calls find_user the old way and she edits the bottom of process();
    bob rewrites README line 1 uncommitted."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    for rel, text in (("app/__init__.py", ""), ("app/models.py", MODELS),
                      ("app/views.py", VIEWS), ("README.md", "# shop\n\ntiny\n")):
        (main / rel).parent.mkdir(parents=True, exist_ok=True)
        (main / rel).write_text(text)
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    px(main, "install")
    wts = []
    for name in ("alice", "bob", "carol"):
        git(main, "worktree", "add", "-q", "-b", f"feat/{name}", str(tmp_path / name))
        wts.append(tmp_path / name)
    alice, bob, carol = wts
    edit(alice / "app/models.py", OLD, TENANT)
    edit(alice / "app/models.py", "# step 3\n", "# step three\n")
    edit(alice / "app/views.py", "find_user(db, name)", "find_user(db, name, tenant=0)")
    edit(alice / "README.md", "# shop", "# shop (per tenant)")
    git(alice, "commit", "-qam", "users belong to a tenant")
    (carol / "app/admin.py").write_text(ADMIN)
    edit(carol / "app/models.py", "# step 30\n", "# step thirty\n")
    px(carol, "snapshot")
    edit(bob / "README.md", "# shop", "# the shop")
    px(bob, "snapshot")
    return main, alice, bob, carol


def facts(p: dict) -> dict[str, float | None]:  # type: ignore[type-arg]
    return {k: p["channels"][k] for k in FACTS}


def test_a_broken_call_and_a_conflict_hold_through_no_change_events_of_either_side(tmp_path):
    main, alice, bob, carol = airspace(tmp_path)
    first = scan(main)
    ac, ab = pair(first, "alice", "carol"), pair(first, "alice", "bob")
    assert ac["advisory"] == "resolution" and ab["advisory"] == "resolution"
    assert any(f["kind"] == "incompatible-call" for f in ac["findings"])
    # every channel has evidence on one of the pairs, so every channel is held to the rule
    assert ac["channels"]["symbol"] >= 0.7 and ac["channels"]["dependency"] > 0
    assert ac["channels"]["overlap"] > 0 and ac["channels"]["tree"] > 0
    assert ab["channels"]["conflict"] == 1.0 and ab["channels"]["overlap"] > 0
    assert ac["channels"]["approach"] > 0
    ac0, ab0 = facts(ac), facts(ab)
    approach = [ac["channels"]["approach"]]
    for who in (carol, alice, bob):
        for i in range(8):
            no_change(who, i)
            now = scan(main)
            ac, ab = pair(now, "alice", "carol"), pair(now, "alice", "bob")
            assert (ac["advisory"], ab["advisory"]) == ("resolution", "resolution"), \
                (who.name, i, ac["risk"], ab["risk"])
            assert (facts(ac), facts(ab)) == (ac0, ab0), (who.name, i)
            approach.append(ac["channels"]["approach"])
    # the approach band is a forecast: it fades while neither side works that region
    assert approach[-1] < approach[0]
    assert all(x >= y for x, y in itertools.pairwise(approach))


def test_a_fact_ends_the_moment_either_tree_drops_it(tmp_path):
    main, alice, bob, carol = airspace(tmp_path)
    for i in range(6):
        no_change(carol, i)
    # carol drops the old call: the break is gone at once, not faded
    edit(carol / "app/admin.py", "find_user(db, name)", "find_user(db, name, tenant=1)")
    px(carol, "snapshot")
    ac = pair(scan(main), "alice", "carol")
    assert ac["advisory"] != "resolution"
    assert not [f for f in ac["findings"] if f["channel"] == "symbol"]
    # she brings it back: full weight again at once
    edit(carol / "app/admin.py", "find_user(db, name, tenant=1)", "find_user(db, name)")
    px(carol, "snapshot")
    assert pair(scan(main), "alice", "carol")["advisory"] == "resolution"
    # alice drops the new argument (uncommitted): ended from her side too
    edit(alice / "app/models.py", TENANT, OLD)
    px(alice, "snapshot")
    ac = pair(scan(main), "alice", "carol")
    assert ac["advisory"] != "resolution"
    assert not [f for f in ac["findings"] if f["channel"] == "symbol"]
    # bob gives up his README line: the conflict ends with it
    assert pair(scan(main), "alice", "bob")["channels"]["conflict"] == 1.0
    git(bob, "checkout", "--", "README.md")
    px(bob, "snapshot")
    ab = pair(scan(main), "alice", "bob")
    assert ab["channels"]["conflict"] == 0.0 and ab["advisory"] != "resolution"
