"""Every PROXIMITY_* environment variable is checked where it is read: out of its range it
is the default, said in one line; and every pre-push that did not judge says the guard is
OFF and why.

Real repositories with plain hooks, a real bare remote, real commits and pushes, a real
service where the variable is the service's.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import git
from test_faults import _conflicting_pair, commit, events, hooked_repo, run

PY = sys.executable


def warnings_about(stderr: str, name: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(f"proximity: warning: {name}=")]


@pytest.mark.parametrize("value", ["0.001", "0", "-1", "nan", "1e9", "soon"])
def test_a_git_time_limit_out_of_range_is_the_default_and_the_push_is_judged(tmp_path,
                                                                            value):
    """0.001 s stopped every git call at once: the hook was skipped, the guard off."""
    main, _ = hooked_repo(tmp_path)
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b", env={"PROXIMITY_GIT_TIMEOUT": value})
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    said = warnings_about(p.stderr, "PROXIMITY_GIT_TIMEOUT")
    assert len(said) == 1 and "from 1 to 86400" in said[0], p.stderr


def test_a_git_time_limit_out_of_range_is_said_when_the_service_judges_too(tmp_path):
    """With the service answering, the hook's own process runs no git and read no limit:
    a value out of range went without a word."""
    from proximity.commands import service as service_cmd

    main, _ = hooked_repo(tmp_path)
    common = os.path.realpath(main / ".git")
    env = {"PROXIMITY_SERVICE": "1"}
    try:
        r = run(main, PY, "-m", "proximity", "service", "start", "--json", env=env)
        assert r.returncode == 0, r.stderr
        _a, b = _conflicting_pair(main, tmp_path)
        p = run(b, "git", "push", "-q", "origin", "feat/b",
                env={**env, "PROXIMITY_GIT_TIMEOUT": "nan"})
        assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
        said = warnings_about(p.stderr, "PROXIMITY_GIT_TIMEOUT")
        assert len(said) == 1 and "from 1 to 86400" in said[0], p.stderr
        status = json.loads(run(main, PY, "-m", "proximity", "service", "status", "--json",
                                env=env).stdout)
        answered = status["status"]["answered"]  # (the service judged it)
        assert answered.get("hook", 0) >= 1 and not answered.get("hook_fallback"), answered
    finally:
        service_cmd.stop(common, timeout=10.0)


@pytest.mark.parametrize("value", ["yes", "true", "2"])
def test_skip_and_allow_other_than_one_or_zero_keep_the_guard_and_say_so(tmp_path, value):
    main, _ = hooked_repo(tmp_path)
    r = commit(main, env={"PROXIMITY_SKIP": value})
    assert r.returncode == 0, r.stderr
    said = warnings_about(r.stderr, "PROXIMITY_SKIP")
    # pre-commit and post-commit, one line each; both ran (the commit is recorded)
    assert len(said) == 2 and all("proximity runs" in s for s in said), r.stderr
    assert any(e["kind"] == "commit" for e in events(main))
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b", env={"PROXIMITY_ALLOW": value})
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    said = warnings_about(p.stderr, "PROXIMITY_ALLOW")
    assert len(said) == 1 and "stays blocked" in said[0], p.stderr


def test_a_service_setting_other_than_one_or_zero_is_on_and_its_idle_time_bounded(tmp_path):
    from proximity.commands import service as service_cmd

    main, _ = hooked_repo(tmp_path)
    common = os.path.realpath(main / ".git")
    env = {"PROXIMITY_SERVICE": "yes", "PROXIMITY_SERVICE_IDLE": "-5"}
    try:
        r = run(main, PY, "-m", "proximity", "service", "start", "--json", env=env)
        assert r.returncode == 0, r.stderr
        said = [ln for ln in r.stderr.splitlines() if ln.startswith("proximity: warning:")]
        assert len(said) == 2, said
        assert "PROXIMITY_SERVICE=yes is not 1 or 0" in said[0] and "is used" in said[0]
        assert "PROXIMITY_SERVICE_IDLE=-5 is not a number of seconds" in said[1]
        assert json.loads(r.stdout)["status"]["idle_timeout"] == 900.0
    finally:
        service_cmd.stop(common, timeout=10.0)


@pytest.mark.parametrize("value", ["../x", "a b", "x" * 65, "-lead"])
def test_a_machine_id_that_is_no_ref_name_is_not_used(tmp_path, value):
    main, _ = hooked_repo(tmp_path)
    r = run(main, PY, "-m", "proximity", "sync", "--dry-run", "--json",
            env={"PROXIMITY_MACHINE_ID": value})
    assert r.returncode == 0, r.stderr
    machine = json.loads(r.stdout)["machine"]
    assert machine and machine == (main / ".git" / "ecm" / "machine-id").read_text().strip()
    said = warnings_about(r.stderr, "PROXIMITY_MACHINE_ID")
    assert len(said) == 1 and "generated machine id" in said[0], r.stderr


def test_a_pre_push_that_cannot_start_judging_says_the_guard_is_off(tmp_path):
    """The policy cannot be read (its committed blob is corrupt): before, "(hook skipped;
    git goes on)"."""
    main, _ = hooked_repo(tmp_path)
    _a, b = _conflicting_pair(main, tmp_path)
    (main / ".proximity.toml").write_text("near_lines = 3\n" + "# pad\n" * 2000)
    git(main, "add", ".proximity.toml")
    git(main, "commit", "-qm", "a config", "--no-verify")
    oid = git(main, "rev-parse", "HEAD:.proximity.toml").stdout.strip()
    loose = main / ".git" / "objects" / oid[:2] / oid[2:]
    loose.chmod(0o644)
    loose.write_bytes(loose.read_bytes()[: loose.stat().st_size // 2])
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode == 0, p.stderr
    said = p.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(
        "proximity: the push guard is OFF for this push: git ") and oid in said[0], said


def test_a_sibling_whose_state_cannot_be_read_is_named_by_the_guard(tmp_path):
    """A sibling whose snapshot cannot be taken (here a clean filter that never returns,
    as on a stuck network file system) was a pair judged clear: the push went through
    without a word. It is judged on its commits (which collide here: the push stays
    blocked), with one line saying why its live changes were not read."""
    main, _ = hooked_repo(tmp_path)
    a, b = _conflicting_pair(main, tmp_path)
    git(main, "config", "filter.hang.clean", "sleep 61.2346")
    (a / ".gitattributes").write_text("*.hang filter=hang\n")
    (a / "x.hang").write_text("x\n")
    try:
        p = run(b, "git", "push", "-q", "origin", "feat/b",
                env={"PROXIMITY_GIT_TIMEOUT": "1"})
    finally:
        run(main, "pkill", "-f", "sleep 61.2346")
    assert p.returncode != 0 and "RESOLUTION ADVISORY with worktree 'wt-a'" in p.stderr, \
        p.stderr
    said = [ln for ln in p.stderr.splitlines() if "could not be read" in ln]
    assert len(said) == 1 and "live changes of 'wt-a'" in said[0], p.stderr
    assert "took longer than 1 s" in said[0] and "judged on its commits" in said[0], said


def test_the_knobs_page_lists_every_variable_the_code_reads():
    import re

    root = Path(__file__).resolve().parents[1]
    code = "".join(p.read_text() for p in (root / "proximity").rglob("*.py"))
    code += (root / "proximity" / "assets" / "proximity-hook").read_text()
    read = set(re.findall(r"PROXIMITY_[A-Z_]+", code))
    internal = {"PROXIMITY_BLOCKED_EXIT", "PROXIMITY_DONE_EXIT", "PROXIMITY_HOOK_ROOT",
                "PROXIMITY_HOOK_SCRIPT",
                "PROXIMITY_SYNC_COOKIE", "PROXIMITY_ROOT"}  # set by the hook script itself
    page = (root / "docs" / "configuration.md").read_text()
    missing = sorted(v for v in read - internal if f"`{v}" not in page)
    assert missing == [], missing
