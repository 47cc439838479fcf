"""Routes around the push guard, each played for real: the push that must yield, taken
another way (a tag, a detached checkout, a worktree attribute, a wait cycle the yielding
side starts, a sibling's repository config). Rows of `faults.py --table`, as
fault_cases.py's: ``on`` means the push was still blocked.

A helper module of benchmarks/faults.py.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from fault_cases import PY, Row, Space, git, push, run, said, space, verdict


def check(s: Space, where: Path, spec: str) -> str:
    p, _ = run(where, PY, "-m", "proximity", "check", "--json", spec, env=s.env)
    return str(json.loads(p.stdout or "{}").get("decision", "?"))


def tag_onto_the_trunk() -> Row:
    with space() as s:
        git(s.main, "tag", "t", "feat/b", env=s.env)
        p, took = run(s.main, "git", "push", "-q", "origin", "t:refs/heads/main", env=s.env)
        return Row("a tag on the work that must yield, pushed onto main", said(
            p.stderr, "blocked"), verdict(p), took)


def detached_worktree() -> Row:
    with space() as s:
        wd = s.root / "wd"
        git(s.main, "worktree", "add", "-q", "--detach", str(wd), "feat/b", env=s.env)
        p, took = run(wd, "git", "push", "-q", "origin", "HEAD:refs/heads/main", env=s.env)
        return Row("a new worktree detached at that work pushes HEAD:main", said(
            p.stderr, "blocked"), verdict(p), took)


def union_attributes() -> Row:
    with space() as s:
        (s.b / ".gitattributes").write_text("* merge=union\n")  # untracked, git's own driver
        p, took = push(s)
        return Row("an untracked `* merge=union` .gitattributes in the yielding worktree",
                   said(p.stderr, "blocked"), verdict(p), took)


def cycle_by_the_yielder() -> Row:
    with space() as s:
        check(s, s.b, "f.txt:10")  # denied: b waits on a
        (s.b / "f.txt").write_text((s.b / "f.txt").read_text().replace(
            "line 15\n", "line 15 by b\n"))
        run(s.b, PY, "-m", "proximity", "snapshot", env=s.env)
        check(s, s.a, "f.txt:15")  # denied on b's live line: a waits on b
        check(s, s.a, "f.txt:15")
        check(s, s.b, "f.txt:10")
        git(s.b, "stash", "-q", env=s.env)
        p, took = push(s)
        return Row("the yielding side closes a wait cycle on the holder, then pushes",
                   said(p.stderr, "blocked"), verdict(p), took)


def nested_repository_config() -> Row:
    with space() as s:
        marker = s.root / "ran"
        nested = s.a / "nested"  # (in the holder's worktree: the yielding push reads it)
        git(s.b, "init", "-q", str(nested), env=s.env)
        (nested / "x").write_text("x\n")
        git(nested, "add", "x", env=s.env)
        git(nested, "commit", "-qm", "x", env=s.env)
        git(nested, "config", "core.fsmonitor", f"touch {marker}; false", env=s.env)
        return pushed_past_a_command(s, marker, "a repository inside a sibling's worktree "
                                     "whose config names a command (core.fsmonitor)")


def redirected_git_file() -> Row:
    with space() as s:
        marker = s.root / "ran"
        admin = Path((s.a / ".git").read_text().split(":", 1)[1].strip())
        common = admin.parent.parent
        own = s.a / "own.git"  # a git dir of the holder's own making, its config a command
        shutil.copytree(admin, own)
        (own / "commondir").unlink()
        (own / "objects").symlink_to(common / "objects")
        shutil.rmtree(own / "refs", ignore_errors=True)
        shutil.copytree(common / "refs", own / "refs")
        (own / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
                                    f"\tfsmonitor = touch {shlex.quote(str(marker))}; false\n")
        (s.a / ".git").write_text(f"gitdir: {own}\n")
        return pushed_past_a_command(s, marker, "a sibling's `.git` file pointed at a git "
                                     "dir of its making whose config names a command")


def pushed_past_a_command(s: Space, marker: Path, fault: str) -> Row:
    """The yielding push, with a command planted in the holder's worktree that touches
    ``marker`` if anything runs it: a command that ran is the guard turned against its
    users, whatever the push's verdict."""
    p, took = push(s)
    ran = marker.exists()
    return Row(fault, ("the command RAN; " if ran else "nothing ran; ")
               + said(p.stderr, "blocked"), verdict(p) if not ran else "OFF, SILENT", took)


CASES = [tag_onto_the_trunk, detached_worktree, union_attributes, cycle_by_the_yielder,
         nested_repository_config, redirected_git_file]
