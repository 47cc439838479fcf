"""A call that stops binding: a merge that leaves one in the resulting tree, and an edit
that adds a call to a function a live sibling changed incompatibly, are caught by the
pre-edit check with the scan's own symbol evidence (real worktrees, real commits, a real
bare remote and the real hooks installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Space, git

from proximity.main import main

UTIL = "def helper():\n    return 1\n"
APP = "from util import helper\n\nhelper()\n"
CALLS = "from util import helper\n\nhelper()\n"  # a new file calling helper()


def proximity(where: Path, *args: str, stdin: str | None = None
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proximity", *args], cwd=where, input=stdin,
                          capture_output=True, text=True, check=False)


def check_merge(where: Path, ref: str, capsys: pytest.CaptureFixture[str]
                ) -> tuple[int, dict[str, Any]]:
    rc = main(["check", "--json", "-C", str(where), "--merge", ref])
    return rc, json.loads(capsys.readouterr().out)


def claude(where: Path, tool: str, tool_input: dict[str, str]) -> dict[str, Any]:
    """The Claude Code PreToolUse hook's reply, run as Claude Code runs it."""
    event = {"session_id": "s", "cwd": str(where), "hook_event_name": "PreToolUse",
             "tool_name": tool, "tool_input": tool_input}
    got = proximity(where, "check", "--hook", "claude", stdin=json.dumps(event))
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)  # type: ignore[no-any-return]


def decision_of(reply: dict[str, Any]) -> tuple[str, str]:
    """(decision, reason) of a Claude Code reply; no decision at all is no objection."""
    out = reply.get("hookSpecificOutput") or {}
    return (out.get("permissionDecision") or "allow",
            out.get("permissionDecisionReason") or "")


@pytest.fixture
def landed(space, tmp_path):  # type: ignore[no-untyped-def]
    """The swarm's history: lane a adds extra.py calling helper(); lane h changes helper()
    to helper(x) and its one caller. The main checkout lands a and pushes it."""
    sp: Space = space({"util.py": UTIL, "app.py": APP})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(sp.main, "remote", "add", "origin", str(remote))
    git(sp.main, "push", "-q", "origin", "main")
    assert proximity(sp.main, "install").returncode == 0
    a, h = sp.wt("a", "a"), sp.wt("h", "h")
    sp.write(a, "extra.py", CALLS)
    sp.commit(a, "extra")
    sp.write(h, "util.py", "def helper(x):\n    return x\n")
    sp.write(h, "app.py", "from util import helper\n\nhelper(1)\n")
    sp.commit(h, "helper x")
    git(sp.main, "merge", "-q", "--no-edit", "a")
    git(sp.main, "push", "-q", "origin", "main")
    return sp, a, h


def test_a_merge_that_leaves_a_call_in_this_tree_unbound_is_denied(landed, capsys):
    """The main checkout has a's extra.py; merging h would leave its call helper() without
    the new required x: the merge check says so in the scan's words, and denies (the scan
    shows the pair at RA). git's merge is clean; the merged program really fails."""
    sp, _a, _h = landed
    rc, out = check_merge(sp.main, "h", capsys)
    assert (rc, out["decision"]) == (1, "deny"), out
    assert "the call at extra.py:3 no longer binds (missing required 'x')" in out["reason"]
    (c,) = [c for c in out["conflicts"] if c["evidence"] == "symbol"]
    assert c["path"] == "extra.py" and c["level"] == "ra" and "helper(x)" in c["detail"]
    # the Claude Code hook on `git merge h` hears the same (one answerer)
    said, why = decision_of(claude(sp.main, "Bash", {"command": "git merge h"}))
    assert said == "deny" and "the call at extra.py:3 no longer binds" in why
    git(sp.main, "merge", "-q", "--no-edit", "h")
    ran = subprocess.run([sys.executable, "extra.py"], cwd=sp.main, capture_output=True,
                         text=True, check=False)
    assert ran.returncode == 1 and "TypeError" in ran.stderr


def test_a_merge_that_brings_a_call_this_tree_no_longer_binds_is_denied(landed, capsys):
    """The reverse: the checkout has h's helper(x) and a's branch brings the old call."""
    _sp, a, h = landed
    git(a, "branch", "-q", "only-a", "a")
    rc, out = check_merge(h, "only-a", capsys)
    assert (rc, out["decision"]) == (1, "deny"), out
    assert "the call at extra.py:3 no longer binds (missing required 'x')" in out["reason"]


def test_a_merge_whose_new_calls_still_bind_is_not_objected_to(landed, capsys):
    """a's call fixed to helper(2) before the merge: nothing breaks, nothing is said."""
    sp, _a, _h = landed
    sp.write(sp.main, "extra.py", "from util import helper\n\nhelper(2)\n")
    sp.commit(sp.main, "extra passes x")
    rc, out = check_merge(sp.main, "h", capsys)
    assert (rc, out["decision"]) == (0, "allow"), out
    assert not [c for c in out["conflicts"] if c["evidence"] == "symbol"]
