from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests assert what is true, not how fast: Hypothesis's per-example deadline
# (200 ms) fails them on a loaded machine, where one example can wait that long for a core.
settings.register_profile("proximity", deadline=None)
settings.load_profile("proximity")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                 ) -> None:
    """No user or system git config leaks in; templates are empty."""
    home = tmp_path_factory.mktemp("home")
    cfg = home / ".gitconfig"
    cfg.write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    tpl = home / "template"
    tpl.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(tpl))
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    # hooks would start a resident service per test repository; tests that want one
    # (test_service.py) turn it on and shut it down themselves
    monkeypatch.setenv("PROXIMITY_SERVICE", "0")
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "PROXIMITY_ALLOW", "NO_COLOR"):
        monkeypatch.delenv(k, raising=False)


def git(cwd: str | Path, *args: str, check: bool = True, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=check, env={**os.environ, **(env or {})})


def live_objects(repo: str | Path) -> dict[str, str]:
    """The environment in which a test's git reads what proximity wrote for live work
    (snapshot trees and their blobs): the private object store beside the ledger."""
    common = subprocess.run(["git", "rev-parse", "--path-format=absolute",
                             "--git-common-dir"], cwd=repo, capture_output=True, text=True,
                            check=True).stdout.strip()
    path = os.path.join(common, "ecm", "store", "objects")
    # (git's list is ':'-separated: a path holding one is C-quoted)
    quoted = '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return {"GIT_ALTERNATE_OBJECT_DIRECTORIES": quoted if ":" in path else path}


def init_repo(path: Path, files: dict[str, str]) -> Path:
    """A new repository at ``path`` with ``files`` committed as "base"."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


@dataclass
class Space:
    """A repository with worktrees under one tmp dir."""

    root: Path
    main: Path

    def wt(self, name: str, branch: str | None = None) -> Path:
        path = self.root / name
        git(self.main, "worktree", "add", "-q", "-b", branch or f"feat/{name}", str(path))
        return path

    def write(self, where: Path, rel: str, text: str | bytes) -> None:
        p = where / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)

    def commit(self, where: Path, msg: str = "change") -> None:
        git(where, "add", "-A")
        git(where, "commit", "-q", "-m", msg)


@pytest.fixture
def space(tmp_path: Path) -> Callable[[dict[str, str]], Space]:
    def make(files: dict[str, str]) -> Space:
        main = tmp_path / "repo"
        main.mkdir()
        git(main, "init", "-q")
        sp = Space(tmp_path, main)
        for rel, text in files.items():
            sp.write(main, rel, text)
        if files:
            sp.commit(main, "base")
        return sp

    return make


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def held_over(sp: Space, a: Path, b: Path, text: str, far: int) -> None:
    """In app.txt (``text``): a commits lines 10-12, b commits line 11 and line
    ``far``, which a never touched. A scan then tells b to yield to a (a came first)."""
    sp.write(a, "app.txt", text.replace("line 10\n", "line 10 a\n").replace(
        "line 11\n", "line 11 a\n").replace("line 12\n", "line 12 a\n"))
    sp.commit(a, "a's three lines")
    sp.write(b, "app.txt", text.replace("line 11\n", "line 11 b\n").replace(
        f"line {far}\n", f"line {far} b\n"))
    sp.commit(b, f"b's line 11, and line {far} that a never touched")


@pytest.fixture
def scan_json() -> Iterator[Callable[..., dict]]:  # type: ignore[type-arg]
    import json

    from proximity.main import main

    def run(where: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
        rc = main(["scan", "--json", "-C", str(where), *extra])
        out = capsys.readouterr().out
        assert rc == 0, out
        return json.loads(out)  # type: ignore[no-any-return]

    yield run


def pair(result: dict, a: str, b: str) -> dict:  # type: ignore[type-arg]
    for p in result["pairs"]:
        if {p["a"], p["b"]} == {a, b}:
            return p  # type: ignore[no-any-return]
    raise AssertionError(f"no pair {a}~{b} in {[(p['a'], p['b']) for p in result['pairs']]}")


def sym(r: dict, a: str = "a", b: str = "b") -> tuple[dict, list[dict]]:  # type: ignore[type-arg]
    """The pair a~b of a scan result and its symbol findings."""
    p = pair(r, a, b)
    return p, [f for f in p["findings"] if f["channel"] == "symbol"]


def two(space: Callable[[dict[str, str]], Space], files: dict[str, str]
        ) -> tuple[Space, Path, Path]:
    """A repository with ``files`` and two worktrees a and b."""
    sp = space(files)
    return sp, sp.wt("a"), sp.wt("b")


# a process holding the ledger's write lock (argv: the database, seconds to hold it); it
# prints "locked" once it holds it
HOLD_LEDGER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def stop(proc: subprocess.Popen[str]) -> None:
    """Kill a helper process a test started and close its output pipe."""
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
