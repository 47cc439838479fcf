"""Ignore answers a long-lived process keeps (gitio/ignores.py): asked of git once, asked
again as soon as anything that decides them changes -- a ``.gitignore`` on the path's way
down, the repository's ``info/exclude``, the excludes file the config names, the config
itself. A real repository and real git; every git process counted by git's own trace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import git, init_repo

from proximity import gitio


@pytest.fixture
def traced(tmp_path, monkeypatch):
    """A warm Repo (libgit2 open, as in the resident service) of a new repository, its
    worktree, and how many git processes have run since the last look."""
    repo = init_repo(tmp_path / "r", {"d/a.txt": "a\n"})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    r = gitio.Repo(str(repo))
    assert r.pg is not None  # (open)
    wt = r.worktrees_fast()[0]

    def processes() -> int:
        if not trace.exists():
            return 0
        n = sum('"event":"start"' in line for line in trace.read_text().splitlines())
        trace.unlink()
        return n

    processes()
    return repo, r, wt, processes


def test_an_answer_is_kept_until_what_decides_it_changes(traced, tmp_path):
    repo, r, wt, processes = traced
    paths = ["d/x.log", "d/keep.log"]
    assert r.any_ignored_in(wt, paths) is False and processes() >= 1
    assert r.any_ignored_in(wt, paths) is False and processes() == 0  # (kept)
    (repo / ".gitignore").write_text("*.log\n")  # the top's rules
    assert r.any_ignored_in(wt, paths) is True and processes() >= 1
    assert r.any_ignored_in(wt, ["d/keep.log"]) is True and processes() == 0
    (repo / "d" / ".gitignore").write_text("!keep.log\n")  # a directory's own, below
    assert r.any_ignored_in(wt, ["d/keep.log"]) is False and processes() >= 1
    assert r.any_ignored_in(wt, ["d/x.log"]) is True
    (repo / ".gitignore").unlink()
    (repo / "d" / ".gitignore").unlink()
    assert r.any_ignored_in(wt, paths) is False
    processes()
    info = repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "exclude").write_text("x.log\n")  # the repository's own
    assert r.any_ignored_in(wt, ["d/x.log"]) is True and processes() >= 1
    (info / "exclude").write_text("")
    assert r.any_ignored_in(wt, ["d/x.log"]) is False
    xdg = tmp_path / "xdg" / "git"
    xdg.mkdir(parents=True)
    (xdg / "ignore").write_text("keep.log\n")  # the user's, where git looks by default
    assert r.any_ignored_in(wt, ["d/keep.log"]) is True
    named = tmp_path / "mine"
    named.write_text("x.log\n")
    git(repo, "config", "core.excludesFile", str(named))  # another file, named in config
    assert r.any_ignored_in(wt, ["d/x.log"]) is True
    assert r.any_ignored_in(wt, ["d/keep.log"]) is False  # (the default file no longer)
    named.write_text("")
    assert r.any_ignored_in(wt, ["d/x.log"]) is False


def test_a_process_without_libgit2_asks_git_each_time(tmp_path, monkeypatch):
    """A hook judging in process asks once: nothing is kept for it."""
    repo = init_repo(tmp_path / "r", {".gitignore": "*.log\n"})
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    r = gitio.Repo(str(repo))
    wt = r.worktrees_fast()[0]
    assert r.any_ignored_in(wt, ["x.log"]) and r.any_ignored_in(wt, ["x.log"])
    starts = [line for line in trace.read_text().splitlines() if '"event":"start"' in line]
    assert sum("check-ignore" in line for line in starts) == 2
    assert not r.warm() and os.path.exists(trace)


def test_the_paths_asked_together_are_answered_each(traced):
    repo, r, wt, processes = traced
    (repo / ".gitignore").write_text("*.log\n")
    assert r.any_ignored_in(wt, ["a.txt", "b.log", "c/d.txt"]) is True
    processes()
    assert r.any_ignored_in(wt, ["a.txt", "c/d.txt"]) is False and processes() == 0
    assert r.any_ignored_in(wt, [Path("e.log").as_posix()]) is True and processes() >= 1


def test_an_included_config_file_and_the_branch_an_include_depends_on_are_watched(
        traced, tmp_path):
    """An included file (or the branch checked out, for ``includeIf onbranch:``) may name
    another excludes file with no config file of git's own changing: its change, or a
    switch of branch, asks git again; nothing changing, the answer is kept."""
    repo, r, wt, processes = traced
    included = tmp_path / "included.cfg"
    included.write_text(f"[core]\n\texcludesFile = {tmp_path / 'none'}\n")
    git(repo, "config", "include.path", str(included))
    assert r.any_ignored_in(wt, ["g.dat"]) is False
    processes()
    assert r.any_ignored_in(wt, ["g.dat"]) is False and processes() == 0  # (kept)
    (tmp_path / "rules").write_text("g.dat\n")
    included.write_text(f"[core]\n\texcludesFile = {tmp_path / 'rules'}\n")
    assert r.any_ignored_in(wt, ["g.dat"]) is True and processes() >= 1
    nested = tmp_path / "nested.cfg"  # (an include in an included file, relative to it)
    included.write_text("[include]\n\tpath = nested.cfg\n")
    assert r.any_ignored_in(wt, ["g.dat"]) is False
    nested.write_text(f"[core]\n\texcludesFile = {tmp_path / 'rules'}\n")
    assert r.any_ignored_in(wt, ["g.dat"]) is True
    git(repo, "config", "--unset", "include.path")
    git(repo, "config", "includeIf.onbranch:other.path", str(included))
    assert r.any_ignored_in(wt, ["g.dat"]) is False  # (not on that branch)
    processes()
    assert r.any_ignored_in(wt, ["g.dat"]) is False and processes() == 0  # (kept)
    git(repo, "switch", "-q", "-c", "other")
    processes()
    assert r.any_ignored_in(wt, ["g.dat"]) is True and processes() >= 1
