"""The pre-edit check's quick start (`python -I -S …/proximity/launch.py`, the line
`proximity launcher` prints) and the code stamp that keeps a service of other code from
answering it: real repositories and worktrees, real service processes, real clients, real
copies of the package as an installer writes them."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Space
from test_service import edit, install_copy, services, three, wait_for
from test_thin import client_code

import proximity
from proximity.commands import launcher as launcher_cmd
from proximity.service import client

__all__ = ["services"]  # the fixture, used by name

CLAUDE_EDIT = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Edit",
               "tool_input": {"file_path": "f.txt", "old_string": "line 12 from a\n",
                              "new_string": "line twelve\n"}}


def contested(space: Callable[[dict[str, str]], Space], services: list[str]
              ) -> tuple[Path, str]:
    """Worktrees a and b both changing f.txt's lines 10-20 (uncommitted), recorded once."""
    sp, a, b, common = three(space, services)
    edit(a / "f.txt", 10, 20, "from a")
    edit(b / "f.txt", 12, 18, "from b")
    for w in (sp.main, a, b):
        subprocess.run([sys.executable, "-m", "proximity", "snapshot"], cwd=w, check=True,
                       capture_output=True, env={**os.environ, "PROXIMITY_SERVICE": "0"})
    return a, common


def launcher(*args: str, python_path: Path | None = None) -> list[str]:
    """The line `proximity launcher ARGS…` prints (of the package at ``python_path``)."""
    env = {**os.environ, "PYTHONPATH": str(python_path)} if python_path else None
    out = subprocess.run([sys.executable, "-m", "proximity", "launcher", "--json", *args],
                         capture_output=True, text=True, check=True, env=env,
                         cwd=python_path)  # (-m imports from the working directory first)
    words: list[str] = json.loads(out.stdout)["argv"]
    assert shlex.split(json.loads(out.stdout)["command"]) == words
    return words


def run(cmd: list[str], where: Path, stdin: str = "", **env: str
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=where, input=stdin, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def status(common: str, code_of: Path | None = None) -> dict[str, object]:
    """The service's status, asked as a client of the package under ``code_of`` would
    (the same code: one of other code is told to exit)."""
    if code_of is None:
        got = client.request(common, {"op": "status"})
    else:
        with client_code(code_of):
            got = client.request(common, {"op": "status"})
    found = got.get("status") if got else None
    return found if isinstance(found, dict) else {}


def answered(common: str, code_of: Path | None = None) -> int:
    counts = status(common, code_of).get("answered")
    return int(counts.get("check", 0)) if isinstance(counts, dict) else -1


def test_the_launcher_answers_as_the_command_line_with_the_service_and_without(
        space, services):
    a, common = contested(space, services)
    line = launcher("check", "--json", "f.txt:12-13")
    assert line[:4] == [sys.executable, "-I", "-S", "-c"]
    assert line[4] == launcher_cmd.program(
        os.path.join(os.path.dirname(proximity.__file__), "launch.py"))
    hook = launcher("check", "--hook", "claude")
    event = json.dumps({**CLAUDE_EDIT, "cwd": str(a)})
    # in process: the launcher loads site itself (pygit2 is in site-packages)
    alone = run(line, a, PROXIMITY_SERVICE="0")
    plain = run([sys.executable, "-m", "proximity", "check", "--json", "f.txt:12-13"], a,
                PROXIMITY_SERVICE="0")
    assert (alone.returncode, alone.stdout) == (plain.returncode, plain.stdout) \
        and alone.returncode == 1, alone.stderr
    assert json.loads(alone.stdout)["decision"] == "deny"
    hook_alone = run(hook, a, stdin=event, PROXIMITY_SERVICE="0")
    denied = json.loads(hook_alone.stdout)["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny" and hook_alone.returncode == 0
    # the service answers the same lines, exit codes and hook reply
    assert subprocess.run([sys.executable, "-m", "proximity", "service", "start"], cwd=a,
                          capture_output=True, check=False).returncode == 0
    wait_for(lambda: (client.request(common, {"op": "ping"}) or {}).get("ready"), 60)
    before = answered(common)
    served = run(line, a)
    hook_served = run(hook, a, stdin=event)
    assert answered(common) == before + 2
    assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout)
    assert (hook_served.returncode, hook_served.stdout) == (0, hook_alone.stdout)


@pytest.mark.parametrize("kind", ["installed", "checkout"])
def test_a_service_of_other_code_never_answers_the_launcher(space, services, tmp_path, kind):
    """A service started from one copy of the package answers that copy's launcher; once
    the copy's code changes under it -- an upgrade that writes the installed copy anew, an
    edit in place in a source checkout (the same size and modification time) -- the next
    check is answered in process, the same, and the old service is told to exit."""
    a, common = contested(space, services)
    src = Path(proximity.__file__).parent
    if kind == "installed":
        root = install_copy(src, tmp_path / "env")
    else:
        root = tmp_path / "checkout"
        shutil.copytree(src, root / "proximity", ignore=shutil.ignore_patterns("__pycache__"))
    line = launcher("check", "--json", "f.txt:12-13", python_path=root)
    assert line[4] == launcher_cmd.program(str(root / "proximity" / "launch.py"))
    # (PYTHONPATH is for the services a client starts: the launcher itself ignores it)
    env = {"PYTHONPATH": str(root), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    (tmp_path / "run").mkdir(mode=0o700)
    proc = subprocess.Popen([sys.executable, "-m", "proximity.service", common],
                            cwd=common, env={**os.environ, **env},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: status(common, root).get("ready"), 60)
        served = run(line, a, **env)
        assert served.returncode == 1 and json.loads(served.stdout)["decision"] == "deny"
        assert answered(common, root) == 1
        if kind == "installed":
            install_copy(src, tmp_path / "env", change="an upgrade")
        else:
            mod = root / "proximity" / "tcas" / "risk.py"
            st = mod.stat()
            data = mod.read_bytes()
            mod.write_bytes(data[:-1] + (b" " if data[-1:] != b" " else b"\n"))
            os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns))
        after = run(line, a, **env)
        assert (after.returncode, after.stdout) == (served.returncode, served.stdout)
        assert proc.wait(30) == 0  # the old service went away when asked
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_launcher_runs_any_command_line(space, services):
    a, _common = contested(space, services)
    version = run(launcher("--", "--version"), a)
    assert version.stdout.strip() == f"proximity {proximity.__version__}"
    status = run(launcher("scan", "--json"), a, PROXIMITY_SERVICE="0")
    assert status.returncode == 0, status.stderr
    pairs = {frozenset((p["a"], p["b"])): p for p in json.loads(status.stdout)["pairs"]}
    assert pairs[frozenset(("a", "b"))]["advisory"] == "resolution"


def test_a_line_left_behind_by_a_removed_install_never_blocks_the_edit(tmp_path):
    """The launcher line of an environment since deleted fails as a hook error the person
    sees (exit 1, the file named on stderr), never with Python's exit 2 for a script it
    cannot open, which Claude Code and Gemini CLI take as "block this call"."""
    gone = tmp_path / "env" / "site-packages" / "proximity" / "launch.py"
    line = [sys.executable, "-I", "-S", "-c", launcher_cmd.program(str(gone)),
            "check", "--hook", "claude"]
    got = subprocess.run(line, input=json.dumps(CLAUDE_EDIT), capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert got.returncode == 1 and got.stdout == ""
    assert str(gone) in got.stderr
    named = subprocess.run([sys.executable, "-I", "-S", str(gone)], capture_output=True,
                           text=True, cwd=tmp_path, timeout=60)
    assert named.returncode == 2  # (why the line is a program, not the script's path)


def test_a_launcher_line_is_printed_only_for_a_command_line_proximity_runs(tmp_path):
    """A line that exits 2 on every call (an unknown harness, a typo) is one Claude Code
    and Gemini CLI read as "block this call" on every edit: refused when asked, with the
    parser's own words, and nothing printed to paste."""
    got = subprocess.run([sys.executable, "-m", "proximity", "launcher", "check", "--hook",
                          "claudex"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert got.returncode == 2 and got.stdout == ""
    assert "claudex" in got.stderr and "invalid choice" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr
    bare = subprocess.run([sys.executable, "-m", "proximity", "launcher", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert bare.returncode == 0  # no ARGS: the line alone, for a caller that adds its own
    assert json.loads(bare.stdout)["argv"][1:4] == ["-I", "-S", "-c"]


def test_the_launcher_answers_with_a_standard_stream_closed(space, services):
    """A harness that closes the hook's stdout (or never opens its stdin) gets the
    answer's exit code, never a traceback and exit 1 from the launcher's own exit."""
    a, _common = contested(space, services)
    line = shlex.join(launcher("check", "--hook", "claude"))
    event = json.dumps({**CLAUDE_EDIT, "cwd": str(a)})
    for redirect, stdin in ((">&-", event), ("<&-", "")):
        got = subprocess.run(["sh", "-c", f"{line} {redirect}"], cwd=a, input=stdin,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PROXIMITY_SERVICE": "0"})
        assert got.returncode == 0, (redirect, got.stderr)
        assert "Traceback" not in got.stderr, (redirect, got.stderr)
    closed_in = subprocess.run(["sh", "-c", f"{line} <&-"], cwd=a, capture_output=True,
                               text=True, timeout=120,
                               env={**os.environ, "PROXIMITY_SERVICE": "0"})
    # no event: no decision, and the person is told nothing was checked
    said = json.loads(closed_in.stdout)
    assert "hookSpecificOutput" not in said, said
    assert "no hook event on standard input; not checked" in said["systemMessage"], said


def test_a_launch_file_cut_short_is_an_error_the_person_sees(tmp_path):
    """launch.py always leaves by exiting with the answer's code. An emptied or truncated
    file (an interrupted upgrade) would otherwise return, and the line would exit 0 with
    nothing printed: every edit let through with no word. It exits 1 and says why."""
    root = tmp_path / "copy"
    shutil.copytree(Path(proximity.__file__).parent, root / "proximity",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "proximity" / "launch.py").write_text("")
    line = [sys.executable, "-I", "-S", "-c",
            launcher_cmd.program(str(root / "proximity" / "launch.py")),
            "check", "--hook", "claude"]
    got = subprocess.run(line, input=json.dumps(CLAUDE_EDIT), capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert got.returncode == 1 and got.stdout == ""
    assert "launch.py ended without an answer" in got.stderr, got.stderr
