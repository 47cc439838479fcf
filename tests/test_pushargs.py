"""What a ``git push`` command line pushes, read back for the hook hosts that pass their
pre-push hooks one ref: the parser, and the refs it resolves in a real repository against
a real remote's tracking refs. (The hosts themselves: test_stash.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from proximity.hooks import pushargs


def parsed(line: str) -> tuple[str | None, list[str], bool, bool, bool] | None:
    p = pushargs.parse(line.split())
    return None if p is None else (p.remote, p.refspecs, p.all, p.delete, p.tags)


@pytest.mark.parametrize(("line", "want"), [
    ("git push", (None, [], False, False, False)),
    ("git push origin a b", ("origin", ["a", "b"], False, False, False)),
    ("/usr/bin/git -C /x -c a.b=c --no-pager push -u origin +a:b :gone",
     ("origin", ["+a:b", ":gone"], False, False, False)),
    ("git push --all origin", ("origin", [], True, False, False)),
    ("git push --branches", (None, [], True, False, False)),
    ("git push --mirror up", ("up", [], True, False, False)),
    ("git push -d origin a", ("origin", ["a"], False, True, False)),
    ("git push --del origin a", ("origin", ["a"], False, True, False)),  # a unique prefix
    ("git push --tags origin", ("origin", [], False, False, True)),
    ("git push -fu origin a", ("origin", ["a"], False, False, False)),
    ("git push -o ci.skip origin a", ("origin", ["a"], False, False, False)),
    ("git push -oci.skip origin a", ("origin", ["a"], False, False, False)),
    ("git push --push-option x --receive-pack=rp origin a", ("origin", ["a"], False, False, False)),
    ("git push --repo up a", ("a", [], False, False, False)),  # the argument wins, as in git
    ("git push --force-with-lease --signed=if-asked origin a",
     ("origin", ["a"], False, False, False)),
    ("git push --no-verify --no-thin origin -- a", ("origin", ["a"], False, False, False)),
    ("git push --recurse-submodules check origin a", ("origin", ["a"], False, False, False)),
])
def test_a_push_command_line_is_read(line: str, want: tuple[object, ...]) -> None:
    assert parsed(line) == want


@pytest.mark.parametrize("line", [
    "git pp origin a b",             # an alias: not understood, nothing guessed
    "git fetch origin",
    "python -m proximity push",
    "git push --frobnicate origin a",  # an option this parser does not know
    "git push --s origin a",          # ambiguous prefix (--signed, --set-upstream)
    "git push -x origin a",
    "git push --all=yes origin",
    "git push --repo",
    "",
])
def test_what_is_not_plain_is_not_guessed(line: str) -> None:
    assert pushargs.parse(line.split()) is None


def test_repo_option_is_the_remote_without_an_argument() -> None:
    p = pushargs.parse(["git", "push", "--repo=up"])
    assert p is not None and p.remote == "up" and p.refspecs == []


def branches(tmp_path: Path) -> Path:
    """A clone of a bare remote: main pushed (tracked), feat/new and feat/ahead with
    commits the remote lacks, feat/old already on the remote, feat/behind behind it, a
    tag."""
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    git(work, "remote", "add", "origin", str(remote))

    def commit(msg: str) -> None:
        (work / "f.txt").write_text(msg + "\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", msg)

    commit("base")
    git(work, "branch", "feat/old")
    git(work, "branch", "feat/behind")
    git(work, "push", "-q", "origin", "main", "feat/old", "feat/behind")
    git(work, "switch", "-q", "feat/behind")
    commit("more on behind")
    git(work, "push", "-q", "origin", "feat/behind")
    git(work, "reset", "-q", "--hard", "HEAD~1")
    git(work, "switch", "-q", "-c", "feat/new", "main")
    commit("new")
    git(work, "tag", "v1")
    git(work, "switch", "-q", "-c", "feat/ahead", "main")
    git(work, "push", "-q", "-u", "origin", "feat/ahead")
    commit("ahead")
    git(work, "switch", "-q", "main")
    return work


def more(work: Path, line: str, told: str = "refs/heads/main",
         env: dict[str, str] | None = None) -> list[str]:
    push = pushargs.parse(line.split())
    assert push is not None
    got = pushargs.more_lines(env or {"PRE_COMMIT_REMOTE_NAME": "origin"}, str(work),
                              {told}, push)
    return [f"{ln[0]}>{ln[2]}" for ln in got]


def test_refs_that_bring_commits_are_added(tmp_path: Path) -> None:
    work = branches(tmp_path)
    # named branches: the told one, one already on the remote and one behind it add nothing
    assert more(work, "git push origin main feat/new feat/old feat/behind feat/ahead") == [
        "refs/heads/feat/new>refs/heads/feat/new", "refs/heads/feat/ahead>refs/heads/feat/ahead"]
    assert more(work, "git push origin feat/new:review +feat/ahead:refs/heads/x") == [
        "refs/heads/feat/new>refs/heads/review", "refs/heads/feat/ahead>refs/heads/x"]
    # HEAD is the current branch; deletions, negative refspecs and tags bring nothing
    assert more(work, "git push origin HEAD :feat/old ^feat/new v1", told="x") == []
    assert more(work, "git push -d origin feat/new feat/ahead") == []
    # every branch: --all to the named remote
    assert more(work, "git push --all origin") == [
        "refs/heads/feat/ahead>refs/heads/feat/ahead", "refs/heads/feat/new>refs/heads/feat/new"]
    assert more(work, "git push origin refs/heads/feat/*:refs/heads/feat/*") == [
        "refs/heads/feat/ahead>refs/heads/feat/ahead", "refs/heads/feat/new>refs/heads/feat/new"]
    # no refspec: push.default decides (simple: the host's one branch; matching: tracked)
    assert more(work, "git push") == []
    git(work, "config", "push.default", "matching")
    assert more(work, "git push origin") == ["refs/heads/feat/ahead>refs/heads/feat/ahead"]
    git(work, "config", "--unset", "push.default")
    git(work, "config", "--add", "remote.origin.push", "refs/heads/feat/new:refs/heads/n")
    assert more(work, "git push") == ["refs/heads/feat/new>refs/heads/n"]
    # to a URL, only what the command line names: --all does not guess
    url = str(tmp_path / "remote.git")
    assert more(work, f"git push --all {url}", env={"PRE_COMMIT_REMOTE_NAME": url}) == []
    assert more(work, f"git push {url} main feat/new", env={"PRE_COMMIT_REMOTE_NAME": url}) == [
        "refs/heads/feat/new>refs/heads/feat/new"]


def test_a_name_is_never_an_option(tmp_path: Path) -> None:
    """Refspecs are matched against the listed refs; what matches none adds nothing and
    reaches no git command."""
    work = branches(tmp_path)
    assert more(work, "git push origin -- --output=x --upload-pack=touch@y") == []
    assert pushargs.parse(["git", "push", "origin", "--output=x"]) is None
    assert not (work / "x").exists() and not (work / "y").exists()
