"""Every way foreign work enters a worktree is judged as the merge it is: the real
`proximity check --hook claude` on Bash events, in real worktrees beside a sibling's live
work, with a real bare remote. Whatever form brings `release` (which rewrites the line the
sibling is editing) is denied exactly as `git merge release` is; whatever brings `later`
(another line) is allowed exactly as `git merge later` is. The command text is never run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, lines

from proximity.agents import incoming

APP = lines(40)


def reply(where: Path, cmd: str) -> dict[str, Any]:
    """The Claude Code hook's answer to a Bash call of ``cmd``."""
    event = {"tool_name": "Bash", "cwd": str(where), "hook_event_name": "PreToolUse",
             "tool_input": {"command": cmd}}
    proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", "claude"],
                          input=json.dumps(event), capture_output=True, text=True, cwd=where,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def hook(where: Path, cmd: str) -> dict[str, str]:
    """Its decision, where it makes one (ask or deny), with the reason."""
    got = reply(where, cmd)
    assert "hookSpecificOutput" in got, (cmd, got)
    return got["hookSpecificOutput"]  # type: ignore[no-any-return]


@pytest.fixture
def airspace(space, tmp_path):  # type: ignore[no-untyped-def]
    """a edits line 12 (uncommitted); b is about to bring work in. `release` rewrites line
    12, `later` line 30; both are pushed to a bare origin; two stashes (shared by every
    worktree) carry the same two changes; two patches too."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(sp.main, "remote", "add", "origin", str(remote))
    for branch, line in (("release", 12), ("later", 30)):
        git(sp.main, "switch", "-q", "-c", branch, "main")
        sp.write(sp.main, "app.txt", APP.replace(f"line {line}\n", f"line {line} {branch}\n"))
        sp.commit(sp.main, f"{branch} rewrites line {line}")
        git(sp.main, "format-patch", "-q", "-1", "-o", str(tmp_path / branch))
    git(sp.main, "switch", "-q", "main")
    git(sp.main, "push", "-q", "origin", "main", "release", "later")
    for line in (12, 30):  # stash@{1}: line 12, stash@{0}: line 30
        sp.write(sp.main, "app.txt", APP.replace(f"line {line}\n", f"line {line} stashed\n"))
        git(sp.main, "stash", "-q")
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))
    return sp, a, b


def patch(tmp_path: Path, branch: str) -> str:
    (found,) = (tmp_path / branch).iterdir()
    return str(found)


def test_every_form_that_brings_work_in_is_judged_where_git_merge_is(airspace, tmp_path):
    sp, _a, b = airspace
    before = git(b, "status", "--porcelain").stdout, git(b, "rev-parse", "HEAD").stdout
    assert hook(b, "git merge release")["permissionDecision"] == "deny"
    assert reply(b, "git merge later") == {}  # no objection: no decision at all
    git(b, "branch", "-q", "--set-upstream-to", "origin/release")
    forms = {  # the same work brought in: (release's form, later's form)
        "pull": ("git pull origin release", "git pull origin later"),
        "pull --no-rebase": ("git pull --no-rebase origin release",
                             "git pull --no-rebase origin later"),
        "pull --rebase": ("git pull --rebase origin release", "git pull -r origin later"),
        "pull refspec": ("git pull origin +refs/heads/release:refs/remotes/origin/release",
                         "git pull origin later:later"),
        "compound": ("cd . && git merge release", "git status; git merge later"),
        "cd DIR": (f"cd {b} && git merge release", f"cd {b} && git merge later"),
        "git -C": (f"git -C ../{b.name} merge --no-edit release",
                   f"git -C ../{b.name} merge later"),
        "sh -c": ("bash -c 'cd . && git merge release'", "sh -c \"git pull origin later\""),
        "subshell": ("(git fetch -q origin && git merge origin/release) 2>&1 | tail -3",
                     "git fetch -q origin || true; git merge origin/later > /dev/null"),
        "cherry-pick": ("git cherry-pick release", "git cherry-pick -x later"),
        "cherry-pick range": ("git cherry-pick main..release", "git cherry-pick main..later"),
        "am": (f"git am -3 {patch(tmp_path, 'release')}", f"git am {patch(tmp_path, 'later')}"),
        "stash": ("git stash apply stash@{1}", "git stash pop"),
        "checkout": ("git checkout release -- app.txt", "git checkout later -- app.txt"),
        "restore": ("git restore --source release app.txt",
                    "git restore --source=later --worktree -- app.txt"),
    }
    for name, (bad, good) in forms.items():
        where = sp.main if name == "git -C" else b  # (-C: a sibling worktree of it)
        got = hook(where, bad)
        assert got["permissionDecision"] == "deny", (name, got)
        assert "'a'" in got["permissionDecisionReason"], (name, got)
        assert reply(where, good) == {}, name
    # no ref named: the upstream (origin/release), then another upstream (origin/later)
    for cmd in ("git pull", "git pull --rebase", "git pull origin", "git merge"):
        assert hook(b, cmd)["permissionDecision"] == "deny", cmd
    git(b, "branch", "-q", "--set-upstream-to", "origin/later")
    for cmd in ("git pull", "git pull --rebase", "git pull origin", "git merge"):
        assert reply(b, cmd) == {}, cmd
    # several ways in on one line: the strictest answer, with each reason
    got = hook(b, "git merge later && git cherry-pick release")
    assert got["permissionDecision"] == "deny"
    assert "merging 'later'" in got["permissionDecisionReason"]
    assert "cherry-picking release" in got["permissionDecisionReason"]
    # the text is data: nothing ran, nothing changed
    assert (git(b, "status", "--porcelain").stdout, git(b, "rev-parse", "HEAD").stdout) \
        == before


def test_a_command_it_cannot_read_is_allowed_with_the_reason(airspace):
    _sp, _a, b = airspace
    cases = {
        "git merge $(echo release)": "shell expansion",
        "git pull https://example.invalid/x.git release": "no remote configured here",
        "git pull origin nowhere": "not fetched here yet",
        "cd $HOME && git merge release": "cannot be followed",
        "git --git-dir=../x/.git merge release": "another repository",
        "git am < 0001.patch": "standard input",
        "git merge release later": "octopus",
        "git merge nosuchbranch": "names no commit",
    }
    for cmd, why in cases.items():
        got = reply(b, cmd)  # said to the person, deciding nothing
        assert set(got) == {"systemMessage"}, (cmd, got)
        assert why in got["systemMessage"] and "not checked" in got["systemMessage"], got
    # a line with a way in it judged (no objection) and one it cannot read: the person is
    # told of the one not read (their one line), so no objection never reads as "checked"
    got = reply(b, "git merge later && git merge $(echo release)")
    assert set(got) == {"systemMessage"} and "shell expansion" in got["systemMessage"], got
    # and what brings nothing foreign is no merge: a branch switch, paths from the index
    for cmd in ("git checkout main", "git checkout -b new release", "git checkout -- app.txt",
                "git restore app.txt", "git stash list", "git rebase --continue"):
        assert incoming.read(cmd, str(b)) == [], cmd
    assert reply(b, "git checkout other.txt app.txt") == {}


def test_a_line_with_several_ways_in_answers_the_strictest():
    got = incoming.read("git merge later && git cherry-pick release; git stash pop", "/w")
    assert [(x.how, x.refs) for x in got if isinstance(x, incoming.Incoming)] == [
        ("merge", ("later",)), ("cherry-pick", ("release",)), ("stash pop", ("stash@{0}",))]
