"""Issue 11 fault injection: hooks never break git, bounded resources, truthful diagnosis.

Real repositories, real `git commit` / `git push` to a real bare remote, plain hooks
installed by `proximity install`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import git, init_repo, lines

from proximity import gitio

BASE = lines(20)


def run(cwd: Path, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


# -- operation_in_progress ------------------------------------------------------------


def _diverged(tmp_path: Path) -> Path:
    """main and branch `other` both edit line 5 of f.txt."""
    repo = init_repo(tmp_path / "repo", {"f.txt": BASE})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "other 5\n"))
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "main 5\n"))
    git(repo, "commit", "-qam", "main")
    return repo


def test_operation_in_progress_names_each_sequencer_state(tmp_path):
    repo = _diverged(tmp_path)
    admin = str(repo / ".git")
    assert gitio.operation_in_progress(admin) is None
    cases = [
        ("rebase", ["rebase", "other"], ["rebase", "--abort"]),
        ("cherry-pick", ["cherry-pick", "other"], ["cherry-pick", "--abort"]),
        ("merge", ["merge", "other"], ["merge", "--abort"]),
    ]
    for name, start, abort in cases:
        assert git(repo, *start, check=False).returncode != 0  # stops on the conflict
        assert gitio.operation_in_progress(admin) == name, name
        git(repo, *abort)
        assert gitio.operation_in_progress(admin) is None, name
    # revert of main's own commit conflicts with nothing: make one that does
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "again 5\n"))
    git(repo, "commit", "-qam", "again")
    assert git(repo, "revert", "--no-edit", "HEAD~1", check=False).returncode != 0
    assert gitio.operation_in_progress(admin) == "revert"
    git(repo, "revert", "--abort")
    # am: a patch that does not apply
    patch = git(repo, "format-patch", "-1", "--stdout", "other").stdout
    (tmp_path / "p.mbox").write_text(patch)
    assert git(repo, "am", str(tmp_path / "p.mbox"), check=False).returncode != 0
    assert gitio.operation_in_progress(admin) == "am"
    git(repo, "am", "--abort")
    git(repo, "bisect", "start")
    assert gitio.operation_in_progress(admin) == "bisect"
    git(repo, "bisect", "reset")
    assert gitio.operation_in_progress(admin) is None


def test_operation_in_progress_is_per_worktree(tmp_path):
    repo = _diverged(tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "w", str(wt), "main")
    assert git(wt, "rebase", "other", check=False).returncode != 0
    wt_admin = git(wt, "rev-parse", "--absolute-git-dir").stdout.strip()
    assert gitio.operation_in_progress(wt_admin) == "rebase"
    assert gitio.operation_in_progress(str(repo / ".git")) is None
