"""A snapshot built in process from the changed paths is git's own `add -A` tree.

The resident service builds a worktree's state from its shadow index's tree and the paths
the watcher reported (gitio.Repo.snapshot_overlay), without an index. Real repositories:
random edits (modify, add, delete, a new directory, an executable bit), a clean filter
and an end-of-line attribute, an ignored new file, a nested repository, a file that
becomes a directory; every answer is compared with git's `add -A` over a copy of the
index, or it must decline (None) where it cannot be sure.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from conftest import git, init_repo

from proximity import gitio

BASE = {"a.txt": "".join(f"a {i}\n" for i in range(8)),
        "run.sh": "echo hi\n",
        "d1/x.txt": "x\n", "d1/y.txt": "y\n", "d2/deep/z.txt": "z\n",
        "up.up": "lower case\n", "crlf.txt": "one\ntwo\n",
        ".gitignore": "*.log\nbuild/\n",
        ".gitattributes": "*.up filter=upper\ncrlf.txt text eol=crlf\n"}
NEW = ["n.txt", "d1/n.txt", "d3/n.txt", "d3/e/f.txt", "new.up", "x.log", "build/o.txt"]


def _repo(tmp: Path) -> tuple[Path, gitio.Repo, gitio.WorktreeInfo]:
    repo = init_repo(tmp / "r", BASE)
    git(repo, "config", "filter.upper.clean", "tr a-z A-Z")
    git(repo, "add", "--renormalize", ".")
    git(repo, "commit", "-q", "-m", "filters", "--allow-empty")
    r = gitio.Repo(str(repo))
    assert r.pg is not None  # libgit2 open, as in the resident service
    wt = next(w for w in r.worktrees())
    return repo, r, wt


def _git_tree(repo: Path, base_tree: str, paths: list[str], tmp: Path) -> str:
    """`add -A -- <paths>` over an index holding ``base_tree``: what git says."""
    index = str(tmp / "probe.idx")
    env = {"GIT_INDEX_FILE": index}
    if os.path.exists(index):
        os.unlink(index)
    git(repo, "read-tree", base_tree, env=env)
    git(repo, "add", "-A", "--ignore-errors", "--", *(f":(literal){p}" for p in paths),
        env=env, check=False)
    return git(repo, "write-tree", env=env).stdout.strip()


def test_random_edits_match_git_add(tmp_path: Path) -> None:
    repo, r, wt = _repo(tmp_path)
    rnd = random.Random(11)
    built = 0
    for _round in range(40):
        base_tree = git(repo, "rev-parse", "HEAD^{tree}").stdout.strip()
        touched: set[str] = set()
        for _ in range(rnd.randint(1, 4)):
            files = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")
                           if p.is_file() and ".git" not in p.parts)
            op = rnd.choice(["modify", "modify", "add", "delete", "chmod"])
            if op == "modify":
                rel = rnd.choice(files)
                with open(repo / rel, "a") as f:
                    f.write(f"edit {rnd.random()}\n")
            elif op == "add":
                rel = rnd.choice(NEW)
                if (repo / rel).exists():
                    continue
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text("fresh text\n")
            elif op == "delete":
                rel = rnd.choice(files)
                (repo / rel).unlink()
            else:
                rel = rnd.choice(files)
                (repo / rel).chmod((repo / rel).stat().st_mode ^ 0o100)
            touched.add(rel)
        paths = sorted(touched)
        hashing = None
        if _round % 2:  # the files hashed ahead (the service starts that early), or not
            files = [p for p in paths if (repo / p).is_file() and not (repo / p).is_symlink()]
            if _round % 4 == 3:
                files = files[:-1]  # not the files it needs: hashed again, never mixed up
            if files:
                hashing = (files, r.hash_start(str(repo), files))
        got = r.snapshot_overlay(wt, base_tree, paths, hashing)
        want = _git_tree(repo, base_tree, paths, tmp_path)
        if got is not None:
            built += 1
            assert got == want, (paths, got, want)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"round {_round}")
    assert built >= 25  # most rounds are built in process; the rest declined, never wrong


def test_declines_what_it_cannot_be_sure_of(tmp_path: Path) -> None:
    repo, r, wt = _repo(tmp_path)
    base_tree = git(repo, "rev-parse", "HEAD^{tree}").stdout.strip()
    (repo / "x.log").write_text("ignored\n")
    assert r.snapshot_overlay(wt, base_tree, ["x.log"]) is None  # git ignores it
    (repo / "d1" / "x.txt").unlink()
    (repo / "d1" / "x.txt").mkdir()
    (repo / "d1" / "x.txt" / "f").write_text("f\n")
    assert r.snapshot_overlay(wt, base_tree, ["d1/x.txt/f"]) is None  # file became a dir
    assert r.snapshot_overlay(wt, base_tree, ["d1/x.txt"]) is None
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "m.txt").write_text("m\n")
    assert r.snapshot_overlay(wt, base_tree, ["vendor/lib/m.txt"]) is None
    os.symlink("a.txt", repo / "link")
    assert r.snapshot_overlay(wt, base_tree, ["link"]) is None
    git(repo, "config", "core.fileMode", "false")
    (repo / "a.txt").write_text("changed\n")
    r2 = gitio.Repo(str(repo))
    assert r2.pg is not None
    assert r2.snapshot_overlay(wt, base_tree, ["a.txt"]) is None
    # without libgit2 open (a hook in process) it never loads it
    assert gitio.Repo(str(repo)).snapshot_overlay(wt, base_tree, ["a.txt"]) is None


def test_deleting_a_whole_directory_and_the_last_file(tmp_path: Path) -> None:
    repo, r, wt = _repo(tmp_path)
    base_tree = git(repo, "rev-parse", "HEAD^{tree}").stdout.strip()
    shutil.rmtree(repo / "d2")
    (repo / "d1" / "x.txt").unlink()
    (repo / "d1" / "y.txt").unlink()
    paths = ["d1/x.txt", "d1/y.txt", "d2"]
    assert r.snapshot_overlay(wt, base_tree, paths) == _git_tree(repo, base_tree, paths,
                                                                 tmp_path)
