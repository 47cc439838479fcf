"""Another repository's config never runs: git reading a repository's index runs the
command its core.fsmonitor names, and a repository nobody chose to trust can sit anywhere
an agent works (one it made or unpacked inside a worktree, one beside the worktrees). Real
repositories, the real `proximity check --hook claude` and real hooks; each fsmonitor
touches a marker file, which must never appear."""

from __future__ import annotations

from pathlib import Path

from conftest import git, lines

from proximity import gitio

APP = lines(40)


def test_whose_repository_a_directory_is_in_is_read_from_files_as_git_finds_it(
        space, tmp_path):
    """From files alone, the git dir git's own search finds (git asked too, to compare: no
    config here runs anything), and whether it is this repository's: its main checkout
    and linked worktrees are; a nested repository, a bare one, a link to another
    repository, a `.git` file naming a git dir outside the common dir's worktrees are not."""
    sp = space({"app.txt": APP, "src/x.txt": "x\n"})
    b = sp.wt("b")
    common = str(sp.main / ".git")
    git(b, "init", "-q", "nested")
    git(b, "init", "-q", "--bare", "bare.git")
    (tmp_path / "elsewhere").mkdir()
    git(tmp_path / "elsewhere", "init", "-q")
    (b / "out").symlink_to(tmp_path / "elsewhere")
    (b / "own").symlink_to(sp.main / "src")
    fake = tmp_path / "fake-admin"  # an admin dir of its own making, naming our common dir
    fake.mkdir()
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    (fake / "commondir").write_text(common + "\n")
    (b / "planted").mkdir()
    (b / "planted" / ".git").write_text(f"gitdir: {fake}\n")
    (tmp_path / "plain").mkdir()
    cases = {sp.main: True, sp.main / "src": True, sp.main / ".git" / "refs": True, b: True,
             b / "own": True, b / "nested": False, b / "bare.git": False, b / "out": False,
             b / "planted": False, tmp_path / "plain": False}
    for where, ours in cases.items():
        assert gitio.of_repository(str(where), common) is ours, where
        said = git(where, "rev-parse", "--absolute-git-dir", check=False)
        found = gitio.found_by_git(str(where))
        if said.returncode == 0:
            assert found is not None and Path(found).resolve() == Path(said.stdout.strip()
                                                                       ).resolve(), where
        else:
            assert found is None, (where, said.stderr)
    assert gitio.common_of(str(b)) == str(Path(common).resolve())
    assert gitio.common_of(str(tmp_path / "plain")) is None
