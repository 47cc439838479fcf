"""Everyday code shapes judged on the merged program: a module one side moves while the
other removes a name it imports (git's merge carries the edit through the move), a name
still used after the merge, a use git's merge removes.

Real repositories and worktrees; the verdicts are checked against what git's merge and
running the merged code really do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import git, sym, two

ENUMS = "class Protocol:\n    HTTP = 1\n\n\nclass Mode:\n    FAST = 1\n"
BACKEND = ("from .enums import (\n    Mode,\n    Protocol,\n)\n\n\n"
           "def connect(mode=Mode.FAST):\n"
           "    return (mode, Protocol.HTTP)\n\n\n"
           + "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(12)))
FILES = {"pkg/__init__.py": "", "pkg/enums.py": ENUMS, "pkg/backend.py": BACKEND,
         "tests/test_backend.py": "from pkg.backend import connect\n\n\n"
                                  "def test_connect():\n    assert connect()[0] == 1\n"}


def moved(a: Path) -> None:
    """a: `git mv pkg/backend.py pkg/backend/aio.py`, its relative imports one level
    deeper, the package re-exports it."""
    (a / "pkg" / "backend").mkdir()
    git(a, "mv", "pkg/backend.py", "pkg/backend/aio.py")
    text = (a / "pkg" / "backend" / "aio.py").read_text()
    (a / "pkg" / "backend" / "aio.py").write_text(text.replace("from .enums", "from ..enums"))
    (a / "pkg" / "backend" / "__init__.py").write_text("from .aio import connect\n")
    (a / "tests" / "test_backend.py").write_text(
        (a / "tests" / "test_backend.py").read_text())
    git(a, "add", "-A")
    git(a, "commit", "-qm", "move the backend into a package")


def merged_tests_pass(sp, a: Path, b: Path) -> bool:  # type: ignore[no-untyped-def]
    """Merge a's and b's commits in a scratch worktree and run the merged tests."""
    scratch = sp.root / "scratch"
    git(sp.main, "worktree", "add", "-q", "--detach", str(scratch), "feat/a")
    r = subprocess.run(["git", "merge", "-q", "--no-edit", "feat/b"], cwd=scratch,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    t = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, '.');"
                        "from tests.test_backend import test_connect; test_connect()"],
                       cwd=scratch, capture_output=True, text=True)
    return t.returncode == 0


def test_a_name_removed_beside_a_move_that_git_carries_it_through_is_no_ra(
        space, scan_json, capsys):
    sp, a, b = two(space, FILES)
    moved(a)
    # b removes Protocol and its one use, at the old path
    sp.write(b, "pkg/enums.py", "class Mode:\n    FAST = 1\n")
    sp.write(b, "pkg/backend.py", BACKEND.replace("    Protocol,\n", "")
             .replace("(mode, Protocol.HTTP)", "(mode, 1)"))
    sp.commit(b, "drop Protocol")
    assert merged_tests_pass(sp, a, b)
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] != "resolution", p["findings"]
    assert not [f for f in found if "Protocol" in f["detail"]], found


def test_a_name_removed_that_the_merged_code_still_uses_is_an_ra(space, scan_json, capsys):
    sp, a, b = two(space, FILES)
    moved(a)
    # b removes Protocol but leaves the use in backend.py: the merged aio.py still uses it
    sp.write(b, "pkg/enums.py", "class Mode:\n    FAST = 1\n")
    sp.commit(b, "drop Protocol only")
    assert not merged_tests_pass(sp, a, b)
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", p["findings"]
    assert any("Protocol" in f["detail"] for f in found), found
