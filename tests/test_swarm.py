"""The swarm benchmark on a tiny history: three agents, two of which really conflict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(ENV)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).write_text(text)


def lines(n: int, tag: str = "") -> str:
    return "".join(f"def f{i}():\n    return {i}{tag}\n\n" for i in range(n))


def history(repo: Path) -> None:
    """Trunk T; branches b1 and b2 rewrite the same function of app.py (git conflicts on
    merging them), b3 works in util.py; a merge brings b3 into the trunk, then one brings
    b1, then b2, whose conflict was resolved by taking the trunk's side."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "app.py", lines(12))
    write(repo, "util.py", lines(6))
    write(repo, "other.py", lines(4))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "T")
    trunk = git(repo, "rev-parse", "HEAD")
    for name, edits in (("b3", [("util.py", lines(6, " + 3"))]),
                        ("b1", [("app.py", lines(12).replace("return 5\n", "return 50\n")),
                                ("other.py", lines(4, " * 2"))]),
                        ("b2", [("app.py", lines(12).replace("return 5\n", "return -5\n"))])):
        git(repo, "checkout", "-q", "-b", name, trunk)
        for k, (path, text) in enumerate(edits):
            write(repo, path, text)
            git(repo, "commit", "-qam", f"{name} {k}")
        git(repo, "checkout", "-q", "main")
        git(repo, "merge", "-q", "--no-ff", "-s", "ours" if name == "b2" else "ort",
            "-m", f"merge {name}", name)


@pytest.mark.parametrize("policy", ["none", "reservations", "proximity"])
def test_swarm_lands_everything_and_only_the_baseline_conflicts(tmp_path, policy):
    repo = tmp_path / "src"
    history(repo)
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PROXIMITY_SERVICE"] = "0"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "swarm.py"), "--git-dir",
                    str(repo), "--agents", "3", "--policy", policy, "--seed", "1", "--json",
                    str(out)], check=True, env=env, timeout=120, capture_output=True)
    r = json.loads(out.read_text())
    assert r["policy"] == policy and r["agents"] == 3 and r["landed"] == 3
    assert r["planned_conflicting_pairs"] == 1
    assert r["deadlocks"] == 0 and r["lost_events"] == 0
    if policy == "none":
        assert r["conflicts_at_landing"] >= 1
    else:
        assert r["conflicts_at_landing"] == 0
