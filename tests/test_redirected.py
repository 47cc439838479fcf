"""A worktree's `.git` file is its data, never a way to run a command: an agent can point
its own worktree's `.git` file at a git dir of its own making, whose config names a
command (core.fsmonitor, which git runs whenever it reads the index). Every git that
proximity runs in a worktree names the repository itself (the git dir the common dir
lists for that worktree), so the siblings' hooks, `proximity status` and `proximity check`
never run it, and the pair is still judged on the worktree's live files. Real
repositories, real hooks (in process, and through the resident service); the command
touches a marker file, which must never appear."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from conftest import git, live_objects
from test_faults import BASE, PY, commit, hooked_repo, run
from test_service import commit_with_hooks, edit, install, services, three, wait_for

from proximity import gitio
from proximity.commands import service as service_cmd

__all__ = ["services"]  # (a fixture: used by name)


def redirected(wt: Path, marker: Path) -> None:
    """Point ``wt``'s `.git` file at a git dir made inside it: a copy of its admin dir
    (HEAD, index) on the repository's objects and refs, with a config of its own whose
    core.fsmonitor touches ``marker``. Git run in ``wt`` then works in that repository
    (checked: `git status` there touches the marker), so anything that lets git find the
    repository from the `.git` file runs the command."""
    admin = Path((wt / ".git").read_text().split(":", 1)[1].strip())
    common = admin.parent.parent
    own = wt / "own.git"
    shutil.copytree(admin, own)
    (own / "commondir").unlink()
    (own / "objects").symlink_to(common / "objects")
    shutil.rmtree(own / "refs", ignore_errors=True)
    shutil.copytree(common / "refs", own / "refs")
    if (common / "packed-refs").exists():
        shutil.copy(common / "packed-refs", own / "packed-refs")
    (own / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f"\tfsmonitor = touch {shlex.quote(str(marker))}; false\n")
    (wt / ".git").write_text(f"gitdir: {own}\n")
    git(wt, "status", "--short")  # (git itself, in wt: the trap is armed)
    assert marker.exists()
    marker.unlink()


def tree_file(main: Path, tree: str, path: str) -> str:
    return git(main, "cat-file", "-p", f"{tree}:{path}", env=live_objects(main)).stdout


def test_a_siblings_git_file_pointing_at_its_own_git_dir_never_runs_its_config(tmp_path):
    """wb's live work changes line 5 of f.txt; then wb's `.git` names a git dir of its own
    with core.fsmonitor set. A commit in wa (its hooks snapshot every sibling), `proximity
    status` and `proximity check` in wa never run it; wb is still read from its own files
    (through the git dir the repository lists for it: its index, this repository's config)
    and the pair is judged: wa's check of line 5 meets wb's live change, and of a file
    wb made (not ignored there, git says), wb's new file. `proximity doctor` says so."""
    marker = tmp_path / "PWNED"
    main, _remote = hooked_repo(tmp_path)
    wa, wb = tmp_path / "wa", tmp_path / "wb"
    for wt in (wa, wb):
        git(main, "worktree", "add", "-q", "-b", f"feat/{wt.name}", str(wt))
    (wb / "f.txt").write_text(BASE.replace("line 5\n", "line 5 by b\n"))  # live, tracked
    (wb / "new.txt").write_text("b's new file\n")  # live, untracked (is it ignored? git says)
    redirected(wb, marker)
    for _ in range(2):  # (the second time from the shadow index the first one wrote)
        c = commit(wa)
        assert c.returncode == 0, c.stderr
        assert not marker.exists(), c.stderr
        s = run(wa, PY, "-m", "proximity", "status", "--json")
        assert s.returncode == 0, s.stderr
        assert not marker.exists(), s.stdout
        (b,) = [x for x in json.loads(s.stdout)["agents"] if x["id"] == "wb"]
        assert b["error"] is None and b["unread"] is None, b
        assert "line 5 by b\n" in tree_file(main, b["tree"], "f.txt")
        k = run(wa, PY, "-m", "proximity", "check", "--json", "f.txt:5")
        assert not marker.exists(), k.stdout
        got = json.loads(k.stdout)
        assert got["decision"] != "allow", got
        assert [x["agent"] for x in got["conflicts"]] == ["wb"], got
        k = run(wa, PY, "-m", "proximity", "check", "--json", "new.txt")
        assert not marker.exists(), k.stdout
        got = json.loads(k.stdout)
        assert [x["agent"] for x in got["conflicts"]] == ["wb"], got
    # the git dir used for wb is the one the common dir lists, whichever way it is listed
    repo = gitio.Repo(str(wa))
    admin = os.path.realpath(main / ".git" / "worktrees" / "wb")
    for listed in (repo.worktrees(), repo.worktrees_from_files()):
        assert listed is not None
        (w,) = [w for w in listed if w.id == "wb"]
        assert os.path.realpath(w.admin) == admin and w.path == str(wb)
        assert "line 5 by b\n" in tree_file(main, repo.snapshot_tree(w), "f.txt")
        assert repo.at(str(wb)) == w.at
    # and `proximity doctor` says wb's .git names another git dir than the listed one
    d = run(wa, PY, "-m", "proximity", "doctor", "--json")
    said = {c["check"]: c for c in json.loads(d.stdout)["checks"]}
    assert said["worktree wb"]["status"] == "warn", said
    assert str(wb / "own.git") in said["worktree wb"]["detail"], said
    assert "worktree wa" not in said and "worktree main" not in said, said
    assert not marker.exists()


def test_through_the_resident_service_too(space, services, tmp_path):
    """The same, the hooks asking the resident service: it watches wb's files change (its
    `.git` file, the git dir it made) and snapshots wb again, and a commit in a asks it."""
    marker = tmp_path / "PWNED"
    sp, a, b, common = three(space, services)
    install(sp)
    edit(a / "f.txt", 10, 20, "a")
    edit(b / "f.txt", 12, 18, "b")
    assert service_cmd.start(common)
    redirected(b, marker)
    git(a, "add", "f.txt")
    done = commit_with_hooks(a, "a via the service")
    assert done.returncode == 0, done.stderr
    assert "RESOLUTION ADVISORY with worktree 'b'" in done.stderr
    assert not marker.exists()
    s = subprocess.run([PY, "-m", "proximity", "status"], cwd=a, capture_output=True,
                       text=True, timeout=120)
    assert s.returncode == 0, s.stderr
    assert "a ~ b" in s.stdout, s.stdout
    edit(b / "g.txt", 1, 2, "b")  # a change the service snapshots b again for

    def b_read_again() -> bool:
        got = subprocess.run([PY, "-m", "proximity", "status", "--json"], cwd=a,
                             capture_output=True, text=True, timeout=120)
        (x,) = [x for x in json.loads(got.stdout)["agents"] if x["id"] == "b"]
        return x["tree"] is not None and "line 1 b\n" in tree_file(sp.main, x["tree"],
                                                                    "g.txt")

    wait_for(b_read_again, timeout=30)
    assert not marker.exists()
