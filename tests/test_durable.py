"""No event lost or doubled, whatever happens to the service: a real service stopped with
SIGSTOP and killed with SIGKILL under real commits, and what a killed service leaves
behind (a job it claimed and never recorded) recorded once by whoever comes next."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, init_repo, lines

from proximity.commands import service as service_cmd
from proximity.ledger import Ledger
from proximity.service import client
from proximity.service.report import service_state
from proximity.snapshot import journal

PY = os.environ.get("PROXIMITY_TEST_PYTHON") or sys.executable
BASE = lines(20)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A repository with hooks installed and the service on; stopped at teardown."""
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "60")
    main = init_repo(tmp_path / "main", {"f.txt": BASE})
    r = subprocess.run([PY, "-m", "proximity", "install"], cwd=main, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    yield main
    common = str(main / ".git")
    st = service_state(common).get("recorded")
    pid = st.get("pid") if isinstance(st, dict) else None
    if pid:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGCONT)
    if not service_cmd.stop(common, timeout=5) and pid:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)


def commit(where: Path, n: int) -> subprocess.CompletedProcess[str]:
    (where / "f.txt").write_text(BASE + f"commit {n}\n")
    return subprocess.run(["git", "commit", "-qam", f"c{n}"], cwd=where, capture_output=True,
                          text=True, timeout=60)


def settled_heads(main: Path, shas: list[str], timeout: float = 30.0) -> list[str | None]:
    """The heads of the commit events once every one of ``shas`` is in the ledger: a commit
    the running service took through its post-commit note is recorded by its worker a
    moment after git returns (on a loaded machine, seconds after)."""
    end = time.monotonic() + timeout
    while True:
        heads = [h for _s, h, _r in commit_events(main)]
        if all(sha in heads for sha in shas) or time.monotonic() > end:
            return heads
        time.sleep(0.1)


def commit_events(main: Path) -> list[tuple[str, str | None, str | None]]:
    db = sqlite3.connect(main / ".git" / "ecm" / "ledger.sqlite3")
    try:
        return db.execute("SELECT stream, head, rid FROM events WHERE kind='commit' "
                          "ORDER BY seq").fetchall()
    finally:
        db.close()


def recorded_pid(common: str) -> int:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        st = service_state(common).get("status")
        if isinstance(st, dict) and st.get("ready"):
            return int(st["pid"])
        time.sleep(0.1)
    raise AssertionError("no service came up")


def stopped_service(repo: Path) -> tuple[str, int]:
    """The repository's service started, then stopped with SIGSTOP: (common dir, its pid)."""
    common = os.path.realpath(repo / ".git")
    assert service_cmd.start(common)
    old = recorded_pid(common)
    os.kill(old, signal.SIGSTOP)
    return common, old


def assert_killed(pid: int) -> None:
    """The stopped service was killed, not left to hold the lock."""
    with pytest.raises(OSError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_a_stopped_service_costs_one_hook_its_budget_then_is_replaced(repo):
    common, old = stopped_service(repo)
    try:
        t0 = time.monotonic()
        assert commit(repo, 1).returncode == 0
        first = time.monotonic() - t0
        new = recorded_pid(common)  # a new service, started by that hook
        t1 = time.monotonic()
        assert commit(repo, 2).returncode == 0
        second = time.monotonic() - t1
    finally:
        with contextlib.suppress(OSError):
            os.kill(old, signal.SIGCONT)
    assert new != old
    assert_killed(old)
    assert second < first, (first, second)
    shas = [git(repo, "rev-parse", f"HEAD~{2 - n}").stdout.strip() for n in (1, 2)]
    heads = settled_heads(repo, shas)
    for n, sha in zip((1, 2), shas, strict=True):
        assert heads.count(sha) == 1, (n, heads)


def test_doctor_says_a_service_that_does_not_answer_is_not_well(repo, capsys):
    """A service that holds the repository's lock but answers nothing (stopped here with
    SIGSTOP; a wedged one looks the same) was reported "running": doctor says it did not
    answer, and what the next hook does about it."""
    from proximity.main import main

    common, old = stopped_service(repo)
    try:
        main(["doctor", "--json", "-C", str(repo)])
        said = json.loads(capsys.readouterr().out)
    finally:
        os.kill(old, signal.SIGCONT)
        service_cmd.stop(common)
    (svc,) = [c for c in said["checks"] if c["check"] == "service"]
    assert svc["status"] == "warn" and "did not answer" in svc["detail"], svc


def test_a_stopped_service_costs_one_check_its_budget_then_is_replaced(repo):
    """The pre-edit check, not only a hook, replaces a stopped service: one check waits
    its budget and answers in process; the service it leaves is a new one, and the next
    check is answered by it."""
    common, old = stopped_service(repo)
    check = [PY, "-m", "proximity", "check", "--json", "f.txt:3"]
    try:
        first = subprocess.run(check, cwd=repo, capture_output=True, text=True, timeout=120)
        assert first.returncode == 0 and json.loads(first.stdout)["decision"] == "allow"
        new = recorded_pid(common)
    finally:
        with contextlib.suppress(OSError):
            os.kill(old, signal.SIGCONT)
    assert new != old
    assert_killed(old)
    before = service_state(common)["status"]["answered"]["check"]
    again = subprocess.run(check, cwd=repo, capture_output=True, text=True, timeout=120)
    assert again.stdout == first.stdout
    assert service_state(common)["status"]["answered"]["check"] == before + 1


def test_a_job_a_killed_service_claimed_is_recorded_once_by_the_next_hook(repo):
    common = os.path.realpath(repo / ".git")
    monkey_env = {**os.environ, "PROXIMITY_SERVICE": "0"}
    assert subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo,
                          env=monkey_env).returncode == 0
    # what a service killed mid-job leaves: the hook's pending note, the service's claim,
    # no event (its hook had given up waiting and, the claim taken, recorded nothing)
    (repo / "f.txt").write_text(BASE + "lost?\n")
    git(repo, "commit", "-qam", "the one in flight", env={"PROXIMITY_SKIP": "1"})
    sha = git(repo, "rev-parse", "HEAD").stdout.strip()
    rid = client.new_request_id()
    msg = {"op": "hook", "rid": rid, "stage": "snapshot", "agent": "main", "kind": "commit",
           "index": None}
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        journal.note_pending(common, msg)  # type: ignore[arg-type]
    finally:
        os.chdir(cwd)
    assert journal.claim(common, rid)
    note = Path(journal.pending_dir(common)) / rid
    old = time.time() - 60
    os.utime(note, (old, old))
    assert sha not in [h for _s, h, _r in commit_events(repo)]
    # the next hook (in process: no service) records it, under its id
    r = subprocess.run([PY, "-m", "proximity", "hook", "post-checkout", "0", "0", "0"],
                       cwd=repo, capture_output=True, text=True, env=monkey_env)
    assert r.returncode == 0, r.stderr
    assert [h for _s, h, _x in commit_events(repo)].count(sha) == 1
    assert not note.exists()
    # a service that comes back and records it after all (a commit's event is keyed by
    # the commit): still one event
    (key,) = [x for _s, h, x in commit_events(repo) if h == sha]
    led = Ledger(str(Path(common) / "ecm"))
    try:
        led.record("main", "commit", path=str(repo), head=sha, branch="main", snapshot=None,
                   tree=None, files={}, rid=key)
    finally:
        led.close()
    assert [h for _s, h, _x in commit_events(repo)].count(sha) == 1


def replay_by_next_hook(repo: Path, common: str) -> None:
    """What is still pending is taken by the next hook once it is older than the replay
    age (its hook gave up long ago): made that old here rather than waited for, then one
    hook runs in process."""
    old = time.time() - 60
    for d, prefix in ((Path(journal.pending_dir(common)), ""),
                      (Path(common) / "ecm" / "cookies", "post-commit-")):
        for note in d.glob(f"{prefix}*") if d.is_dir() else ():
            os.utime(note, (old, old))
    r = subprocess.run([PY, "-m", "proximity", "hook", "post-checkout", "0", "0", "0"],
                       cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "PROXIMITY_SERVICE": "0"})
    assert r.returncode == 0, r.stderr


def test_a_service_killed_while_commits_run_loses_and_doubles_nothing(repo):
    common = os.path.realpath(repo / ".git")
    made: list[str] = []
    for n in range(12):
        if n % 3 == 0:
            st = service_state(common).get("recorded")
            if isinstance(st, dict):
                with contextlib.suppress(OSError):
                    os.kill(int(st["pid"]), signal.SIGKILL)
        assert commit(repo, n).returncode == 0
        made.append(git(repo, "rev-parse", "HEAD").stdout.strip())
    replay_by_next_hook(repo, common)
    heads = [h for _s, h, _x in commit_events(repo)]
    assert sorted(heads) == sorted(set(heads))  # none doubled
    assert [sha for sha in made if sha not in heads] == []  # none lost
    assert not os.listdir(journal.pending_dir(common))
    assert not [n for n in os.listdir(Path(common) / "ecm" / "cookies")
                if n.startswith("post-commit-")]


def test_a_commit_whose_worktree_is_removed_at_once_keeps_its_event(repo):
    """A worktree commits and is removed before anyone takes the note its post-commit hook
    left (a busy or killed service): the note names the commit, so the next service, or
    the next hook, records it as history, once, though the worktree is gone."""
    common = os.path.realpath(repo / ".git")
    shas = []
    cookies = Path(common) / "ecm" / "cookies"
    cookies.mkdir(parents=True, exist_ok=True)
    for i in range(4):
        wt = repo.parent / f"w{i}"
        git(repo, "worktree", "add", "-q", "-b", f"w{i}", str(wt), "main")
        (wt / "f.txt").write_text(BASE + f"{i}\n")
        git(wt, "commit", "-qam", f"c{i}", env={"PROXIMITY_SKIP": "1"})
        shas.append(git(wt, "rev-parse", "HEAD").stdout.strip())
        git(repo, "worktree", "remove", "--force", str(wt))
        # the note the hook script leaves (hooks/proximity-hook): worktree, pid, commit
        (cookies / f"post-commit-w{i}-{4000 + i}-{shas[-1]}").mkdir()
    # two are taken by a service that starts, two by the next hook in process
    for note in sorted(cookies.glob("post-commit-w[23]-*")):
        note.rename(note.with_name("held-" + note.name))
    assert service_cmd.start(common)
    recorded_pid(common)
    service_cmd.stop(common)
    for note in sorted(cookies.glob("held-*")):
        note.rename(note.with_name(note.name[len("held-"):]))
    replay_by_next_hook(repo, common)
    heads = [h for _s, h, _x in commit_events(repo)]
    assert [sha for sha in shas if sha not in heads] == [], "commits without an event"
    assert all(heads.count(sha) == 1 for sha in shas)
    assert not list(cookies.glob("post-commit-*"))


def test_a_service_stopped_right_after_commits_has_recorded_them_all(repo):
    """`service stop` right after a burst of commits whose notes the service has not taken
    yet (queued behind the stop, or not yet seen by its watcher): every commit is in the
    ledger once the stop returns, with no hook run after it."""
    common = os.path.realpath(repo / ".git")
    assert service_cmd.start(common)
    recorded_pid(common)
    made = []
    for n in range(8):
        (repo / "f.txt").write_text(BASE + f"commit {n}\n")
        git(repo, "commit", "-qam", f"c{n}", env={"PROXIMITY_SKIP": "1"})
        made.append(git(repo, "rev-parse", "HEAD").stdout.strip())
    cookies = Path(common) / "ecm" / "cookies"
    cookies.mkdir(parents=True, exist_ok=True)
    # the notes their post-commit hooks leave (hooks/proximity-hook), the last just now
    for n, sha in enumerate(made):
        (cookies / f"post-commit--{5000 + n}-{sha}").mkdir()
    assert service_cmd.stop(common, timeout=30)
    heads = [h for _s, h, _x in commit_events(repo)]
    assert sorted(heads) == sorted(set(heads))
    assert [sha for sha in made if sha not in heads] == []
    assert not [n for n in os.listdir(cookies) if n.startswith("post-commit-")]


def test_a_post_commit_note_naming_no_commit_here_is_dropped(tmp_path: Path) -> None:
    """A note in the cookies directory naming a commit this repository does not have (a
    stray or forged one): the next hook drops it and goes on. libgit2's KeyError for the
    unknown object made every in-process hook stop at "internal error … hook skipped",
    and the note stayed."""
    main = init_repo(tmp_path / "main", {"f.txt": BASE})
    r = subprocess.run([PY, "-m", "proximity", "install"], cwd=main, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    cookies = main / ".git" / "ecm" / "cookies"
    cookies.mkdir(parents=True, exist_ok=True)
    note = cookies / ("post-commit--123-" + "f" * 40)
    note.mkdir()
    old = time.time() - 3600
    os.utime(note, (old, old))
    r = subprocess.run([PY, "-m", "proximity", "hook", "post-checkout", "0", "0", "0"],
                       cwd=main, capture_output=True, text=True,
                       env={**os.environ, "PROXIMITY_SERVICE": "0"})
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    assert not note.exists()


def test_a_note_no_job_could_take_is_taken_again_soon_then_left_to_the_replay(
        tmp_path: Path) -> None:
    """A post-commit note a job could not take (the worktree listing in flux while
    worktrees come and go, a read that failed, a job that failed before its take) is
    taken again after short, growing waits, all before the replay of old notes would
    find it; the last commit of a burst has no later job to take its note. Past the last
    wait it stays on disk for the replay alone, not read again by every request."""
    from proximity.service.notes import RETRIES, PostNotes
    from proximity.service.state import ServiceState
    from proximity.snapshot import recorder

    jobs: list[tuple[str, int]] = []
    notes = PostNotes(ServiceState(str(tmp_path), 60.0),
                      lambda job, prio: jobs.append((job.op, prio)))  # (the worker's)
    assert not notes.due(100.0)  # none left
    notes.names = ["post-commit-a-1-" + "a" * 40]
    assert not notes.due(100.0)  # queued, nothing failed: the job that is coming takes it
    notes.failed_at = t = 100.0  # a take left it (or its job failed)
    for wait in RETRIES:
        assert not notes.due(t + wait - 0.01)
        t += wait
        assert notes.due(t)
    assert not notes.due(t + 3600.0)  # the replay's, from now on
    assert sum(RETRIES) < recorder.PENDING_AGE
    notes.names = []  # taken
    assert not notes.due(t + 3600.0) and notes.retries == 0 and not notes.failed_at
    assert jobs == []  # (due only says so: the worker puts the job)
