"""A sibling read while `git worktree remove` deletes its files is no collision; one that
deleted a file and stays is (real repositories, worktrees and `git worktree remove`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import git, init_repo, lines

from proximity import gitio
from proximity.config import Config
from proximity.hooks import departing
from proximity.model import Facts
from proximity.snapshot.agents import live_agents
from proximity.tcas.engine import scan

FILES = {"f.txt": lines(60), **{f"src/m{k}.txt": lines(20) for k in range(40)}}


def _two(tmp_path: Path) -> tuple[Path, Path, Path]:
    """main and worktrees a (edits f.txt) and b (its files deleted, as a removal does
    before it gets to its `.git`)."""
    main = init_repo(tmp_path / "main", FILES)
    a, b = tmp_path / "a", tmp_path / "b"
    git(main, "worktree", "add", "-q", "-b", "a", str(a))
    git(main, "worktree", "add", "-q", "-b", "b", str(b))
    text = (a / "f.txt").read_text().replace("line 10\n", "line 10 from a\n")
    (a / "f.txt").write_text(text)
    for rel in FILES:
        os.unlink(b / rel)
    return main, a, b


def _judged(main: Path) -> tuple[gitio.Repo, list, list]:
    repo = gitio.Repo(str(main))
    agents, _ = live_agents(repo)
    return repo, agents, scan(repo, Config(), Facts(), agents=agents).pairs


def test_a_sibling_removed_while_it_was_read_is_no_collision(tmp_path):
    main, _a, b = _two(tmp_path)
    repo, agents, pairs = _judged(main)
    ab = next(p for p in pairs if {p.a, p.b} == {"a", "b"})
    assert ab.advisory == "resolution"  # (what was read: b deleted the file a edits)
    # the removal goes on while the verdict looks again
    later = threading.Timer(0.05, lambda: git(main, "worktree", "remove", "--force", str(b)))
    later.start()
    try:
        left = departing.departed(repo, agents, [ab], "a", settle=1.0)
    finally:
        later.join()
    assert left == {"b"}


def test_a_sibling_that_deleted_a_file_and_stays_is_a_collision(tmp_path):
    main, _a, _b = _two(tmp_path)
    repo, agents, pairs = _judged(main)
    ab = next(p for p in pairs if {p.a, p.b} == {"a", "b"})
    t = time.monotonic()
    assert departing.departed(repo, agents, [ab], "a") == set()
    assert time.monotonic() - t >= departing.SETTLE  # (it was looked at again)


def test_a_commit_beside_a_sibling_that_deleted_its_file_is_told(tmp_path):
    """End to end, the hooks installed (judged in process): the deletion standing, the
    commit is told of it."""
    main, a, _b = _two(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    git(a, "add", "f.txt")
    done = subprocess.run(["git", "commit", "-q", "-m", "a"], cwd=a, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PROXIMITY_SERVICE": "0"})
    assert done.returncode == 0, done.stderr
    assert "RESOLUTION ADVISORY with worktree 'b'" in done.stderr
