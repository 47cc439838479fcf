"""Untracked files in bulk (gitio/bulk.py): past a count, summarized by directory, not
hashed one by one, while what is tracked still judges. Real repositories, real hooks, a
real push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import git, init_repo, lines, live_objects

from proximity.gitio import bulk

PY = sys.executable
BASE = lines(20)


def test_groups_are_untracked_directories_or_the_directory_of_loose_files():
    tracked = ["src/a.py", "src/pkg/b.py", "README"]
    dirs = bulk.dirs_of(tracked)
    assert dirs == {"src", "src/pkg"}
    assert bulk.group_of("gen/d1/f.txt", dirs) == "gen"
    assert bulk.group_of("src/out/x.o", dirs) == "src/out"
    assert bulk.group_of("src/pkg/loose.txt", dirs) == "src/pkg"
    assert bulk.group_of("top.txt", dirs) == ""


def test_the_largest_groups_go_first_until_few_enough_are_left():
    files = [f"gen/{i}" for i in range(50)] + [f"build/{i}" for i in range(30)] + \
        [f"src/n{i}.py" for i in range(5)]
    assert bulk.summarize(files, ["src/a.py"], most=100) == {}
    assert bulk.summarize(files, ["src/a.py"], most=40) == {"gen": 50}
    assert bulk.summarize(files, ["src/a.py"], most=10) == {"gen": 50, "build": 30}
    assert bulk.under("gen/x/y", {"gen": 50}) and not bulk.under("src/n1.py", {"gen": 50})
    assert "80 untracked files" in bulk.summary_text({"gen": 50, "build": 30})


def test_a_worktree_with_untracked_files_in_bulk_is_summarized_and_still_judged(tmp_path):
    """1,500 untracked files in gen/ are left out of the snapshot and named by count; the
    worktree's tracked edit still collides with a sibling's (the push that must yield is
    blocked) and its few other untracked files are still read."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = init_repo(tmp_path / "main", {"f.txt": BASE})
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "main")
    assert subprocess.run([PY, "-m", "proximity", "install"], cwd=main).returncode == 0
    a, b = tmp_path / "a", tmp_path / "b"
    for wt in (a, b):
        git(main, "worktree", "add", "-q", "-b", wt.name, str(wt))
    (a / "gen").mkdir()
    for i in range(bulk.UNTRACKED_MAX + 500):
        (a / "gen" / f"out{i}.txt").write_text(f"generated {i}\n")
    (a / "notes.txt").write_text("a few words\n")
    (a / "f.txt").write_text(BASE.replace("line 10\n", "line 10 by a\n"))  # live, tracked
    c = subprocess.run([PY, "-m", "proximity", "check", "--json", "f.txt:10"], cwd=b,
                       capture_output=True, text=True)
    assert json.loads(c.stdout)["decision"] == "deny", c.stdout  # a's live edit is seen
    r = git(a, "commit", "-qam", "a commits through its hooks", check=False)
    assert r.returncode == 0, r.stderr
    (b / "f.txt").write_text(BASE.replace("line 10\n", "line 10 by b\n"))
    git(b, "commit", "-qam", "b")
    p = git(b, "push", "-q", "origin", "b", check=False)
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    s = subprocess.run([PY, "-m", "proximity", "scan", "--json"], cwd=main, capture_output=True,
                       text=True, env={**os.environ})
    assert s.returncode == 0, s.stderr
    agent = next(x for x in json.loads(s.stdout)["agents"] if x["id"] == "a")
    assert agent["summarized"] == {"gen": bulk.UNTRACKED_MAX + 500}, agent
    names = git(main, "ls-tree", "-r", "--name-only", agent["tree"],
                env=live_objects(main)).stdout.split()
    assert "notes.txt" in names and "f.txt" in names and not any(
        n.startswith("gen/") for n in names), names[:20]
    text = subprocess.run([PY, "-m", "proximity", "scan"], cwd=main, capture_output=True,
                          text=True).stdout
    assert "1500 untracked files summarized" in text, text


def test_a_snapshot_that_held_the_files_drops_them_once_they_are_too_many(tmp_path):
    """The shadow index of an earlier snapshot holds a directory's untracked files; when
    they grow past the limit, they leave the snapshot (and its shadow) as a group."""
    main = init_repo(tmp_path / "main", {"f.txt": BASE})
    gen = main / "gen"
    gen.mkdir()
    for i in range(10):
        (gen / f"x{i}.txt").write_text(f"{i}\n")
    prox = [PY, "-m", "proximity", "scan", "--json"]
    first = json.loads(subprocess.run(prox, cwd=main, capture_output=True, text=True).stdout)
    tree = first["agents"][0]["tree"]
    assert "gen" in git(main, "ls-tree", "--name-only", tree, env=live_objects(main)).stdout
    for i in range(10, bulk.UNTRACKED_MAX + 10):
        (gen / f"x{i}.txt").write_text(f"{i}\n")
    later = json.loads(subprocess.run(prox, cwd=main, capture_output=True, text=True).stdout)
    agent = later["agents"][0]
    assert agent["summarized"] == {"gen": bulk.UNTRACKED_MAX + 10}, agent
    assert "gen" not in git(main, "ls-tree", "--name-only", agent["tree"],
                            env=live_objects(main)).stdout.split()
    shadow = Path(main / ".git" / "ecm" / "index" / "main.idx")
    held = git(main, "ls-files", env={"GIT_INDEX_FILE": str(shadow)}).stdout.split()
    assert not any(n.startswith("gen/") for n in held), held[:10]
