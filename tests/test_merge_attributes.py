"""git's merge of two worktrees' work, whose answer is a verdict, never reads attributes
from a worktree's files: an untracked `.gitattributes` in one worktree cannot make a
conflict clean for everyone (`* merge=union`), nor run a merge driver the repository
configures (`* merge=x`) on other worktrees' files.

Real repositories, real worktrees, plain hooks (`proximity install`), real pushes to a
real bare remote, in process (the service's side: tests/test_service.py).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from conftest import git, pair
from test_hooks import collide, make_repo, run

from proximity import gitio
from proximity.gitio import run as gitrun


def hooked(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Worktrees wt-a (right of way) and wt-b edit line 20 of f.txt and commit: wt-b must
    yield, and git's real merge of the two conflicts."""
    main, _remote = make_repo(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    a, b, _ra, _rb = collide(main, tmp_path)
    assert git(main, "merge-tree", "--write-tree", "feat/a", "feat/b",
               check=False).returncode == 1
    return main, a, b


def blocked(b: Path, main: Path) -> str:
    """wt-b's push of feat/b: blocked, as wt-b must yield to wt-a (its output)."""
    pushed = run(b, "git", "push", "origin", "feat/b")
    out = pushed.stderr + pushed.stdout
    assert pushed.returncode != 0, out
    assert "push blocked" in out and "must yield to 'wt-a'" in out, out
    assert "feat/b" not in git(main, "ls-remote", "origin").stdout
    return out


def test_an_untracked_union_attribute_does_not_let_the_yielding_push_through(tmp_path):
    """wt-b, which must yield, puts an untracked `* merge=union` beside its work (union is
    built into git: no config needed). git's merge the guard asks ran in wt-b and read
    it, merged the two edits of line 20 cleanly, and the push went through with a traffic
    advisory; git's real merge of the two still conflicts. The push is blocked as without
    the file, on git's conflict."""
    main, _a, b = hooked(tmp_path)
    (b / ".gitattributes").write_text("* merge=union\n")
    out = blocked(b, main)
    assert "via conflict 1.00" in out, out


def test_a_merge_driver_a_worktrees_attributes_name_never_runs(tmp_path):
    """The repository's config defines a merge driver; an untracked `.gitattributes` in
    wt-b, and in a third worktree wt-c, names it for every file. A scan from wt-c (of the
    pair wt-a, wt-b: neither is wt-c), wt-b's `check --merge` and wt-b's push each ask
    git's merge of a conflicting file: the driver ran there (and, exiting 0, called the
    conflict clean). It never runs, and the verdicts are git's own merge's."""
    main, _a, b = hooked(tmp_path)
    mark = tmp_path / "driver-ran"
    git(main, "config", "merge.x.driver", f"touch '{mark}'")
    c = tmp_path / "wt-c"
    git(main, "worktree", "add", "-q", "-b", "feat/c", str(c))
    for wt in (b, c):
        (wt / ".gitattributes").write_text("* merge=x\n")
    scanned = run(c, sys.executable, "-m", "proximity", "scan", "--json")
    assert scanned.returncode == 0, scanned.stderr
    assert not mark.exists(), "a scan ran the merge driver"
    p = pair(json.loads(scanned.stdout), "wt-a", "wt-b")
    assert p["channels"]["conflict"] == 1.0 and p["advisory"] == "resolution", p
    checked = run(b, sys.executable, "-m", "proximity", "check", "--merge", "feat/a",
                  "--json")
    assert not mark.exists(), "check --merge ran the merge driver"
    got = json.loads(checked.stdout)
    assert got["merge"]["own_conflicts"] == ["f.txt"], got
    blocked(b, main)
    assert not mark.exists(), "the push guard ran the merge driver"


def test_the_merge_of_a_pair_reads_no_attributes_of_the_worktree_it_is_asked_from(space):
    """Repo.merge_result, asked from the main checkout (as the service asks every pair)
    whose untracked .gitattributes says `* merge=union`: the merge of a's and b's commits
    conflicts as git's plain merge does; it ran in an empty directory of this process
    alone, left empty."""
    sp = space({"app.txt": "".join(f"line {i}\n" for i in range(1, 21))})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (a, b):
        sp.write(wt, "app.txt", (sp.main / "app.txt").read_text().replace(
            "line 10\n", f"line 10 by {wt.name}\n"))
        sp.commit(wt, f"{wt.name}'s line 10")
    sp.write(sp.main, ".gitattributes", "* merge=union\n")
    repo = gitio.Repo(str(sp.main))
    heads = [git(wt, "rev-parse", "HEAD").stdout.strip() for wt in (a, b)]
    assert repo.merge_conflicts(*heads) == ["app.txt"]
    got = repo.merge_result(*heads)
    assert got is not None and got[1] == ["app.txt"]
    where = gitrun.away_dir()
    assert os.listdir(where) == []
    assert stat.S_IMODE(os.lstat(where).st_mode) == 0o700
