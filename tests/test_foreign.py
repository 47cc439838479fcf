"""Another repository's config never runs: git reading a repository's index runs the
command its core.fsmonitor names, and a repository nobody chose to trust can sit anywhere
an agent works (one it made or unpacked inside a worktree, one beside the worktrees). Real
repositories, the real `proximity check --hook claude` and real hooks; each fsmonitor
touches a marker file, which must never appear."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import git, lines, live_objects
from test_faults import commit, hooked_repo, run

from proximity import gitio
from proximity.gitio import bulk

PY = sys.executable
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


def planted(where: Path, marker: Path) -> Path:
    """A repository of its own at ``where`` (file f, a branch `other` that changes it)
    whose config makes git touch ``marker`` whenever it reads the index."""
    git(where.parent, "init", "-q", str(where))
    (where / "f").write_text("x\n")
    git(where, "add", "f")
    git(where, "commit", "-qm", "f")
    git(where, "switch", "-qc", "other")
    (where / "f").write_text("other\n")
    git(where, "commit", "-qam", "other")
    git(where, "switch", "-q", "-")
    git(where, "config", "core.fsmonitor", f"touch {shlex.quote(str(marker))}; false")
    return where


def ask(where: Path, event: dict[str, Any], hook: str = "claude") -> dict[str, Any]:
    """The hook's answer to ``event``, run as the harness runs it (from ``where``)."""
    proc = subprocess.run([PY, "-m", "proximity", "check", "--hook", hook],
                          input=json.dumps({"cwd": str(where), **event}), cwd=where,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def bash(where: Path, cmd: str) -> dict[str, Any]:
    return ask(where, {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": cmd}})


def test_git_is_never_run_in_a_repository_a_command_or_an_edit_names_outside_its_own(
        space, tmp_path):
    """b holds a nested repository `sub` (its own .git) and a link to another one beside
    the worktrees; both have a linked worktree of their own with work in it (so a check
    run there would have siblings to read). Whatever names them -- `cd DIR &&`, `git -C`,
    a link, a move, an edit, the post-edit record -- is not judged, says why, and runs no
    git there; the same commands in b's own repository are judged as ever."""
    marker = tmp_path / "PWNED"
    sp = space({"app.txt": APP})
    git(sp.main, "switch", "-qc", "release")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 release\n"))
    sp.commit(sp.main, "release rewrites line 12")
    git(sp.main, "switch", "-q", "main")
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))  # a's live work
    sub = planted(b / "sub", marker)
    elsewhere = planted(tmp_path / "elsewhere", marker)
    (b / "link").symlink_to(elsewhere)
    for repo in (sub, elsewhere):
        wt = tmp_path / f"{repo.name}-wt"
        git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
        (wt / "f").write_text("x\nside\n")
    marker.unlink(missing_ok=True)

    def refused(got: dict[str, Any], why: str) -> None:
        assert not marker.exists(), got  # (the fsmonitor ran: git was run there)
        assert set(got) == {"systemMessage"}, got  # said, deciding nothing
        assert "not checked" in got["systemMessage"] and why in got["systemMessage"], got

    foreign = "another repository than this session's (no git is run there)"
    for cmd in ("cd sub && git checkout other -- f", "git -C sub restore --source other f",
                "git -C ../elsewhere checkout other -- f", "cd link && git checkout other -- f",
                "mv sub/f sub/g"):
        refused(bash(b, cmd), foreign)
    edit = {"hook_event_name": "PreToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": str(sub / "f"), "old_string": "x\n",
                           "new_string": "y\n"}}
    refused(ask(b, edit), foreign)
    after = {"hook_event_name": "PostToolUse", "tool_name": "Write",
             "tool_input": {"file_path": str(sub / "f"), "content": "y\n"}}
    ask(b, after, "claude-post")
    assert not marker.exists()
    # asked from outside every repository, no repository is the session's own
    refused(bash(tmp_path, f"git -C {b.name} checkout release -- app.txt"),
            "the session is in no git repository")
    # b's own repository: judged as before (a's live line 12 is in the way), from b and
    # from the main checkout naming b
    for where, cmd in ((b, "git checkout release -- app.txt"),
                       (sp.main, f"git -C ../{b.name} checkout release -- app.txt"),
                       (b, "cd . && git restore --source release app.txt")):
        got = bash(where, cmd)["hookSpecificOutput"]
        assert got["permissionDecision"] == "deny", (cmd, got)
        assert "'a'" in got["permissionDecisionReason"], (cmd, got)
    assert not marker.exists()


def test_a_repository_inside_a_sibling_never_runs_its_config_in_anyones_hooks(tmp_path):
    """wb holds an untracked repository of its own (`nested`, its fsmonitor set), and one
    deeper in an untracked directory. Commits and `proximity status` in wa snapshot wb
    again and again (git's `add` looks inside a repository it holds already, to see
    whether it is modified): the marker never appears, and wb's snapshot still records
    each repository as git does, a gitlink to its HEAD, also when wb's untracked files are
    summarized and when only a few paths are read again."""
    marker = tmp_path / "PWNED"
    main, _remote = hooked_repo(tmp_path)
    wa, wb = tmp_path / "wa", tmp_path / "wb"
    for wt in (wa, wb):
        git(main, "worktree", "add", "-q", "-b", f"feat/{wt.name}", str(wt))
    nested = planted(wb / "nested", marker)
    (wb / "deep").mkdir()
    deeper = planted(wb / "deep" / "er", marker)
    marker.unlink(missing_ok=True)
    for _ in range(2):
        c = commit(wa)
        assert c.returncode == 0, c.stderr
        s = run(wa, PY, "-m", "proximity", "status")
        assert s.returncode == 0, s.stderr
        assert not marker.exists(), s.stdout
    repo = gitio.Repo(str(wa))
    (w,) = [w for w in repo.worktrees() if w.path == str(wb)]

    def recorded(tree: str) -> dict[str, str]:
        out = git(main, "ls-tree", "-r", tree, env=live_objects(main)).stdout
        return {ln.split("\t")[1]: ln.split()[2] for ln in out.splitlines()
                if ln.startswith("160000 ")}

    heads = {"nested": git(nested, "rev-parse", "HEAD").stdout.strip(),
             "deep/er": git(deeper, "rev-parse", "HEAD").stdout.strip()}
    assert recorded(repo.snapshot_tree(w)) == heads
    assert recorded(repo.snapshot_paths(w, ["nested", "deep", "."], keep=True)) == heads
    (wb / "gen").mkdir()
    for i in range(bulk.UNTRACKED_MAX + 1):
        (wb / "gen" / f"{i}.txt").write_text(f"{i}\n")
    assert recorded(repo.snapshot_tree(w)) == heads
    assert repo.summaries[w.id] == {"gen": bulk.UNTRACKED_MAX + 1}
    git(nested, "commit", "-q", "--allow-empty", "-m", "moved on")  # (git itself: no marker)
    heads["nested"] = git(nested, "rev-parse", "HEAD").stdout.strip()
    marker.unlink(missing_ok=True)
    assert recorded(repo.snapshot_tree(w)) == heads
    assert not marker.exists()
