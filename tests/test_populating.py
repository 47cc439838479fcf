"""A worktree being created is not one that deleted everything: while `git worktree add`
writes its files (held half way by a real smudge filter that waits for a gate file) it is
neither recorded nor judged, by the in-process scan or by the resident service, whatever
its siblings do; once git has finished it is judged on its files like any other.

`benchmarks/adding.py` does the same at scale: many worktrees of a 10,000-file repository
added beside active siblings, the service on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, lines
from test_service import commit_with_hooks, hook_env, install, services, wait_for

from proximity import layout
from proximity.ledger import Ledger

__all__ = ["services"]  # the fixture, used by name

FILES = {".gitattributes": "m_gate.txt filter=gate\n", "m_gate.txt": "the gate\n",
         "z/edited.py": lines(30), "z/other.py": lines(30),
         **{f"a/f{i:02}.txt": lines(5) for i in range(40)}}


def px(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proximity", *args], cwd=where,
                          env=hook_env(), capture_output=True, text=True, timeout=120)


def messages(common: str) -> list[tuple[str, str, str]]:
    """Every message of the ledger, delivered or not: (to, from, type)."""
    led = Ledger(os.path.join(common, "ecm"))
    try:
        return [(m["to"], m["from"], m["type"]) for m in led.messages(None, 1000)]
    finally:
        led.close()


def events_of(common: str, stream: str) -> list[tuple[str, str | None, str | None]]:
    led = Ledger(os.path.join(common, "ecm"))
    try:
        return [(e.kind, e.head, e.tree) for e in led.events(stream, 100)]
    finally:
        led.close()


def test_a_worktree_git_is_still_writing_is_neither_recorded_nor_judged(space, services,
                                                                         tmp_path):
    gate = tmp_path / "gate-open"
    gate.touch()
    sp = space({})
    git(sp.main, "config", "filter.gate.clean", "cat")
    git(sp.main, "config", "filter.gate.smudge",
        f"sh -c 'while [ ! -e {gate} ]; do sleep 0.05; done; cat'")
    for rel, text in FILES.items():
        sp.write(sp.main, rel, text)
    sp.commit(sp.main, "base")
    common = os.path.realpath(sp.main / ".git")
    services.append(common)
    install(sp)
    a, b = sp.wt("a"), sp.wt("b")
    # a edits, b commits an edit of, the files git writes after the gate
    sp.write(a, "z/edited.py", lines(30).replace("line 7\n", "line 7 by a\n"))
    sp.write(b, "z/other.py", lines(30).replace("line 9\n", "line 9 by b\n"))
    git(b, "add", "-A")
    assert commit_with_hooks(b, "b edits other").returncode == 0
    assert px(sp.main, "service", "start").returncode == 0
    gate.unlink()
    new = tmp_path / "new"
    adding = subprocess.Popen(["git", "worktree", "add", "-q", "-b", "new", str(new)],
                              cwd=sp.main, env=hook_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        # held at the gate: the files before it are written, the index and z/ are not
        wait_for(lambda: (new / "a" / "f39.txt").exists())
        time.sleep(0.3)
        assert adding.poll() is None and not (new / "z").exists()
        admin = sp.main / ".git" / "worktrees" / "new"
        assert admin.is_dir() and not (admin / "index").exists()
        for where in (a, b, sp.main):  # the siblings are active meanwhile
            sp.write(where, "z/edited.py" if where == a else "a/f00.txt",
                     lines(30).replace("line 7\n", f"line 7 by {where.name}\n"))
            got = px(where, "snapshot")
            assert got.returncode == 0, got.stderr
        sp.write(b, "z/other.py", lines(30).replace("line 9\n", "line 9 by b, again\n"))
        git(b, "add", "-A")
        assert commit_with_hooks(b, "b edits other again").returncode == 0
        for where, env in ((a, "0"), (a, "1")):  # in process, and by the service
            got = subprocess.run([sys.executable, "-m", "proximity", "scan", "--json"],
                                 cwd=where, env=hook_env(PROXIMITY_SERVICE=env),
                                 capture_output=True, text=True, timeout=120)
            scan = json.loads(got.stdout)
            assert "new" not in {x["id"] for x in scan["agents"]}, env
            assert "new" not in scan["retired"], env
        # a snapshot asked inside it says why it records nothing
        got = px(new, "snapshot")
        assert got.returncode != 0 and "still populating" in got.stderr, got
        assert not events_of(common, "new")
        assert not [m for m in messages(common) if "new" in m[:2]]
    finally:
        gate.touch()
        out, err = adding.communicate(timeout=120)
    assert adding.returncode == 0, err
    # complete: post-checkout recorded it as it is (nothing changed), and it is judged. A
    # snapshot hook with nothing to print is answered at once and its record queued for
    # the service's worker (a loaded machine: seconds later), so the event is waited for
    try:
        (first, *_) = wait_for(lambda: events_of(common, "new"), timeout=30)
    except AssertionError:
        d = layout.pending_dir(common)
        pending = os.listdir(d) if os.path.isdir(d) else []
        raise AssertionError(f"no event of the new worktree 30 s after `git worktree add` "
                             f"returned; its hooks said {err!r} {out!r}; pending {pending}; "
                             f"{px(sp.main, 'service', 'status').stdout}") from None
    assert first[0] == "worktree-add" and first[2] == git(
        sp.main, "rev-parse", f"{first[1]}^{{tree}}").stdout.strip()
    scan = json.loads(px(a, "scan", "--json").stdout)
    pairs = [p for p in scan["pairs"] if "new" in (p["a"], p["b"])]
    assert pairs and all(p["advisory"] == "clear" for p in pairs), pairs
    assert not [m for m in messages(common) if "new" in m[:2]]
    assert "STEER" not in err + out
