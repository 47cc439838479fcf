"""Fault injection: hooks never break git, bounded resources, truthful diagnosis.

Real repositories, real `git commit` / `git push` to a real bare remote, plain hooks
installed by `proximity install`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HOLD_LEDGER, git, init_repo, lines, live_objects, stop

from proximity import gitio

BASE = lines(20)


def run(cwd: Path, *args: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


# -- operation_in_progress ------------------------------------------------------------


def _diverged(tmp_path: Path) -> Path:
    """main and branch `other` both edit line 5 of f.txt."""
    repo = init_repo(tmp_path / "repo", {"f.txt": BASE})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "other 5\n"))
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "main 5\n"))
    git(repo, "commit", "-qam", "main")
    return repo


def test_operation_in_progress_names_each_sequencer_state(tmp_path):
    repo = _diverged(tmp_path)
    admin = str(repo / ".git")
    assert gitio.operation_in_progress(admin) is None
    cases = [
        ("rebase", ["rebase", "other"], ["rebase", "--abort"]),
        ("cherry-pick", ["cherry-pick", "other"], ["cherry-pick", "--abort"]),
        ("merge", ["merge", "other"], ["merge", "--abort"]),
    ]
    for name, start, abort in cases:
        assert git(repo, *start, check=False).returncode != 0  # stops on the conflict
        assert gitio.operation_in_progress(admin) == name, name
        git(repo, *abort)
        assert gitio.operation_in_progress(admin) is None, name
    # revert of main's own commit conflicts with nothing: make one that does
    (repo / "f.txt").write_text(BASE.replace("line 5\n", "again 5\n"))
    git(repo, "commit", "-qam", "again")
    assert git(repo, "revert", "--no-edit", "HEAD~1", check=False).returncode != 0
    assert gitio.operation_in_progress(admin) == "revert"
    git(repo, "revert", "--abort")
    # am: a patch that does not apply
    patch = git(repo, "format-patch", "-1", "--stdout", "other").stdout
    (tmp_path / "p.mbox").write_text(patch)
    assert git(repo, "am", str(tmp_path / "p.mbox"), check=False).returncode != 0
    assert gitio.operation_in_progress(admin) == "am"
    git(repo, "am", "--abort")
    git(repo, "bisect", "start")
    assert gitio.operation_in_progress(admin) == "bisect"
    git(repo, "bisect", "reset")
    assert gitio.operation_in_progress(admin) is None


def test_operation_in_progress_is_per_worktree(tmp_path):
    repo = _diverged(tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "w", str(wt), "main")
    assert git(wt, "rebase", "other", check=False).returncode != 0
    wt_admin = git(wt, "rev-parse", "--absolute-git-dir").stdout.strip()
    assert gitio.operation_in_progress(wt_admin) == "rebase"
    assert gitio.operation_in_progress(str(repo / ".git")) is None


# -- plain hooks in a real repository with a real bare remote ---------------------------

PY = os.environ.get("PROXIMITY_TEST_PYTHON") or __import__("sys").executable


def hooked_repo(tmp_path: Path) -> tuple[Path, Path]:
    """main checkout with plain hooks (`proximity install`) and a bare origin."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = init_repo(tmp_path / "main", {"f.txt": BASE, "g.txt": lines(10, "g")})
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "main")
    r = run(main, PY, "-m", "proximity", "install")
    assert r.returncode == 0, r.stderr
    return main, remote


def commit(where: Path, rel: str = "n.txt", text: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    p = where / rel
    p.write_text(text if text is not None else p.read_text() + "x\n" if p.exists() else "x\n")
    git(where, "add", rel)
    return run(where, "git", "commit", "-qm", f"edit {rel}", env=env)


def shim(d: Path, name: str, body: str) -> None:
    d.mkdir(exist_ok=True)
    (d / name).write_text("#!/bin/sh\n" + body + "\n")
    (d / name).chmod(0o755)


def events(where: Path) -> list[dict]:  # type: ignore[type-arg]
    import json

    r = run(where, PY, "-m", "proximity", "ledger", "--json", "-n", "1000")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["events"]  # type: ignore[no-any-return]


def test_missing_interpreter_and_stale_entry_point_never_fail_a_commit(tmp_path):
    main, _ = hooked_repo(tmp_path)
    bin_ = tmp_path / "bin"
    # a stale pyenv-style python3 and an old `proximity` whose interpreter is gone
    shim(bin_, "python3", 'echo "pyenv: python3: command not found" >&2; exit 127')
    shim(bin_, "proximity", "exit 127")
    env = {"PROXIMITY_PYTHON": "/nonexistent/python3",
           "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    r = commit(main, env=env)
    assert r.returncode == 0, r.stderr
    assert "proximity: warning" in r.stderr and "git goes on" in r.stderr
    assert git(main, "log", "-1", "--format=%s").stdout.strip() == "edit n.txt"
    # an old `proximity` that fails to import (exit 1): a warning, never a failed commit
    shim(bin_, "proximity", 'echo "ImportError: cannot import name main" >&2; exit 1')
    r = commit(main, env=env)
    assert r.returncode == 0 and "proximity: warning" in r.stderr, r.stderr
    # an interpreter without the package (a bare python): falls back, then warns
    bare = tmp_path / "bare-python"
    shim(tmp_path, "bare-python", f'exec {PY} -S -I "$@"')
    env["PROXIMITY_PYTHON"] = str(bare)
    r = commit(main, env=env)
    assert r.returncode == 0 and "proximity: warning" in r.stderr, r.stderr
    # a push with every fallback broken still goes through
    p = run(main, "git", "push", "-q", "origin", "main", env=env)
    assert p.returncode == 0, p.stderr


def test_a_bad_interpreter_setting_is_named_when_the_fallback_works(tmp_path):
    main, _ = hooked_repo(tmp_path)
    bin_ = tmp_path / "bin"
    shim(bin_, "python3", f'exec {PY} "$@"')  # a python3 that has proximity
    env = {"PROXIMITY_PYTHON": "/nonexistent/python3",
           "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    r = commit(main, env=env)
    assert r.returncode == 0, r.stderr
    assert "/nonexistent/python3 cannot run proximity; using python3" in r.stderr
    assert "git goes on" not in r.stderr  # the fallback ran the hook
    assert any(e["kind"] == "commit" for e in events(main))


def test_the_last_fallback_is_named_too(tmp_path):
    """Neither the interpreter set nor python3 has proximity; the `proximity` command on
    PATH runs the hook: said, as the python3 fallback is (it ran without a word, after a
    line saying python3 was used)."""
    main, _ = hooked_repo(tmp_path)
    bin_ = tmp_path / "bin"
    shim(bin_, "python3", f'exec {PY} -S -I "$@"')  # a python3 without the package
    shim(bin_, "proximity", f'exec {PY} -m proximity "$@"')
    env = {"PROXIMITY_PYTHON": "/nonexistent/python3",
           "PATH": f"{bin_}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    r = commit(main, env=env)
    assert r.returncode == 0, r.stderr
    assert "cannot run proximity; using the proximity command on PATH" in r.stderr, r.stderr
    assert "git goes on" not in r.stderr  # the fallback ran the hook
    assert any(e["kind"] == "commit" for e in events(main))


def test_skip_starts_no_python_and_a_hook_starts_it_once(tmp_path):
    main, _ = hooked_repo(tmp_path)
    bin_ = tmp_path / "bin"
    calls = tmp_path / "calls.log"
    shim(bin_, "python3", f'echo "hook=$3" >>{calls}\nexec {PY} "$@"')  # -c BOOT HOOK …
    env = {"PROXIMITY_PYTHON": "python3", "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    r = commit(main, env={**env, "PROXIMITY_SKIP": "1"})
    assert r.returncode == 0, r.stderr
    assert not calls.exists()
    p = run(main, "git", "push", "-q", "origin", "main", env={**env, "PROXIMITY_SKIP": "1"})
    assert p.returncode == 0 and not calls.exists()
    r = commit(main, env=env)
    assert r.returncode == 0, r.stderr
    started = calls.read_text().splitlines()
    # pre-commit and post-commit: one interpreter each
    assert len(started) == 2, started
    assert sorted(started) == ["hook=post-commit", "hook=pre-commit"], started


def test_install_records_the_absolute_interpreter(tmp_path):
    from proximity.commands.install import recorded_interpreter

    main, _ = hooked_repo(tmp_path)
    got = recorded_interpreter(str(main / ".git" / "hooks" / "pre-commit"))
    assert got is not None and os.path.isabs(got) and os.path.samefile(got, PY)


# -- a busy ledger --------------------------------------------------------------------

def test_a_locked_ledger_costs_a_commit_about_two_seconds_and_loses_nothing(tmp_path):
    """A ledger another process holds for 20 s costs each hook its wait budget (about
    2 s), never the holder's 20 s: measured against the same commit unlocked, in the same
    moment (the machine's load counts in both)."""
    import time

    from proximity.commands.hook import WAIT_BUDGET

    main, _ = hooked_repo(tmp_path)
    assert commit(main).returncode == 0  # the ledger exists
    t0 = time.monotonic()
    assert commit(main, "free.txt", "unlocked\n").returncode == 0
    free = time.monotonic() - t0
    ledger = main / ".git" / "ecm" / "ledger.sqlite3"
    holder = subprocess.Popen([PY, "-c", HOLD_LEDGER, str(ledger), "20"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        r = commit(main, "locked.txt", "while locked\n")
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        # two hooks record (pre-commit, post-commit), each waiting at most its budget
        assert took - free < 2 * WAIT_BUDGET + 1.0, (took, free, r.stderr)
        assert "busy" in r.stderr and "queued" in r.stderr, r.stderr
        head = git(main, "rev-parse", "HEAD").stdout.strip()
    finally:
        stop(holder)
    assert (main / ".git" / "ecm" / "spool.jsonl").exists()
    # the next hook that gets the lock replays the queued event
    assert commit(main, "after.txt", "later\n").returncode == 0
    evs = events(main)
    assert any(e["kind"] == "commit" and e["head"] == head for e in evs), evs[:4]
    assert not (main / ".git" / "ecm" / "spool.jsonl").exists()
    kinds = [e["kind"] for e in evs if e["stream"] == "main"]
    assert kinds.count("commit") == 4, kinds


# -- agent ids ------------------------------------------------------------------------


def test_a_worktree_named_main_has_its_own_id_and_neither_push_is_blocked(tmp_path):
    import json

    main, _ = hooked_repo(tmp_path)
    other = tmp_path / "elsewhere" / "main"
    other.parent.mkdir()
    git(main, "worktree", "add", "-q", "-b", "feat/m", str(other))
    upper = tmp_path / "Main"
    git(main, "worktree", "add", "-q", "-b", "feat/upper", str(upper))
    assert commit(main, "f.txt", BASE.replace("line 3\n", "main 3\n")).returncode == 0
    assert commit(other, "g.txt", lines(10, "g").replace("g 9\n", "m 9\n")).returncode == 0
    scan = run(main, PY, "-m", "proximity", "scan", "--json")
    ids = sorted(a["id"] for a in json.loads(scan.stdout)["agents"])
    assert len(ids) == 3 and len(set(ids)) == 3 and "main" in ids, ids
    assert len({i.lower() for i in ids}) == 3
    # stable across runs
    again = run(main, PY, "-m", "proximity", "scan", "--json")
    assert sorted(a["id"] for a in json.loads(again.stdout)["agents"]) == ids
    streams = {e["stream"] for e in events(main)}
    assert len(streams) >= 2 and "main" in streams
    for where, ref in ((main, "main"), (other, "feat/m")):
        p = run(where, "git", "push", "-q", "origin", ref)
        assert p.returncode == 0, p.stderr


def test_worktree_ids_are_plain_names_or_unique_hashed_forms():
    assert gitio.worktree_id("alice") == "alice"
    ids = [gitio.worktree_id(n) for n in ("main", "Main", "MAIN", "a b", "a_b", "A_b")]
    assert "main" not in ids and len(set(ids)) == len(ids)
    assert len({gitio.safe_name(i).lower() for i in [*ids, "main", "a_b"]}) == len(ids) + 1
    assert gitio.worktree_id("Main") == gitio.worktree_id("Main")


# -- sequencer operations ---------------------------------------------------------------


def test_a_ten_commit_rebase_records_one_snapshot_at_the_end(tmp_path):
    main, _ = hooked_repo(tmp_path)
    git(main, "checkout", "-q", "-b", "topic")
    for i in range(10):
        (main / f"t{i}.txt").write_text(f"{i}\n")
        git(main, "add", "-A")
        git(main, "commit", "-qm", f"topic {i}", env={"PROXIMITY_SKIP": "1"})
    git(main, "checkout", "-q", "main", env={"PROXIMITY_SKIP": "1"})
    assert commit(main, "f.txt", BASE.replace("line 1\n", "base moved\n"),
                  env={"PROXIMITY_SKIP": "1"}).returncode == 0
    git(main, "checkout", "-q", "topic", env={"PROXIMITY_SKIP": "1"})
    before = {e["seq"] for e in events(main)}
    r = run(main, "git", "rebase", "-q", "main")
    assert r.returncode == 0, r.stderr
    new = [e for e in events(main) if e["seq"] not in before]
    kinds = [e["kind"] for e in new]
    assert kinds.count("rewrite") == 1, kinds
    assert "commit" not in kinds, kinds
    assert len(new) <= 2, kinds  # the rebase's first checkout may record once
    assert new[0]["head"] == git(main, "rev-parse", "HEAD").stdout.strip()


def test_a_cherry_pick_range_records_its_last_step_only(tmp_path):
    main, _ = hooked_repo(tmp_path)
    git(main, "checkout", "-q", "-b", "topic", env={"PROXIMITY_SKIP": "1"})
    for i in range(4):
        (main / f"c{i}.txt").write_text(f"{i}\n")
        git(main, "add", "-A")
        git(main, "commit", "-qm", f"pick {i}", env={"PROXIMITY_SKIP": "1"})
    git(main, "checkout", "-q", "main", env={"PROXIMITY_SKIP": "1"})
    before = {e["seq"] for e in events(main)}
    r = run(main, "git", "cherry-pick", "main..topic")
    assert r.returncode == 0, r.stderr
    new = [e for e in events(main) if e["seq"] not in before]
    assert [e["kind"] for e in new] == ["commit"], new
    assert new[0]["head"] == git(main, "rev-parse", "HEAD").stdout.strip()
    # a single cherry-pick records its commit
    git(main, "checkout", "-q", "-b", "one", "HEAD~4", env={"PROXIMITY_SKIP": "1"})
    before = {e["seq"] for e in events(main)}
    r = run(main, "git", "cherry-pick", "topic")
    assert r.returncode == 0, r.stderr
    new = [e for e in events(main) if e["seq"] not in before]
    assert [e["kind"] for e in new] == ["commit"], new


# -- bounded resources ------------------------------------------------------------------


def _objects_bytes(repo: Path) -> int:
    """Every object's bytes: the repository's and the private store's of live work."""
    total = 0
    for top in (repo / ".git" / "objects", repo / ".git" / "ecm" / "store" / "objects"):
        for root, _dirs, files in os.walk(top):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _largest_object(repo: Path) -> int:
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectsize)",
              env=live_objects(repo)).stdout
    return max(int(x) for x in out.split())


def test_a_growing_200_mb_untracked_file_is_never_hashed(tmp_path):
    import json

    main, _ = hooked_repo(tmp_path)
    big = main / "dump.bin"
    big.write_bytes(b"small at first\n")  # snapshotted (hashed) while it is small
    assert commit(main).returncode == 0
    before = _objects_bytes(main)
    for i in range(3):
        with open(big, "ab") as f:  # sparse: 200 MB and growing, nothing to write
            f.truncate(200_000_000 + i * 1_000_000)
            f.seek(0, 2)
            f.write(os.urandom(4096))
        assert commit(main, "f.txt", BASE + f"{i}\n").returncode == 0
    grown = _objects_bytes(main) - before
    assert grown < 5_000_000, grown
    assert _largest_object(main) < 1_000_000
    # still visible: the snapshot holds a stub naming size and mtime, kind "large"
    ev = next(e for e in events(main) if e["stream"] == "main" and e["kind"] == "commit")
    stub = git(main, "show", f"{ev['tree']}:dump.bin", env=live_objects(main)).stdout
    assert stub.startswith(gitio.LARGE_STUB) and "size=202" in stub, stub
    scan = run(main, PY, "-m", "proximity", "scan", "--json")
    assert scan.returncode == 0, scan.stderr
    json.loads(scan.stdout)


def test_a_50_mb_one_line_bundle_is_not_parsed(tmp_path):
    """A minified bundle beside real work: the commit goes through, and neither the huge
    untracked file nor a tracked one-line file under the size limit is parsed (what that
    costs is measured in benchmarks/, not here)."""
    from proximity.analysis import imports, parsers

    main, _ = hooked_repo(tmp_path)
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "feat/b", str(wt))
    with open(wt / "bundle.min.js", "wb") as f:
        chunk = b"import a from './a';var x=function(){return 1};" * 1000
        for _ in range(50_000_000 // len(chunk)):
            f.write(chunk)
    # a tracked minified file under the size limit: one line longer than long_line
    (main / "vendor.min.js").write_text("import b from './b';" + "var y=2;" * 2000 + "\n")
    r = commit(main, "vendor.min.js", (main / "vendor.min.js").read_text())
    assert r.returncode == 0, r.stderr
    assert imports.extract("vendor.min.js", (main / "vendor.min.js").read_bytes()) == []
    # past the size limit a file is "generated" by its length alone, before any scan of it
    assert parsers.generated(b"x" * (parsers.MAX_BYTES + 1))
    assert imports.extract("bundle.min.js", (wt / "bundle.min.js").read_bytes()) == []
    assert imports.extract("ok.js", b"import b from './b';\n") == [["js", "./b"]]


# -- truthful diagnosis -----------------------------------------------------------------


def _can_unshare_mounts() -> bool:
    import shutil

    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                       capture_output=True)
    return r.returncode == 0


needs_mounts = __import__("pytest").mark.skipif(
    not _can_unshare_mounts(), reason="needs a private mount namespace (unshare -m, mount): "
    "a read-only mount or a full file system is the only fault root cannot bypass")


def _ledger_state(ledger: Path) -> tuple[str, int]:
    import sqlite3

    db = sqlite3.connect(ledger)
    try:
        return (db.execute("PRAGMA integrity_check").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    finally:
        db.close()


def _in_namespace(setup: str, cwd: Path, *cmd: str) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in a private mount namespace after ``setup`` (sh) mounted things."""
    return run(cwd, "unshare", "-m", "sh", "-c", f'set -e; {setup}; set +e; exec "$@"', "sh",
               *cmd)


@needs_mounts
def test_a_read_only_ledger_directory_is_called_read_only_not_corrupt(tmp_path):
    main, _ = hooked_repo(tmp_path)
    assert commit(main).returncode == 0
    ecm = main / ".git" / "ecm"
    before = _ledger_state(ecm / "ledger.sqlite3")
    ro = f"mount --bind {ecm} {ecm}; mount -o remount,ro,bind {ecm}"
    (main / "n.txt").write_text("ro\n")
    git(main, "add", "n.txt")
    r = _in_namespace(ro, main, "git", "commit", "-qm", "on a read-only ledger")
    assert r.returncode == 0, r.stderr
    assert "read-only" in r.stderr and "corrupt" not in r.stderr and "mv " not in r.stderr
    r = _in_namespace(ro, main, PY, "-m", "proximity", "ledger")
    assert r.returncode == 4, r.stderr
    assert "read-only" in r.stderr and "intact" in r.stderr and "mv " not in r.stderr
    assert "Traceback" not in r.stderr and "crash" not in r.stderr
    assert _ledger_state(ecm / "ledger.sqlite3") == before


@needs_mounts
def test_a_full_ledger_disk_is_called_full_not_corrupt(tmp_path):
    main, _ = hooked_repo(tmp_path)
    assert commit(main).returncode == 0
    ecm = main / ".git" / "ecm"
    run(main, PY, "-c", "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("
        "'PRAGMA wal_checkpoint(TRUNCATE)')", str(ecm / "ledger.sqlite3"))
    before = _ledger_state(ecm / "ledger.sqlite3")
    size = sum(p.stat().st_size for p in ecm.rglob("*") if p.is_file())
    save = tmp_path / "saved-ecm"
    full = (f"cp -a {ecm} {save}; mount -t tmpfs -o size={size // 1024 + 256}k tmpfs {ecm}; "
            f"cp -a {save}/. {ecm}/; dd if=/dev/zero of={ecm}/fill bs=4k 2>/dev/null || true")
    check = (f'{PY} -m proximity snapshot; echo "rc=$?"; rm -f {ecm}/fill; '
             f'{PY} -c "import sqlite3; d=sqlite3.connect(\'{ecm}/ledger.sqlite3\'); '
             f'print(\'check=\' + d.execute(\'PRAGMA integrity_check\').fetchone()[0])"')
    (main / "n.txt").write_text("full\n")
    r = _in_namespace(full, main, "sh", "-c", check)
    assert "rc=4" in r.stdout, (r.stdout, r.stderr)
    assert "full" in r.stderr and "corrupt" not in r.stderr and "mv " not in r.stderr, r.stderr
    assert "check=ok" in r.stdout, r.stdout
    # a commit on the full disk goes through with the same diagnosis as a warning
    git(main, "add", "n.txt")
    r = _in_namespace(full, main, "git", "commit", "-qm", "on a full disk")
    assert r.returncode == 0, r.stderr
    assert "full" in r.stderr and "corrupt" not in r.stderr, r.stderr
    assert _ledger_state(ecm / "ledger.sqlite3") == before


def test_corrupt_pages_exit_4_with_the_recovery_hint(tmp_path):
    import sqlite3

    main, _ = hooked_repo(tmp_path)
    for i in range(30):
        assert commit(main, "n.txt", f"{i}\n" * 200, env={"PROXIMITY_SKIP": "1"}
                      ).returncode == 0
        run(main, PY, "-m", "proximity", "snapshot")
    ledger = main / ".git" / "ecm" / "ledger.sqlite3"
    db = sqlite3.connect(ledger)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = db.execute("PRAGMA page_size").fetchone()[0]
    npages = db.execute("PRAGMA page_count").fetchone()[0]
    db.close()
    with open(ledger, "r+b") as f:  # scribble over every page but the first
        for n in range(1, npages):
            f.seek(n * page + 100)
            f.write(b"\xde\xad\xbe\xef" * 64)
    r = run(main, PY, "-m", "proximity", "ledger")
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert "corrupt" in r.stderr and "mv " in r.stderr and "integrity" in r.stderr
    assert "crash" not in r.stderr and "Traceback" not in r.stderr
    c = commit(main, "n.txt", "after\n")  # whatever the hooks meet, git goes on
    assert c.returncode == 0 and "Traceback" not in c.stderr, c.stderr
    d = run(main, PY, "-m", "proximity", "doctor")
    assert d.returncode == 1 and "corrupt" in d.stdout and "mv " in d.stdout, d.stdout


def test_doctor_checks_where_git_reads_hooks_the_config_and_the_interpreter(tmp_path):
    import json

    main, _ = hooked_repo(tmp_path)

    def doctor(env: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
        r = run(main, PY, "-m", "proximity", "doctor", "--json", env=env)
        return {c["check"]: c for c in json.loads(r.stdout)["checks"]}

    ok = doctor()
    assert ok["hooks"]["status"] == "ok" and ok["hook interpreter"]["status"] == "ok"
    assert ok["config"]["status"] == "ok"
    # an interpreter without the package (and so without pygit2)
    shim(tmp_path, "bare-python", f'exec {PY} -S -I "$@"')
    bad = doctor({"PROXIMITY_PYTHON": str(tmp_path / "bare-python")})
    assert bad["hook interpreter"]["status"] == "fail"
    assert "proximity" in bad["hook interpreter"]["detail"]
    gone = doctor({"PROXIMITY_PYTHON": "/nonexistent/python3"})
    assert gone["hook interpreter"]["status"] == "fail"
    # an invalid config
    (main / ".proximity.toml").write_text("tau_ta = 'high'\n")
    assert doctor()["config drift"]["status"] == "warn"  # not the policy until committed
    git(main, "add", ".proximity.toml")
    git(main, "commit", "-qm", "bad config", "--no-verify")
    assert doctor()["config"]["status"] == "fail"
    git(main, "rm", "-q", ".proximity.toml")
    git(main, "commit", "-qm", "drop it", "--no-verify")
    # git reads hooks elsewhere: ours never run
    git(main, "config", "core.hooksPath", ".husky")
    moved = doctor()
    assert moved["hooks"]["status"] == "fail" and ".husky" in moved["hooks"]["detail"]


def test_a_hung_git_is_stopped_and_the_commit_goes_on(tmp_path):
    import time

    main, _ = hooked_repo(tmp_path)
    (main / "n.txt").write_text("hang\n")
    git(main, "add", "n.txt")
    # a clean filter that never returns (as on a stuck network file system), met only by
    # the snapshot's `git add -A` of an untracked file
    git(main, "config", "filter.hang.clean", "sleep 61.2345")
    (main / ".gitattributes").write_text("*.hang filter=hang\n")
    (main / "x.hang").write_text("x\n")
    t0 = time.monotonic()
    r = run(main, "git", "commit", "-qm", "hung", env={"PROXIMITY_GIT_TIMEOUT": "1"})
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 15
    assert "took longer than 1 s" in r.stderr and "proximity: warning" in r.stderr
    for _ in range(50):  # the stuck process was killed with the git that started it
        if run(main, "pgrep", "-f", "sleep 61.2345").returncode != 0:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the hung filter process is still running")


def test_a_git_started_in_the_background_has_the_same_time_limit(tmp_path, monkeypatch):
    """git_start / git_finish / git_many (the pre-edit check's parallel git calls, the
    service's early hashing) stop a git past its limit, as git() does: the caller gets
    GitTimeout and nothing of it keeps running."""
    import time

    from proximity import gitio as g
    from proximity.errors import GitTimeout

    main, _ = hooked_repo(tmp_path)
    git(main, "config", "filter.hang.clean", "sleep 31.2345")
    (main / ".gitattributes").write_text("*.hang filter=hang\n")
    (main / "x.hang").write_text("x\n")
    monkeypatch.setenv("PROXIMITY_GIT_TIMEOUT", "1")
    for call in (lambda: g.git_finish(g.git_start(["hash-object", "--", "x.hang"], str(main))),
                 lambda: g.git_many([(["hash-object", "--", "x.hang"], str(main)),
                                     (["rev-parse", "HEAD"], str(main))])):
        t0 = time.monotonic()
        with pytest.raises(GitTimeout, match="took longer than 1 s"):
            call()
        assert time.monotonic() - t0 < 10
        for _ in range(50):  # the filter git started went with it
            if run(main, "pgrep", "-f", "sleep 31.2345").returncode != 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the hung filter process is still running")


def test_a_background_git_collected_late_is_not_a_timeout(tmp_path, monkeypatch):
    """The time between git_start and git_finish is the caller's: a git that finished in
    time, or only waits for its output to be read (more than a pipe holds), gives its
    output when the caller comes back after its limit (the pre-edit check reads the
    policy's config after the whole check)."""
    import time

    from proximity import gitio as g

    big = "".join(f"line {i:06d}\n" for i in range(20000))  # 240 KB: more than a pipe holds
    repo = init_repo(tmp_path / "r", {"big.txt": big})
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    monkeypatch.setenv("PROXIMITY_GIT_TIMEOUT", "1")
    done = g.git_start(["rev-parse", "HEAD"], str(repo))
    blocked = g.git_start(g.blob_args(head, "big.txt"), str(repo))
    time.sleep(1.5)  # the caller's own work, past both limits
    assert done.poll() == 0 and blocked.poll() is None  # it waits for us to read
    assert g.git_finish(done) == f"{head}\n".encode()
    assert g.git_finish(blocked, ok=(0,)) == big.encode()


def test_snapshot_objects_do_not_pile_up_loose(tmp_path):
    from proximity import gitio as g

    main, _ = hooked_repo(tmp_path)
    for i in range(300):  # many distinct untracked files: many new loose blobs
        (main / f"u{i}.txt").write_text(f"{i}\n")
    assert commit(main).returncode == 0
    repo = g.Repo(str(main))
    packed = repo.pack_loose_objects(limit=1)
    assert packed >= 300
    store = main / ".git" / "ecm" / "store"  # where live work's objects go
    loose = git(main, "--git-dir", str(store), "count-objects", "-v").stdout
    assert "\ncount: 0\n" in "\n" + loose, loose
    assert git(main, "--git-dir", str(store), "fsck", "--connectivity-only").returncode == 0
    assert git(main, "fsck", "--connectivity-only").returncode == 0
    # and none of them went into the repository's own objects
    blob = git(main, "hash-object", "u7.txt").stdout.strip()
    assert git(main, "cat-file", "-e", blob, check=False).returncode != 0


def test_the_ledger_does_not_grow_per_commit_with_untracked_files(tmp_path):
    import sqlite3

    main, _ = hooked_repo(tmp_path)
    git(main, "worktree", "add", "-q", "-b", "feat/w", str(tmp_path / "w"))  # a pair to scan
    from proximity.gitio import bulk

    (main / "junk").mkdir()
    many = bulk.UNTRACKED_MAX - 100  # hashed one by one (beyond the limit: summarized)
    for i in range(many):  # generated sources and plain junk
        (main / "junk" / f"out{i}.{'py' if i % 2 else 'txt'}").write_text(f"X{i} = {i}\n")
    assert commit(main).returncode == 0
    ledger = main / ".git" / "ecm" / "ledger.sqlite3"

    def size() -> tuple[int, int]:
        db = sqlite3.connect(ledger)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            rows = db.execute("SELECT COUNT(*) FROM cache").fetchone()[0]
            used = db.execute("SELECT SUM(length(files)) FROM events").fetchone()[0]
            return rows, used
        finally:
            db.close()

    rows0, used0 = size()
    for i in range(3):
        assert commit(main, "n.txt", f"{i}\n").returncode == 0
    rows1, used1 = size()
    assert used1 - used0 < 3 * 2 * 500, (used0, used1)  # deltas, not 900 paths per event
    assert rows1 - rows0 < 50, (rows0, rows1)
    # recency still knows the untracked files' age: they were set by the first event
    from proximity.ledger import Ledger

    led = Ledger(str(main / ".git" / "ecm"))
    try:
        current = led.current_files("main")
        assert len(current) >= many
        w = led.recency("main", {p: current[p] for p in list(current)[:5]})
        assert all(0 < v < 1 for v in w.values()), w
    finally:
        led.close()


def test_in_process_hooks_skip_steps_of_a_rebase(tmp_path, monkeypatch):
    from proximity.main import main as cli

    repo = _diverged(tmp_path)
    assert git(repo, "rebase", "other", check=False).returncode != 0
    monkeypatch.chdir(repo)
    assert cli(["hook", "post-commit"]) == 0
    assert not (repo / ".git" / "ecm").exists()  # skipped before opening anything
    git(repo, "rebase", "--abort")
    assert cli(["hook", "post-commit"]) == 0
    assert (repo / ".git" / "ecm" / "ledger.sqlite3").exists()


def test_the_crash_log_is_private(tmp_path, monkeypatch):
    import stat

    from proximity import main as m

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = m._crash_log(RuntimeError("boom"))
    assert path.startswith(str(tmp_path / "state" / "proximity")), path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert "boom" in Path(path).read_text()
    # a planted symlink in place of the directory is refused, its target untouched
    target = tmp_path / "victim"
    target.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state2"))
    (tmp_path / "state2").mkdir()
    (tmp_path / "state2" / "proximity").symlink_to(target)
    assert "no crash log" in m._crash_log(RuntimeError("boom"))
    assert list(target.iterdir()) == []


def test_a_locked_ledger_does_not_turn_the_guard_off(tmp_path):
    main, _ = hooked_repo(tmp_path)
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        git(main, "worktree", "add", "-q", "-b", br, str(wt))
    assert commit(a, "f.txt", BASE.replace("line 10\n", "line 10 by a\n")).returncode == 0
    assert commit(b, "f.txt", BASE.replace("line 10\n", "line 10 by b\n")).returncode == 0
    ledger = main / ".git" / "ecm" / "ledger.sqlite3"
    holder = subprocess.Popen([PY, "-c", HOLD_LEDGER, str(ledger), "30"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        p = run(b, "git", "push", "-q", "origin", "feat/b")
    finally:
        stop(holder)
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr


RECORD = """
import sys
from proximity import ledger
ledger.wait_budget(0.3)
led = ledger.Ledger(sys.argv[1])
for i in range(5):
    ev = led.record(sys.argv[2], "commit", path="/x", head=None, branch=None, snapshot=None,
                    tree=None, files={f"f{i}": "1" * 40}, spool=True)
led.close()
"""


def test_events_queued_while_busy_are_all_replayed_once(tmp_path):
    import sqlite3

    from proximity.ledger import Ledger

    ecm = tmp_path / "ecm"
    Ledger(str(ecm)).close()
    holder = subprocess.Popen([PY, "-c", HOLD_LEDGER, str(ecm / "ledger.sqlite3"), "3"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    writers = [subprocess.Popen([PY, "-c", RECORD, str(ecm), f"w{n}"]) for n in range(6)]
    for w in writers:
        assert w.wait(timeout=60) == 0
    holder.wait(timeout=30)
    holder.stdout.close()
    led = Ledger(str(ecm))
    try:
        assert led.spooled() > 0  # the writers gave up waiting and queued
        led.replay()
        assert led.spooled() == 0
    finally:
        led.close()
    db = sqlite3.connect(ecm / "ledger.sqlite3")
    rows = db.execute("SELECT stream, COUNT(*) FROM events GROUP BY stream").fetchall()
    db.close()
    assert sorted(rows) == [(f"w{n}", 5) for n in range(6)], rows


def test_a_large_committed_file_is_sized_from_its_header_not_read(tmp_path):
    """One large tracked file must not cost every hook a full read of its blob (a 300 MB
    file made every commit take seconds): its size comes from the object header."""
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    with open(repo / "big.bin", "wb") as f:
        f.write(os.urandom(1 << 20) * 120)  # 120 MiB, stored loose (zlib): inflating it costs
    git(repo, "add", "big.bin")
    git(repo, "commit", "-qm", "big")
    probe = ("import resource, sys\nfrom proximity import gitio\n"
             "r = gitio.Repo(sys.argv[1])\n"
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "oid = r.pg.revparse_single('HEAD').peel(2)['big.bin'].id\n"
             "size = r.blob_size(str(oid))\n"
             "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
             "print(size, grew)\n")
    out = run(repo, PY, "-c", probe, str(repo))
    assert out.returncode == 0, out.stderr
    size, grew_kb = (int(x) for x in out.stdout.split())
    assert size == 120 << 20
    assert grew_kb < 40_000, f"sizing the blob grew the process by {grew_kb} KiB"


def test_snapshot_commits_written_in_process_are_the_ones_git_writes(tmp_path):
    """A snapshot commit is content-addressed: libgit2's object is byte for byte the one
    `git commit-tree` writes with the fixed identity (on a parent, and for an unborn
    branch without one)."""
    repo_dir = init_repo(tmp_path / "repo", {"f.txt": BASE})
    repo = gitio.Repo(str(repo_dir))
    assert repo.pg is not None and repo.warm()  # libgit2 open, as in the service
    head = git(repo_dir, "rev-parse", "HEAD").stdout.strip()
    tree = git(repo_dir, "rev-parse", "HEAD^{tree}").stdout.strip()
    env = {**os.environ, **gitio.SNAPSHOT_IDENT}
    for parent in ([head], []):
        args = ["git", "commit-tree", tree, *(["-p", p] for p in parent), "-m",
                "proximity snapshot"]
        flat = [a for x in args for a in (x if isinstance(x, list) else [x])]
        want = subprocess.run(flat, cwd=repo_dir, env=env, capture_output=True, text=True,
                              check=True).stdout.strip()
        assert repo.snapshot_commit(tree, parent[0] if parent else None) == want
    assert git(repo_dir, "fsck", "--connectivity-only").returncode == 0


def _conflicting_pair(main: Path, base: Path) -> tuple[Path, Path]:
    """Worktrees a and b of ``main`` whose commits edit the same line of f.txt."""
    a, b = base / "wt-a", base / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        git(main, "worktree", "add", "-q", "-b", br, str(wt))
    assert commit(a, "f.txt", BASE.replace("line 10\n", "line 10 by a\n")).returncode == 0
    assert commit(b, "f.txt", BASE.replace("line 10\n", "line 10 by b\n")).returncode == 0
    return a, b


def test_a_repository_path_with_a_newline_is_guarded(tmp_path):
    import json

    base = tmp_path / "a\nb"
    base.mkdir()
    main, _ = hooked_repo(base)
    assert (main / ".git" / "hooks" / "pre-push").exists()
    r = commit(main)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert any(e["kind"] == "commit" for e in events(main))
    a, b = _conflicting_pair(main, base)
    r = commit(a)  # a linked worktree, whose .git file names a path with a newline
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    scan = run(main, PY, "-m", "proximity", "scan", "--json")
    assert scan.returncode == 0, scan.stderr
    agents = json.loads(scan.stdout)["agents"]  # (control characters print as "?")
    assert sorted(x["path"].rsplit("/", 1)[1] for x in agents) == ["main", "wt-a", "wt-b"]
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr


# -- a bad committed config -------------------------------------------------------------

BAD_CONFIGS = [
    # (file, content, what stderr must name)
    (".proximity.toml", "tau_ra = 0.8\ntua_ta = 0.2\n",
     [".proximity.toml", "line 2", "'tua_ta'", "unknown setting"]),
    (".proximity.toml", "tau_ra = 0.8\nexclude = [\n", [".proximity.toml", "not valid TOML",
                                                          "line 2"]),  # (unclosed)
    (".proximity.toml", "tau_ra = 0.8\ntau_ta = = 0.2\nnear_lines = 3\n",
     [".proximity.toml", "not valid TOML", "line 2"]),
    ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.proximity]\nnear_lines = -3\n",
     ["pyproject.toml", "line 5", "near_lines", "'near_lines' ignored"]),
    (".proximity.toml", "tau_ta = 0.9\ntau_ra = 0.5\n",
     [".proximity.toml", "line 1 (tau_ta)", "line 2 (tau_ra)", "defaults stand"]),
    # values that would disarm the guard in every worktree: refused, the rest stands
    (".proximity.toml", "near_lines = 3\n[weights]\n" + "".join(
        f"{c} = 0\n" for c in ("conflict", "overlap", "approach", "symbol", "dependency",
                               "tree")),
     [".proximity.toml", "line 2 (weights)", "can never reach tau_ra", "'weights' ignored"]),
    ("pyproject.toml", "[tool.proximity]\nexclude = ['*']\n",
     ["pyproject.toml", "line 2 (exclude)", "matches every path", "'exclude' ignored"]),
    (".proximity.toml", "exclude = [" + ", ".join(f"'gen{i}/**'" for i in range(300)) + "]\n",
     [".proximity.toml", "line 1", "300 globs (at most 256)", "'exclude' ignored"]),
    (".proximity.toml", "tau_ra = 1.5\n", [".proximity.toml", "line 1 (tau_ra)",
                                            "tau_ra <= 1", "defaults stand"]),
    (".proximity.toml", "near_lines = 2\na = " + "[" * 130_000 + "]" * 130_000 + "\n",
     [".proximity.toml", "nested more than 32 levels", "defaults stand"]),
]


def _committed_config(tmp_path: Path, name: str, text: str) -> tuple[Path, Path, Path]:
    main, _ = hooked_repo(tmp_path)
    (main / name).write_text(text)
    git(main, "add", name)
    git(main, "commit", "-qm", "a config with a fault", "--no-verify")
    a, b = _conflicting_pair(main, tmp_path)
    return main, a, b


@pytest.mark.parametrize(("name", "text", "named"), BAD_CONFIGS,
                         ids=["typo", "unclosed-toml", "bad-toml", "bad-value",
                              "inconsistent", "every-weight-0", "exclude-everything",
                              "too-many-globs", "threshold-above-1", "nested-260-KB"])
def test_a_bad_committed_config_leaves_the_guard_on_and_says_where(tmp_path, name, text,
                                                                     named):
    main, _a, b = _committed_config(tmp_path, name, text)
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    assert "git goes on" not in p.stderr and "skipped" not in p.stderr, p.stderr
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("proximity: warning:")]
    assert len(said) == 1 and all(n in said[0] for n in named), said
    # a commit says it too, and goes on; a command the user runs stops at it, naming it
    r = commit(main)
    assert r.returncode == 0 and all(n in r.stderr for n in named), r.stderr
    # once a commit, not by each of its hooks (an amend: its pre-commit, not its
    # post-rewrite again)
    amend = run(main, "git", "commit", "-q", "--amend", "-m", "amended")
    for got in (r, amend):
        assert sum(ln.startswith("proximity: warning:") for ln in got.stderr.splitlines()
                   ) == 1, got.stderr
    s = run(main, PY, "-m", "proximity", "scan")
    assert s.returncode == 2 and all(n in s.stderr for n in named), s.stderr


def test_a_bad_setting_in_the_repository_git_config_is_dropped_not_fatal(tmp_path):
    main, _ = hooked_repo(tmp_path)
    git(main, "config", "proximity.tauRb", "0.5")  # a typo
    git(main, "config", "proximity.nearLines", "many")
    git(main, "config", "proximity.checkPolicy", "deny")  # read by check: no warning
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("proximity: warning:")]
    assert len(said) == 2, said
    assert "proximity.taurb" in said[0].lower() and "nearlines" in said[1].lower(), said
    assert "checkpolicy" not in p.stderr.lower()


def test_a_hook_the_service_answers_says_the_bad_setting_too(tmp_path, monkeypatch):
    from proximity.commands import service as service_cmd
    from proximity.service.report import service_state

    name, text, named = BAD_CONFIGS[0]
    main, _a, b = _committed_config(tmp_path, name, text)
    common = str((main / ".git").resolve())
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "60")
    try:
        assert service_cmd.start(common)
        before = dict(service_state(common)["status"]["answered"])
        p = run(b, "git", "push", "-q", "origin", "feat/b")
        answered = service_state(common)["status"]["answered"]
        r = commit(main)
        amend = run(main, "git", "commit", "-q", "--amend", "-m", "amended")
        # the fault fixed, committed without the commit hook: nothing judged, nothing said
        # (the service said the old warning here, a config it had not read again)
        git(main, "rm", "-q", name)
        fixed = run(main, "git", "commit", "-qm", "the config removed", "--no-verify")
    finally:
        service_cmd.stop(common, timeout=10.0)
    assert answered != before, (before, answered)  # the service judged this push
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    assert all(n in p.stderr for n in named), p.stderr
    # a commit the service answers says it once, as one judged in process does; an amend
    # too (its pre-commit, not its post-rewrite again)
    for got in (r, amend):
        assert got.returncode == 0 and all(n in got.stderr for n in named), got.stderr
        assert sum(ln.startswith("proximity: warning:") for ln in got.stderr.splitlines()
                   ) == 1, got.stderr
    assert fixed.returncode == 0 and "warning" not in fixed.stderr, fixed.stderr


# -- a ledger that can be read but not written ------------------------------------------


def _full_ledger_setup(ecm: Path, save: Path) -> str:
    """Shell setup: the ledger directory on a tmpfs with its files and no space left."""
    run(ecm, PY, "-c", "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("
        "'PRAGMA wal_checkpoint(TRUNCATE)')", str(ecm / "ledger.sqlite3"))
    size = sum(p.stat().st_size for p in ecm.rglob("*") if p.is_file())
    return (f"cp -a {ecm} {save}; mount -t tmpfs -o size={size // 1024 + 256}k tmpfs {ecm}; "
            f"cp -a {save}/. {ecm}/; dd if=/dev/zero of={ecm}/fill bs=4k 2>/dev/null || true")


@needs_mounts
@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_a_push_that_must_yield_stays_blocked_when_the_ledger_cannot_be_written(
        tmp_path, fault):
    main, _ = hooked_repo(tmp_path)
    _a, b = _conflicting_pair(main, tmp_path)
    ecm = main / ".git" / "ecm"
    setup = (f"mount --bind {ecm} {ecm}; mount -o remount,ro,bind {ecm}" if fault == "read-only"
             else _full_ledger_setup(ecm, tmp_path / "saved-ecm"))
    before = _ledger_state(ecm / "ledger.sqlite3")
    p = _in_namespace(setup, b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    said = [ln for ln in p.stderr.splitlines() if "warning" in ln or "OFF" in ln]
    assert len(said) == 1, said
    assert "recording is off for this push" in said[0] and fault in said[0], said
    assert "corrupt" not in p.stderr and "mv " not in p.stderr and "Traceback" not in p.stderr
    assert _ledger_state(ecm / "ledger.sqlite3") == before  # nothing was written
    # a commit judges too (its advisory printed), records nothing, and goes through
    (b / "n.txt").write_text("more\n")
    git(b, "add", "n.txt")
    r = _in_namespace(setup, b, "git", "commit", "-qm", "on a ledger that cannot be written")
    assert r.returncode == 0, r.stderr
    assert "RESOLUTION ADVISORY" in r.stderr and "recording is off" in r.stderr, r.stderr
    assert r.stderr.count("recording is off") == 1, r.stderr  # once per commit
    assert _ledger_state(ecm / "ledger.sqlite3") == before
    s = _in_namespace(setup, main, PY, "-m", "proximity", "scan")  # a command reads it too
    assert s.returncode == 0 and "RESOLUTION" in s.stdout, (s.stdout, s.stderr)
    assert fault in s.stderr and "nothing is recorded" in s.stderr, s.stderr


# -- a full disk: the verdict never depends on free space ----------------------------------


@needs_mounts
@pytest.mark.parametrize("service", ["0", "1"])
def test_a_push_that_must_yield_stays_blocked_on_a_full_disk(tmp_path, service):
    """The repository's file system full, the sibling with live changes that only a
    write could snapshot: its objects go to a scratch store on a file system with room,
    so the pair stays a resolution advisory and the push that must yield stays blocked,
    with one line saying recording is off; `check`, `scan` and the service (running
    before the disk filled) agree, `doctor` names the full disk, and nothing is left in
    the temporary directory."""
    import json

    main, _ = hooked_repo(tmp_path)
    a, b = _conflicting_pair(main, tmp_path)
    (a / "u.txt").write_text("untracked, never written before\n")
    (a / "g.txt").write_text(lines(10, "g") + "and a live edit\n")
    dot_git, save, scratch = main / ".git", tmp_path / "saved-git", tmp_path / "tmp"
    scratch.mkdir()
    size = sum(p.stat().st_size for p in dot_git.rglob("*") if p.is_file())
    mount = (f"cp -a {dot_git} {save}; mount -t tmpfs -o size={size // 1024 + 2048}k tmpfs "
             f"{dot_git}; cp -a {save}/. {dot_git}/")
    fill = f"dd if=/dev/zero of={dot_git}/fill bs=4k 2>/dev/null || true"
    prox = f"{PY} -m proximity"
    script = "; ".join([
        f"{prox} service start >/dev/null 2>&1" if service == "1" else "true", fill,
        "git push -q origin feat/b; echo push=$?",
        *(f"{prox} {cmd} --json {arg} >{tmp_path}/{cmd}.json 2>/dev/null"
          for cmd, arg in (("scan", ""), ("check", "f.txt:10"), ("doctor", ""))),
        f"{prox} service stop >/dev/null 2>&1 || true",
        f"ls -A {scratch} | grep objects | sed 's/^/left=/'"])
    r = _in_namespace(mount, b, "env", f"PROXIMITY_SERVICE={service}",
                      "PROXIMITY_SERVICE_IDLE=60", f"TMPDIR={scratch}", "sh", "-c", script)
    assert "push=1" in r.stdout, (r.stdout, r.stderr)
    assert "push blocked" in r.stderr and "RESOLUTION ADVISORY" in r.stderr, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "recording is off" in ln]
    assert len(said) == 1 and "full" in said[0], r.stderr
    assert "Traceback" not in r.stderr and "OFF" not in r.stderr, r.stderr
    said = {k: json.loads((tmp_path / f"{k}.json").read_text()) for k in
            ("scan", "check", "doctor")}
    pairs = {(p["a"], p["b"]): p for p in said["scan"]["pairs"]}
    assert pairs[("wt-a", "wt-b")]["advisory"] == "resolution", pairs
    assert said["check"]["decision"] == "deny", said["check"]
    disk = next(c for c in said["doctor"]["checks"] if c["check"] == "disk")
    assert disk["status"] == "fail" and "full" in disk["detail"], disk
    assert "left=" not in r.stdout, r.stdout  # no scratch store outlives its process


def test_a_sibling_whose_live_state_cannot_be_read_is_judged_on_its_commits(tmp_path):
    """A sibling's index that git cannot read (so no snapshot of its live state): its
    committed work still judges, and says what was not read; never "clear"."""
    import json

    main, _ = hooked_repo(tmp_path)
    a, b = _conflicting_pair(main, tmp_path)
    (a / "u.txt").write_text("live work\n")
    index = main / ".git" / "worktrees" / "wt-a" / "index"
    index.write_bytes(b"DIRC garbage, not an index")
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    s = run(main, PY, "-m", "proximity", "scan", "--json")
    assert s.returncode == 0, s.stderr
    scan = json.loads(s.stdout)
    wt_a = next(x for x in scan["agents"] if x["id"] == "wt-a")
    assert wt_a["error"] is None and "index" in wt_a["unread"], wt_a
    pair = next(x for x in scan["pairs"] if {x["a"], x["b"]} == {"wt-a", "wt-b"})
    assert pair["advisory"] == "resolution", pair
    assert any("could not be read" in f["detail"] for f in pair["findings"]), pair


def _truncated_live_blob(main: Path, wt: Path, where: str) -> tuple[str, Path]:
    """A live file of ``wt`` whose loose object is cut to half its length: the blob
    staged by `git add` (in .git/objects) or written by a snapshot (in the private
    store). (the object id, its loose file)"""
    (wt / "big.txt").write_text("".join(f"live line {i} {i * i}\n" for i in range(20000)))
    if where == "staged":
        git(wt, "add", "big.txt")
    else:
        assert run(wt, PY, "-m", "proximity", "snapshot").returncode == 0
    oid = git(wt, "hash-object", "big.txt").stdout.strip()
    objects = main / ".git" / ("objects" if where == "staged" else "ecm/store/objects")
    loose = objects / oid[:2] / oid[2:]
    loose.chmod(0o600)
    loose.write_bytes(loose.read_bytes()[:loose.stat().st_size // 2])
    # git itself refuses it (libgit2 would loop forever on it, holding the GIL)
    assert git(wt, "cat-file", "-p", oid, check=False,
               env=live_objects(main)).returncode != 0
    return oid, loose


@pytest.mark.parametrize("where", ["staged", "stored"])
def test_a_truncated_loose_object_of_a_sibling_is_named_and_wedges_nothing(tmp_path, where):
    """A sibling's live blob whose loose file is cut short: the push the service answers,
    the one judged in process and `scan` all finish, judge that sibling on its commits
    (the push that must yield stays blocked) and name the object they could not read in
    one line; the service still answers afterwards and stops on SIGTERM."""
    import json
    import signal
    import time

    main, _ = hooked_repo(tmp_path)
    a, b = _conflicting_pair(main, tmp_path)
    oid, loose = _truncated_live_blob(main, a, where)
    fast = {"PROXIMITY_HOOK_TIMEOUT": "60"}  # (a wedge is a failure, not a stopped hook)
    for service in ("0", "1"):
        env = {**fast, "PROXIMITY_SERVICE": service, "PROXIMITY_SERVICE_IDLE": "120"}
        if service == "1":
            assert run(main, PY, "-m", "proximity", "service", "start",
                       env=env).returncode == 0
        p = subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=b, text=True,
                           capture_output=True, env={**os.environ, **env}, timeout=90)
        assert p.returncode != 0 and "push blocked" in p.stderr, (service, p.stderr)
        said = [ln for ln in p.stderr.splitlines() if oid[:12] in ln]
        assert len(said) == 1 and "cut short" in said[0] and "judged on its commits" \
            in said[0], (service, p.stderr)
        assert "OFF" not in p.stderr and "was stopped" not in p.stderr, p.stderr
    s = subprocess.run([PY, "-m", "proximity", "scan", "--json"], cwd=main, text=True,
                       capture_output=True, timeout=90, env={**os.environ, **fast})
    assert s.returncode == 0, s.stderr
    wt_a = next(x for x in json.loads(s.stdout)["agents"] if x["id"] == "wt-a")
    shown = os.path.join(".git", os.path.relpath(loose.parent.parent, main / ".git"))
    assert oid[:12] in wt_a["unread"] and f"in {shown} is cut short" in wt_a["unread"], wt_a
    # the service judged it without wedging: it answers, and a real SIGTERM stops it
    st = run(main, PY, "-m", "proximity", "service", "status", "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["running"], st.stdout
    pid = json.loads((main / ".git" / "ecm" / "service.json").read_text())["pid"]
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + 15
    while time.monotonic() < end and _running(pid):
        time.sleep(0.1)
    assert not _running(pid), "the service ignored SIGTERM"


def test_a_loose_object_damaged_after_it_was_read_is_named_when_the_state_moves(tmp_path):
    """A sibling's live blob the service read whole, cut short afterwards (a bad disk,
    another process): the next state the service builds of that worktree (a save of
    another file, over the state it keeps) lists its objects again. The push it answers
    names the object and finishes; the service still answers."""
    main, _ = hooked_repo(tmp_path)
    a, b = _conflicting_pair(main, tmp_path)
    env = {"PROXIMITY_HOOK_TIMEOUT": "60", "PROXIMITY_SERVICE": "1",
           "PROXIMITY_SERVICE_IDLE": "120"}
    assert run(main, PY, "-m", "proximity", "service", "start", env=env).returncode == 0
    (a / "big.txt").write_text("".join(f"live line {i} {i * i}\n" for i in range(20000)))
    oid = git(a, "hash-object", "big.txt").stdout.strip()
    loose = main / ".git" / "ecm" / "store" / "objects" / oid[:2] / oid[2:]

    def push() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=b, text=True,
                              capture_output=True, env={**os.environ, **env}, timeout=90)

    try:
        _judged_after_damage(main, a, loose, oid, push)
    finally:  # (a wedged service ignores SIGTERM: it must not outlive the test)
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(json.loads((main / ".git" / "ecm" / "service.json").read_text())["pid"],
                    9)


def _judged_after_damage(main: Path, a: Path, loose: Path, oid: str,
                         push: Callable[[], subprocess.CompletedProcess[str]]) -> None:
    first = push()  # the service reads a's state, big.txt's blob whole, and keeps it
    assert first.returncode != 0 and "push blocked" in first.stderr, first.stderr
    assert loose.exists() and oid[:12] not in first.stderr
    loose.chmod(0o600)
    loose.write_bytes(loose.read_bytes()[:loose.stat().st_size // 2])
    (a / "g.txt").write_text(lines(10, "g") + "one more\n")  # the state moves on
    again = push()
    assert again.returncode != 0 and "push blocked" in again.stderr, again.stderr
    said = [ln for ln in again.stderr.splitlines() if oid[:12] in ln]
    assert len(said) == 1 and "cut short" in said[0], again.stderr
    st = run(main, PY, "-m", "proximity", "service", "status", "--json")
    state = json.loads(st.stdout)
    # running and answering: not wedged in libgit2 (its hooks then fell back in process)
    assert st.returncode == 0 and state["running"] and isinstance(state["status"], dict), \
        st.stdout
    assert state["status"]["answered"]["hook_fallback"] == 0, state["status"]["answered"]


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1]
    except OSError:
        return False
    return not state.startswith(("Z", "X"))


def test_a_guard_that_cannot_judge_says_it_is_off_in_one_line(tmp_path, monkeypatch, capsys):
    """The fallback when no verdict can be computed at all: never silently off."""
    import io

    from proximity.errors import LedgerError
    from proximity.hooks import gate
    from proximity.main import main as cli

    main, _ = hooked_repo(tmp_path)
    _a, b = _conflicting_pair(main, tmp_path)

    def cannot(*_args: object, **_kw: object) -> None:
        raise LedgerError("the ledger x is read-only and nothing could be read from it")

    monkeypatch.setattr(gate, "judge", cannot)
    monkeypatch.chdir(b)
    head = git(b, "rev-parse", "HEAD").stdout.strip()
    monkeypatch.setattr("sys.stdin", io.StringIO(
        f"refs/heads/feat/b {head} refs/heads/feat/b {'0' * 40}\n"))
    assert cli(["hook", "pre-push", "origin", str(tmp_path / "remote.git")]) == 0
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["proximity: the push guard is OFF for this push: the ledger x is "
                    "read-only and nothing could be read from it; fix that (see `proximity "
                    "doctor`), then push again"], said


def test_a_hung_interpreter_is_stopped_and_git_goes_on(tmp_path):
    """The hook has an overall time limit (PROXIMITY_HOOK_TIMEOUT): an interpreter that
    hangs, even one deaf to ALRM and TERM, is stopped and the commit and the push go on,
    with one line saying so; the deliberate block still fails the commit."""
    import time

    main, _ = hooked_repo(tmp_path)
    hung = tmp_path / "hung-python"
    pids = tmp_path / "pids"
    shim(tmp_path, "hung-python", f"echo $$ >>{pids}; exec sleep 600")
    deaf = tmp_path / "deaf-python"
    shim(tmp_path, "deaf-python", f"echo $$ >>{pids}; trap '' ALRM TERM; exec sleep 600")
    for interpreter, most in ((hung, 8.0), (deaf, 10.0)):
        env = {"PROXIMITY_PYTHON": str(interpreter), "PROXIMITY_HOOK_TIMEOUT": "2"}
        t = time.monotonic()
        r = commit(main, env=env)
        took = time.monotonic() - t
        assert r.returncode == 0, r.stderr
        assert 2.0 <= took < most, took
        assert "the proximity pre-commit hook was stopped after 2 s" in r.stderr, r.stderr
        assert "PROXIMITY_HOOK_TIMEOUT=2" in r.stderr and "git goes on" in r.stderr
        said = r.stderr.splitlines()  # pre-commit's and post-commit's: one line each
        assert len(said) == 2 and all("was stopped" in line for line in said), said
    for pid in map(int, pids.read_text().split()):  # none is left behind
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    t = time.monotonic()
    p = run(main, "git", "push", "-q", "origin", "main", env=env)
    assert p.returncode == 0 and time.monotonic() - t < 10.0, p.stderr
    assert "push guard is OFF for this push" in p.stderr, p.stderr
    # the deliberate block is no timeout: it fails the commit as ever
    shim(tmp_path, "blocking-python", "exit 99")
    r = commit(main, env={"PROXIMITY_PYTHON": str(tmp_path / "blocking-python")})
    assert r.returncode != 0 and "was stopped" not in r.stderr, r.stderr


def holders_of(pipe_end: int) -> list[str]:
    """The processes, other than this one, holding the pipe that ``pipe_end`` reads."""
    ino = os.fstat(pipe_end).st_ino
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == f"pipe:[{ino}]" for fd in fds):
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{pid}: {cmd[:120]}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.parametrize("service", ["0", "1"])
def test_no_hook_holds_its_callers_pipes_after_git_returns(tmp_path, monkeypatch, service):
    """A caller that captures git's output (every agent, IDE and CI does) reads until the
    last holder of the pipe closes it: nothing a hook leaves running (the time limit's
    watchdog, a service it starts) may hold git's stdout or stderr once git has returned,
    or every captured commit, switch and push waits for it."""
    monkeypatch.setenv("PROXIMITY_SERVICE", service)
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "20")
    main, _ = hooked_repo(tmp_path)
    common = str(main / ".git")

    def captured(*args: str) -> None:
        p = subprocess.Popen(["git", *args], cwd=main, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert p.wait(timeout=60) == 0, args
            left = holders_of(p.stdout.fileno()) + holders_of(p.stderr.fileno())  # type: ignore[union-attr]
            assert left == [], (args, left)
        finally:
            p.communicate()

    try:
        for i in range(2):
            (main / "n.txt").write_text(f"{i}\n")
            git(main, "add", "n.txt")
            captured("commit", "-qm", f"edit {i}")
            captured("switch", "-q", "-c", f"topic{i}")
            captured("switch", "-q", "main")
            captured("push", "-q", "origin", "main")
    finally:
        if service == "1":
            from proximity.commands import service as service_cmd

            service_cmd.stop(os.path.realpath(common), timeout=10.0)


def test_every_pre_push_that_did_not_judge_says_the_guard_is_off(tmp_path):
    """An interpreter that fails (exit 1), none at all, or a program that exits 0 without
    running anything (it passed for a judged "go on", silently): the push goes on, and
    its line says the guard is off for it, never only that a hook failed; doctor fails
    the interpreter."""
    main, _ = hooked_repo(tmp_path)
    commit(main)
    d = run(main, sys.executable, "-m", "proximity", "doctor", "--json",
            env={"PROXIMITY_PYTHON": "/bin/true"})
    row = next(c for c in json.loads(d.stdout)["checks"] if c["check"] == "hook interpreter")
    assert row["status"] == "fail" and "/bin/true exited 0" in row["detail"], row
    for python in ("/bin/false", "/nonexistent/python3", "/bin/true"):
        p = run(main, "git", "push", "-q", "origin", "main",
                env={"PROXIMITY_PYTHON": python, "PATH": "/usr/bin:/bin"})
        assert p.returncode == 0, p.stderr
        assert "the push guard is OFF for this push" in p.stderr, (python, p.stderr)
        commit(main)


@pytest.mark.parametrize("value", ["99999999999999999999", "ten", "-5", "1e3"])
def test_a_hook_time_limit_out_of_range_is_the_default_with_one_warning(tmp_path, value):
    """The shell's arithmetic overflows on 20 digits (and refuses words): such a limit is
    the default, 30 s, said once per hook, never a watchdog that fires at once and turns
    the guard off."""
    main, _ = hooked_repo(tmp_path)
    r = commit(main, env={"PROXIMITY_HOOK_TIMEOUT": value})
    assert r.returncode == 0, r.stderr
    said = r.stderr.splitlines()
    assert said and all(f"PROXIMITY_HOOK_TIMEOUT={value} is not a number of seconds" in line
                        and "using 30" in line for line in said), said
    assert not any("was stopped" in line for line in said), said
    assert any(e["kind"] == "commit" for e in events(main))
