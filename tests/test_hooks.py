"""End to end: real hooks, real commits, real pushes to a local bare remote."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, lines, live_objects

ROOT = Path(__file__).resolve().parent.parent
BASE = lines(40)


def run(cwd, *args, env=None):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def make_repo(tmp_path: Path, config: str | None = None,
              config_name: str = ".pre-commit-config.yaml") -> tuple[Path, Path]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    (main / "f.txt").write_text(BASE)
    (main / "other.txt").write_text(lines(10, "other"))
    if config is not None:
        (main / config_name).write_text(config)
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "base")
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "main")
    return main, remote


def collide(main: Path, root: Path) -> tuple[Path, Path]:
    """Worktrees a (created first: right of way) and b edit line 20 and commit."""
    a, b = root / "wt-a", root / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        r = git(main, "worktree", "add", "-q", "-b", br, str(wt))
        assert r.returncode == 0
    (a / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by a\n"))
    ra = git(a, "commit", "-qam", "a edits line 20")
    (b / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by b\n"))
    rb = git(b, "commit", "-qam", "b edits line 20")
    return a, b, ra, rb  # type: ignore[return-value]


def scenario(main: Path, tmp_path: Path) -> None:
    a, b, _ra, rb = collide(main, tmp_path)
    # the second commit sees the first: the advisory is in the commit output
    assert "RESOLUTION ADVISORY" in rb.stderr + rb.stdout, rb.stderr + rb.stdout
    assert "wt-a" in rb.stderr + rb.stdout and "f.txt" in rb.stderr + rb.stdout
    # the yielding worktree's push is blocked, with the explanation
    pb = run(b, "git", "push", "-q", "origin", "feat/b")
    assert pb.returncode != 0
    out = pb.stderr + pb.stdout
    assert "push blocked" in out and "wt-a" in out and "f.txt" in out
    assert "20" in out and "PROXIMITY_ALLOW=1" in out
    assert "feat/b" not in git(main, "ls-remote", "origin").stdout
    # right of way pushes
    pa = run(a, "git", "push", "-q", "origin", "feat/a")
    assert pa.returncode == 0, pa.stderr
    # override works
    po = run(b, "git", "push", "-q", "--dry-run", "origin", "feat/b",
             env={"PROXIMITY_ALLOW": "1"})
    assert po.returncode == 0, po.stderr
    # a tag carries no work to judge: it goes through even on the commit that must yield
    git(b, "tag", "v-b")
    pt = run(b, "git", "push", "-q", "origin", "v-b")
    assert pt.returncode == 0, pt.stderr + pt.stdout
    assert "refs/tags/v-b" in git(main, "ls-remote", "origin").stdout
    # b steers away: moves its work to another file; now its push goes through
    (b / "f.txt").write_text(BASE)
    (b / "other.txt").write_text(lines(10, "other") + "b's work, elsewhere\n")
    assert git(b, "commit", "-qam", "b moves elsewhere").returncode == 0
    pb2 = run(b, "git", "push", "-q", "origin", "feat/b")
    assert pb2.returncode == 0, pb2.stderr
    assert "feat/b" in git(main, "ls-remote", "origin").stdout


def events(where: Path) -> list[dict]:  # type: ignore[type-arg]
    import json

    out = subprocess.run([sys.executable, "-m", "proximity", "ledger", "--json", "-n", "500"],
                         cwd=where, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["events"]  # type: ignore[no-any-return]


def newest(where: Path, stream: str) -> dict:  # type: ignore[type-arg]
    return next(e for e in events(where) if e["stream"] == stream)


def post_stages(main: Path, tmp_path: Path) -> None:
    """Each post-* hook records its event (after `scenario`): a checkout, a new worktree, a
    fast-forward merge (nothing but git's post-merge says it was one) and an amend."""
    git(main, "switch", "-q", "-c", "topic")
    ev = newest(main, "main")
    assert (ev["kind"], ev["branch"]) == ("checkout", "topic"), ev
    git(main, "switch", "-q", "main")
    d = tmp_path / "wt-d"
    git(main, "worktree", "add", "-q", "-b", "feat/d", str(d))
    assert newest(main, "wt-d")["kind"] == "worktree-add"
    git(main, "merge", "-q", "--ff-only", "feat/a")
    ev = newest(main, "main")
    assert (ev["kind"], ev["head"]) == ("merge", git(main, "rev-parse", "HEAD").stdout.strip())
    git(main, "commit", "-q", "--amend", "-m", "amended")
    assert newest(main, "main")["kind"] == "rewrite"


def commit_styles(main: Path, tmp_path: Path) -> None:
    """Plain, -a and `git commit <path>` commits in main and a linked worktree all record."""
    c = tmp_path / "wt-c"
    git(main, "worktree", "add", "-q", "-b", "feat/c", str(c))
    for where in (main, c):
        (where / "n1.txt").write_text("1\n")
        git(where, "add", "n1.txt")
        assert git(where, "commit", "-qm", "plain").returncode == 0
        (where / "n1.txt").write_text("2\n")
        assert git(where, "commit", "-qam", "all").returncode == 0
        (where / "n1.txt").write_text("3\n")
        (where / "n2.txt").write_text("untracked\n")
        assert git(where, "commit", "-qm", "path", "n1.txt").returncode == 0
    evs = events(main)
    for stream in ("main", "wt-c"):
        kinds = [e["kind"] for e in evs if e["stream"] == stream]
        assert kinds.count("commit") >= 3, (stream, kinds)
        assert kinds.count("pre-commit") >= 3, (stream, kinds)
    # the path-limited commit's pre-commit snapshot saw the temporary index, and the
    # working state (untracked n2.txt) is in every snapshot of c after it appeared
    # (events keep only what changed since the stream's previous one: the snapshot tree
    # is where the whole working state lives)
    last_c = next(e for e in evs if e["stream"] == "wt-c")
    assert "n2.txt" in git(main, "ls-tree", "--name-only", last_c["tree"],
                           env=live_objects(main)).stdout.split()


def test_plain_hooks_end_to_end(tmp_path):
    main, _ = make_repo(tmp_path)
    r = subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    scenario(main, tmp_path)
    post_stages(main, tmp_path)
    commit_styles(main, tmp_path)


def test_install_chains_an_existing_hook_and_uninstall_restores_it(tmp_path):
    main, _ = make_repo(tmp_path)
    hook = main / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho mine-ran >&2\nexit 0\n")
    hook.chmod(0o755)
    assert subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main).returncode == 0
    (main / "x").write_text("x\n")
    git(main, "add", "x")
    r = git(main, "commit", "-qm", "x")
    assert "mine-ran" in r.stderr
    hook.with_name("pre-commit.pre-proximity").write_text("#!/bin/sh\nexit 3\n")
    (main / "y").write_text("y\n")
    git(main, "add", "y")
    assert git(main, "commit", "-qm", "y", check=False).returncode != 0  # its veto stands
    subprocess.run([sys.executable, "-m", "proximity", "uninstall"], cwd=main, check=True)
    assert hook.read_text() == "#!/bin/sh\nexit 3\n"


def test_install_refuses_foreign_hooks_path(tmp_path, capsys):
    from proximity.main import main as cli

    main, _ = make_repo(tmp_path)
    git(main, "config", "core.hooksPath", ".husky")
    assert cli(["install", "-C", str(main)]) == 1
    assert "core.hooksPath" in capsys.readouterr().err


def test_hooks_fail_open_on_a_corrupt_ledger(tmp_path):
    main, _ = make_repo(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True)
    a, _b, _, _ = collide(main, tmp_path)
    ledger = main / ".git" / "ecm" / "ledger.sqlite3"
    for p in ledger.parent.glob("ledger.sqlite3*"):
        p.unlink()
    ledger.write_bytes(b"this is not a database" * 100)
    before = ledger.read_bytes()
    (a / "z.txt").write_text("z\n")
    git(a, "add", "z.txt")
    r = git(a, "commit", "-qm", "still works", check=False)
    assert r.returncode == 0
    assert "corrupt" in r.stderr or "not a database" in r.stderr
    assert ledger.read_bytes() == before  # never overwritten
    d = subprocess.run([sys.executable, "-m", "proximity", "doctor"], cwd=main,
                       capture_output=True, text=True)
    assert d.returncode == 1 and "mv " in d.stdout


# -- the real pre-commit framework -------------------------------------------------------

def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    """This project, committed as a hook repository pre-commit can clone."""
    dst = tmp_path_factory.mktemp("hookrepo")
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split("\n")
    for rel in tracked:
        if not rel or not (rel.startswith(("proximity/", "hooks/")) or rel in (
                "pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "LICENSE")):
            continue
        src = ROOT / rel
        if not src.exists() and not src.is_symlink():
            continue
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst / rel)
        else:
            shutil.copy2(src, dst / rel)
    git(dst, "init", "-q")
    git(dst, "add", "-A")
    git(dst, "commit", "-qm", "proximity under test")
    return dst, git(dst, "rev-parse", "HEAD").stdout.strip()


def framework_config(repo: Path, rev: str) -> str:
    """.pre-commit-config.yaml with proximity's three ids (pre-commit and prek read it)."""
    return ("default_install_hook_types: [pre-commit, pre-push, post-commit, post-checkout,"
            " post-merge, post-rewrite]\n"
            f"repos:\n- repo: {repo}\n  rev: {rev}\n  hooks:\n"
            "  - id: proximity-snapshot\n  - id: proximity-warn\n  - id: proximity-guard\n")


@pytest.fixture(scope="session")
def precommit_home(tmp_path_factory):
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.mark.slow
def test_pre_commit_framework_end_to_end(tmp_path, tmp_path_factory, precommit_home,
                                          monkeypatch):
    monkeypatch.setenv("PRE_COMMIT_HOME", str(precommit_home))
    main, _ = make_repo(tmp_path, framework_config(*hook_repo(tmp_path_factory)))
    pc = [sys.executable, "-m", "pre_commit"]
    r = run(main, *pc, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(main, *pc, "install-hooks")
    assert r.returncode == 0, r.stdout + r.stderr
    scenario(main, tmp_path)
    post_stages(main, tmp_path)
    commit_styles(main, tmp_path)


def test_first_hook_in_a_large_repository_defers_the_graph_to_the_background(tmp_path,
                                                                           monkeypatch, capsys):
    import time

    from proximity.errors import LedgerBusy
    from proximity.ledger import Ledger
    from proximity.tcas import pairwise

    main, _ = make_repo(tmp_path)
    for i in range(30):
        (main / f"m{i}.py").write_text(f"import m{(i + 1) % 30}\n")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "modules")
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True)
    monkeypatch.setattr(pairwise, "COLD_GRAPH_FILES", 10)  # "large" for this test
    a = tmp_path / "wa"
    git(main, "worktree", "add", "-q", "-b", "a", str(a))
    (a / "m1.py").write_text("import m2\nX = 1\n")
    cwd = os.getcwd()
    os.chdir(a)
    try:
        from proximity.main import main as cli

        assert cli(["hook", "pre-commit"]) == 0  # in process, with the patched threshold
    finally:
        os.chdir(cwd)
    assert "building the import graph in the background" in capsys.readouterr().err
    ecm = str(main / ".git" / "ecm")
    for _ in range(100):  # the detached warm-up builds and stores the graph
        try:  # (it may hold the write lock right now: ask again)
            led = Ledger(ecm, create=False)
        except LedgerBusy:
            time.sleep(0.2)
            continue
        try:
            if led.has_cache("graph"):
                break
        finally:
            led.close()
        time.sleep(0.2)
    else:
        raise AssertionError("the background warm-up did not build the graph")
