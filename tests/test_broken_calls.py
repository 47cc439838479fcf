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


def hooked(space: Any, tmp_path: Path) -> Space:
    """util.py and app.py on main, pushed to a bare origin, the plain hooks installed."""
    sp: Space = space({"util.py": UTIL, "app.py": APP})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(sp.main, "remote", "add", "origin", str(remote))
    git(sp.main, "push", "-q", "origin", "main")
    assert proximity(sp.main, "install").returncode == 0
    return sp


@pytest.fixture
def landed(space, tmp_path):  # type: ignore[no-untyped-def]
    """The swarm's history: lane a adds extra.py calling helper(); lane h changes helper()
    to helper(x) and its one caller. The main checkout lands a and pushes it."""
    sp = hooked(space, tmp_path)
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


def test_a_fast_forward_that_breaks_a_call_already_in_this_tree_is_denied(landed, capsys):
    """The swarm's way: h rebased onto the landed extra.py (git's rebase is clean) and the
    main checkout merges h, a fast-forward: the call is in this tree already, h's change
    breaks it. Denied in the same words."""
    sp, _a, h = landed
    git(h, "rebase", "-q", "main")
    rc, out = check_merge(sp.main, "h", capsys)
    assert (rc, out["decision"]) == (1, "deny"), out
    assert "the call at extra.py:3 no longer binds (missing required 'x')" in out["reason"]
    assert len([c for c in out["conflicts"] if c["evidence"] == "symbol"]) == 1


def test_a_landing_that_breaks_a_call_on_the_trunk_is_blocked_at_the_push(landed):
    """h pulls the landed extra.py with a plain `git pull --rebase` (git is clean, and no
    check was asked), then lands: from its own worktree onto the trunk, or merged and
    pushed from the main checkout. The push carries h's change of helper() onto a trunk
    whose extra.py calls it the old way: blocked, in the check's words, with the override
    (found by a new user: the pull printed nothing, and the push went through)."""
    sp, _a, h = landed
    pulled = subprocess.run(["git", "pull", "-q", "--rebase", "origin", "main"], cwd=h,
                            capture_output=True, text=True, check=False)
    assert pulled.returncode == 0, pulled.stderr
    said = "the call at extra.py:3 no longer binds (missing required 'x')"
    own = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=h, capture_output=True,
                         text=True, check=False)
    assert own.returncode != 0, own.stderr
    assert said in own.stderr and "push blocked: it lands a call" in own.stderr, own.stderr
    git(sp.main, "merge", "-q", "--ff-only", "h")
    from_main = subprocess.run(["git", "push", "origin", "main"], cwd=sp.main,
                               capture_output=True, text=True, check=False)
    assert from_main.returncode != 0 and said in from_main.stderr, from_main.stderr
    # h's own branch, pushed under its own name, lands nothing: not this judgement
    mine = subprocess.run(["git", "push", "origin", "h"], cwd=h, capture_output=True,
                          text=True, check=False)
    assert mine.returncode == 0 and said not in mine.stderr, mine.stderr
    # the call made to fit: the landing goes through
    sp.write(h, "extra.py", "from util import helper\n\nhelper(2)\n")
    sp.commit(h, "extra passes x")
    fixed = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=h,
                           capture_output=True, text=True, check=False)
    assert fixed.returncode == 0, fixed.stderr


@pytest.mark.parametrize("service", ["0", "1"])
def test_a_call_written_before_a_rebase_onto_the_changed_definition_is_blocked_at_landing(
        space, tmp_path, monkeypatch, service):
    """The other way round: h changes helper() to helper(x) and lands first; a, whose
    extra.py calls helper() the old way, takes it with a plain `git pull --rebase` (git is
    clean) and lands. After the rebase the trunk's change is history a's push has, so the
    two sides of the pair are gone: the call a wrote before the rebase, still in what it
    pushes, is judged against what the trunk changed since a's old base (it went through,
    and the trunk's program broke). Made to fit, it lands. Judged alike by the resident
    service, which runs in the main checkout (it read the main checkout's branch as the
    one HEAD pushed, and let the call land)."""
    from test_thin import stop

    from proximity.commands import service as service_cmd

    sp = hooked(space, tmp_path)
    h, a = sp.wt("h", "h"), sp.wt("a", "a")
    sp.write(h, "util.py", "def helper(x):\n    return x\n")
    sp.write(h, "app.py", "from util import helper\n\nhelper(1)\n")
    sp.commit(h, "helper x")
    sp.write(a, "extra.py", CALLS)
    sp.commit(a, "extra")
    common = str(sp.main / ".git")
    monkeypatch.setenv("PROXIMITY_SERVICE", service)
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "60")
    try:
        if service == "1":
            assert service_cmd.start(common)
        first = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=h,
                               capture_output=True, text=True, check=False)
        assert first.returncode == 0, first.stderr
        pulled = subprocess.run(["git", "pull", "-q", "--rebase", "origin", "main"], cwd=a,
                                capture_output=True, text=True, check=False)
        assert pulled.returncode == 0, pulled.stderr
        own = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=a,
                             capture_output=True, text=True, check=False)
        assert own.returncode != 0, own.stderr
        assert "extra.py:3 no longer binds (missing required 'x')" in own.stderr, own.stderr
        assert "push blocked: it lands a call" in own.stderr, own.stderr
        sp.write(a, "extra.py", "from util import helper\n\nhelper(2)\n")
        sp.commit(a, "extra passes x")
        fixed = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=a,
                               capture_output=True, text=True, check=False)
        assert fixed.returncode == 0, fixed.stderr
    finally:
        if service == "1":
            stop(common)


def test_a_merge_whose_new_calls_still_bind_is_not_objected_to(landed, capsys):
    """a's call fixed to helper(2) before the merge: nothing breaks, nothing is said."""
    sp, _a, _h = landed
    sp.write(sp.main, "extra.py", "from util import helper\n\nhelper(2)\n")
    sp.commit(sp.main, "extra passes x")
    rc, out = check_merge(sp.main, "h", capsys)
    assert (rc, out["decision"]) == (0, "allow"), out
    assert not [c for c in out["conflicts"] if c["evidence"] == "symbol"]


SHAPES = "class Shape:\n    def fetch(self):\n        return 0\n"
LIB = ("def helper():\n    return 1\n\n\ndef scale(n):\n    return n\n\n\n"
       "class Cache:\n    def fetch(self):\n        return 2\n")
OTHER = "def helper():\n    return 3\n"


@pytest.fixture
def live(space):  # type: ignore[no-untyped-def]
    """h's live work, uncommitted and recorded: helper() now needs x, scale takes an
    optional k, Cache.fetch needs a key. other.py has a helper() of its own, shapes.py a
    Shape with a fetch() of its own. a is about to write code calling them."""
    sp: Space = space({"util.py": LIB, "app.py": APP, "other.py": OTHER, "shapes.py": SHAPES,
                       "notes.py": "VALUE = 1\n"})
    assert proximity(sp.main, "install").returncode == 0
    a, h = sp.wt("a", "a"), sp.wt("h", "h")
    sp.write(h, "util.py", LIB.replace("def helper():", "def helper(x):")
             .replace("def scale(n):", "def scale(n, k=1):")
             .replace("def fetch(self):", "def fetch(self, key):"))
    sp.write(h, "app.py", "from util import helper\n\nhelper(1)\n")
    assert proximity(h, "snapshot").returncode == 0
    return sp, a, h


def write(a: Path, name: str, content: str) -> tuple[str, str]:
    return decision_of(claude(a, "Write", {"file_path": str(a / name), "content": content}))


def test_a_new_call_to_a_function_a_live_sibling_changed_is_asked_with_its_signature(live):
    _sp, a, _h = live
    said, why = write(a, "extra.py", CALLS)
    assert said == "ask", why
    assert "worktree 'h'" in why and "helper(x) in util.py" in why
    assert "the call at extra.py:3 no longer binds (missing required 'x')" in why
    # an Edit of a file h never touched, adding the call: the same
    said, why = decision_of(claude(a, "Edit", {
        "file_path": str(a / "notes.py"), "old_string": "VALUE = 1\n",
        "new_string": "from util import helper\n\nVALUE = helper()\n"}))
    assert said == "ask" and "helper(x) in util.py" in why, why
    # a call that fits the new signature: no objection
    assert write(a, "extra.py", "from util import helper\n\nhelper(2)\n")[0] == "allow"


def test_a_siblings_unrecorded_signature_is_read_in_process_as_the_service_reads_it(live):
    """h changes helper() again on disk and records nothing: judged in process (no
    service), the check reads h's files as they are now, as the service's watcher does
    (in process it read h's last recorded state only: "the same answers, only slower"
    did not hold)."""
    sp, a, h = live
    recorded = (h / "util.py").read_text()
    assert "def scale(n, k=1):" in recorded  # (scale(3) binds to what was recorded)
    sp.write(h, "util.py", recorded.replace("def scale(n, k=1):", "def scale(n, k):"))
    said, why = write(a, "extra.py", "from util import scale\n\nscale(3)\n")
    assert said == "ask", why
    assert "missing required 'k'" in why, why


def test_a_siblings_committed_signature_counts_as_its_live_one(live):
    """h commits its helper(x) (the commit hook records it): the same ask."""
    sp, a, h = live
    sp.commit(h, "helper x")
    said, why = write(a, "extra.py", CALLS)
    assert said == "ask" and "helper(x) in util.py" in why, why


def test_calls_that_still_bind_or_reach_another_definition_are_no_objection(live):
    """No false alarm: a call matching both signatures, a function of the same name in
    another module, a method of the same name on an unrelated class."""
    _sp, a, _h = live
    for content in ("from util import scale\n\nscale(2)\n",
                    "from other import helper\n\nhelper()\n",
                    "from shapes import Shape\n\nShape().fetch()\n"):
        assert write(a, "extra.py", content) == ("allow", ""), content
    # (the method call on the class h changed is asked)
    said, why = write(a, "extra.py", "from util import Cache\n\nCache().fetch()\n")
    assert said == "ask" and "fetch" in why, why


def test_an_edit_that_calls_nothing_new_reads_no_siblings_work(live):
    """An edit whose lines call nothing is judged as before: no objection, and the body
    edit of a function h changed keeps its own evidence only."""
    _sp, a, _h = live
    said, _ = decision_of(claude(a, "Edit", {"file_path": str(a / "notes.py"),
                                             "old_string": "VALUE = 1\n",
                                             "new_string": "VALUE = 2\n"}))
    assert said == "allow"


def test_a_new_call_is_denied_when_this_worktree_must_yield_to_the_sibling(live, capsys):
    """a's committed call of helper() makes the pair an RA with h, which reached its lines
    first: a is told to yield (the scan's standing advice). A further new call of helper()
    is then denied, naming the new signature."""
    sp, a, h = live
    sp.write(a, "first.py", CALLS)
    sp.commit(a, "first caller")
    rc = main(["scan", "--json", "-C", str(a)])
    got = json.loads(capsys.readouterr().out)
    assert rc == 0 and got["yields"] == [{"agent": "a", "waits_for": ["h"]}], got["yields"]
    said, why = write(a, "extra.py", CALLS)
    assert said == "deny", why
    assert "helper(x) in util.py" in why and "told to yield to h" in why
    del h


def test_the_editor_hears_the_same(live):
    """The editor asks with its buffer (the file after the edit): the same evidence; the
    language server's answer is the one answerer's."""
    from proximity.lsp import judge
    from proximity.lsp.answer import ask

    _sp, a, _h = live
    got = ask(str(a / "extra.py"), None, CALLS)
    assert got.decision == "ask" and "helper(x) in util.py" in got.reason, got
    # shown on the call's own line of the buffer
    (shown,) = [f for f in judge.conflicts(got, [(1, 3)], 3) if f.evidence == "symbol"]
    assert shown.lines == (3, 3)
    assert ask(str(a / "extra.py"), None, "from util import helper\n\nhelper(2)\n"
               ).decision == "allow"


def test_the_mcp_check_with_the_files_content_hears_the_same(live):
    """MCP's `check` with the file's text after the edit: the same answer, in a real MCP
    session; without it, the lines alone (nothing written yet) meet no objection."""
    import anyio
    from test_mcp import payload, session

    _sp, a, _h = live
    _init, _tools, results = anyio.run(session, str(a), [
        ("check", {"paths": ["extra.py"], "content": CALLS}),
        ("check", {"paths": ["extra.py"], "content": "from util import helper\n\nhelper(2)\n"}),
        ("check", {"paths": ["extra.py", "notes.py"], "content": CALLS}),
    ])
    got = payload(results[0])
    assert got["decision"] == "ask" and "helper(x) in util.py" in got["reason"], got
    assert payload(results[1])["decision"] == "allow"
    assert results[2].is_error and "one path" in results[2].content[0].text


def test_the_look_before_the_symbol_channel_finds_calls_and_changed_definitions():
    """The cheap look that decides whether the symbol channel runs: the names an edit's
    lines call (chains' roots too), the lines it writes, and the names a sibling's diff
    may have redefined (a body's calls are none)."""
    from proximity.agents import calls

    assert calls.called("x = a.b.helper(1) + f()\ndef g(y):\n", [(1, 2)]) == {
        "a", "helper", "f"}
    assert calls.added("a\nb\nc\n", "a\nb\nnew()\nc\n") == ((3, 3),)
    assert calls.added(None, "one\ntwo") == ((1, 2),)
    # a line shared at the start is never counted again at the end
    assert calls.added("x\nx\n", "x\nx\nx\n") == ((3, 3),)
    diff = ("diff --git a/u.py b/u.py\n@@ -9 +9 @@ class Cache:\n-def helper():\n"
            "+def helper(x):\n+    return print(x)\n+    app.run(1)\n-func (r *T) Name(a int) {\n"
            "+  async fetch(key) {\n")
    got = calls.defined(diff)
    assert {"helper", "Cache", "Name", "fetch", "u"} <= got
    assert not {"print", "run", "app", "return"} & got


def test_every_harness_hears_the_same_about_a_new_call(live):
    """The answer is shared: Codex's patch adding the file and Cursor's Write are asked
    with the same new signature (each in its own reply format)."""
    _sp, a, _h = live
    patch = ("*** Begin Patch\n*** Add File: extra.py\n"
             + "".join(f"+{ln}\n" for ln in CALLS.splitlines()) + "*** End Patch\n")
    for name, event in (
            ("codex", {"session_id": "s", "turn_id": "t", "transcript_path": None,
                       "cwd": str(a), "hook_event_name": "PreToolUse", "model": "m",
                       "permission_mode": "default", "tool_use_id": "c",
                       "tool_name": "apply_patch", "tool_input": {"command": patch}}),
            ("cursor", {"conversation_id": "c", "generation_id": "g", "model": "m",
                        "cursor_version": "2.3.0", "workspace_roots": [str(a)],
                        "hook_event_name": "preToolUse", "tool_name": "Write",
                        "tool_use_id": "t", "cwd": str(a),
                        "tool_input": {"file_path": str(a / "extra.py"),
                                       "content": CALLS}})):
        got = proximity(a, "check", "--hook", name, stdin=json.dumps(event))
        assert got.returncode == 0, got.stderr
        assert "helper(x) in util.py" in got.stdout, (name, got.stdout)


def test_a_signature_one_parameter_a_line_is_judged_at_the_landing(landed):
    """h adds a required parameter on a line of its own to a signature written one
    parameter a line (as black writes a long one): no changed line holds the function's
    name, and the landing that breaks the trunk's call to it was let through."""
    sp, _a, h = landed
    lib = "def scale(\n    n,\n):\n    return n\n"
    sp.write(sp.main, "lib.py", lib)
    sp.write(sp.main, "use.py", "from lib import scale\n\nscale(1)\n")
    sp.commit(sp.main, "lib and its use")
    git(sp.main, "push", "-q", "origin", "main")
    git(h, "rebase", "-q", "main")
    sp.write(h, "lib.py", lib.replace("    n,\n", "    n,\n    k,\n"))
    sp.commit(h, "scale takes k")
    pushed = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=h,
                            capture_output=True, text=True, check=False)
    assert pushed.returncode != 0, pushed.stderr
    assert "the call at use.py:3 no longer binds" in pushed.stderr, pushed.stderr
