"""Two machines (clones) share one airspace through a local bare remote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import git, lines

from proximity.main import main

PY = sys.executable


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "proximity", *args], capture_output=True, text=True)


def machines(tmp_path: Path, toml: str = "", sync: bool = False) -> tuple[Path, Path, Path]:
    """A bare remote and two clones with hooks; ``sync``: the pre-push hook syncs (a key only
    the user's own git config may set)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(remote), str(seed))
    (seed / "f.txt").write_text(lines(30))
    if toml:
        (seed / ".proximity.toml").write_text(toml)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "base")
    git(seed, "push", "-q", "origin", "HEAD:main")
    out = []
    for name in ("m1", "m2"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(clone))
        assert cli("install", "-C", str(clone)).returncode == 0
        if sync:
            git(clone, "config", "proximity.sync", "true")
        out.append(clone)
    return remote, out[0], out[1]


def agent_ids(scan: dict) -> set[str]:  # type: ignore[type-arg]
    return {a["id"] for a in scan["agents"]}


def scan(where: Path) -> dict:  # type: ignore[type-arg]
    r = cli("scan", "--json", "-C", str(where))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_two_machines_same_lines_same_yielding_agent_then_prune(tmp_path):
    _remote, m1, m2 = machines(tmp_path)
    a, b = tmp_path / "m1-a", tmp_path / "m2-b"
    git(m1, "worktree", "add", "-q", "-b", "feat/a", str(a))  # created first: right of way
    git(m2, "worktree", "add", "-q", "-b", "feat/b", str(b))
    (a / "f.txt").write_text(lines(30).replace("line 10\n", "machine one\n"))
    git(a, "commit", "-qam", "a")
    (b / "f.txt").write_text(lines(30).replace("line 10\n", "machine two\n"))
    git(b, "commit", "-qam", "b")
    for where in (m1, m2, m1):
        r = cli("sync", "--json", "-C", str(where))
        assert r.returncode == 0, r.stderr
    id1 = (m1 / ".git" / "ecm" / "machine-id").read_text().strip()
    id2 = (m2 / ".git" / "ecm" / "machine-id").read_text().strip()
    assert id1 != id2
    s1, s2 = scan(a), scan(b)
    assert f"{id2}/m2-b" in agent_ids(s1) and f"{id1}/m1-a" in agent_ids(s2)
    remote_agent = next(x for x in s1["agents"] if x["id"] == f"{id2}/m2-b")
    assert remote_agent["remote"] is True and remote_agent["branch"] == "feat/b"
    p1 = next(p for p in s1["pairs"] if {p["a"], p["b"]} == {"m1-a", f"{id2}/m2-b"})
    p2 = next(p for p in s2["pairs"] if {p["a"], p["b"]} == {f"{id1}/m1-a", "m2-b"})
    assert p1["advisory"] == p2["advisory"] == "resolution"
    assert p1["channels"]["conflict"] == p2["channels"]["conflict"] == 1.0  # exact, remotely
    glob = {"m1-a": f"{id1}/m1-a", f"{id2}/m2-b": f"{id2}/m2-b",
            f"{id1}/m1-a": f"{id1}/m1-a", "m2-b": f"{id2}/m2-b"}
    assert glob[p1["yielding"]] == glob[p2["yielding"]] == f"{id2}/m2-b"
    # the yielding machine's push is blocked; the other's goes through
    r = subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=b, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "push blocked" in r.stderr and "m1-a" in r.stderr
    r = subprocess.run(["git", "push", "-q", "origin", "feat/a"], cwd=a, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    # retire machine one's worktree and prune: nothing of it remains on the remote
    git(m1, "worktree", "remove", "--force", str(a))
    r = cli("sync", "--prune", "--json", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    refs = git(m1, "ls-remote", "origin", "refs/ecm/*").stdout
    assert f"refs/ecm/{id1}/m1-a" not in refs and f"refs/ecm/{id2}/m2-b" in refs
    assert json.loads(r.stdout)["pruned"] == 1


def test_remote_that_rejects_custom_refs_never_breaks_the_push(tmp_path):
    remote, m1, _ = machines(tmp_path, sync=True)
    hook = remote / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/heads/*) ;; "
                    "*) echo \"only branches here\" >&2; exit 1;; esac; done\n")
    hook.chmod(0o755)
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 1
    assert "did not take refs/ecm/*" in r.stderr and "Traceback" not in r.stderr
    (m1 / "g.txt").write_text("g\n")
    git(m1, "add", "g.txt")
    git(m1, "commit", "-qm", "g")
    p = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=m1, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "sync skipped" in p.stderr


def test_unreachable_remote_is_a_clear_error(tmp_path, capsys):
    _, m1, _ = machines(tmp_path)
    git(m1, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    assert main(["sync", "gone", "-C", str(m1)]) == 1
    err = capsys.readouterr().err
    assert "gone" in err and "Traceback" not in err


def test_stale_remote_snapshots_never_block(tmp_path, monkeypatch):
    from proximity.remote import inbound as remote_mod

    _, m1, m2 = machines(tmp_path)
    b = tmp_path / "m2-b"
    git(m2, "worktree", "add", "-q", "-b", "feat/b", str(b))
    (b / "f.txt").write_text(lines(30).replace("line 10\n", "two\n"))
    (m1 / "f.txt").write_text(lines(30).replace("line 10\n", "one\n"))
    for where in (m2, m1):
        assert cli("sync", "-C", str(where)).returncode == 0
    assert any(x["remote"] for x in scan(m1)["agents"])
    monkeypatch.setattr(remote_mod, "TTL_SECONDS", -1)  # every snapshot is now too old
    from proximity.snapshot import workspace

    ctx = workspace.open_context(str(m1))
    try:
        assert remote_mod.agents(ctx) == []
        assert remote_mod.agents(ctx, include_stale=True)
    finally:
        ctx.close()


def test_a_remote_named_by_a_relative_path_is_reached_from_every_worktree(tmp_path):
    # `git remote add origin ../remote.git`: git reads the path from the worktree's top,
    # and so does sync, wherever it fetches through (its quarantine lies elsewhere)
    _remote, m1, m2 = machines(tmp_path)
    for m in (m1, m2):
        git(m, "remote", "set-url", "origin", "../remote.git")
    a = tmp_path / "m1-a"
    git(m1, "worktree", "add", "-q", "-b", "feat/a", str(a))
    (a / "f.txt").write_text(lines(30).replace("line 10\n", "machine one\n"))
    (m2 / "sub").mkdir()
    for where in (a, m2 / "sub"):
        r = cli("sync", "--json", "-C", str(where))
        assert r.returncode == 0, r.stderr
    id1 = (m1 / ".git" / "ecm" / "machine-id").read_text().strip()
    assert f"{id1}/m1-a" in agent_ids(scan(m2))
    # a worktree one level deeper: git reads the path from there and finds nothing; sync
    # says so (it blamed the remote: "did not take refs/ecm/*")
    deep = tmp_path / "deeper" / "m1-d"
    git(m1, "worktree", "add", "-q", "-b", "feat/d", str(deep))
    r = cli("sync", "-C", str(deep))
    assert r.returncode != 0 and "relative path '../remote.git'" in r.stderr, r.stderr
    assert "did not take" not in r.stderr
