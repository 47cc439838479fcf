"""Loose object files checked before libgit2 reads them (gitio/loose.py): real objects
git wrote, cut short, garbled or lying about their size. libgit2 loops forever on one cut
short, holding the interpreter, so nothing may hand it one: every path says which object,
in one line, and goes on (the hooks, the resident service, which keeps answering,
`doctor`), and a service that wedged anyway is ended by `proximity service stop`. Real
repositories, real hooks, a real service process and real signals."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from conftest import git, init_repo, lines

from proximity import gitio
from proximity.gitio import loose
from proximity.gitio.loose import damage, loose_files


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
        paths = loose_files([str(tmp_path / "nowhere"), objects], oid)
        assert len(paths) == 1 and damage(paths[0]) is None, rev
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
    assert loose_files([str(repo / ".git" / "objects")], "0" * 40) == []


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


_OVERLAY = """
import json, os, sys
from proximity import gitio
repo = gitio.Repo(sys.argv[1])
repo.pg  # (libgit2 open, as in the resident service)
wt = repo.worktrees_fast()[0]
head = repo.read_head(repo.common)[0]
base = repo.commit_tree(head)
assert repo.unreadable(base, head) is None  # (the state the service started from)
trace = os.path.join(sys.argv[2], "trace")
tree = repo.snapshot_overlay(wt, base, ["a/x.txt"])
os.environ["GIT_TRACE2_EVENT"] = trace  # (every git process from here on says so)
why = repo.unreadable(tree, head)
print(json.dumps({"tree": tree, "why": why, "git": os.path.exists(trace)}))
"""


def _overlay_checked(tmp_path: Path, repo: Path) -> dict[str, object]:
    """A worktree state built in process over a state found readable (the resident
    service's snapshot of a few saved files), then checked as libgit2 will read it; in a
    child process (a wedge would hold this one forever)."""
    import sys

    done = subprocess.run([sys.executable, "-c", _OVERLAY, str(repo), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got: dict[str, object] = json.loads(done.stdout)
    return got


def test_a_state_built_over_a_readable_one_is_checked_by_its_own_objects(tmp_path):
    """A file saved over the state already checked: the check inflates only the objects
    the new state holds beyond it -- the saved file's blob and the trees above it -- and
    runs no git process; a loose file of any of them already there cut short (hashing
    or writing the same id again keeps it) is named, as git's listing names it."""
    repo = init_repo(tmp_path / "r", {"a/x.txt": "one\n", "b.txt": "b\n"})
    (repo / "a" / "x.txt").write_text("two\n")
    whole = _overlay_checked(tmp_path / "whole", repo)
    assert whole["why"] is None and whole["git"] is False, whole
    for kind in ("blob", "tree"):
        text = "".join(f"{kind} line {i} {i * i}\n" for i in range(5000))
        (repo / "a" / "x.txt").write_text(text)
        blob = git(repo, "hash-object", "a/x.txt").stdout.strip()
        listed = f"100644 blob {blob}\tx.txt\n"
        oid = blob if kind == "blob" else subprocess.run(
            ["git", "mktree", "--missing"], cwd=repo, input=listed,
            capture_output=True, text=True, check=True).stdout.strip()
        entry = b"100644 x.txt\0" + bytes.fromhex(blob)
        body = zlib.compress(f"blob {len(text)}\0{text}".encode() if kind == "blob" else
                             b"tree %d\0" % len(entry) + entry)
        path = repo / ".git" / "objects" / oid[:2] / oid[2:]
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(body[:len(body) - 4])  # (a crashed write: the id there, cut short)
        (tmp_path / kind).mkdir()
        got = _overlay_checked(tmp_path / kind, repo)
        assert got["git"] is False, got
        assert f"object {oid[:12]}" in str(got["why"]) and "cut short" in str(got["why"]), got
        path.unlink()


_TWO_COPIES = """
import json, os, sys
from proximity import gitio
repo = gitio.Repo(sys.argv[1])
assert repo.pg is not None  # (libgit2 open, as in the resident service)
wt = repo.worktrees_fast()[0]
head = repo.read_head(repo.common)[0]
base = repo.commit_tree(head)
assert repo.unreadable(base, head) is None
tree = repo.snapshot_overlay(wt, base, ["x.txt"])
why = repo.unreadable(tree, head)
print(json.dumps({"why": why, "read": None if why else len(repo.pg[sys.argv[2]].data)}))
"""


def _store_copy_beside_a_whole_one(tmp_path: Path, linked: bool) -> tuple[Path, str, str]:
    """A repository whose store holds a cut-short loose file of the blob its worktree
    then saves, `git add` having written a whole copy into the repository's objects
    (``linked``: the store's fan-out directory is a link to a directory of the user's);
    the cut file, the blob's id and its text."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    objects = Path(gitio.Repo(str(repo)).store.target())  # (the private store, made)
    text = "".join(f"saved line {i} {i * i}\n" for i in range(5000))
    (repo / "x.txt").write_text(text)
    oid = git(repo, "hash-object", "x.txt").stdout.strip()
    body = zlib.compress(f"blob {len(text)}\0{text}".encode())
    fan = objects / oid[:2]
    if linked:
        (tmp_path / "mine").mkdir()
        fan.symlink_to(tmp_path / "mine")
    else:
        fan.mkdir(exist_ok=True)
    cut = fan / oid[2:]
    cut.write_bytes(body[:len(body) - 4])
    git(repo, "add", "x.txt")  # (a whole copy in the repository's objects)
    return repo, oid, text


def _checked(repo: Path, oid: str) -> dict[str, object]:
    import sys

    done = subprocess.run([sys.executable, "-c", _TWO_COPIES, str(repo), oid],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got: dict[str, object] = json.loads(done.stdout)
    return got


def test_a_damaged_copy_in_the_store_beside_a_whole_one_is_removed(tmp_path):
    """The store holds a cut-short loose file of a blob the worktree then saves, and
    `git add` writes a whole copy into the repository's objects: libgit2 may read either.
    The state's check inflates every copy, and removes the store's (the repository holds
    that object whole): libgit2 then reads the whole one. (A damaged one the repository
    lacks stays, named: test_faults.py.) In a child process: a wedge would hold this
    one."""
    repo, oid, text = _store_copy_beside_a_whole_one(tmp_path, linked=False)
    got = _checked(repo, oid)
    assert got["why"] is None and got["read"] == len(text), got
    assert not (repo / ".git" / "ecm" / "store" / "objects" / oid[:2] / oid[2:]).exists()


def test_a_damaged_file_reached_through_a_link_in_the_store_is_named_never_removed(
        tmp_path):
    """The store's fan-out directory is a link to a directory of the user's, holding a
    file under the blob's name: named, and left where it is."""
    repo, oid, _ = _store_copy_beside_a_whole_one(tmp_path, linked=True)
    got = _checked(repo, oid)
    assert f"object {oid[:12]}" in str(got["why"]) and "cut short" in str(got["why"]), got
    assert (tmp_path / "mine" / oid[2:]).exists()


def test_the_audit_finds_a_new_damaged_file_and_keeps_what_it_found_whole(tmp_path):
    """A directory found whole is not listed again until its mtime moves; a cut-short
    file added to it is then found. What was found whole is kept for the next process,
    and an audit told to distrust it inflates everything again."""
    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    objects = str(repo / ".git" / "objects")
    keep = str(tmp_path / "kept")
    old = time.time() - 3600
    for d in Path(objects).iterdir():
        os.utime(d, (old, old))
    first = loose.Audit()
    assert first.damaged([objects], keep) == [] and first.trusted
    assert loose.Audit().damaged([objects], keep) == []  # (the next process: kept)
    _, path = _loose(repo, "".join(f"line {i}\n" for i in range(5000)))
    whole = path.read_bytes()
    path.unlink()
    path.write_bytes(whole[:len(whole) // 2])  # a bad copy: its directory's mtime moves
    found = first.damaged([objects], keep)
    assert len(found) == 1 and found[0][0] == str(path) and "cut short" in found[0][1]
    path.unlink()
    path.write_bytes(whole)
    os.utime(path.parent, (old, old))  # (mended long ago: trusted, and kept)
    assert first.damaged([objects], keep) == []
    with open(path, "r+b") as fh:  # cut short in place: its directory as it was
        fh.truncate(len(whole) // 2)
    os.utime(path.parent, (old, old))
    trusting = loose.Audit()
    assert trusting.damaged([objects], keep) == []  # (not looked at again: kept whole)
    trusting.distrust()
    assert [p for p, _ in trusting.damaged([objects], keep)] == [str(path)]
    assert loose.Audit().damaged([objects], keep) != []  # (the kept audit replaced)


PY = os.environ.get("PROXIMITY_TEST_PYTHON") or __import__("sys").executable
ENV = {"PROXIMITY_HOOK_TIMEOUT": "60", "PROXIMITY_SERVICE": "1",
       "PROXIMITY_SERVICE_IDLE": "120"}
OLD = time.time() - 3600
BIG = "".join(f"committed line {i} {i * i}\n" for i in range(20000))


def run(cwd: Path, *args: str, timeout: float = 50) -> subprocess.CompletedProcess[str]:
    """A command with the tests' environment; one that outlives ``timeout`` (a wedge the
    hook's own 60 s limit would end) fails the test."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **ENV}, timeout=timeout)


def repo_with_big_file(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A hooked main checkout whose base commit holds big.txt as a loose object, a bare
    origin, and worktrees a and b whose pushes collide on f.txt; the loose file's path."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = init_repo(tmp_path / "main", {"f.txt": lines(20), "big.txt": BIG})
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "HEAD:main")
    assert run(main, PY, "-m", "proximity", "install").returncode == 0
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        git(main, "worktree", "add", "-q", "-b", br, str(wt))
        (wt / "f.txt").write_text(lines(20).replace("line 10\n", f"line 10 by {br}\n"))
        git(wt, "commit", "-qam", f"f.txt by {br}")
    oid = git(main, "rev-parse", "HEAD:big.txt").stdout.strip()
    path = main / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.is_file() and loose.damage(str(path)) is None
    return main, a, b, path


def service_pid(main: Path) -> int:
    return int(json.loads((main / ".git" / "ecm" / "service.json").read_text())["pid"])


def said(out: str, oid: str) -> list[str]:
    return [ln for ln in out.splitlines() if f"git object {oid[:12]} is damaged" in ln]


def test_a_committed_object_cut_short_is_named_and_the_service_keeps_answering(tmp_path):
    """A committed blob's loose file replaced by a cut-short copy while the service runs:
    the commit and the push say which object in one line (the push: the guard is OFF for
    it) and finish; the service still answers and names it; `doctor` fails on it. Mended,
    the next commit is judged as ever."""
    main, a, b, path = repo_with_big_file(tmp_path)
    oid = path.parent.name + path.name
    whole = path.read_bytes()
    assert run(main, PY, "-m", "proximity", "service", "start").returncode == 0
    try:
        path.unlink()  # a bad copy: a new file, half of it
        path.write_bytes(whole[:len(whole) // 2])
        (a / "big.txt").write_text(BIG + "a's live line\n")  # the service diffs it
        (b / "n.txt").write_text("x\n")
        git(b, "add", "n.txt")
        c = run(b, "git", "commit", "-qm", "n")
        assert c.returncode == 0, c.stderr
        assert len(said(c.stderr, oid)) == 1 and "cut short" in c.stderr, c.stderr
        assert "stopped after" not in c.stderr, c.stderr
        p = run(b, "git", "push", "-q", "origin", "feat/b")
        off = [ln for ln in said(p.stderr, oid) if "the push guard is OFF for this push" in ln]
        assert p.returncode == 0 and len(off) == 1, p.stderr
        st = run(main, PY, "-m", "proximity", "service", "status", "--json")
        state = json.loads(st.stdout)
        assert state["running"] and isinstance(state["status"], dict), st.stdout
        assert oid[:12] in (state["status"]["error"] or ""), state["status"]
        doc = run(main, PY, "-m", "proximity", "doctor")
        assert doc.returncode == 1 and any(
            ln.startswith("[fail] objects:") and oid[:12] in ln
            for ln in doc.stdout.splitlines()), doc.stdout
        path.unlink()  # mended: the whole file back (as a fetch of it would)
        path.write_bytes(whole)
        (b / "n.txt").write_text("x\ny\n")
        git(b, "add", "n.txt")
        c = run(b, "git", "commit", "-qm", "n again")
        assert c.returncode == 0 and not said(c.stderr, oid), c.stderr
        assert "warning" not in c.stderr, c.stderr
    finally:
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(service_pid(main), 9)


def test_a_staged_object_cut_short_is_the_live_states_until_a_commit_reaches_it(tmp_path):
    """A blob staged in a and cut short (a bad copy) is a's live state's: no commit
    reaches it, so b's push, which must yield to a, stays blocked, a judged on its
    commits with one line; mended, the line goes. Cut short again and committed in a, a
    commit reaches it: b's push names it (the guard is OFF for it), and the service never
    wedged on it."""
    main, a, b, _ = repo_with_big_file(tmp_path)
    (a / "s.txt").write_text(BIG.replace("committed", "staged"))
    git(a, "add", "s.txt")
    oid = git(a, "rev-parse", ":s.txt").stdout.strip()
    path = main / ".git" / "objects" / oid[:2] / oid[2:]
    whole = path.read_bytes()

    def cut() -> None:
        path.unlink()
        path.write_bytes(whole[:len(whole) // 2])

    cut()
    assert run(main, PY, "-m", "proximity", "service", "start").returncode == 0
    try:
        p = run(b, "git", "push", "-q", "origin", "feat/b")
        assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
        unread = [ln for ln in p.stderr.splitlines() if oid[:12] in ln]
        assert len(unread) == 1 and "judged on its commits" in unread[0], p.stderr
        path.unlink()
        path.write_bytes(whole)  # mended
        p = run(b, "git", "push", "-q", "origin", "feat/b")
        assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
        assert oid[:12] not in p.stderr, p.stderr
        cut()
        c = run(a, "git", "commit", "-qm", "s", "--no-verify")  # (git reads no blob)
        assert c.returncode == 0, c.stderr
        time.sleep(1.2)  # (the service audits before a job at most once a second)
        p = run(b, "git", "push", "-q", "origin", "feat/b")
        assert p.returncode == 0 and len(said(p.stderr, oid)) == 1, p.stderr
        assert "the push guard is OFF for this push" in p.stderr, p.stderr
        assert "was ended" not in p.stderr, p.stderr  # (it never wedged)
        st = json.loads(run(main, PY, "-m", "proximity", "service", "status",
                            "--json").stdout)
        assert st["running"] and isinstance(st["status"], dict), st
    finally:
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(service_pid(main), 9)


def test_a_service_wedged_on_an_object_damaged_in_place_is_ended(tmp_path):
    """A loose file found whole, then cut short in place (its directory unchanged, so the
    service's audit does not look again): the service wedges in libgit2 and stops
    answering. A commit then judges in process, where the audit trusts nothing kept (the
    service went unanswered): it names the object and ends the wedged service, and the
    next `service start` refuses at once, naming it. Mended, and cut short in place once
    more: `proximity service stop` ends the wedged service by signal and says so, and
    the next start, auditing every loose file again, refuses at once."""
    main, a, b, path = repo_with_big_file(tmp_path)
    oid = path.parent.name + path.name
    whole = path.read_bytes()
    path.chmod(0o600)
    pids: list[int] = []

    def wedge(live: str) -> None:
        os.utime(path.parent, (OLD, OLD))  # unchanged for an hour: trusted once audited
        assert run(main, PY, "-m", "proximity", "service", "start").returncode == 0
        pids.append(service_pid(main))
        with open(path, "r+b") as fh:  # in place: the same file, its directory untouched
            fh.truncate(len(whole) // 2)
        os.utime(path.parent, (OLD, OLD))
        (a / "big.txt").write_text(BIG + live)
        wedged(main)

    def refused() -> None:
        again = run(main, PY, "-m", "proximity", "service", "start")
        assert again.returncode == 1 and oid[:12] in again.stderr, again.stdout + again.stderr

    try:
        wedge("a's live line\n")
        (b / "n.txt").write_text("x\n")
        git(b, "add", "n.txt")
        c = run(b, "git", "commit", "-qm", "n")
        assert c.returncode == 0 and len(said(c.stderr, oid)) == 1, c.stderr
        assert "the service, wedged on it, was ended" in c.stderr, c.stderr
        assert "stopped after" not in c.stderr, c.stderr
        end = time.monotonic() + 10
        while not gone(pids[-1]) and time.monotonic() < end:
            time.sleep(0.1)
        assert gone(pids[-1])
        refused()
        with open(path, "r+b") as fh:  # mended in place
            fh.write(whole)
        doc = run(main, PY, "-m", "proximity", "doctor")  # (audits all: found whole, kept)
        assert "[fail] objects" not in doc.stdout, doc.stdout
        wedge("a's live line, again\n")
        stop = run(main, PY, "-m", "proximity", "service", "stop")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert f"pid {pids[-1]}" in stop.stdout and "ended with SIGKILL" in stop.stdout, \
            stop.stdout
        assert gone(pids[-1])
        refused()
    finally:  # (a wedged service ignores SIGTERM: none may outlive the test)
        with contextlib.suppress(OSError, ValueError, KeyError):
            pids.append(service_pid(main))
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


def wedged(main: Path, before: Sequence[int] = ()) -> None:
    """Wait until a service (none of ``before``: its state file rewritten) runs and
    stops answering (it read the damaged object)."""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        st = json.loads(run(main, PY, "-m", "proximity", "service", "status",
                            "--json").stdout)
        with contextlib.suppress(OSError, ValueError, KeyError):
            if st["running"] and st["status"] is None and service_pid(main) not in before:
                return
        time.sleep(0.5)
    raise AssertionError("the service never read the damaged object")


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1] in "ZX"
    except OSError:
        return True
