"""benchmarks/coupling_study.py on a real repository: co-change history before the merge base,
what each side changed, and the early / never figures of a candidate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, init_repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import coupling_study


def commit(repo: Path, files: dict[str, str], msg: str = "change") -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def conflicts(repo: Path, a: str, b: str) -> bool:
    return subprocess.run(["git", "merge-tree", "--write-tree", a, b], cwd=repo,
                          capture_output=True, check=False).returncode == 1


def test_coupling_warns_the_pair_that_will_conflict_and_not_the_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = init_repo(tmp_path / "r", {"pkg/core.py": "c0\n", "pkg/parser.py": "p0\n",
                                      "docs/guide.md": "g0\n", "tools/run.sh": "r0\n"})
    # history: core.py and parser.py always change together; docs and tools never with them
    for i in range(1, 7):
        commit(repo, {"pkg/core.py": f"c{i}\n", "pkg/parser.py": f"p{i}\n"})
    for i in range(1, 4):
        commit(repo, {"docs/guide.md": f"g{i}\n"})
        commit(repo, {"tools/run.sh": f"r{i}\n"})
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    # a conflicting pair: A edits core.py, B edits parser.py, then B edits core.py too
    git(repo, "checkout", "-q", "-b", "a", base)
    a1 = commit(repo, {"pkg/core.py": "A\n"})
    git(repo, "checkout", "-q", "-b", "b", base)
    b1 = commit(repo, {"pkg/parser.py": "B\n"})
    b2 = commit(repo, {"pkg/core.py": "B\n"})
    # a pair that never conflicts: one side edits docs, the other tools
    git(repo, "checkout", "-q", "-b", "c", base)
    c1 = commit(repo, {"docs/guide.md": "C\n"})
    git(repo, "checkout", "-q", "-b", "d", base)
    d1 = commit(repo, {"tools/run.sh": "D\n"})
    rows = []
    for pid, steps in (("r:x", [(a1, b1), (a1, b2)]), ("r:y", [(c1, d1)])):
        labels = [conflicts(repo, a, b) for a, b in steps]
        for i, ((a, b), now) in enumerate(zip(steps, labels, strict=True)):
            rows.append({"id": pid, "repo": "r", "step": i, "a": a, "b": b,
                         "conflict_now": now, "conflict_later": any(labels[i:]),
                         "advisory": "clear", "risk": 0.0})
    assert [r["conflict_now"] for r in rows] == [False, True, False]
    path = tmp_path / "steps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    # the window stops strictly before the base: the 12 commits before it (the first commit,
    # which added all four files, included), so core.py and parser.py co-changed 7 times
    hist = coupling_study.History(str(repo / ".git"), 30)
    hist.load([base])
    assert len(hist.window_commits(base, 100)) == 12
    cp = coupling_study.Coupling(hist, base, 100, {"pkg/core.py", "pkg/parser.py"})
    f = coupling_study.step_features(cp, hist.changed(base, a1), hist.changed(base, b1))
    c, s, x, y = f["best"]["reach2"]
    assert (c, s, {x, y}) == (1.0, 7, {"pkg/core.py", "pkg/parser.py"})  # names both files
    assert not f["common"] and f["depth"] == 1 and f["parent_diff"]

    assert coupling_study.main([str(path), "--git-dir", f"r={repo / '.git'}", "--window", "100",
                                "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["windows"]["100"]["table"]
    reach = table["reach s2 c0.5"]["overall"]
    assert (reach["early"], reach["never"], reach["eligible"]) == (1.0, 0.0, 1)
    assert table["common"]["overall"]["early"] == 0.0  # no common file before the conflict
    assert table["scan warns (TA or RA)"]["overall"]["early"] == 0.0
