"""Loose object files checked before libgit2 reads them (gitio/loose.py): real objects
git wrote, cut short, garbled or lying about their size."""

from __future__ import annotations

import zlib
from pathlib import Path

from conftest import git, init_repo

from proximity import gitio
from proximity.gitio.loose import damage, loose_file


def _loose(repo: Path, text: str) -> tuple[str, Path]:
    (repo / "x.txt").write_text(text)
    oid = git(repo, "hash-object", "-w", "x.txt").stdout.strip()
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.chmod(0o600)
    return oid, path


def test_whole_objects_of_every_kind_pass(tmp_path):
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    objects = str(repo / ".git" / "objects")
    for rev in ("HEAD", "HEAD^{tree}", "HEAD:a.txt"):
        oid = git(repo, "rev-parse", rev).stdout.strip()
        path = loose_file([str(tmp_path / "nowhere"), objects], oid)
        assert path is not None and damage(path) is None, rev
    _, path = _loose(repo, "".join(f"line {i} {i * i}\n" for i in range(50000)))
    assert damage(str(path)) is None  # (inflated in pieces: larger than one)


def test_a_cut_short_garbled_or_lying_object_is_named(tmp_path):
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    _, path = _loose(repo, "".join(f"line {i} {i * i}\n" for i in range(5000)))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    assert "cut short" in (damage(str(path)) or "")
    path.write_bytes(whole[:2] + b"\xff" * 40 + whole[42:])
    assert "does not inflate" in (damage(str(path)) or "")
    path.write_bytes(zlib.compress(b"blob 10\0twelve bytes"))
    assert damage(str(path)) == "holds 12 bytes where its header says 10"
    path.write_bytes(zlib.compress(b"x" * 100))
    assert damage(str(path)) == "has no object header"
    assert loose_file([str(repo / ".git" / "objects")], "0" * 40) is None


def test_a_tree_written_over_a_cut_short_loose_file_of_its_id_is_never_read(tmp_path):
    """A state built in process (treebuild.tree_with) may be a tree whose loose file is
    there already, cut short (a crashed `git mktree`): libgit2 keeps that file as the
    object and never reads it back here, so nothing wedges; git's listing of the state
    names it. (In a child process: a wedge would hold this one forever.)"""
    import subprocess
    import sys

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    (tmp_path / "v2.txt").write_text("v2\n")
    blob = git(repo, "hash-object", "-w", str(tmp_path / "v2.txt")).stdout.strip()
    sub = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\ta.txt\n",
                         capture_output=True, text=True, check=True).stdout.strip()
    path = repo / ".git" / "objects" / sub[:2] / sub[2:]
    path.chmod(0o600)
    path.write_bytes(path.read_bytes()[:12])
    code = ("import sys, pygit2\n"
            "from proximity.gitio import treebuild\n"
            "pg = pygit2.Repository(sys.argv[1])\n"
            "base = pg.revparse_single('HEAD^{tree}')\n"
            "got = treebuild.tree_with(pg, base, {('newe', 'a.txt'): (sys.argv[2], 0o100644)})\n"
            "print(got)\n")
    done = subprocess.run([sys.executable, "-c", code, str(repo), blob], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    tree = done.stdout.strip()
    assert git(repo, "rev-parse", f"{tree}:newe").stdout.strip() == sub
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    assert "git cannot read it" in (gitio.Repo(str(repo)).unreadable(tree, head) or "")
