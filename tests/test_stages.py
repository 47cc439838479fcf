"""One stage runner for both hook paths: the resident service and the in-process hook record,
keep retention and deliver the inbox by the same function, so they cannot drift apart.

Real repositories, a real ledger held busy by a real process.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import HOLD_LEDGER, git, init_repo, stop

from proximity import ledger
from proximity.snapshot import recorder

PY = sys.executable


@contextmanager
def busy(common: Path, wait: float = 0.3) -> Iterator[None]:
    """The ledger's write lock held by another process, and this process's wait for it
    bounded by ``wait`` seconds (what a hook's budget does)."""
    holder = subprocess.Popen([PY, "-c", HOLD_LEDGER, str(common / "ecm" / "ledger.sqlite3"),
                               "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        ledger.wait_budget(wait)
        yield
    finally:
        ledger.wait_budget(None)
        stop(holder)


def commits_of(common: Path, stream: str) -> list[tuple[int, str]]:
    db = sqlite3.connect(common / "ecm" / "ledger.sqlite3")
    try:
        return db.execute("SELECT seq, kind FROM events WHERE stream=? ORDER BY seq",
                          (stream,)).fetchall()
    finally:
        db.close()


class Hooks:
    """A repository whose snapshot hook runs by one of the two paths: ``service`` (the
    resident service's warm airspace, as its worker thread runs a hook request) or
    ``here`` (the in-process hook's live airspace)."""

    def __init__(self, repo: Path, path: str) -> None:
        from proximity.service.warm import WarmAirspace
        from proximity.snapshot import workspace

        self.repo, self.path, self.n = repo, path, 0
        self.common = repo / ".git"
        self.air = WarmAirspace(str(self.common)) if path == "service" else None
        self.ctx = workspace.open_context(str(repo), check_git=False, strict=False) \
            if path == "here" else None

    def snapshot(self) -> list[str]:
        """Change a file and run the snapshot stage: the lines it prints."""
        from proximity.hooks import stages

        self.n += 1
        (self.repo / "f.txt").write_text(f"edit {self.n}\n")
        msg = {"op": "hook", "stage": "snapshot", "agent": "main", "kind": "manual",
               "index": None, "rid": f"{self.n:024x}"}
        if self.air is not None:
            self.air.snapshots.dirty.add("main")
            answer = self.air.hook(msg, True)
            assert "fallback" not in answer, answer
            return list(answer.get("lines") or [])
        assert self.ctx is not None
        done = stages.run_stage(self.ctx, stages.Stage.of(msg),
                                stages.LiveAirspace(self.ctx))
        assert done.recorded
        return list(done.lines)

    def close(self) -> None:
        (self.air.ctx if self.air is not None else self.ctx).close()


@pytest.fixture(params=["service", "here"])
def hooks(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hooks]:
    repo = init_repo(tmp_path / "r", {"f.txt": "x\n"})
    subprocess.run([PY, "-m", "proximity", "snapshot"], cwd=repo, check=True,
                   capture_output=True)  # the ledger, with one event (seq 1)
    h = Hooks(repo, request.param)
    try:
        yield h
    finally:
        h.close()


def test_an_event_the_busy_ledger_queued_runs_no_retention(hooks):
    """An event that finds the ledger busy is queued in the spool with seq 0, and
    ``0 % GC_EVERY == 0``: the service took that for the GC_EVERY-th event and ran the
    retention on the ledger it had just found busy, so its queued snapshot failed there
    (LedgerBusy) instead of saying it was queued; the in-process hook guarded against it.
    Both paths now run one stage runner: the queued event says so, and is recorded once by
    the next writer."""
    with busy(hooks.common):
        assert hooks.snapshot() == [recorder.QUEUED]
    assert (hooks.common / "ecm" / "spool.jsonl").exists()
    assert hooks.snapshot() == []  # the next writer replays it, before its own
    assert [k for _, k in commits_of(hooks.common, "main")] == ["manual"] * 3
    assert not (hooks.common / "ecm" / "spool.jsonl").exists()
    assert os.environ.get("PROXIMITY_SERVICE") == "0"  # (no service process started)


def test_both_paths_compact_the_ledger_at_the_same_events(hooks, monkeypatch):
    """Retention runs with every GC_EVERY-th event recorded, whichever path records it,
    and keeps ``retain_events`` per worktree (the committed policy's)."""
    monkeypatch.setattr(recorder, "GC_EVERY", 4)
    (hooks.repo / ".proximity.toml").write_text("retain_events = 2\n")
    git(hooks.repo, "add", ".proximity.toml")
    git(hooks.repo, "commit", "-qm", "policy")
    if hooks.air is not None:
        hooks.air.reload_policy(aged=False)
    else:
        from proximity.snapshot import workspace

        hooks.ctx.close()
        hooks.ctx = workspace.open_context(str(hooks.repo), check_git=False, strict=False)
    assert hooks.snapshot() == [] and hooks.snapshot() == []  # seq 2, 3
    assert [s for s, _ in commits_of(hooks.common, "main")] == [1, 2, 3]
    hooks.snapshot()  # seq 4: compacted to the last two
    assert [s for s, _ in commits_of(hooks.common, "main")] == [3, 4]
    hooks.snapshot()
    assert [s for s, _ in commits_of(hooks.common, "main")] == [3, 4, 5]


def test_one_parser_reads_a_hook_call_for_the_thin_path_and_the_command_line(capsys):
    """`proximity hook NAME ARGS…` is read by one parser, whose call the thin path hands on
    as one immutable value; a name that is no hook is left to the command line's parser,
    which accepts exactly the same names and says what is wrong with any other."""
    from proximity.hooks.inputs import HOOK_NAMES, parse_hook
    from proximity.main import build_parser, main

    call = parse_hook(["pre-push", "origin", "/srv/r.git"])
    assert call is not None and call.stage == "guard" and call.args == ("origin", "/srv/r.git")
    assert call.stdin is None and call.request is None and call.record  # nothing asked yet
    with pytest.raises(AttributeError):
        call.stdin = "refs/heads/x 1 refs/heads/x 0"
    assert [parse_hook([n]).stage for n in ("post-commit", "pre-commit", "snapshot")] == \
        ["snapshot", "warn", "snapshot"]
    assert parse_hook(["bogus"]) is None and parse_hook([]) is None
    assert all(build_parser().parse_args(["hook", n]).stage == n for n in HOOK_NAMES)
    with pytest.raises(SystemExit) as stopped:
        main(["hook", "bogus"])
    assert stopped.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_an_in_process_hooks_budget_for_a_busy_ledger_ends_with_it(tmp_path: Path) -> None:
    """A hook run in process bounds its waits on a busy ledger (about 2 s, so git is never
    held); a process that goes on after it (a test's, an embedding tool's) waits again as
    any command does. Found as an intermittent failure: the budget outlived the hook, and a
    later ledger opened in the same process gave up at once on a lock held for a moment."""
    from proximity.main import main

    repo = tmp_path / "repo"
    init_repo(repo, {"a.txt": "a\n"})
    common = repo / ".git"
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        assert main(["hook", "post-commit"]) == 0
    finally:
        os.chdir(cwd)
    holder = subprocess.Popen([PY, "-c", HOLD_LEDGER, str(common / "ecm" / "ledger.sqlite3"),
                               "3.0"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        led = ledger.Ledger(str(common / "ecm"), create=False)
        try:
            led.db.execute("BEGIN IMMEDIATE")  # waits out the lock
            led.db.execute("COMMIT")
        finally:
            led.close()
    finally:
        stop(holder)
