"""Bad or unusual input gets a clear message or a defined result, never a traceback."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from conftest import git, lines, pair

from proximity.main import main


def test_not_a_repository(tmp_path, capsys):
    assert main(["scan", "-C", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not inside a git repository" in err and "Traceback" not in err


def test_missing_directory(tmp_path, capsys):
    # bad usage (exit 2, as docs/commands.md says of it), where a directory that is no
    # repository is a failure (1)
    assert main(["scan", "-C", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_bare_repository(tmp_path, capsys):
    git(tmp_path, "init", "-q", "--bare", "b.git")
    assert main(["scan", "-C", str(tmp_path / "b.git")]) == 1
    assert "bare repository" in capsys.readouterr().err


def test_repository_with_no_commit(tmp_path, scan_json, capsys):
    git(tmp_path, "init", "-q", "r")
    (tmp_path / "r" / "x.py").write_text("import os\n")
    r = scan_json(tmp_path / "r", capsys=capsys)
    assert [a["id"] for a in r["agents"]] == ["main"] and r["pairs"] == []
    assert r["agents"][0]["head"] is None and r["agents"][0]["error"] is None


def test_git_too_old(tmp_path, monkeypatch, capsys):
    shim = tmp_path / "bin"
    shim.mkdir()
    real = shutil.which("git")
    (shim / "git").write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "git version '
                              f'2.30.1"; exit 0; fi\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    from proximity import gitio

    gitio.git_version.cache_clear()
    try:
        git(tmp_path, "init", "-q", "r")
        assert main(["scan", "-C", str(tmp_path / "r")]) == 1
        assert "too old" in capsys.readouterr().err
    finally:
        gitio.git_version.cache_clear()


def test_worktree_deleted_by_hand_is_retired_and_never_blocks(space, scan_json, capsys):
    sp = space({"f.txt": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", "A\n")
    sp.write(b, "f.txt", "B\n")
    shutil.rmtree(b)
    r = scan_json(sp.main, capsys=capsys)
    assert "b" in r["retired"]
    assert all("b" not in (p["a"], p["b"]) for p in r["pairs"])


def test_binary_changed_on_both_sides(space, scan_json, capsys):
    sp = space({"logo.png": b"\x89PNG\0\0" + bytes(range(256)) * 4})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "logo.png", b"\x89PNG\0\0A" + bytes(range(256)))
    sp.write(b, "logo.png", b"\x89PNG\0\0B" + bytes(range(256)))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    ov = next(f for f in p["findings"] if f["channel"] == "overlap")
    assert "binary" in ov["detail"]


def test_same_binary_result_is_not_a_collision(space, scan_json, capsys):
    sp = space({"logo.png": b"\x89PNG\0\0old"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "logo.png", b"\x89PNG\0\0new")
    sp.write(b, "logo.png", b"\x89PNG\0\0new")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0 and p["advisory"] != "resolution"


def test_hundred_megabyte_file_gets_a_defined_result(space, scan_json, capsys):
    sp = space({"README": "hi\n"})
    a, b = sp.wt("a"), sp.wt("b")
    big = ("0123456789abcdef" * 64 + "\n").encode() * 100_000  # ~100 MB of text
    sp.write(a, "data/huge.csv", big)
    sp.write(b, "data/huge.csv", big[:-10] + b"different\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    ov = next(f for f in p["findings"] if f["channel"] == "overlap")
    assert "large" in ov["detail"]
    assert p["channels"]["conflict"] == 1.0  # git's own merge still decides exactly


@pytest.mark.parametrize("name", ["with space.py", "ünïcødé/файл.py", "new\nline.py"])
def test_odd_paths(space, scan_json, capsys, name):
    sp = space({name: lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, name, lines(5).replace("line 3\n", "A\n"))
    sp.write(b, name, lines(5).replace("line 3\n", "B\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert any(f["path_a"] == name for f in p["findings"])


def test_rename_on_one_side_edit_on_other_merges_cleanly(space, scan_json, capsys):
    body = lines(40)
    sp = space({"old/name.py": body})
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "old/name.py", "new_name.py")
    sp.commit(a, "rename")
    sp.write(b, "old/name.py", body.replace("line 30\n", "line 30 edited\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0
    assert p["advisory"] != "resolution"


def test_rename_rename_conflict(space, scan_json, capsys):
    sp = space({"x.py": lines(40)})
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "x.py", "y.py")
    sp.commit(a)
    git(b, "mv", "x.py", "z.py")
    sp.commit(b)
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert any("renamed to" in f["detail"] for f in p["findings"])


def test_symlink_and_mode_changes(space, scan_json, capsys):
    sp = space({"run.sh": "echo hi\n", "target.txt": "t\n"})
    a, b = sp.wt("a"), sp.wt("b")
    os.symlink("target.txt", a / "link")
    os.symlink("run.sh", b / "link")
    (a / "run.sh").chmod((a / "run.sh").stat().st_mode | stat.S_IXUSR)
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert any("symlink" in f["detail"] for f in p["findings"])


def test_submodule_pointer_moved_on_both_sides(space, scan_json, capsys, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    (lib / "a").write_text("1\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "one")
    sp = space({"README": "x\n"})
    git(sp.main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    sp.commit(sp.main, "add submodule")
    a, b = sp.wt("a"), sp.wt("b")
    for wt, text in ((a, "2\n"), (b, "3\n")):
        git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        (wt / "lib" / "a").write_text(text)
        git(wt / "lib", "commit", "-qam", text.strip())
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert any("submodule" in f["detail"] for f in p["findings"])


def test_detached_head_worktree(space, scan_json, capsys):
    sp = space({"f.txt": lines(10)})
    git(sp.main, "worktree", "add", "-q", "--detach", str(sp.root / "d"))
    a = sp.wt("a")
    sp.write(sp.root / "d", "f.txt", lines(10).replace("line 2\n", "D\n"))
    sp.write(a, "f.txt", lines(10).replace("line 2\n", "A\n"))
    r = scan_json(sp.main, capsys=capsys)
    d = next(x for x in r["agents"] if x["id"] == "d")
    assert d["branch"] is None
    assert pair(r, "a", "d")["advisory"] == "resolution"


def test_bad_config_is_a_readable_error(space, capsys):
    sp = space({"pyproject.toml": "[tool.proximity]\ntau_ra = 'high'\n"})
    assert main(["scan", "-C", str(sp.main)]) == 2
    err = capsys.readouterr().err
    assert "tau_ra" in err and "Traceback" not in err


def test_same_size_edit_within_the_same_second_is_seen(space, scan_json, capsys):
    """Racy git: an edit that keeps the size, made in the same second as the index was
    written, must still be in the snapshot. git re-checks such entries only while the index
    file's own mtime says so, so the private index copy must keep that mtime."""
    import time

    sp = space({"f.py": "x = 1\ny = 2\n"})
    for i in range(20):
        a = sp.wt(f"r{i}")
        (a / "f.py").write_text("x = 9\ny = 2\n")  # same size, right after checkout
        index = sp.main / ".git" / "worktrees" / f"r{i}" / "index"
        if int((a / "f.py").stat().st_mtime) == int(index.stat().st_mtime):
            break  # the racy condition holds: edit and index in the same second
    else:
        pytest.skip("could not edit within the checkout's second")
    time.sleep(1.05 - time.time() % 1)  # anything written from now on is a later second
    r = scan_json(sp.main, capsys=capsys)
    agent = next(x for x in r["agents"] if x["id"] == f"r{i}")
    assert agent["tree"] != git(a, "rev-parse", "HEAD^{tree}").stdout.strip(), \
        "the same-size edit was missed by the snapshot"


def test_fast_discovery_agrees_with_git(space):
    from proximity import gitio

    sp = space({"f.txt": "x\n"})
    a = sp.wt("a")
    (a / "sub").mkdir()
    for where in (sp.main, a, a / "sub"):
        slow, fast = gitio.Repo(str(where)), gitio.Repo(str(where), fast=True)
        assert (fast.gitdir, fast.common, fast.workdir) == (slow.gitdir, slow.common,
                                                            slow.workdir)
    head = git(a, "rev-parse", "HEAD").stdout.strip()
    assert gitio.Repo(str(a), fast=True).parents_cli(head) == []  # the root commit
    sp.write(a, "f.txt", "y\n")
    sp.commit(a)
    new = git(a, "rev-parse", "HEAD").stdout.strip()
    assert gitio.Repo(str(a)).parents_cli(new) == [head]
