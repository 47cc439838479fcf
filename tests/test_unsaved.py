"""A person's unsaved editor buffer is live work: the pre-edit check of every other worktree
reads it in place of the file on disk, until it is saved, removed or its writer is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest
from conftest import git, lines

from proximity import unsaved
from proximity.agents import precheck
from proximity.analysis import hunks

APP = lines(30)


@pytest.fixture
def human(space):  # type: ignore[no-untyped-def]
    """Worktree a (an agent) and b (a person whose editor holds app.txt unsaved, line 12
    rewritten), with nothing on b's disk changed."""
    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    ecm = os.path.join(git(sp.main, "rev-parse", "--git-common-dir").stdout.strip(), "ecm")
    ecm = os.path.join(sp.main, ecm) if not os.path.isabs(ecm) else ecm
    return sp, a, b, ecm


def test_the_check_sees_a_sibling_s_unsaved_lines_and_names_them(human):
    _sp, a, _b, ecm = human
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"
    path = unsaved.write(ecm, "b", "app.txt", APP.replace("line 12\n", "line 12 typed\n").encode())
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    d = precheck.check(str(a), [("app.txt", ((12, 12),))])
    assert d.decision == "deny", d
    (c,) = [c for c in d.conflicts if c.evidence == "conflict"]
    assert c.agent == "b" and c.branch == "feat/b" and "+line 12 typed" in c.hunk
    assert precheck.check(str(a), [("app.txt", ((25, 25),))]).decision == "allow"

    unsaved.remove(ecm, "b", "app.txt")
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"


def test_a_save_since_makes_the_buffer_stale(human):
    _sp, a, b, ecm = human
    unsaved.write(ecm, "b", "app.txt", APP.replace("line 12\n", "line 12 typed\n").encode())
    time.sleep(0.01)
    (b / "app.txt").write_text(APP)  # the disk is newer: what was typed is gone
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"


def test_a_buffer_whose_writer_is_gone_is_ignored_and_swept(human):
    _sp, a, _b, ecm = human
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    unsaved.write(ecm, "b", "app.txt", APP.replace("line 12\n", "line 12 typed\n").encode(),
                  pid=proc.pid)
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"
    assert unsaved.sweep(ecm) == 1
    assert os.listdir(unsaved.directory(ecm)) == []


def test_my_own_buffer_is_my_live_file_and_maps_their_lines_to_mine(human):
    _sp, a, b, ecm = human
    (b / "app.txt").write_text(APP.replace("line 20\n", "line 20 by b\n"))
    # a has typed three new lines at the top, unsaved: b's line 20 is a's line 23 now
    unsaved.write(ecm, "a", "app.txt", ("x\ny\nz\n" + APP).encode())
    d = precheck.check(str(a), [("app.txt", None)])
    (c,) = d.conflicts
    assert c.ranges == ((20, 20),) and c.lines == ((23, 23),)


def test_a_directory_open_to_others_is_never_read(human):
    _sp, a, _b, ecm = human
    unsaved.write(ecm, "b", "app.txt", APP.replace("line 12\n", "line 12 typed\n").encode())
    os.chmod(unsaved.directory(ecm), 0o777)
    assert unsaved.listing(ecm) == {}
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"


def test_too_large_a_buffer_is_not_shared(human):
    _sp, _a, _b, ecm = human
    with pytest.raises(ValueError):
        unsaved.write(ecm, "b", "app.txt", b"x" * (unsaved.MAX_BYTES + 1))


def _diff(old: str, new: str) -> tuple[hunks.Hunk, ...]:
    with tempfile.TemporaryDirectory() as d:
        for name, text in (("a", old), ("b", new)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        out = subprocess.run(["git", "diff", "--no-index", "-U0", "a", "b"], cwd=d,
                             capture_output=True, text=True).stdout
    return next(iter(hunks.parse(out).values())).hunks if out else ()


@pytest.mark.parametrize("edit", [
    lambda ls: ls[:3] + ls[5:],  # a deletion above
    lambda ls: ["new", *ls],  # an insertion at the top
    lambda ls: [*ls[:4], "a", "b", "c", *ls[4:]],  # an insertion inside
    lambda ls: [*ls[:6], ls[6] + "!", *ls[7:]],  # a rewrite
    lambda ls: [*ls[:2], "one", *ls[6:], "end"],  # a replacement and an append
])
def test_from_base_is_where_each_unchanged_base_line_is_now(edit):
    base = [f"l{i}" for i in range(1, 13)]
    now = edit(list(base))
    own = _diff("\n".join(base) + "\n", "\n".join(now) + "\n")
    for n in range(1, 13):
        ((s, e),) = hunks.from_base([(n, n)], own)
        if base[n - 1] in now:
            assert s == e == now.index(base[n - 1]) + 1
        else:
            assert e <= s  # a rewritten line stands for what replaced it, or is gone
