"""The private object store of live work (gitio/store.py): what `proximity gc` keeps and
drops, a store that lost objects, scratch stores left by killed processes, and paths git
must read quoted. Real repositories, real hooks, real `git gc`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, init_repo, lines, live_objects

from proximity.gitio import store

PY = sys.executable
BASE = lines(20)


def prox(cwd: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "proximity", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, **(env or {})})


def hooked(tmp_path: Path) -> Path:
    main = init_repo(tmp_path / "main", {"f.txt": BASE})
    r = prox(main, "install")
    assert r.returncode == 0, r.stderr
    return main


def in_store(main: Path, oid: str) -> bool:
    return git(main, "cat-file", "-e", oid, check=False,
               env=live_objects(main)).returncode == 0


def age(objects: Path, seconds: float) -> None:
    """Make every object file in ``objects`` look ``seconds`` old (time passing)."""
    then = time.time() - seconds
    for d, _dirs, files in os.walk(objects):
        for name in files:
            os.utime(os.path.join(d, name), (then, then))


def test_gc_drops_what_no_live_worktree_needs_and_keeps_the_rest(tmp_path):
    main = hooked(tmp_path)
    gone, kept = tmp_path / "gone", tmp_path / "kept"
    for wt in (gone, kept):
        git(main, "worktree", "add", "-q", "-b", wt.name, str(wt))
        (wt / f"{wt.name}.txt").write_text(f"untracked work of {wt.name}\n")
        (wt / "f.txt").write_text(BASE + f"{wt.name}\n")
        assert git(wt, "commit", "-qm", "edit f", "f.txt").returncode == 0  # recorded
    blobs = {wt.name: git(main, "hash-object", str(wt / f"{wt.name}.txt")).stdout.strip()
             for wt in (gone, kept)}
    assert all(in_store(main, b) for b in blobs.values())
    git(main, "worktree", "remove", "--force", str(gone))
    objects = main / ".git" / "ecm" / "store" / "objects"
    r = prox(main, "gc", "--json")  # within the grace period: a writer may use them yet
    assert r.returncode == 0, r.stderr
    assert in_store(main, blobs["gone"]) and json.loads(r.stdout)["refs"] >= 1
    age(objects, 2 * store.GRACE)
    r = prox(main, "gc", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["objects"] >= 1, r.stdout
    assert not in_store(main, blobs["gone"])
    assert in_store(main, blobs["kept"])  # the live worktree's snapshot keeps its objects
    assert git(main, "--git-dir", str(objects.parent), "fsck", "--connectivity-only"
               ).returncode == 0
    # its next snapshot starts from a shadow whose objects are all still there
    s = prox(kept, "scan", "--json")
    assert s.returncode == 0, s.stderr
    agent = next(a for a in json.loads(s.stdout)["agents"] if a["id"] == "kept")
    assert agent["error"] is None and agent["unread"] is None, agent


def test_a_store_that_lost_its_objects_is_read_again_from_the_worktree(tmp_path):
    """Objects removed under a shadow index (a store deleted by hand, a gc by another
    version): the next snapshot starts again from the user's index, never fails."""
    import shutil

    main = hooked(tmp_path)
    (main / "u.txt").write_text("untracked\n")
    assert prox(main, "snapshot").returncode == 0
    shutil.rmtree(main / ".git" / "ecm" / "store")
    s = prox(main, "scan", "--json")
    assert s.returncode == 0, s.stderr
    agent = json.loads(s.stdout)["agents"][0]
    assert agent["error"] is None and agent["unread"] is None, agent
    names = git(main, "ls-tree", "--name-only", agent["tree"], env=live_objects(main))
    assert "u.txt" in names.stdout.split(), names.stdout


def test_scratch_stores_of_killed_processes_are_swept(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp / f"{store.SCRATCH_PREFIX}{dead.pid}-abc123"
    alive = tmp / f"{store.SCRATCH_PREFIX}{os.getpid()}-def456"
    fresh = tmp / f"{store.SCRATCH_PREFIX}{dead.pid}-new789"
    for d in (stale, alive, fresh):
        d.mkdir()
    then = time.time() - 2 * store.GRACE
    for d in (stale, alive):
        os.utime(d, (then, then))
    main = hooked(tmp_path)
    assert prox(main, "snapshot").returncode == 0
    r = prox(main, "gc", "--json", env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    assert not stale.exists() and alive.exists() and fresh.exists()


def test_paths_git_must_read_quoted():
    """An alternates entry holding git's separator, a quote or a newline is C-quoted, as
    git unquotes it (the environment list and info/alternates alike)."""
    assert store.quote_path("/plain/path") == "/plain/path"
    assert store.quote_path("/a:b") == '"/a:b"'
    assert store.quote_path('/a"b\\c\nd') == '"/a\\"b\\\\c\\nd"'


def test_objects_in_a_repository_under_a_colon_are_read(tmp_path):
    top = tmp_path / "a:b"
    top.mkdir()
    main = hooked(top)
    (main / "u.txt").write_text("untracked\n")
    git(main, "worktree", "add", "-q", "-b", "w", str(top / "w"))
    s = prox(main, "scan", "--json")
    assert s.returncode == 0, s.stderr
    agents = {a["id"]: a for a in json.loads(s.stdout)["agents"]}
    assert all(a["error"] is None and a["unread"] is None for a in agents.values()), agents
    assert "u.txt" in git(main, "ls-tree", "--name-only", agents["main"]["tree"],
                          env=live_objects(main)).stdout.split()
