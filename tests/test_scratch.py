"""The files git's file-level commands read: kept by content in one private directory per
process, the stale ones removed once there are many."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from proximity.agents import scratch


def test_a_content_is_written_once_and_found_again():
    one = scratch.holding(b"base text\n")
    again = scratch.holding(b"base text\n")
    other = scratch.holding(b"other text\n")
    assert one == again != other
    with open(one, "rb") as f:
        assert f.read() == b"base text\n"
    mode = os.stat(scratch.directory()).st_mode
    assert stat.S_IMODE(mode) == 0o700  # this process's alone
    assert scratch.same_file(b"base text\n", one)
    assert not scratch.same_file(b"base text!\n", one)
    assert not scratch.same_file(b"x", os.path.join(scratch.directory(), "missing"))


def test_stale_files_go_once_there_are_many_and_used_ones_stay(monkeypatch):
    monkeypatch.setattr(scratch, "FILES", 3)
    old = [scratch.holding(f"old {i}\n".encode()) for i in range(4)]
    past = time.time() - 2 * scratch.STALE
    for path in old:
        os.utime(path, (past, past))
    kept = scratch.holding(b"old 0\n")  # used again: fresh
    assert kept == old[0]
    scratch.holding(b"new\n")  # past FILES: the stale ones go
    assert os.path.exists(old[0])
    assert not any(os.path.exists(p) for p in old[1:])


def test_the_directory_is_removed_when_the_process_ends(tmp_path):
    code = ("from proximity.agents import scratch; "
            "print(scratch.directory()); scratch.holding(b'x')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out and not os.path.exists(out)


def test_a_directory_left_by_a_process_that_is_gone_is_removed_by_the_next(tmp_path):
    """A process that ended without its exit handlers (killed, ``os._exit``: the editor's
    server when its editor vanished) leaves its directory; the next one removes it, and
    leaves a running process's alone."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    left = tmp_path / f"{scratch.PREFIX}{gone}-abc"
    left.mkdir()
    (left / "blob").write_bytes(b"x")
    mine = tmp_path / f"{scratch.PREFIX}{os.getpid()}-def"
    mine.mkdir()
    other = tmp_path / "proximity-files-notapid"
    other.mkdir()
    scratch.sweep(str(tmp_path))
    assert not left.exists() and mine.exists() and other.exists()
