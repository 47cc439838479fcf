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


def _tree_with(repo: Path, changes: dict[str, str], index: Path) -> str:
    """The tree of HEAD with ``changes`` written (an index of its own, never the repo's)."""
    env = {"GIT_INDEX_FILE": str(index)}
    git(repo, "read-tree", "HEAD", env=env)
    for rel, text in changes.items():
        (repo / rel).write_text(text)
        git(repo, "add", rel, env=env)
    return git(repo, "write-tree", env=env).stdout.strip()


def test_a_state_built_on_a_checked_one_is_checked_by_its_new_blobs(tmp_path):
    """The service's next state of a worktree differs from the last in the few files
    saved since: it is known readable beyond the same HEAD when the last one was and
    those files' loose objects inflate whole. A damaged one, another HEAD, or a last
    state never checked: git lists the objects, as always."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "b\n"})
    r = gitio.Repo(str(repo))
    assert r.pg is not None  # libgit2 open, as in the resident service
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    first = _tree_with(repo, {"a.txt": "a, edited\n"}, tmp_path / "1.idx")
    assert r.unreadable(first, head) is None  # (git listed them)
    calls = dict(gitio.CALLS)
    second = _tree_with(repo, {"a.txt": "a, edited\n", "d/b.txt": "b, edited\n",
                               "d/new.txt": "new\n"}, tmp_path / "2.idx")
    assert r.readable_from(second, head, first)
    assert r.unreadable(second, head) is None
    assert gitio.CALLS.get("diff-tree", 0) == calls.get("diff-tree", 0)
    # a new blob whose loose file is cut short: not vouched for; git's listing names it
    text = "".join(f"line {i}\n" for i in range(4000))
    third = _tree_with(repo, {"d/b.txt": text}, tmp_path / "3.idx")
    oid = git(repo, "rev-parse", f"{third}:d/b.txt").stdout.strip()
    path = Path(loose_file([str(repo / ".git" / "objects")], oid) or "")
    path.chmod(0o600)
    path.write_bytes(path.read_bytes()[:40])
    assert not r.readable_from(third, head, first)
    assert "d/b.txt" in (r.unreadable(third, head) or "")
    # another HEAD than the one the last state was checked against, or a last state
    # never checked: nothing is vouched for
    git(repo, "commit", "-q", "--allow-empty", "-m", "next")
    later = git(repo, "rev-parse", "HEAD").stdout.strip()
    fourth = _tree_with(repo, {"a.txt": "a, again\n"}, tmp_path / "4.idx")
    assert not r.readable_from(fourth, later, first)
    assert not r.readable_from(fourth, head, third)
    assert not r.readable_from(fourth, head, _tree_with(repo, {"n.txt": "n\n"},
                                                        tmp_path / "5.idx"))
