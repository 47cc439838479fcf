"""Every proximity stage under prek and lefthook, the real tools (the test extras
install both; pre-commit and plain hooks are in test_hooks.py), with the same scenario:
real worktrees, real commits, real pushes to a bare remote."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from conftest import git
from test_hooks import (
    commit_styles,
    framework_config,
    hook_repo,
    make_repo,
    post_stages,
    run,
    scenario,
)

from proximity.hooks import hosts

ROOT = Path(__file__).resolve().parent.parent
BIN = os.path.dirname(sys.executable)  # the test venv: prek, uv, lefthook, proximity


def tool(name: str) -> str:
    path = shutil.which(name, path=BIN) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed: `pip install -e '.[test]'` (tests/run.sh) "
                    f"installs it from PyPI")
    return path


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hosts find `proximity` (lefthook) and their own binaries on PATH, as a user has them."""
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))


def exercise(main: Path, tmp_path: Path, host: str) -> str:
    """The host installed its hooks: every stage, post stages and commit styles through
    it, then `doctor` says so. Returns doctor's output."""
    assert hosts.script_host((main / ".git" / "hooks" / "pre-push").read_text()) == host
    scenario(main, tmp_path)
    post_stages(main, tmp_path)
    commit_styles(main, tmp_path)
    d = run(main, sys.executable, "-m", "proximity", "doctor")
    assert f"{host} hooks: " in d.stdout and "not installed" not in d.stdout, d.stdout
    return d.stdout


@pytest.mark.slow
def test_prek_end_to_end(tmp_path, tmp_path_factory, monkeypatch, on_path):
    prek = tool("prek")
    if not os.path.exists(os.path.join(os.path.dirname(prek), "uv")):
        pytest.skip("no uv beside prek (the test extras install it): prek would download one")
    home = tmp_path_factory.mktemp("prek-home")
    monkeypatch.setenv("PREK_HOME", str(home))
    main, _ = make_repo(tmp_path, framework_config(*hook_repo(tmp_path_factory)))
    r = run(main, prek, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(main, prek, "install-hooks")
    assert r.returncode == 0, r.stdout + r.stderr
    exercise(main, tmp_path, "prek")
    assert not (home / "tools" / "uv").exists()  # it used the uv beside it: none downloaded


@pytest.mark.slow
def test_lefthook_end_to_end(tmp_path, on_path):
    lefthook = tool("lefthook")
    main, _ = make_repo(tmp_path, hosts.lefthook_block(), "lefthook.yml")
    r = run(main, lefthook, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    doctor = exercise(main, tmp_path, "lefthook")
    assert "[  ok] hook command: lefthook runs `proximity` from PATH" in doctor, doctor


def test_lefthook_without_proximity_on_path_warns_and_git_goes_on(tmp_path, monkeypatch):
    lefthook = tool("lefthook")
    main, _ = make_repo(tmp_path, hosts.lefthook_block(), "lefthook.yml")
    assert run(main, lefthook, "install").returncode == 0
    # a PATH with git and sh but no proximity (lefthook itself is found by absolute path)
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in ("git", "sh"):
        os.symlink(shutil.which(name) or name, bare / name)
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv("LEFTHOOK_BIN", lefthook)
    (main / "f.txt").write_text("changed\n")
    r = git(main, "commit", "-qam", "no proximity here", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the proximity pre-commit hook failed (exit 127); git goes on" in r.stdout + r.stderr
    monkeypatch.setenv("PROXIMITY_SKIP", "1")  # skipped in the shell: not even a warning
    (main / "f.txt").write_text("changed again\n")
    r = git(main, "commit", "-qam", "skipped", check=False)
    assert r.returncode == 0 and "warning" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_prek_post_merge_is_a_merge(tmp_path, monkeypatch):
    """prek marks a post-merge only for a squash; HEAD's reflog tells the rest."""
    from proximity.hooks.inputs import kind_of as _kind

    main, _ = make_repo(tmp_path)
    git(main, "switch", "-q", "-c", "side")
    (main / "f.txt").write_text("side\n")
    git(main, "commit", "-qam", "side")
    git(main, "switch", "-q", "main")
    monkeypatch.chdir(main)
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert _kind("snapshot", []) == "commit"  # the newest entry is the switch back
    git(main, "merge", "-q", "--ff-only", "side")
    assert _kind("snapshot", []) == "merge"
    monkeypatch.setenv("PRE_COMMIT_REWRITE_COMMAND", "amend")
    assert _kind("snapshot", []) == "rewrite"
    monkeypatch.delenv("PRE_COMMIT_REWRITE_COMMAND")
    (main / "f.txt").write_text("after\n")
    git(main, "commit", "-qam", "after")
    assert _kind("snapshot", []) == "commit"
    monkeypatch.setenv("PRE_COMMIT_SQUASH_MERGE", "1")
    assert _kind("snapshot", []) == "merge"


def test_install_lefthook_writes_appends_or_prints(tmp_path, capsys):
    from proximity.main import main as cli

    main, _ = make_repo(tmp_path)
    assert cli(["install", "--lefthook", "-C", str(main)]) == 0
    assert (main / "lefthook.yml").read_text() == hosts.lefthook_block()
    assert cli(["install", "--lefthook", "-C", str(main)]) == 0  # idempotent
    assert "already runs proximity" in capsys.readouterr().out
    # a config with other hooks: proximity's are appended
    (main / "lefthook.yml").write_text("commit-msg:\n  commands:\n    lint:\n      run: true")
    assert cli(["install", "--lefthook", "-C", str(main)]) == 0
    text = (main / "lefthook.yml").read_text()
    assert text.startswith("commit-msg:\n") and text.endswith(hosts.lefthook_block())
    # one that already configures pre-commit: left alone, the block printed to merge
    mine = "pre-commit:\n  commands:\n    lint:\n      run: true\n"
    (main / "lefthook.yml").write_text(mine)
    capsys.readouterr()
    assert cli(["install", "--lefthook", "-C", str(main)]) == 0
    out, err = capsys.readouterr()
    assert (main / "lefthook.yml").read_text() == mine
    assert out == hosts.lefthook_block() and "already configures pre-commit" in err


def test_one_wrapper_for_every_host():
    """The pre-commit ids, lefthook's block and the hosts page run the same shell wrapper."""
    import re

    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entries = re.findall(r"entry: >-\n\s+(.*)\n", text)
    assert entries == [hosts.entry(s) for s in ("snapshot", "warn", "guard")]
    page = (ROOT / "docs" / "hosts.md").read_text()
    assert hosts.lefthook_block() in page



def test_doctor_says_when_a_branch_hook_config_drops_the_guard(tmp_path, on_path):
    lefthook = tool("lefthook")
    main, _ = make_repo(tmp_path, hosts.lefthook_block(), "lefthook.yml")
    assert run(main, lefthook, "install").returncode == 0
    d = run(main, sys.executable, "-m", "proximity", "doctor")
    assert "[  ok] host config: lefthook.yml runs proximity's guard" in d.stdout, d.stdout
    wt = tmp_path / "evil"
    git(main, "worktree", "add", "-q", "-b", "evil", str(wt))
    text = (wt / "lefthook.yml").read_text()
    (wt / "lefthook.yml").write_text(text + "\n# a harmless-looking edit\n")
    d = run(wt, sys.executable, "-m", "proximity", "doctor")
    assert "[warn] host config: this worktree's lefthook.yml differs" in d.stdout, d.stdout
    pre_push = text.index("pre-push:")
    rest = text[pre_push:]
    nxt = min((rest.index(f"\n{h}:") for h in hosts.LEFTHOOK_STAGES if f"\n{h}:" in rest),
              default=len(rest))
    (wt / "lefthook.yml").write_text(text[:pre_push] + rest[nxt + 1:])
    d = run(wt, sys.executable, "-m", "proximity", "doctor")
    assert "[fail] host config: this worktree's lefthook.yml does not run" in d.stdout, d.stdout
