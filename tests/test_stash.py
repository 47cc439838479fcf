"""A hook host's stash: the pre-commit framework (and prek) take the committing worktree's
unstaged edits out while every hook runs; proximity judges and records the worktree as its
user has it, never as reverted. The real pre-commit framework, real worktrees, the ledger."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, lines, live_objects

from proximity import gitio, layout

BIN = os.path.dirname(sys.executable)
BASE = lines(40)

# proximity's own manifest entries, run from this test's interpreter (language: system)
# instead of an environment the framework would build: the same hooks, no install
ENTRY = ("sh -c '[ \"${PROXIMITY_SKIP:-}\" = 1 ] && exit 0; PROXIMITY_BLOCKED_EXIT=99 "
         "proximity hook \"$0\" \"$@\"; rc=$?; [ $rc = 0 ] && exit 0; [ $rc = 99 ] && exit 1; "
         "exit 0' ")
CONFIG = f"""default_install_hook_types: [pre-commit, post-commit, pre-push]
repos:
- repo: local
  hooks:
  - id: proximity-guard
    name: proximity guard
    entry: {json.dumps(ENTRY + "guard")}
    language: system
    pass_filenames: false
    always_run: true
    verbose: true
    stages: [pre-push]
  - id: proximity-warn
    name: proximity advisories
    entry: {json.dumps(ENTRY + "warn")}
    language: system
    pass_filenames: false
    always_run: true
    verbose: true
    stages: [pre-commit]
  - id: proximity-snapshot
    name: proximity snapshot
    entry: {json.dumps(ENTRY + "snapshot")}
    language: system
    pass_filenames: false
    always_run: true
    stages: [post-commit]
"""


def run(cwd: Path, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def ledger(where: Path, stream: str) -> list[dict]:  # type: ignore[type-arg]
    out = run(where, sys.executable, "-m", "proximity", "ledger", "--json", "-n", "200")
    return [e for e in json.loads(out.stdout)["events"] if e["stream"] == stream]


@pytest.fixture(autouse=True)
def no_service_left(tmp_path: Path) -> Iterator[None]:
    """Every resident service a test's hooks started here is stopped after it."""
    yield
    from test_thin import stop

    for git_dir in tmp_path.glob("*/.git"):
        stop(os.path.realpath(git_dir))


def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> Path:
    """A repository whose hooks ``host`` (pre-commit or prek) runs."""
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pc-home"))
    monkeypatch.setenv("PREK_HOME", str(tmp_path / "prek-home"))
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "f.txt").write_text(BASE)
    (main / "other.txt").write_text(lines(10, "other"))
    (main / ".pre-commit-config.yaml").write_text(CONFIG)
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "base")
    cmd = [sys.executable, "-m", "pre_commit"] if host == "pre-commit" else [
        shutil.which("prek", path=BIN) or pytest.skip("prek is not installed (tests/run.sh)")]
    r = run(main, *cmd, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    return main


@pytest.mark.parametrize(("host", "service"),
                         [("pre-commit", "1"), ("pre-commit", "0"), ("prek", "1")])
def test_unstaged_work_stashed_by_the_host_is_judged_and_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, service: str) -> None:
    """b commits other.txt while its edit of f.txt line 20 -- the line a committed -- is
    unstaged: the framework takes that edit out while the hooks run. The commit still gets
    the advisory on f.txt, the recorded events hold the edit (not a revert), and the
    host puts it back untouched. pre-commit with the service and in process; prek."""
    monkeypatch.setenv("PROXIMITY_SERVICE", service)
    framework = installed(tmp_path, monkeypatch, host)
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        assert git(framework, "worktree", "add", "-q", "-b", br, str(wt)).returncode == 0
    (a / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by a\n"))
    ra = run(a, "git", "commit", "-qam", "a edits line 20")
    assert ra.returncode == 0, ra.stdout + ra.stderr
    mine = BASE.replace("line 20\n", "line 20 by b\n")
    (b / "f.txt").write_text(mine)
    (b / "other.txt").write_text(lines(10, "other") + "more\n")
    git(b, "add", "other.txt")
    rb = run(b, "git", "commit", "-qm", "b: other.txt only")
    out = rb.stdout + rb.stderr
    assert rb.returncode == 0, out
    # the host did take the edit out while the hooks ran
    assert "Stashing unstaged files" in out or "Unstaged changes detected" in out, out
    assert "RESOLUTION ADVISORY" in out and "f.txt" in out, out
    assert (b / "f.txt").read_text() == mine  # put back by the framework, untouched
    assert git(b, "diff", "--name-only").stdout.split() == ["f.txt"]
    events = ledger(framework, "wt-b")
    kinds = [e["kind"] for e in events]
    assert "pre-commit" in kinds and "commit" in kinds, kinds
    for e in events:  # every state b's hooks recorded holds the unstaged edit
        if e["kind"] == "pre-commit":
            assert "f.txt" in e["files"], e  # changed since HEAD: not reverted
        if e["kind"] in ("pre-commit", "commit"):
            tree = e["tree"]
            env = live_objects(framework)
            blob = git(framework, "rev-parse", f"{tree}:f.txt", env=env).stdout.strip()
            assert git(framework, "cat-file", "blob", blob, env=env).stdout == mine


# a hook host's post-commit stage as pre-commit's staged_files_only runs it: the unstaged
# edits saved as a patch named for this process, taken out, the hook run, then put back by
# `git apply`, which removes each file before it writes it again. Here f.txt stays removed
# until the commit's event is in the ledger (at most 20 s), then is written again with the
# edit: a record the service reads after the hook returned is read in that window.
HOST = """#!/bin/sh
patch="$PRE_COMMIT_HOME/patch$(date +%s)-$$"
git diff-index --binary --no-color --no-ext-diff "$(git write-tree)" -- > "$patch"
git checkout -- .
PRE_COMMIT=1 proximity hook snapshot
rm f.txt
"$PY" -c "$AWAIT" "$LEDGER" "$(git rev-parse HEAD)"
git checkout -- f.txt && git apply --whitespace=nowarn "$patch"
"""
AWAIT = """import sqlite3, sys, time
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=1)
        if db.execute("select 1 from events where kind = 'commit' and head = ?",
                      (sys.argv[2],)).fetchone():
            break
        db.close()
    except sqlite3.Error:
        pass
    time.sleep(0.05)
"""


def test_a_commit_is_recorded_before_the_host_puts_the_stashed_edits_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service records a post-commit hook's commit before the hook returns when the
    host holds unstaged edits out: once it returns the host rewrites those files, and a
    record read then held f.txt deleted (a sibling would read "b deleted f.txt")."""
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pc-home"))
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    (tmp_path / "pc-home").mkdir()
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "f.txt").write_text(BASE)
    (main / "other.txt").write_text(lines(10, "other"))
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "base")
    b = tmp_path / "wt-b"
    git(main, "worktree", "add", "-q", "-b", "feat/b", str(b))
    host = tmp_path / "bin" / "pre-commit"  # (its command line names the host)
    host.parent.mkdir()
    host.write_text(HOST)
    host.chmod(0o755)
    hook = main / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec "{host}"\n')
    hook.chmod(0o755)
    started = run(main, sys.executable, "-m", "proximity", "service", "start")
    assert started.returncode == 0, started.stdout + started.stderr
    mine = BASE.replace("line 20\n", "line 20 by b\n")
    (b / "f.txt").write_text(mine)
    (b / "other.txt").write_text(lines(10, "other") + "more\n")
    git(b, "add", "other.txt")
    r = run(b, "git", "commit", "-qm", "b: other.txt only",
            env={"PY": sys.executable, "AWAIT": AWAIT,
                 "LEDGER": layout.ledger_path(layout.ecm_dir(str(main / ".git")))})
    assert r.returncode == 0, r.stdout + r.stderr
    assert (b / "f.txt").read_text() == mine, r.stdout + r.stderr  # put back by the host
    head = git(b, "rev-parse", "HEAD").stdout.strip()
    commit = [e for e in ledger(main, "wt-b") if e["kind"] == "commit" and e["head"] == head]
    assert len(commit) == 1, commit
    assert "f.txt" in commit[0]["files"], commit  # the edit, not HEAD's f.txt
    env = live_objects(main)
    blob = git(main, "rev-parse", f"{commit[0]['tree']}:f.txt", env=env, check=False)
    assert blob.returncode == 0, f"f.txt recorded deleted: {commit[0]}"
    assert git(main, "cat-file", "blob", blob.stdout.strip(), env=env).stdout == mine


def test_the_hosts_patch_is_found_by_its_process_only(tmp_path: Path) -> None:
    """The patch is the newest one of the nearest ancestor that is the host (its command
    line says pre-commit or prek), written while it lived: another pid's, a recycled pid's
    older file, one named for an ancestor that is not a host (the user's shell, an agent's
    harness), a directory, or no PRE_COMMIT=1 find nothing."""
    pc, pk, bin_dir = tmp_path / "pc", tmp_path / "pk", tmp_path / "bin"
    for d in (pk / "patches", pc, bin_dir):
        d.mkdir(parents=True)
    probe = ("import os; from proximity.hooks import stash; "
             "print(stash.host_patch(os.environ) or '')")
    env = {**os.environ, "PRE_COMMIT_HOME": str(pc), "PREK_HOME": str(pk), "PRE_COMMIT": "1"}

    def host(name: str, script: str, extra: dict[str, str] | None = None) -> str:
        """A shell script called ``name`` stands for the host: it runs ``script`` (which
        may write a patch named with its pid, ``$$``, and the time it runs, ``$now``, as a
        host names it: a time taken before a loaded machine got to the host is older than
        the host itself), then the hook (a child) looks."""
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\nnow=$(date +%s)\n{script}\n\"$PY\" -c \"$PROBE\"\n")
        exe.chmod(0o755)
        r = subprocess.run([str(exe)], env={**env, "PY": sys.executable, "PROBE": probe,
                                            **(extra or {})},
                           capture_output=True, text=True, check=True)
        return r.stdout.strip()

    def clean() -> None:
        for d in (pc, pk / "patches"):
            for old in d.iterdir():
                old.rmdir() if old.is_dir() else old.unlink()

    got = host("pre-commit", f'echo x > "{pc}/patch$now-$$"')
    assert os.path.dirname(got) == str(pc)
    assert re.fullmatch(r"patch\d+-\d+", os.path.basename(got)), got
    clean()
    got = host("prek", f'echo x > "{pk}/patches/${{now}}123-$$.patch"')
    assert got.startswith(str(pk / "patches")) and got.endswith(".patch")
    clean()
    # the newest of the host's own, not a newer one of an ancestor that is no host
    got = host("pre-commit", f'echo x > "{pc}/patch$now-$$"; '
                             f'echo y > "{pc}/patch$((now + 9))-$PPID"')
    assert os.path.dirname(got) == str(pc) and Path(got).read_text() == "x\n", got
    clean()
    assert host("bash-like", f'echo x > "{pc}/patch$now-$$"') == ""  # not a host
    clean()
    for name in ("patch$now-1", "patch$((now - 1000000))-$$", "patch$now-$$x"):
        assert host("pre-commit", f'echo x > "{pc}/{name}"') == "", name
        clean()
    assert host("pre-commit", f'mkdir "{pc}/patch$now-$$"') == ""
    clean()
    assert host("pre-commit", f'echo x > "{pc}/patch$now-$$"', {"PRE_COMMIT": ""}) == ""


def test_a_patch_is_applied_only_on_the_state_it_was_made_from(tmp_path: Path) -> None:
    """Applied to the stashed state it restores the worktree's; on a state that already
    holds the edits it is not applied at all, never twice; a file a hook rewrote in
    between keeps what was read while the other files get their edits back."""
    main = tmp_path / "r"
    main.mkdir()
    git(main, "init", "-q")
    (main / "f.txt").write_text(BASE)
    (main / "bin.dat").write_bytes(b"\0\1\2" * 100)
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    stashed = git(main, "write-tree").stdout.strip()
    (main / "f.txt").write_text(BASE.replace("line 3\n", "line 3 edited\n") + "tail\n")
    (main / "bin.dat").write_bytes(b"\0\3\2" * 100)
    patch = tmp_path / "p.patch"
    patch.write_bytes(subprocess.run(["git", "diff-index", "--binary", "--no-color",
                                      "--no-ext-diff", stashed, "--"], cwd=main,
                                     capture_output=True, check=True).stdout)
    git(main, "add", "-A")
    live = git(main, "write-tree").stdout.strip()
    status = git(main, "status", "--porcelain").stdout
    repo = gitio.Repo(str(main))
    assert repo.tree_with_patch(stashed, str(patch), str(main)) == live
    assert repo.tree_with_patch(live, str(patch), str(main)) is None

    def tree_with(base: str, **files: str) -> str:
        """``base`` with some files set to the given blob ids (a temporary index)."""
        env = {"GIT_INDEX_FILE": str(tmp_path / "t.idx")}
        git(main, "read-tree", base, env=env)
        for rel, oid in files.items():
            git(main, "update-index", "--cacheinfo", f"100644,{oid},{rel.replace('_', '.')}",
                env=env)
        return git(main, "write-tree", env=env).stdout.strip()

    # a hook rewrote f.txt after the host took the edits out: f.txt keeps what was read,
    # the other files still get theirs
    rewritten = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=main,
                               input=b"rewritten by a hook\n", capture_output=True,
                               check=True).stdout.decode().strip()
    new_bin = git(main, "rev-parse", f"{live}:bin.dat", env=live_objects(main)).stdout.strip()
    read = tree_with(stashed, f_txt=rewritten)
    assert repo.tree_with_patch(read, str(patch), str(main)) == tree_with(
        stashed, f_txt=rewritten, bin_dat=new_bin)
    assert repo.tree_with_patch(stashed, str(tmp_path / "none"), str(main)) is None
    (tmp_path / "junk.patch").write_text("not a patch\n")
    assert repo.tree_with_patch(stashed, str(tmp_path / "junk.patch"), str(main)) is None
    assert git(main, "status", "--porcelain").stdout == status  # index, files as they were


def collided(framework: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Worktrees wt-a (feat/a) and wt-b (feat/b) commit line 20 under the host, a first:
    b must yield (its commit shows the Resolution Advisory)."""
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        assert git(framework, "worktree", "add", "-q", "-b", br, str(wt)).returncode == 0
    (a / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by a\n"))
    assert run(a, "git", "commit", "-qam", "a").returncode == 0
    (b / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by b\n"))
    rb = run(b, "git", "commit", "-qam", "b")
    assert "RESOLUTION ADVISORY" in rb.stdout + rb.stderr
    return a, b


@pytest.mark.parametrize("host", ["pre-commit", "prek"])
def test_a_must_yield_push_down_to_the_root_is_judged(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      host: str) -> None:
    """A push to a remote that has none of the history (pre-commit names the local branch
    but no commit then): the branch that must yield is blocked, from its worktree or
    another one, the other passes (seen on real code: pre-commit let it through from
    another worktree: the worktree was judged instead of what was pushed)."""
    framework = installed(tmp_path, monkeypatch, host)
    a, b = collided(framework, tmp_path)
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", str(empty))
    pb = run(b, "git", "push", "-q", str(empty), "feat/b")
    assert pb.returncode != 0 and "must yield" in pb.stdout + pb.stderr, pb.stdout + pb.stderr
    # and from another worktree: what is pushed is judged, not the worktree pushing it
    pm = run(framework, "git", "push", "-q", str(empty), "feat/b")
    assert pm.returncode != 0 and "must yield" in pm.stdout + pm.stderr, pm.stdout + pm.stderr
    assert git(empty, "rev-parse", "--verify", "-q", "refs/heads/feat/b",
               check=False).returncode != 0
    pa = run(a, "git", "push", "-q", str(empty), "feat/a")
    assert pa.returncode == 0, pa.stdout + pa.stderr


@pytest.mark.parametrize("host", ["pre-commit", "prek"])
def test_every_pushed_branch_is_judged_though_the_host_passes_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    """The hosts give their pre-push hooks only the first pushed ref that brings commits;
    the branch that must yield, pushed beside one that need not (in either order, by
    ``--all``, to a named remote or a path), is still blocked, read back from the ``git
    push`` command line -- and the branch that need not yield still goes alone. (Found on a
    real repository: pushed second, it passed under both hosts.)"""
    framework = installed(tmp_path, monkeypatch, host)
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(framework, "remote", "add", "origin", str(remote))
    assert run(framework, "git", "push", "-q", "origin", "main").returncode == 0
    a, _b = collided(framework, tmp_path)

    def blocked(where: Path, *args: str) -> bool:
        r = run(where, "git", "push", "-q", *args)
        out = r.stdout + r.stderr
        assert r.returncode == 0 or "must yield" in out, out
        return r.returncode != 0

    assert blocked(framework, "origin", "feat/a", "feat/b")
    assert blocked(a, "origin", "HEAD", "feat/b:review")
    assert blocked(framework, "--all", "origin")
    assert blocked(framework, str(tmp_path / "origin.git"), "feat/a", "feat/b")
    assert git(remote, "for-each-ref", "refs/heads/feat").stdout == ""  # nothing went
    assert not blocked(framework, "origin", "feat/a")
    assert blocked(framework, "origin", "feat/a", "feat/b")  # feat/a is there: b is first
    assert git(remote, "rev-parse", "--verify", "-q", "refs/heads/feat/b",
               check=False).returncode != 0
