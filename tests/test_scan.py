"""The channels and advisories on real repositories with real worktrees."""

from __future__ import annotations

import pytest
from conftest import git, lines, pair

FUNCS = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(40))


def test_same_lines_is_resolution_via_conflict_and_overlap(space, scan_json, capsys):
    sp = space({"src/app.py": lines(50)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "src/app.py", lines(50).replace("line 20\n", "line twenty (a)\n"))
    sp.write(b, "src/app.py", lines(50).replace("line 20\n", "line 20 (b)\n"))
    r = scan_json(sp.main, capsys=capsys)
    p = pair(r, "a", "b")
    assert p["advisory"] == "resolution"
    assert p["channels"]["conflict"] == 1.0
    assert p["channels"]["overlap"] >= 0.75
    assert p["yielding"] in ("a", "b")
    hit = next(f for f in p["findings"] if f["channel"] == "overlap")
    assert hit["path_a"] == "src/app.py" and hit["ranges_a"] == [[20, 20]]
    assert {"id", "branch", "path"} <= set(r["agents"][0])
    assert {"a", "b", "risk", "distance", "advisory", "channels", "yielding"} <= set(p)


def test_same_file_far_apart_is_never_resolution(space, scan_json, capsys):
    sp = space({"mod.py": FUNCS})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "mod.py", FUNCS.replace("y = x + 1\n", "y = x + 1001\n"))
    sp.write(b, "mod.py", FUNCS.replace("y = x + 38\n", "y = x - 38\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0
    assert p["advisory"] in ("clear", "traffic")
    assert 0 < p["channels"]["overlap"] < 0.35


def test_importer_in_distant_directory_is_a_few_percent_via_dependency(space, scan_json,
                                                                        capsys):
    """An import alone is a few percent (calibrated), not a collision: no advisory."""
    files = {"core/db/engine.py": "def connect():\n    return 1\n",
             "web/handlers/users.py": "from core.db import engine\n\n\ndef get():\n"
                                      "    return engine.connect()\n"}
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "core/db/engine.py", "def connect():\n    return 2\n")
    sp.write(b, "web/handlers/users.py", files["web/handlers/users.py"] + "\n\nX = 1\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert 0 < p["channels"]["dependency"] < 0.1
    assert p["advisory"] == "clear"
    dep = next(f for f in p["findings"] if f["channel"] == "dependency")
    assert "imports" in dep["detail"] and dep["kind"] == "import-1"


def test_common_import_couples_two_hops_through_untouched_module(space, scan_json, capsys):
    files = {"shared/config.py": "DEBUG = False\n",
             "api/server.py": "from shared import config\n\n\ndef run():\n    return 1\n",
             "jobs/worker.py": "import shared.config\n\n\ndef work():\n    return 2\n"}
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "api/server.py", files["api/server.py"].replace("return 1", "return 10"))
    sp.write(b, "jobs/worker.py", files["jobs/worker.py"].replace("return 2", "return 20"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    dep = next(f for f in p["findings"] if f["channel"] == "dependency")
    assert dep["route"] == ["api/server.py", "shared/config.py", "jobs/worker.py"]
    assert dep["kind"] == "import-2"  # two hops through the untouched module
    # a few percent: the fitted table's value (benchmarks/calibrate.py), not a constant
    assert 0 < p["channels"]["dependency"] < 0.1
    assert p["advisory"] == "clear"


def test_unrelated_directories_are_clear(space, scan_json, capsys):
    sp = space({"frontend/app.js": "export const a = 1;\n", "backend/main.go": "package main\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "frontend/app.js", "export const a = 2;\n")
    sp.write(b, "backend/main.go", "package main\n\nfunc main() {}\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "clear"
    assert p["channels"]["conflict"] == 0.0 and p["channels"]["overlap"] == 0.0
    assert p["channels"]["dependency"] == 0.0


def test_modify_delete_is_resolution(space, scan_json, capsys):
    sp = space({"docs/guide.md": lines(30), "other.txt": "x\n"})
    a, b = sp.wt("a"), sp.wt("b")
    (a / "docs/guide.md").unlink()
    sp.commit(a, "drop the guide")
    sp.write(b, "docs/guide.md", lines(30) + "more\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert p["channels"]["conflict"] == 1.0


def test_untracked_files_are_in_the_working_set(space, scan_json, capsys):
    sp = space({"README": "hi\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "new/thing.py", "A = 1\n")
    sp.write(b, "new/thing.py", "A = 2\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"  # add/add with different content


def test_ignored_files_are_not(space, scan_json, capsys):
    sp = space({".gitignore": "build/\n", "README": "hi\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "build/out.txt", "1\n")
    sp.write(b, "build/out.txt", "2\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "clear"


@pytest.mark.parametrize(("line_a", "line_b"), [(10, 11), (10, 12), (10, 10), (10, 13)])
def test_adjacent_edits_resolution_exactly_when_git_conflicts(space, scan_json, capsys,
                                                               line_a, line_b):
    text = lines(30)
    sp = space({"f.txt": text})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", text.replace(f"line {line_a}\n", f"line {line_a} A\n"))
    sp.write(b, "f.txt", text.replace(f"line {line_b}\n", f"line {line_b} B\n"))
    sp.commit(a)
    sp.commit(b)
    merged = git(sp.main, "merge-tree", "--write-tree", "feat/a", "feat/b", check=False)
    git_conflicts = merged.returncode == 1
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert (p["advisory"] == "resolution") == git_conflicts
    # the heuristic alone agrees with git too (it is what remote agents rely on)
    assert (p["channels"]["overlap"] >= 0.7) == git_conflicts


def test_right_of_way_is_deterministic_and_favours_committed_work(space, scan_json, capsys):
    sp = space({"f.txt": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", lines(10).replace("line 5\n", "A\n"))
    sp.commit(a)
    sp.write(b, "f.txt", lines(10).replace("line 5\n", "B\n"))
    r1 = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    r2 = pair(scan_json(b, capsys=capsys), "a", "b")
    assert r1["yielding"] == r2["yielding"] == "b"
    assert r1["priority"]["a"]["committed"] == 1


def test_status_in_a_pipe_is_plain_text(space, capsys):
    from proximity.main import main

    sp = space({"f.txt": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", lines(10).replace("line 5\n", "A\n"))
    sp.write(b, "f.txt", lines(10).replace("line 5\n", "B\n"))
    assert main(["status", "-C", str(sp.main)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    assert "resolution" in out and "a ~ b" in out
    drawn = [c for c in out if 0x2500 <= ord(c) <= 0x259F]  # box drawing, blocks
    assert not drawn, drawn[:5]  # borders and risk bars in ASCII
    assert "+---" in out and "#" in out


def test_demo_runs_and_shows_all_three_advisory_kinds(capsys, tmp_path):
    import json

    from proximity.main import main

    assert main(["demo", "--json", "--dir", str(tmp_path / "demo")]) == 0
    r = json.loads(capsys.readouterr().out)
    assert {a["id"] for a in r["agents"]} == {"main", "alice", "bob", "carol"}
    assert pair(r, "alice", "bob")["advisory"] == "resolution"  # the same lines
    ac = pair(r, "alice", "carol")  # a call that no longer binds, in another file
    assert ac["channels"]["symbol"] >= 0.7 and ac["advisory"] == "resolution"
    assert ac["channels"]["conflict"] == 0.0
    f = next(x for x in ac["findings"] if x["channel"] == "symbol")
    assert f["kind"] == "incompatible-call" and "tenant" in f["detail"]
    assert pair(r, "bob", "carol")["advisory"] == "traffic"  # carol's intent on bob's file
    assert pair(r, "main", "alice")["advisory"] == "clear"


def test_demo_says_whose_view_each_advisory_is_and_what_to_do_next(tmp_path):
    """A newcomer reads the demo's text: each advisory block names whose view it is, the
    end gives the next step for their own repository, and the repository is deleted with
    a word on how to keep it (or kept, and its place named)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    def demo(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "proximity", "demo", *args],
                             capture_output=True, text=True, check=True, cwd=tmp_path)
        return out.stdout

    text = demo()
    assert "as worktree 'bob' sees it (its pair with 'alice')" in text
    assert "as worktree 'carol' sees it (its pair with 'alice')" in text
    assert "Now on your own repository:" in text and "proximity install" in text
    assert "was deleted; `proximity demo --keep` keeps it" in text
    kept = demo("--keep")
    where = kept.split("The demo repository stays in ", 1)[1].split(" (cd there", 1)[0]
    try:
        assert any(Path(where).rglob(".git")), where  # the repository and its worktrees
    finally:
        shutil.rmtree(where, ignore_errors=True)
