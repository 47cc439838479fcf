"""`proximity check` and its harness hooks, on real worktrees with uncommitted work."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Space, git, held_over, lines

from proximity import gitio, layout, unsaved
from proximity.agents import decision, edits, kept, precheck, scratch, theirs
from proximity.agents.answer import CheckAnswer, CheckRequest, answer
from proximity.agents.harnesses import claude
from proximity.agents.harnesses.base import Edits
from proximity.analysis import hunks
from proximity.ledger import Ledger
from proximity.main import main
from proximity.views import messages

APP = lines(40)
LIB = "RATE = 3\n\n\ndef total(n):\n    return n * RATE\n\n\ndef other():\n    return 1\n"


def run_check(where: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    rc = main(["check", "--json", "-C", str(where), *args])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def merge_tree(where: Path, ours: str = "feat/a", theirs: str = "feat/b"
               ) -> subprocess.CompletedProcess[str]:
    """git's own merge of two branches, written nowhere: exit 1 and the conflicted paths
    when it conflicts."""
    return git(where, "merge-tree", "--write-tree", "--name-only", ours, theirs, check=False)


def hook(where: Path, name: str, event: dict) -> dict:  # type: ignore[type-arg]
    """Run the hook as Claude Code does: a process, the event on stdin, JSON on stdout."""
    proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", name],
                          input=json.dumps(event), capture_output=True, text=True,
                          cwd=where, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def pair(space):  # type: ignore[no-untyped-def]
    sp = space({"app.txt": APP, "lib.py": LIB, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    return sp, a, b


def test_uncommitted_edit_of_the_same_lines_is_denied_with_their_hunk(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 changed by b\n"))  # uncommitted
    rc, out = run_check(a, "app.txt:10-14", capsys=capsys)
    assert rc == 1
    assert out["decision"] == "deny"
    (c,) = [c for c in out["conflicts"] if c["evidence"] == "conflict"]
    assert c["agent"] == "b" and c["branch"] == "feat/b" and c["path"] == "app.txt"
    assert c["ranges"] == [[12, 12]]
    assert "-line 12" in c["hunk"] and "+line 12 changed by b" in c["hunk"]
    assert "'b'" in out["reason"]


def test_touching_lines_conflict_but_a_gap_is_only_traffic(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 20\n", "line 20 b\n"))
    _, out = run_check(a, "app.txt:21-22", capsys=capsys)
    assert out["decision"] == "deny"  # adjacent: git's merge would conflict
    _, out = run_check(a, "app.txt:23-24", capsys=capsys)
    assert out["decision"] == "ask" and out["conflicts"][0]["evidence"] == "near"
    assert "+line 20 b" in out["conflicts"][0]["hunk"]
    _, out = run_check(a, "app.txt:35", capsys=capsys)
    # the same file, far away: shown with their hunk, but allowed (the replays of real merges: a
    # few percent of such pairs collide; asking doubled the warnings on clean pairs)
    assert out["decision"] == "allow" and out["conflicts"][0]["evidence"] == "same-file"
    assert out["conflicts"][0]["level"] == "info" and "+line 20 b" in out["conflicts"][0]["hunk"]


def test_lines_are_lined_up_as_gits_merge_lines_them_up(space, capsys):
    """git's merge (ort) lines each side up against the base with the histogram
    algorithm. Here b's change is, by the default (myers) diff, an insertion at the top
    and a change of line 3, two lines clear of line 5; by histogram, a deletion of lines
    1-2 and an insertion after line 4, touching line 5. git's merge of b's file with a's
    edit of line 5 conflicts, so the check denies it, whatever diff.algorithm says."""
    sp = space({"f.txt": "a\nx\nc\na\nb\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "f.txt", "c\na\nx\nb\na\nb\n")
    git(a, "config", "diff.algorithm", "myers")  # the user's own, for every worktree
    _, out = run_check(a, "f.txt:5", capsys=capsys)
    assert out["decision"] == "deny", out
    (c,) = [c for c in out["conflicts"] if c["agent"] == "b"]
    assert c["evidence"] == "conflict" and c["level"] == "ra"
    # git's own merge of the two, as the check foretold
    sp.write(a, "f.txt", "a\nx\nc\na\nz\n")
    for wt, who in ((a, "a"), (b, "b")):
        sp.commit(wt, who)
    merged = merge_tree(a)
    assert merged.returncode == 1 and "f.txt" in merged.stdout.split("\n")[1:]


def test_lines_are_placed_where_gits_merge_places_them(space, capsys):
    """A block inserted next to lines it repeats can be shown in more than one place.
    `git diff` slides it by its indent heuristic (here: to the top of the file); git's
    merge does not (here: after line 2). b copies the job's first two lines above it; a's
    edit of line 3 conflicts with that, and a's edit of line 1 does not, as git's own
    merge says below: the check judges the lines where the merge has them."""
    base = "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n"
    sp = space({"ci.yml": base})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "ci.yml", "jobs:\n  build:\n" + base)
    _, out = run_check(a, "ci.yml:3", capsys=capsys)
    assert out["decision"] == "deny", out
    _, out = run_check(a, "ci.yml:1", capsys=capsys)
    assert out["decision"] != "deny", out
    sp.commit(b, "b")
    lines = base.split("\n")
    for line, conflicts in ((3, True), (1, False)):
        git(a, "checkout", "-q", "-B", f"edit-{line}", "main")
        edited = lines.copy()
        edited[line - 1] += "  # a"
        sp.write(a, "ci.yml", "\n".join(edited))
        sp.commit(a, f"a's line {line}")
        merged = merge_tree(a, f"edit-{line}")
        assert (merged.returncode == 1) is conflicts, merged.stdout


def test_a_whole_file_write_is_lined_up_as_gits_merge_lines_it_up(space):
    """A Write names no lines: the check finds them by diffing the file now and after.
    Python's difflib puts the third `b = 2` of this write after line 1; git's diff, and
    git's merge, after line 3, touching b's change of line 4: git's merge conflicts, so
    the check denies (on difflib's placement it asked: two unchanged lines away)."""
    base = "x = 1\nb = 2\nb = 2\n[deps]\nx = 1\n\n[deps]\n"
    sp = space({"setup.cfg": base})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "setup.cfg", base.replace("[deps]\nx", "[deps] # b\nx"))
    after = "x = 1\nb = 2\nb = 2\nb = 2\n[deps]\nx = 1\n\n[deps]\n"
    out = hook(a, "claude", event(a, "Write", {"file_path": str(a / "setup.cfg"),
                                                "content": after}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
    sp.write(a, "setup.cfg", after)
    sp.commit(a, "a writes")
    sp.commit(b, "b edits")
    merged = merge_tree(a)
    assert merged.returncode == 1, merged.stdout


def test_own_edits_shift_lines_into_base_coordinates(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 30\n", "line 30 b\n"))
    # a inserted five lines at the top: its line 35 is base line 30
    sp.write(a, "app.txt", "new\n" * 5 + APP)
    _, out = run_check(a, "app.txt:35", capsys=capsys)
    assert out["decision"] == "deny"
    assert out["conflicts"][0]["ranges"] == [[30, 30]]
    _, out = run_check(a, "app.txt:33", capsys=capsys)  # base line 28: near their 30
    assert out["decision"] == "ask"


def test_untouched_file_is_allowed(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    rc, out = run_check(a, "other.txt:1-3", capsys=capsys)
    assert rc == 0
    assert out == {"decision": "allow", "reason": out["reason"], "conflicts": []}


def test_committed_sibling_work_counts_too_and_text_output_names_it(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 5\n", "line 5 committed\n"))
    sp.commit(b, "b's change")
    rc = main(["check", "-C", str(a), "app.txt:5"])
    text = capsys.readouterr().out
    assert rc == 1
    assert "DENY" in text and "b (feat/b) app.txt:5" in text and "+line 5 committed" in text


def test_untracked_new_file_in_a_sibling_conflicts_with_a_write_of_the_same_path(pair, capsys):
    sp, a, b = pair
    sp.write(b, "pkg/new.py", "x = 1\n")  # untracked in b
    _, out = run_check(a, "pkg/new.py", capsys=capsys)
    assert out["decision"] == "deny"
    assert "+x = 1" in out["conflicts"][0]["hunk"]


def test_intent_of_a_sibling_asks(pair, capsys):
    _sp, a, b = pair
    assert main(["intend", "-C", str(b), "other.txt:2-3"]) == 0
    capsys.readouterr()
    _, out = run_check(a, "other.txt:1", capsys=capsys)
    assert out["decision"] == "ask"
    (c,) = out["conflicts"]
    assert c["evidence"] == "intent" and c["agent"] == "b" and c["ranges"] == [[2, 3]]


def test_symbol_defined_in_the_lines_and_used_by_sibling_new_code_asks(pair, capsys):
    sp, a, b = pair
    sp.write(b, "report.py", "from lib import total\n\nprint(total(4))\n")  # untracked
    # the symbol check reads b's work as last recorded (its hooks, PostToolUse, snapshot)
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    _, out = run_check(a, "lib.py:4-5", capsys=capsys)
    assert out["decision"] == "ask"
    (c,) = [c for c in out["conflicts"] if c["evidence"] == "symbol"]
    assert c["agent"] == "b" and c["path"] == "report.py" and "total" in c["detail"]
    assert "+print(total(4))" in c["hunk"]
    _, out = run_check(a, "lib.py:8-9", capsys=capsys)  # other(): nobody uses it
    assert out["decision"] == "allow"


def test_policy_from_flag_and_git_config(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    _, out = run_check(a, "app.txt:12", "--deny-on", "never", capsys=capsys)
    assert out["decision"] == "ask"
    subprocess.run(["git", "config", "proximity.checkPolicy", "ta"], cwd=a, check=True)
    _, out = run_check(a, "app.txt:14", capsys=capsys)  # near: traffic, denied under "ta"
    assert out["decision"] == "deny"
    subprocess.run(["git", "config", "proximity.checkPolicy", "bogus"], cwd=a, check=True)
    assert main(["check", "-C", str(a), "app.txt:30"]) == 2


def test_the_check_policy_key_leaves_the_airspace_policy_alone(pair, capsys):
    """`git config proximity.checkPolicy ta`, as the agents page says, is check's key:
    the airspace policy that every scan and hook loads does not call it unknown."""
    _, a, _ = pair
    subprocess.run(["git", "config", "proximity.checkPolicy", "ta"], cwd=a, check=True)
    assert main(["status", "-C", str(a)]) == 0
    capsys.readouterr()
    main(["doctor", "-C", str(a), "--json"])
    checks = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["config"]["status"] == "ok", checks["config"]
    proc = subprocess.run([sys.executable, "-m", "proximity", "hook", "pre-commit"], cwd=a,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "unknown proximity setting" not in proc.stderr, proc.stderr


def test_decision_logic_on_plain_data():
    d = hunks.parse("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -10,2 +10,3 @@\n-a\n-b\n+A\n+B\n+C\n")
    side = decision.Side("b", "feat/b", "f", ((12, 14),), ((12, 14),), d["f"])
    assert decision.decide([side]).decision == "deny"
    near = side._replace(mine=((15, 16),), requested=((15, 16),))
    assert decision.decide([near]).decision == "ask"
    far = side._replace(mine=((30, 31),), requested=((30, 31),))
    got = decision.decide([far])  # the same file, far away: shown, allowed
    assert got.decision == "allow" and got.conflicts[0].level == "info"
    assert decision.decide([far], "ta").decision == "allow"
    assert decision.decide([near], "ta").decision == "deny"
    assert decision.decide([]).decision == "allow"
    big = hunks.Hunk(1, 500, 1, 500, tuple(f"-{'x' * 300}" for _ in range(500)))
    ex = hunks.excerpt([big])
    assert len(ex.split("\n")) <= hunks.MAX_LINES and len(ex.encode()) <= hunks.MAX_BYTES


# -- Claude Code hooks ---------------------------------------------------------------------
def event(where: Path, tool: str, tool_input: dict, name: str = "PreToolUse") -> dict:  # type: ignore[type-arg]
    return {"session_id": "s1", "transcript_path": str(where / "t.jsonl"), "cwd": str(where),
            "permission_mode": "default", "hook_event_name": name, "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_01"}


def test_claude_hook_edit_of_a_sibling_line_is_denied_in_claude_format(pair):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": str(a / "app.txt"), "old_string": "line 11\nline 12\n",
        "new_string": "eleven\ntwelve\n"}))
    assert set(out) == {"hookSpecificOutput", "systemMessage"}
    hso = out["hookSpecificOutput"]
    assert set(hso) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert hso["hookEventName"] == "PreToolUse" and hso["permissionDecision"] == "deny"
    assert "'b'" in hso["permissionDecisionReason"]
    assert "+line 12 b" in hso["permissionDecisionReason"]
    # Claude Code shows the reason to the model only: the person reads the summary
    summary = out["systemMessage"]
    assert summary.startswith("proximity: DENY: worktree 'b'") and "\n" not in summary


def test_claude_hook_multiedit_and_write(pair):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 30\n", "line 30 b\n"))
    out = hook(a, "claude", event(a, "MultiEdit", {"file_path": str(a / "app.txt"), "edits": [
        {"old_string": "line 2\n", "new_string": "two\n"},
        {"old_string": "line 28\n", "new_string": "28\n"}]}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"  # 28 is near 30
    out = hook(a, "claude", event(a, "MultiEdit", {"file_path": str(a / "app.txt"), "edits": [
        {"old_string": "line 2\n", "new_string": "two\n"},
        {"old_string": "line 31\n", "new_string": "31\n"}]}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"  # 31 touches 30
    # a Write of a new file nobody else has: no objection, so no decision (Claude Code's
    # own permission flow decides: an allow would skip the person's prompt)
    out = hook(a, "claude", event(a, "Write", {"file_path": str(a / "docs" / "new.md"),
                                               "content": "hello\n"}))
    assert out == {}
    # a Write over a file the sibling changed: the whole file, deny
    out = hook(a, "claude", event(a, "Write", {"file_path": str(a / "app.txt"),
                                               "content": "all new\n"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_write_is_judged_by_the_lines_it_changes(pair):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 30\n", "line 30 b\n"))
    path = str(a / "app.txt")
    # the whole file written back with one line changed, far from b's work: no objection
    out = hook(a, "claude", event(a, "Write", {"file_path": path,
                                               "content": APP.replace("line 2\n", "two\n")}))
    assert out == {}, out
    # the same file unchanged: nothing is edited
    out = hook(a, "claude", event(a, "Write", {"file_path": path, "content": APP}))
    assert out == {}, out
    # one line changed where b works: deny, naming b's change
    out = hook(a, "claude", event(a, "Write", {"file_path": path,
                                               "content": APP.replace("line 30\n", "x\n")}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
    assert "'b'" in out["hookSpecificOutput"]["permissionDecisionReason"]


def test_claude_hook_fails_open(pair, tmp_path):
    """What it cannot judge it lets through, saying why to the person (systemMessage) and
    deciding nothing: Claude Code's own permission flow still asks what it would ask."""
    _sp, a, _ = pair
    out = hook(a, "claude", event(a, "Edit", {"nonsense": True}))
    assert set(out) == {"systemMessage"}, out  # no hookSpecificOutput: no decision
    assert out["systemMessage"].startswith("proximity: unreadable hook event")
    assert "file_path is missing" in out["systemMessage"]
    proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", "claude"],
                          input="not json", capture_output=True, text=True, cwd=a, check=False)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert set(out) == {"systemMessage"} and "unreadable" in out["systemMessage"], out
    # a hook wired without its event (nothing on standard input): said, never a silent {}
    for name in ("claude", "codex", "gemini", "cursor"):
        proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", name],
                              input="", capture_output=True, text=True, cwd=a, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "no hook event on standard input; not checked" in proc.stdout, (name,
                                                                                proc.stdout)
    # a file outside any worktree, a command that edits nothing: no objection, no decision
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = hook(outside, "claude", event(outside, "Write", {"file_path": str(outside / "x"),
                                                           "content": ""}))
    assert out == {}
    out = hook(a, "claude", event(a, "Bash", {"command": "ls"}))
    assert out == {}


def test_claude_post_tool_use_records_the_write_for_siblings(pair, capsys):
    sp, a, b = pair
    from proximity.ledger import Ledger

    sp.write(a, "app.txt", APP.replace("line 7\n", "line 7 a\n"))
    out = hook(a, "claude-post", event(a, "Edit", {
        "file_path": str(a / "app.txt"), "old_string": "line 7\n", "new_string": "line 7 a\n"},
        name="PostToolUse") | {"tool_response": {"success": True}})
    assert out == {}
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=a, text=True,
                            capture_output=True, check=True).stdout.strip()
    led = Ledger(os.path.join(a, common, "ecm"), create=False)
    try:
        ev = led.last_event("a")
    finally:
        led.close()
    assert ev is not None and ev.kind == "snapshot" and "app.txt" in ev.files
    # the sibling sees it at once, in its check and in its scan
    _, res = run_check(b, "app.txt:6-8", capsys=capsys)
    assert res["decision"] == "deny" and res["conflicts"][0]["agent"] == "a"
    assert main(["ledger", "--json", "-C", str(b), "-n", "1"]) == 0
    assert '"app.txt"' in capsys.readouterr().out  # b's view of the shared ledger


def test_gemini_hook_format(pair):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    ev = {"session_id": "s", "transcript_path": "", "cwd": str(a),
          "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z",
          "tool_name": "replace", "tool_input": {"file_path": str(a / "app.txt"),
                                                 "old_string": "line 12\n",
                                                 "new_string": "x\n"}}
    out = hook(a, "gemini", ev)
    assert out["decision"] == "deny" and "'b'" in out["reason"]
    ev["tool_input"]["old_string"] = "line 14\n"
    out = hook(a, "gemini", ev)  # ask, which Gemini CLI's hooks cannot: tell the person
    assert set(out) == {"systemMessage"}, out  # and decide nothing
    assert out["systemMessage"].startswith("proximity: ASK: worktree 'b'"), out
    ev["tool_input"]["old_string"] = "line 30\n"
    assert hook(a, "gemini", ev) == {}  # no objection: no decision


def test_lines_of_maps_old_string_to_lines():
    text = "a\nb\nc\nb\n"
    assert edits.lines_of(text, "b\nc\n") == [(2, 3)]
    assert edits.lines_of(text, "b", every=True) == [(2, 2), (4, 4)]
    assert edits.lines_of(text, "zzz") is None


def test_a_deleted_block_counts_to_its_last_line():
    """Deleting whole lines (new_string empty) edits every one of them: the last deleted
    line is not "kept" because both strings end alike."""
    text = lines(20)
    gone = edits.apply(text, [("line 8\nline 9\nline 10\n", "", False)])
    assert gone.ranges == ((8, 10),)
    kept = edits.apply(text, [("line 8\nline 9\nline 10\n", "line 8\nline 10\n", False)])
    assert kept.ranges == ((9, 9),)
    added = edits.apply(text, [("line 8\n", "line 8\nnew\n", False)])
    assert added.ranges == ((9, 8),)  # a pure insertion after line 8
    tail = edits.apply("a\nb", [("b", "", False)])
    assert tail.ranges == ((2, 2),) and tail.result == "a\n"


def test_deleting_the_lines_above_a_siblings_insertion_is_a_conflict(pair):
    """Found on a swarm's changelog: an agent deleting a block that ends right where a
    sibling inserted lines was asked ("1 unchanged line away") and git's merge conflicted:
    the block's last line was not counted as deleted."""
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12\nb's new line\n"))
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": str(a / "app.txt"), "old_string": "line 10\nline 11\nline 12\n",
        "new_string": ""}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
    # git's merge of the two agrees
    sp.write(a, "app.txt", APP.replace("line 10\nline 11\nline 12\n", ""))
    sp.commit(a, "a deletes")
    sp.commit(b, "b inserts")
    merged = merge_tree(a)
    assert merged.returncode == 1, merged.stdout


def test_a_siblings_fifo_or_device_is_read_as_gone_and_never_waited_on(pair, tmp_path):
    """A sibling's tracked file replaced by a FIFO (or a link to a device) has no content
    git would read, and reading it waits for ever (or never ends): the check answers at
    once, judging the file as gone there."""
    _sp, a, b = pair
    os.remove(b / "app.txt")
    os.mkfifo(b / "app.txt")
    (b / "other.txt").unlink(missing_ok=True)
    os.symlink("/dev/zero", b / "other.txt")
    for spec in ("app.txt:10", "other.txt:1"):
        proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--json", spec],
                              cwd=a, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PROXIMITY_SERVICE": "0"})
        assert proc.returncode in (0, 1), proc.stderr
        assert json.loads(proc.stdout)["decision"] in ("allow", "ask", "deny")


def test_a_sibling_directory_linked_out_of_its_worktree_is_never_read(pair, tmp_path):
    """b moves app.txt into d/ and makes d a link to a directory outside any worktree:
    git never follows a link to a directory, and what is there is not shown."""
    _sp, a, b = pair
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.txt").write_text(APP.replace("line 10\n", "SECRET FROM OUTSIDE\n"))
    os.mkdir(b / "d")
    git(b, "mv", "app.txt", "d/app.txt")
    os.remove(b / "d" / "app.txt")
    os.rmdir(b / "d")
    os.symlink(outside, b / "d")
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": str(a / "app.txt"), "old_string": "line 10\n",
        "new_string": "line 10 by a\n"}))
    assert "SECRET" not in json.dumps(out), out


def test_an_edit_of_a_crlf_file_given_with_lf_ends_is_placed_on_its_lines(space):
    """A harness that read a CRLF file with LF ends gives the edit's result with them: that
    is no change of every line. a's edit of line 5 is far from b's line 20."""
    crlf = "".join(f"line {i}\r\n" for i in range(1, 31))
    sp = space({"win.txt": crlf})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "win.txt", crlf.replace("line 20\r\n", "line 20 by b\r\n"))
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": str(a / "win.txt"), "old_string": "line 5\n",
        "new_string": "line 5 by a\n"}))
    assert out.get("hookSpecificOutput", {}).get("permissionDecision") != "deny", out


def test_an_edit_of_a_crlf_file_given_with_its_own_ends_is_judged(space):
    """A harness that gives a CRLF file's strings with their "\r\n" ends edits the file;
    it was read as "not in the file" (the file was read with its ends made "\n") and let
    through onto b's line, where git's merge conflicts."""
    crlf = "".join(f"line {i}\r\n" for i in range(1, 31))
    sp = space({"win.txt": crlf})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "win.txt", crlf.replace("line 5\r\n", "line 5 by b\r\n"))
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": str(a / "win.txt"), "old_string": "line 5\r\n",
        "new_string": "line 5 by a\r\n"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out


# -- messages carry the other side's hunk --------------------------------------------------
def test_advisory_steer_hold_and_inbox_show_the_other_sides_hunk(space, capsys):
    sp = space({"f.txt": lines(30)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", lines(30).replace("line 10\n", "A wrote this\n"))
    sp.commit(a, "a: rewrite line 10")
    sp.write(b, "f.txt", lines(30).replace("line 10\n", "B wrote that\n"))
    cwd = os.getcwd()
    os.chdir(b)
    try:
        assert main(["hook", "pre-push"]) == 1  # b must yield
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert "RESOLUTION ADVISORY" in err
    assert "their change in f.txt:" in err and "+A wrote this" in err  # a's hunk, not b's
    assert "+B wrote that" not in err
    assert main(["inbox", "--json", "--all", "-C", str(a)]) == 0
    (hold,) = json.loads(capsys.readouterr().out)["messages"]
    assert hold["type"] == "hold"
    assert "+B wrote that" in hold["body"]["their_files"][0]["hunk"]
    # a's next edit (Claude Code PostToolUse) records it and hands a its message
    out = hook(a, "claude-post", event(a, "Edit", {
        "file_path": str(a / "f.txt"), "old_string": "line 20\n", "new_string": "20\n"},
        name="PostToolUse"))
    ctx_text = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert "HOLD COURSE" in ctx_text and "+B wrote that" in ctx_text and "-line 10" in ctx_text
    assert main(["inbox", "-C", str(a)]) == 0
    assert "no new messages" in capsys.readouterr().out  # delivered once


def test_the_docs_give_the_claude_settings_block_and_mcp_configuration():
    import re

    from proximity import checkargs
    from proximity.main import build_parser

    section = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text()
    block = re.search(r"## Claude Code.*?```json\n(.*?)```", section, re.S)
    assert block is not None
    hooks_cfg = json.loads(block.group(1))["hooks"]
    for stage, command in (("PreToolUse", "proximity check --hook claude"),
                           ("PostToolUse", "proximity check --hook claude-post")):
        (entry,) = hooks_cfg[stage]
        assert entry["matcher"] == "Edit|MultiEdit|Write|NotebookEdit"
        assert entry["hooks"][0]["command"] == command
        argv = command.split()[1:]
        assert checkargs.parse(argv[1:]) == checkargs.CheckArgs(hook=argv[-1])
        assert build_parser().parse_args(argv).hook == argv[-1]
    assert "claude mcp add proximity -- proximity mcp" in section
    mcp_json = re.search(r'```json\n(\{"mcpServers".*?)```', section, re.S)
    assert mcp_json is not None
    assert json.loads(mcp_json.group(1))["mcpServers"]["proximity"] == {
        "command": "proximity", "args": ["mcp"]}


def test_multiedit_whose_second_edit_matches_text_the_first_one_wrote(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a\nb\nc\nd\n")
    ev = {"cwd": str(tmp_path), "tool_name": "MultiEdit", "tool_input": {
        "file_path": str(f), "edits": [{"old_string": "b\n", "new_string": "B1\n"},
                                       {"old_string": "B1\n", "new_string": "B2\n"},
                                       {"old_string": "d\n", "new_string": "D\n"}]}}
    got = claude.read(ev, str(tmp_path))
    assert isinstance(got, Edits)
    assert [e[:2] for e in got.edits] == [(str(f), ((2, 2), (4, 4)))]
    ev["tool_input"]["edits"].append({"old_string": "nowhere", "new_string": ""})
    # its text is nowhere: Claude Code refuses the whole call itself, nothing is edited
    got = claude.read(ev, str(tmp_path))
    assert isinstance(got, Edits)
    assert [(e.path, e.ranges, e.unplaced) for e in got.edits] == [
        (str(f), None, "edit 4 of 4: its old_string is not in the file")]


def test_other_worktrees_names_and_lines_reach_the_terminal_sanitised(space, capsys):
    evil = "red\x1b[31mX\x07.txt"
    sp = space({evil: APP})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, evil, APP.replace("line 12\n", "line 12 \x1b]0;pwned\x07\n"))
    assert main(["check", "-C", str(a), f"{evil}:12"]) == 1
    out = capsys.readouterr().out
    assert "DENY" in out and "\x1b" not in out and "\x07" not in out
    ev = {"session_id": "s", "cwd": str(a), "hook_event_name": "PreToolUse",
          "tool_name": "Edit", "tool_input": {"file_path": str(a / evil),
                                              "old_string": "line 12\n", "new_string": "x\n"}}
    got = hook(a, "claude", ev)["hookSpecificOutput"]
    assert got["permissionDecision"] == "deny"
    reason = got["permissionDecisionReason"]
    assert "+line 12" in reason and "\x1b" not in reason and "\x07" not in reason


def test_a_directory_a_path_outside_or_in_git_or_too_long_is_a_usage_error(pair, capsys):
    _sp, a, _b = pair
    (a / "src").mkdir()
    errs = {}
    for spec in ("src", ".", "../b/app.txt", "app.txt:0-3", ".git/config", ".git",
                 "x" * 5000, "src/" + "y" * 4200, "app.txt:abc", "app.txt:12-x"):
        assert main(["check", "-C", str(a), spec]) == 2, spec
        err = capsys.readouterr().err
        assert "proximity: error:" in err
        errs[spec] = err
    assert "is a directory" in errs["src"] and "bad line range" in errs["app.txt:0-3"]
    # a typo in the lines is not part of a file name nobody has (that would be "allow")
    assert "bad line range 'abc'" in errs["app.txt:abc"]
    assert "bad line range '12-x'" in errs["app.txt:12-x"]
    assert "git's own" in errs[".git/config"] and "git's own" in errs[".git"]
    assert all("at most 4096" in e for spec, e in errs.items() if len(spec) > 4096), errs


def test_a_worktree_only_shown_is_not_counted_among_those_in_the_way():
    d = hunks.parse("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -10,2 +10,3 @@\n-a\n-b\n+A\n+B\n+C\n")
    hit = decision.Side("b", "feat/b", "f", ((12, 14),), ((12, 14),), d["f"])
    far = decision.Side("c", "feat/c", "f", ((40, 41),), ((40, 41),), d["f"])
    got = decision.decide([hit, far])
    assert got.decision == "deny" and "more worktree" not in got.reason
    assert {c.agent for c in got.conflicts} == {"b", "c"}  # c is still shown


def test_merging_a_branch_is_checked_before_anything_is_written(pair, capsys):
    """`check --merge REF`: the conflicting work of a pair arrives by a merge as often as by
    an edit (held-out replays: 25 of 54 pairs), and no edit asks about it. b is about to
    merge `release`, which rewrites line 12 that a is editing (uncommitted): deny, naming
    a, before b's files or index change; `later`, which changes other lines, is allowed."""
    from conftest import git

    sp, a, b = pair
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))  # a's live work
    git(sp.main, "switch", "-q", "-c", "release")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released\n"))
    sp.commit(sp.main, "release rewrites line 12")
    git(sp.main, "switch", "-q", "-c", "later", "HEAD~1")
    sp.write(sp.main, "app.txt", APP.replace("line 30\n", "line 30 later\n"))
    sp.commit(sp.main, "later edits line 30")
    before = git(b, "status", "--porcelain").stdout, git(b, "rev-parse", "HEAD").stdout
    rc, out = run_check(b, "--merge", "release", capsys=capsys)
    assert rc == 1 and out["decision"] == "deny", out
    (c,) = [c for c in out["conflicts"] if c["evidence"] == "conflict"]
    assert c["agent"] == "a" and c["path"] == "app.txt" and c["ranges"] == [[12, 12]]
    assert out["merge"]["paths"] == ["app.txt"] and out["merge"]["own_conflicts"] == []
    rc, out = run_check(b, "--merge", "later", capsys=capsys)
    assert rc == 0 and out["decision"] == "allow", out
    assert (git(b, "status", "--porcelain").stdout, git(b, "rev-parse", "HEAD").stdout) \
        == before  # nothing written
    # text, and a name that is no commit (never read as an option)
    assert main(["check", "-C", str(b), "--merge", "release"]) == 1
    assert "merging 'release'" in capsys.readouterr().out
    assert main(["check", "-C", str(b), "--merge=--output=/tmp/x"]) == 2
    assert "names no commit" in capsys.readouterr().err
    # the Claude Code hook on Bash: `git merge REF` / `git rebase REF` is asked the same
    # way, before it runs, wherever it stands in the line; anything else is no merge, and a
    # ref the shell would expand is not read (its text is never run)
    def bash(cmd: str) -> dict:  # type: ignore[type-arg]
        return hook(b, "claude", {"tool_name": "Bash", "cwd": str(b),
                                  "tool_input": {"command": cmd}})

    out = bash("git merge --no-ff release")["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", out
    assert "merging 'release'" in out["permissionDecisionReason"] and "'a'" in \
        out["permissionDecisionReason"]
    assert bash("git rebase later") == {}  # no objection: no decision
    for cmd in ("git merge --no-ff -m 'Merge release' release", "git -c a.b=c merge release",
                "/usr/bin/git merge -X theirs release", "git merge -- release",
                "git merge release; touch pwned"):
        assert bash(cmd)["hookSpecificOutput"]["permissionDecision"] == "deny", cmd
    for cmd in ("git status", "git merge --abort"):
        assert bash(cmd) == {}, cmd
    for cmd in ("git merge $(touch pwned)", "git merge " + "x" * 5000):  # not read: said
        out = bash(cmd)
        assert set(out) == {"systemMessage"} and "not checked" in out["systemMessage"], out
    assert not (b / "pwned").exists()


def test_a_merge_check_counts_only_what_the_merge_will_change_against_each_sibling(pair,
                                                                                  capsys):
    """Found on a real repository: merging the branch the main checkout has checked out, with its
    uncommitted work on the lines that branch changed, is no conflict with it (after the
    merge both sides hold that branch's lines: only its own edits differ); a branch that
    only renames a file a sibling edits changes no line of it."""
    from conftest import git

    sp, a, b = pair
    git(sp.main, "switch", "-q", "-c", "rel")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released\n"))
    sp.commit(sp.main, "release")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released, then more\n"))
    rc, out = run_check(b, "--merge", "rel", capsys=capsys)
    assert rc == 0 and out["decision"] == "allow", out
    git(sp.main, "checkout", "-q", "--", "app.txt")
    git(sp.main, "switch", "-q", "-c", "mv", "HEAD~1")
    git(sp.main, "mv", "app.txt", "moved.txt")
    sp.commit(sp.main, "rename only")
    git(sp.main, "switch", "-q", "rel")
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))
    rc, out = run_check(b, "--merge", "mv", capsys=capsys)
    assert rc == 0 and out["decision"] == "allow", out


def test_a_merge_check_reads_the_lines_git_merges_not_a_textconv_view(pair, tmp_path, capsys):
    """A textconv driver (here one that puts a five-line header on top) changes what
    `git diff` shows, not what git's merge joins. The lines a merge brings are read from
    the files themselves: a's line 17 is five lines from the merged line 12, not on it."""
    from conftest import git

    sp, a, b = pair
    driver = tmp_path / "header.sh"
    driver.write_text('#!/bin/sh\nprintf "h\\nh\\nh\\nh\\nh\\n"; cat "$1"\n')
    driver.chmod(0o755)
    git(sp.main, "config", "diff.header.textconv", str(driver))
    (sp.main / ".git" / "info").mkdir(exist_ok=True)
    (sp.main / ".git" / "info" / "attributes").write_text("*.txt diff=header\n")
    git(sp.main, "switch", "-q", "-c", "rel")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released\n"))
    sp.commit(sp.main, "release")
    sp.write(a, "app.txt", APP.replace("line 17\n", "line 17 by a\n"))
    # `git diff` shows line 12 as line 17 (its three lines of context from 14)
    assert "@@ -14,7 +14,7 @@" in git(sp.main, "diff", "HEAD~1", "HEAD", "--", "app.txt").stdout
    rc, out = run_check(b, "--merge", "rel", capsys=capsys)
    assert rc == 0 and out["decision"] == "allow", out
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))
    rc, out = run_check(b, "--merge", "rel", capsys=capsys)
    lined = [c for c in out["conflicts"] if c["agent"] == "a" and c["ranges"]]
    assert [c["ranges"] for c in lined] == [[[12, 12]]] and lined[0]["evidence"] == "conflict"


def test_a_merge_that_git_would_stop_with_conflicts_here_is_never_allowed(space, capsys):
    """The integrator's question in the main checkout: a lane that did not rebase onto work
    landed since meets it on the same line. No sibling is in the way, but git's merge
    itself would stop with conflicts: asked (its author rebases, or the one merging
    resolves), naming the paths -- never "allow"."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    lane = sp.wt("lane")
    sp.write(lane, "app.txt", APP.replace("line 12\n", "line 12 by the lane\n"))
    sp.commit(lane, "lane's change")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 landed first\n"))
    sp.commit(sp.main, "landed")
    rc, out = run_check(sp.main, "--merge", "feat/lane", capsys=capsys)
    assert out["decision"] == "ask", out
    assert out["merge"]["own_conflicts"] == ["app.txt"]
    assert "conflicts with what this checkout holds in app.txt" in out["reason"]
    assert [c["path"] for c in out["conflicts"] if c["agent"] == "feat/lane"] == ["app.txt"]
    # a sibling working next to the lane's line asks first; git's own stop is still said
    near = sp.wt("near")
    sp.write(near, "app.txt", APP.replace("line 14\n", "line 14 nearby\n"))
    rc, out = run_check(sp.main, "--merge", "feat/lane", capsys=capsys)
    assert out["decision"] == "ask" and "'near'" in out["reason"], out
    assert "git's merge itself stops in app.txt" in out["reason"], out
    assert out["merge"]["own_conflicts"] == ["app.txt"]
    sp.write(near, "app.txt", APP)
    # once the lane rebased onto what landed, the same merge is allowed
    git(lane, "rebase", "-q", "-X", "ours", "main")
    rc, out = run_check(sp.main, "--merge", "feat/lane", capsys=capsys)
    assert rc == 0 and out["decision"] == "allow", out


def test_a_siblings_binary_change_is_seen(space, capsys):
    """A binary file a sibling changed (its live copy against the base blob: two files
    git names differently, so its diff names no path) is a change: an edit of it would
    conflict (found on a real repository: allowed, and a merge bringing it in too)."""
    sp = space({"assets/images/logo-large.bin": "\0\1\2binary\0", "t.txt": "x\n"})
    a, b = sp.wt("a"), sp.wt("b")
    (a / "assets/images/logo-large.bin").write_bytes(b"\0\5\6other\0")
    rc, out = run_check(b, "assets/images/logo-large.bin", capsys=capsys)
    assert rc == 1 and out["decision"] == "deny", out
    assert "(binary)" in out["reason"]


def test_a_merge_whose_result_git_would_conflict_with_a_siblings_live_work_is_denied(
        space, capsys):
    """The branch to merge moves app.txt to moved.txt and edits line 10 there; sibling a
    edits line 10 of app.txt, uncommitted. Per path and line the merge touches nothing a
    works on; git's merge of the result with a's work conflicts (it follows the move)."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    git(sp.main, "checkout", "-q", "-b", "mv")
    git(sp.main, "mv", "app.txt", "moved.txt")
    (sp.main / "moved.txt").write_text(APP.replace("line 10\n", "line 10 moved\n"))
    git(sp.main, "commit", "-qam", "move and edit")
    git(sp.main, "checkout", "-q", "main")
    sp.write(a, "app.txt", APP.replace("line 10\n", "line 10 by a\n"))
    rc, out = run_check(b, "--merge", "mv", capsys=capsys)
    assert rc == 1 and out["decision"] == "deny", out
    (c,) = [c for c in out["conflicts"] if c["agent"] == "a"]
    assert c["evidence"] == "conflict" and "moved.txt" in c["detail"]
    # the same through the Claude Code hook, before `git merge mv` runs
    got = hook(b, "claude", event(b, "Bash", {"command": "git merge mv"}))
    assert got["hookSpecificOutput"]["permissionDecision"] == "deny", got
    # a merge that git would merge cleanly with a's work is not denied
    sp.write(a, "app.txt", APP.replace("line 30\n", "line 30 by a\n"))
    rc, out = run_check(b, "--merge", "mv", capsys=capsys)
    assert out["decision"] != "deny", out


def test_the_pre_edit_check_follows_moves_as_gits_merge_does(pair, capsys):
    sp, a, b = pair
    # b changes line 17 of app.txt; a moves app.txt (git mv): an edit of line 17 at the
    # new path is an edit of b's line
    sp.write(b, "app.txt", APP.replace("line 17\n", "line 17 by b\n"))
    git(a, "mv", "app.txt", "moved.txt")
    _, out = run_check(a, "moved.txt:17", capsys=capsys)
    assert out["decision"] == "deny", out
    assert any(c["agent"] == "b" and c["evidence"] == "conflict" for c in out["conflicts"])
    _, out = run_check(a, "moved.txt:30", capsys=capsys)
    assert out["decision"] == "allow", out
    # the other way round: b moves lib.py and edits it there; a's edit of the old path
    # meets b's lines at the new one, and elsewhere git carries it through the move
    git(b, "mv", "lib.py", "lib2.py")
    text = (b / "lib2.py").read_text().splitlines(keepends=True)
    text[0] = text[0].rstrip("\n") + "  # by b\n"
    (b / "lib2.py").write_text("".join(text))
    git(b, "add", "-A")
    _, out = run_check(a, "lib.py:1", capsys=capsys)
    assert out["decision"] == "deny", out
    _, out = run_check(a, f"lib.py:{len(text)}", capsys=capsys)
    assert out["decision"] != "deny", out


def test_a_move_an_agent_is_about_to_make_is_checked_like_an_edit_of_the_whole_file(pair):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 30\n", "line 30 b\n"))
    for cmd in ("git mv app.txt moved.txt", "mv app.txt moved.txt",
                "git mv -k app.txt other.txt docs/"):
        got = hook(a, "claude", event(a, "Bash", {"command": cmd}))
        assert got["hookSpecificOutput"]["permissionDecision"] == "deny", (cmd, got)
    # a file nobody else works on moves freely; a compound command is not read
    got = hook(a, "claude", event(a, "Bash", {"command": "git mv other.txt o2.txt"}))
    assert got == {}, got
    got = hook(a, "claude", event(a, "Bash", {"command": "mv app.txt x; echo done"}))
    assert got == {}, got


def test_the_context_an_edit_carries_to_be_unique_is_not_an_edit(space):
    """Claude Code makes old_string unique by widening it; only the lines old_string and
    new_string do not share are edited. b deletes line 4; a's Edit changes line 2 with
    lines 2-4 as its old_string: ask (near), as `check w.yaml:2` says, not deny."""
    text = "jobs:\n  - uses: pub@v1\n    with:\n      password: x\n" \
           "  - run: build\n  - uses: pub@v1\n    with:\n      password: y\n"
    sp = space({"w.yaml": text})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "w.yaml", text.replace("      password: x\n", ""))
    old = "  - uses: pub@v1\n    with:\n      password: x\n"
    edit = {"file_path": str(a / "w.yaml"), "old_string": old,
            "new_string": old.replace("pub@v1", "pub@v2")}
    got = hook(a, "claude", event(a, "Edit", edit))
    assert got["hookSpecificOutput"]["permissionDecision"] == "ask", got
    # an edit of the deleted line itself is still denied
    edit = {"file_path": str(a / "w.yaml"), "old_string": old,
            "new_string": old.replace("password: x", "password: z")}
    got = hook(a, "claude", event(a, "Edit", edit))
    assert got["hookSpecificOutput"]["permissionDecision"] == "deny", got


def test_the_side_with_right_of_way_is_asked_the_side_that_yields_is_denied(pair, capsys):
    """Two agents each holding lines the other needs were both denied and each waited for
    the other to land. With a standing Resolution Advisory (the one order every worktree
    reads), the holder's edit there is asked and the yielding side's denied."""
    sp, a, b = pair
    sp.write(a, "app.txt", APP.replace("line 10\n", "line 10 a\n").replace(
        "line 11\n", "line 11 a\n").replace("line 12\n", "line 12 a\n"))
    sp.commit(a, "a's three lines")
    sp.write(b, "app.txt", APP.replace("line 11\n", "line 11 b\n"))
    sp.commit(b, "b's one line")
    assert main(["scan", "-C", str(sp.main)]) == 0  # records the pair's decision
    capsys.readouterr()
    _, mine = run_check(a, "app.txt:11", capsys=capsys)
    _, theirs = run_check(b, "app.txt:11", capsys=capsys)
    assert mine["decision"] == "ask", mine
    assert "right-of-way" in mine["reason"], mine
    assert theirs["decision"] == "deny", theirs


def test_right_of_way_covers_the_collision_it_was_given_for_not_the_others_lines(
        pair, capsys):
    """The holder goes on where its change and the yielding side's meet. Lines only the
    yielding side changed (committed, so it cannot steer off them) are a new collision,
    where it came first: the holder's edit there is denied as anyone's, and the deny is
    the holder's wait on them (a wait cycle with them is broken as any other)."""
    sp, a, b = pair
    held_over(sp, a, b, APP, far=30)
    assert main(["scan", "-C", str(sp.main)]) == 0  # records the pair's decision
    capsys.readouterr()
    _, held = run_check(a, "app.txt:11", capsys=capsys)
    assert held["decision"] == "ask" and "right-of-way" in held["reason"], held
    _, theirs = run_check(a, "app.txt:30", capsys=capsys)
    assert theirs["decision"] == "deny", theirs
    assert "right-of-way" not in theirs["reason"], theirs
    assert [c["right_of_way"] for c in theirs["conflicts"] if c["agent"] == "b"] == [False]
    _, fresh = run_check(a, "app.txt:45", capsys=capsys)  # nobody's lines: allowed
    assert fresh["decision"] == "allow", fresh


def test_a_siblings_gitattributes_never_run_a_filter_configured_here(space, capsys):
    """A filter this repository configures (its `clean` command) runs where git adds a
    file of this worktree. A sibling's .gitattributes may name it for its own files: the
    check reads them as data, and runs nothing they name."""
    sp = space({"app.txt": APP})
    mark = sp.root / "filter-ran"
    git(sp.main, "config", "filter.sq.clean", f"touch '{mark}'; cat")
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, ".gitattributes", "*.txt filter=sq\n")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    _, got = run_check(a, "app.txt:12", capsys=capsys)
    assert got["decision"] == "deny", got["reason"]  # (still judged on b's lines)
    assert not mark.exists()


def test_a_file_holding_a_replacement_character_keeps_the_edits_result(space):
    """A UTF-8 file may hold U+FFFD itself (click's CHANGES and utils do): it is read as
    it is, so the edit's result is known and git's merge judges it (the same change as the
    sibling's: allowed). It was taken for a file that is not UTF-8, read with replacement
    characters, and judged by the line rule alone: denied. A file that is not UTF-8 still
    has no result."""
    text = "title \ufffd\n" + APP
    latin = APP.replace("line 1\n", "caf\xe9\n").encode("latin-1")
    sp = space({"app.txt": text})
    sp.write(sp.main, "latin.txt", latin)
    sp.commit(sp.main, "a latin-1 file")
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", text.replace("line 12\n", "line 12 = 2.0\n"))
    path = str(a / "app.txt")
    same = event(a, "Edit", {"file_path": path, "old_string": "line 12\n",
                             "new_string": "line 12 = 2.0\n"})
    why = answer(CheckRequest(str(a), harness="claude", event=json.dumps(same)))
    assert why.decision == "allow" and "same change" in why.reason, why
    # a file that is not UTF-8: an edit of ASCII strings has its result (its bytes kept as
    # they are), so the same change as the sibling's is allowed there too
    (b / "latin.txt").write_bytes(latin.replace(b"line 12\n", b"line 12 = 2.0\n"))
    got = edits.edits_of(str(a / "latin.txt"), [("line 12\n", "line 12 = 2.0\n", False)])
    assert got.ranges == ((12, 12),), got
    assert got.result is not None and edits.encoded(got.result) == latin.replace(
        b"line 12\n", b"line 12 = 2.0\n"), got
    same = event(a, "Edit", {"file_path": str(a / "latin.txt"), "old_string": "line 12\n",
                             "new_string": "line 12 = 2.0\n"})
    why = answer(CheckRequest(str(a), harness="claude", event=json.dumps(same)))
    assert why.decision == "allow" and "same change" in why.reason, why
    # one whose strings are not ASCII: the bytes it writes are not known
    accented = edits.edits_of(str(a / "latin.txt"), [("line 12\n", "line 12 \xe9\n", False)])
    assert accented.ranges == ((12, 12),) and accented.result is None, accented


def test_a_merge_git_merge_file_calls_clean_is_asked_of_gits_own_merge(space):
    """Where the line rule says the two changes meet, the check asks git whether they
    merge. `git merge-file` (myers, in git before 2.44) calls these two clean; git's own
    merge of the branches (ort, histogram: what merge, rebase and merge-tree run) stops.
    The edit was asked "your edit and theirs meet, but git's merge of the two is clean"
    and went on to a conflict at landing; it is denied, as git's merge says."""
    base, theirs = "b\nx\na\nx\nx\nx\n", "b\nx\na\nx\nb\n\nx\nx\nx\n"
    mine = "b\nx\nx\nx\na\n=\nx\nx\n"
    sp = space({"f.txt": base})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "f.txt", theirs)
    files = [sp.root / n for n in ("mine", "base", "theirs")]
    for f, text in zip(files, (mine, base, theirs), strict=True):
        f.write_text(text)
    assert git(sp.root, "merge-file", "-p", *map(str, files), check=False).returncode == 0
    write = event(a, "Write", {"file_path": str(a / "f.txt"), "content": mine})
    why = answer(CheckRequest(str(a), harness="claude", event=json.dumps(write)))
    assert why.decision == "deny", why
    sp.write(a, "f.txt", mine)
    sp.commit(a)
    sp.commit(b)
    assert merge_tree(sp.main).returncode == 1  # git's own merge stops


def test_gits_own_merge_is_asked_alike_from_many_threads(monkeypatch):
    """A service asks from several threads at once, and its scratch repository for
    git's merges is made anew as questions pile up: every answer is the one asked alone
    (a shared name for the commits or the marks gave wrong answers under load)."""
    from concurrent.futures import ThreadPoolExecutor

    from proximity.agents import filemerge

    monkeypatch.setattr(scratch, "MERGE_USES", 7)
    base, theirs = b"b\nx\na\nx\nx\nx\n", b"b\nx\na\nx\nb\n\nx\nx\nx\n"
    mine = b"b\nx\nx\nx\na\n=\nx\nx\n"
    cases = [[(base, mine, theirs)], [(base, base + b"y\n", theirs)],
             [(base, mine, theirs), (base, base + b"y\n", theirs), (base, mine, None)]]
    assert [filemerge.ort_conflicts(c) for c in cases] == [[True], [False],
                                                            [True, False, False]]
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda i: filemerge.ort_conflicts(cases[i % 3]), range(48)))
    assert got == [[[True], [False], [True, False, False]][i % 3] for i in range(48)]


def test_the_same_change_made_on_both_sides_is_not_a_conflict(pair):
    """Two agents bump the same line to the same text (two branches bumping one dependency):
    git's merge takes the change once, so the edit is allowed; a different change of that
    line is still denied, and one git merges cleanly beside theirs is asked."""
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 = 2.0\n"))
    path = str(a / "app.txt")
    same = event(a, "Edit", {"file_path": path, "old_string": "line 12\n",
                             "new_string": "line 12 = 2.0\n"})
    assert hook(a, "claude", same) == {}  # no objection: no decision
    why = answer(CheckRequest(str(a), harness="claude", event=json.dumps(same)))
    assert why.decision == "allow" and "same change" in why.reason, why
    other = hook(a, "claude", event(a, "Edit", {"file_path": path, "old_string": "line 12\n",
                                                "new_string": "line 12 = 3.0\n"}))
    assert other["hookSpecificOutput"]["permissionDecision"] == "deny", other
    # the same change as a Write of the whole file
    out = hook(a, "claude", event(a, "Write", {
        "file_path": path, "content": APP.replace("line 12\n", "line 12 = 2.0\n")}))
    assert out == {}, out
    # the same change plus a change of the next line: git's merge conflicts there (the
    # line after theirs is changed on one side only, touching their change): denied
    out = hook(a, "claude", event(a, "Edit", {
        "file_path": path, "old_string": "line 12\nline 13\n",
        "new_string": "line 12 = 2.0\nline 13 = 2.0\n"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
    # theirs has more than ours in the file: a clean merge that is not our result: asked
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 = 2.0\n")
             .replace("line 35\n", "line 35 b\n"))
    out = hook(a, "claude", event(a, "Edit", {"file_path": path, "old_string": "line 12\n",
                                              "new_string": "line 12 = 2.0\n"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask", out
    # the line-range check, which knows no result, still denies
    rc = main(["check", "-C", str(a), "app.txt:12"])
    assert rc == 1


def test_own_work_touching_the_request_joins_it_as_gits_merge_joins_them(pair, capsys):
    """a changed line 20 earlier (committed); b inserts lines after line 19; a now asks to
    edit lines 21-23, one unchanged line from b's insertion in the base. git's merge sees
    a's change of 20 and the edit of 21-23 as one change, which touches b's insertion: a
    conflict, so a deny (seen on real code: a sibling's move and insertions beside an
    agent's earlier change were answered "near" where the merge conflicted)."""
    sp, a, b = pair
    sp.write(a, "app.txt", APP.replace("line 20\n", "line 20 by a\n"))
    git(a, "commit", "-qam", "a's earlier work", env={"PROXIMITY_SKIP": "1"})
    sp.write(b, "app.txt", APP.replace("line 19\n", "line 19\nb one\nb two\n"))
    rc, out = run_check(a, "app.txt:21-23", capsys=capsys)
    assert out["decision"] == "deny", out
    assert rc == 1
    # git agrees: a's edit of 21-23 committed, the two branches conflict
    sp.write(a, "app.txt", (a / "app.txt").read_text().replace("line 21\n", "21 by a\n"))
    git(a, "commit", "-qam", "a's edit", env={"PROXIMITY_SKIP": "1"})
    git(b, "commit", "-qam", "b's work", env={"PROXIMITY_SKIP": "1"})
    merged = subprocess.run(["git", "merge-tree", "--write-tree", "feat/a", "feat/b"],
                            cwd=a, capture_output=True, text=True)
    assert merged.returncode == 1, merged.stdout
    # far from b's work, a's own earlier change does not make an edit collide
    rc, out = run_check(a, "app.txt:30-31", capsys=capsys)
    assert out["decision"] == "allow", out


def test_a_move_staged_after_an_earlier_check_is_seen_by_the_next(space):
    """The staged moves are remembered per index file: a `git mv` writes a new index, so
    the next check in the same process (the editor's server, the service) asks again."""

    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    assert precheck.check(str(a), [("app.txt", ((12, 12),))]).decision == "allow"
    git(b, "mv", "app.txt", "moved.txt")
    (b / "moved.txt").write_text(APP.replace("line 12\n", "line 12 by b\n"))
    d = precheck.check(str(a), [("app.txt", ((12, 12),))])
    assert d.decision == "deny" and d.conflicts[0].agent == "b", d


def test_changed_signatures_are_rewritten_headers_not_new_functions_or_bodies():
    from proximity.agents import definitions

    diff = """diff --git a/lib.py b/lib.py
--- a/lib.py
+++ b/lib.py
@@ -4,2 +4,2 @@
-def total(n):
-    return n * RATE
+def total(n, rate):
+    return n * rate
@@ -9 +9,3 @@
-    return 1
+    return 2
+def fresh(x):
+    return x
diff --git a/m.go b/m.go
--- a/m.go
+++ b/m.go
@@ -3 +3 @@
-func (s *Shop) Price(a int) int {
+func (s *Shop) Price(a int, tax float64) int {
diff --git a/w.ts b/w.ts
--- a/w.ts
+++ b/w.ts
@@ -1 +1 @@
-export async function load(url: string) {
+export async function load(url: string, retries = 3) {
"""
    got = [(s.name, s.path, s.line, s.header) for s in definitions.changed_signatures(diff)]
    assert got == [("total", "lib.py", 4, "def total(n, rate):"),
                   ("Price", "m.go", 3, "func (s *Shop) Price(a int, tax float64) int {"),
                   ("load", "w.ts", 1, "export async function load(url: string, retries = 3) {")]
    text = "import lib\nx = lib.total(1)\ndef total(n):\n    return total (n)\n"
    assert definitions.calls(text, ["total"]) == [(2, "total"), (4, "total")]


def test_an_edit_whose_text_is_not_in_the_file_is_allowed_with_that_reason(pair):
    """Claude Code refuses an Edit whose old_string is not in the file (and an edit of a
    file that does not exist) itself: nothing is edited, so nothing is denied — b's work
    on the file is no reason to stop it — and the answer says why."""
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    for tool, ti in (
            ("Edit", {"file_path": str(a / "app.txt"), "old_string": "no such text\n",
                      "new_string": "x\n"}),
            ("MultiEdit", {"file_path": str(a / "app.txt"), "edits": [
                {"old_string": "line 12\n", "new_string": "x\n"},
                {"old_string": "nowhere\n", "new_string": "y\n"}]}),
            ("Edit", {"file_path": str(a / "missing.txt"), "old_string": "a\n",
                      "new_string": "b\n"})):
        out = hook(a, "claude", event(a, tool, ti))
        assert set(out) == {"systemMessage"}, out  # said to the person, deciding nothing
        reason = out["systemMessage"]
        assert reason.startswith("proximity: "), out
        assert "refused by the harness itself" in reason, reason
        assert "not in the file" in reason or "does not exist" in reason, reason
    # the same edit with its text in place is judged as ever
    out = hook(a, "claude", event(a, "Edit", {"file_path": str(a / "app.txt"),
                                               "old_string": "line 12\n", "new_string": "x\n"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_what_one_process_remembers_follows_each_change(pair, capsys):
    """A process that answers many checks (the resident service) keeps what never changes
    (merge bases, base blobs, two trees' diff) and what changes only with a file (a
    worktree's staged moves: its index; the check policy: git's config files). Asked again
    in the same process: a sibling's staged move, a new policy, a new commit of its are
    each seen at once."""
    from conftest import git

    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    for _ in range(2):
        _, out = run_check(a, "app.txt:12", capsys=capsys)
        assert out["decision"] == "deny"
        _, out = run_check(a, "app.txt:14", capsys=capsys)
        assert out["decision"] == "ask"  # near
    git(a, "config", "proximity.checkPolicy", "ta")
    _, out = run_check(a, "app.txt:14", capsys=capsys)
    assert out["decision"] == "deny", out  # the policy file changed: read again
    git(a, "config", "--unset", "proximity.checkPolicy")
    _, out = run_check(a, "app.txt:30", capsys=capsys)
    assert out["decision"] == "allow", out
    git(b, "mv", "app.txt", "moved.txt")  # staged: b's index changed
    _, out = run_check(a, "app.txt:12", capsys=capsys)
    assert out["decision"] == "deny" and out["conflicts"][0]["agent"] == "b", out
    # b's work is followed to its new path (read from the index as it is now): far lines
    # are still free, as they were (a stale "no moves" would read app.txt as deleted)
    _, out = run_check(a, "app.txt:30", capsys=capsys)
    assert out["decision"] == "allow", out
    git(b, "commit", "-qm", "b moves and changes app.txt")
    git(a, "commit", "-q", "--allow-empty", "-m", "a moves on")  # new heads, new bases
    _, out = run_check(a, "app.txt:12", capsys=capsys)
    assert out["decision"] == "deny", out
    _, out = run_check(a, "other.txt:1", capsys=capsys)
    assert out["decision"] == "allow", out


def test_the_reason_reads_as_a_sentence_for_one_line_and_for_several(pair, capsys):
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 changed by b\n"))
    _, one = run_check(a, "app.txt:12", capsys=capsys)
    _, many = run_check(a, "app.txt:10-14", capsys=capsys)
    assert "your line 12 touches that change" in one["reason"]
    assert "your lines 10-14 touch that change" in many["reason"]


def test_a_symbols_uses_are_read_once_per_recorded_state_and_answer_alike(pair, capsys):
    """A process that answers many checks (the service, the editor's server) asks the same
    question at every keystroke in a definition: the sibling's uses of it are found once per
    recorded state (no git, the same answer), and found again when that state moves."""
    sp, a, b = pair
    sp.write(b, "report.py", "from lib import total\n\nprint(total(4))\n")
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    first = answer(CheckRequest(str(a), (edits.Edit(str(a / "lib.py"), ((4, 5),), None),)))
    before = dict(gitio.CALLS)
    again = answer(CheckRequest(str(a), (edits.Edit(str(a / "lib.py"), ((4, 5),), None),)))
    assert again == first and first.decision == "ask"
    assert before == gitio.CALLS  # nothing asked of git the second time
    assert [k for k in kept.USES if k[1:] == (("total",), "lib.py")]
    sp.write(b, "report.py", "from lib import total\n\nprint(total(4))\nprint(total(5))\n")
    assert main(["snapshot", "-C", str(b)]) == 0
    moved = answer(CheckRequest(str(a), (edits.Edit(str(a / "lib.py"), ((4, 5),), None),)))
    (c,) = [c for c in moved.conflicts if c.evidence == "symbol"]
    assert "+print(total(5))" in c.hunk or "+print(total(4))" in c.hunk


def test_an_edit_typed_in_an_editor_merges_from_its_shared_buffer(pair):
    """The edit's result, when the editor already shares it as the buffer, is merged from
    that very file (nothing written for it): the same change as the sibling's is allowed,
    another change of that line denied, as from a harness's Write."""
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 = 2.5\n"))
    path = str(a / "app.txt")
    common = git(a, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    ecm = os.path.join(common, "ecm")
    for text, want in ((APP.replace("line 12\n", "line 12 = 2.5\n"), "allow"),
                       (APP.replace("line 12\n", "line 12 = 3.5\n"), "deny")):
        unsaved.write(ecm, "a", "app.txt", text.encode())
        try:
            got = answer(CheckRequest(str(a), (edits.Edit(path, ((12, 12),), text),)))
        finally:
            unsaved.remove(ecm, "a", "app.txt")
        assert got.decision == want, got
        held = os.path.join(scratch.directory(), hashlib.sha1(text.encode()).hexdigest())
        assert not os.path.exists(held)  # merged from the buffer itself


def test_the_siblings_rewritten_headers_are_read_once_per_recorded_state(pair):
    """The editor asks for the siblings' rewritten definition headers whenever a sibling
    moves: asked again with nothing moved, no git runs; a new recorded state is read."""
    sp, a, b = pair
    sp.write(b, "lib.py", LIB.replace("def total(n):", "def total(n, rate):"))
    assert main(["snapshot", "-C", str(b)]) == 0
    first = theirs.signatures(str(a))
    assert [(w, s.name, s.header) for w, _, s in first] == [
        ("b", "total", "def total(n, rate):")]
    before = dict(gitio.CALLS)
    assert theirs.signatures(str(a)) == first
    assert before == gitio.CALLS
    sp.write(b, "lib.py", LIB.replace("def total(n):", "def total(n, rate=1):"))
    assert main(["snapshot", "-C", str(b)]) == 0
    assert [s.header for _, _, s in theirs.signatures(str(a))] == ["def total(n, rate=1):"]


@pytest.mark.parametrize("service", ["0", "1"])
def test_a_write_past_the_size_limit_is_let_through_saying_why(pair, service, monkeypatch):
    """A Write of megabytes (a generated file) is never read line by line before the edit
    (a 40 MB one took 10 s and 250 MB): no objection (no decision, never allow), the reason
    and the event's size said to the person, by the thin client and the in-process check
    alike; the same write under the limit is judged (here: denied, b changed that file)."""
    from proximity.protocol import MAX_EVENT_CHARS

    monkeypatch.setenv("PROXIMITY_SERVICE", service)
    sp, a, b = pair
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 b\n"))
    big = "".join(f"generated line {i}\n" for i in range(MAX_EVENT_CHARS // 16))
    assert len(big) > MAX_EVENT_CHARS
    sent = event(a, "Write", {"file_path": str(a / "app.txt"), "content": big})
    out = hook(a, "claude", sent)
    assert set(out) == {"systemMessage"}, out  # no hookSpecificOutput: no decision
    mib = f"{len(json.dumps(sent)) / (1 << 20):.1f} MiB"  # the event as the harness wrote it
    assert f"not checked: the event is {mib}, over the 4 MiB limit" in out["systemMessage"], out
    small = hook(a, "claude", event(a, "Write", {"file_path": str(a / "app.txt"),
                                                 "content": "rewritten\n"}))
    assert small["hookSpecificOutput"]["permissionDecision"] == "deny", small
    out = hook(a, "gemini", {"tool_name": "write_file", "cwd": str(a),
                             "tool_input": {"file_path": str(a / "app.txt"), "content": big}})
    assert set(out) == {"systemMessage"} and "over the 4 MiB" in out["systemMessage"], out


def test_two_recorded_changes_that_meet_do_not_deny_each_other(pair, capsys):
    """Both sides' recorded work already meets on one line and no scan has told either to
    yield (neither reached a commit): each is denied once for the other's work, then the
    one denied first goes on when it asks again (asked) and the other stays denied --
    never both denied, each waiting for the other to land."""
    sp, a, b = pair
    sp.write(a, "app.txt", APP.replace("line 12\n", "line 12 by a\n"))
    assert main(["snapshot", "-C", str(a)]) == 0
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    _, a_first = run_check(a, "app.txt:12", capsys=capsys)
    _, b_first = run_check(b, "app.txt:12", capsys=capsys)
    assert a_first["decision"] == b_first["decision"] == "deny"
    _, a_again = run_check(a, "app.txt:12", capsys=capsys)
    _, b_again = run_check(b, "app.txt:12", capsys=capsys)
    assert a_again["decision"] == "ask", a_again["reason"]
    assert b_again["decision"] == "deny" and "'a'" in b_again["reason"]


def crossed(space, capsys: pytest.CaptureFixture[str]) -> tuple[Space, Path, Path]:  # type: ignore[no-untyped-def]
    """a holds an uncommitted change of x.txt's line 5, b of y.txt's, both recorded: each
    one's next edit on the other's line is denied for the other's work."""
    sp = space({"x.txt": lines(10), "y.txt": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "x.txt", lines(10).replace("line 5\n", "line 5 by a\n"))
    sp.write(b, "y.txt", lines(10).replace("line 5\n", "line 5 by b\n"))
    for wt in (a, b):
        assert main(["snapshot", "-C", str(wt)]) == 0
    capsys.readouterr()
    return sp, a, b


def test_a_wait_cycle_across_files_lets_the_first_waiter_go(space, capsys):
    """a holds uncommitted changes on x.txt, b on y.txt, and each one's next edit is on the
    other's lines: each is denied for the other's work and neither can commit, nor land.
    The one that was denied first goes on when it asks again (asked); the other stays
    denied -- one order, never both waiting on each other."""
    _sp, a, b = crossed(space, capsys)
    _, b_first = run_check(b, "x.txt:5", capsys=capsys)
    assert b_first["decision"] == "deny" and "'a'" in b_first["reason"]
    _, a_first = run_check(a, "y.txt:5", capsys=capsys)
    assert a_first["decision"] == "deny" and "'b'" in a_first["reason"]
    _, b_again = run_check(b, "x.txt:5", capsys=capsys)
    _, a_again = run_check(a, "y.txt:5", capsys=capsys)
    assert b_again["decision"] == "ask", b_again["reason"]
    assert a_again["decision"] == "deny" and "'b'" in a_again["reason"]


def test_traffic_next_to_a_sibling_that_waits_on_you_is_yours_to_go_on_with(space, capsys):
    """b is denied on a's lines and waits on a's work; a's next edit comes near b's own
    lines (git merges them cleanly): an ask. Shown to a person as traffic it stops them,
    and an ask is recorded as no wait: a and b would wait on each other unseen. So the
    ask says a goes on (right-of-way: information in the editor), and only while b waits."""
    _sp, a, b = crossed(space, capsys)
    _, before = run_check(a, "y.txt:3", capsys=capsys)
    (c,) = before["conflicts"]
    assert before["decision"] == "ask" and not c["right_of_way"], before
    _, denied = run_check(b, "x.txt:5", capsys=capsys)
    assert denied["decision"] == "deny"  # b now waits on a
    _, after = run_check(a, "y.txt:3", capsys=capsys)
    (c,) = after["conflicts"]
    assert after["decision"] == "ask" and c["right_of_way"], after
    assert "'b' waits on your work: you go on" in c["detail"]
    assert "'b' waits on your work: you go on" in after["reason"]  # what an agent reads


def test_a_sibling_that_made_the_file_a_link_is_a_conflict_as_gits_merge_says(space, capsys):
    """b replaces app.txt with a link (uncommitted); a's edit of one of its lines would
    meet git's "distinct types" at merge. The check read the link's target as b's whole
    new file and placed it "after line 0": allowed."""
    sp = space({"app.txt": APP, "other.txt": "x\n"})
    a, b = sp.wt("a"), sp.wt("b")
    (b / "app.txt").unlink()
    os.symlink("other.txt", b / "app.txt")
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    _, got = run_check(a, "app.txt:5", capsys=capsys)
    assert got["decision"] == "deny", got["reason"]
    assert "from a file to a link" in got["reason"], got["reason"]
    sp.write(a, "app.txt", APP.replace("line 5\n", "line 5 by a\n"))
    sp.commit(a)
    sp.commit(b)
    merged = merge_tree(sp.main, "feat/a", "feat/b")
    assert merged.returncode == 1 and "distinct types" in merged.stdout, merged.stdout
    # a link to a directory, or to nothing, is a change of kind alike
    for target in ("sub", "missing.txt"):
        c = sp.wt(f"c-{target}")
        (c / "sub").mkdir(exist_ok=True)
        (c / "app.txt").unlink()
        os.symlink(target, c / "app.txt")
        _, got = run_check(a, "app.txt:5", capsys=capsys)
        assert "from a file to a link" in got["reason"], (target, got["reason"])
        git(sp.main, "worktree", "remove", "--force", str(c))
    # this worktree made it a link itself, and the sibling left the file as it was: no
    # change of theirs (the base says who changed the kind)
    d = sp.wt("d")
    sp.wt("e")
    (d / "app.txt").unlink()
    os.symlink("other.txt", d / "app.txt")
    _, mine = run_check(d, "app.txt", capsys=capsys)
    assert "link" not in mine["reason"] and all(
        x["agent"] != "e" for x in mine["conflicts"]), mine


def waiting_on_each_other(capsys: pytest.CaptureFixture[str], one: tuple[Path, str],
                          other: tuple[Path, str]) -> dict:  # type: ignore[type-arg]
    """Both worktrees recorded; the first asks for the other's lines and is denied, then
    the other for the first's; the first's next answer."""
    for wt, _ in (one, other):
        assert main(["snapshot", "-C", str(wt)]) == 0
    capsys.readouterr()
    assert run_check(*one, capsys=capsys)[1]["decision"] == "deny"
    assert run_check(*other, capsys=capsys)[1]["decision"] == "deny"
    return run_check(*one, capsys=capsys)[1]


def test_a_wait_cycle_broken_stays_broken_until_the_first_members_work_lands(tmp_path,
                                                                             capsys):
    """a and b wait on each other; a waited longest and goes first over b's lines in
    y.txt, and b is told to set them aside until a's work lands. b does (it stops asking:
    that is how it waits), and writes lines in z.txt. Minutes later a's next edit meets
    those: the order stands, so a goes first again (b's wait on a is no longer asked, and
    before, a waited on b while b waited for a to land: a gridlock nobody saw), and b is
    told of z.txt at once. When a's work lands, the order ends and b is told it landed."""
    from test_hooks import make_repo

    main_, _remote = make_repo(tmp_path)
    for f in ("x.txt", "y.txt", "z.txt"):
        (main_ / f).write_text(lines(10))
    git(main_, "add", "-A")
    git(main_, "commit", "-qm", "three files")
    git(main_, "push", "-q", "origin", "main")
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main_, check=True,
                   capture_output=True)
    a, b = tmp_path / "a", tmp_path / "b"
    for wt in (a, b):
        git(main_, "worktree", "add", "-q", "-b", wt.name, str(wt))
    (a / "x.txt").write_text(lines(10).replace("line 5\n", "line 5 by a\n"))
    (b / "y.txt").write_text(lines(10).replace("line 5\n", "line 5 by b\n"))
    first = waiting_on_each_other(capsys, (a, "y.txt:5"), (b, "x.txt:5"))
    assert first["decision"] == "ask" and "cycle of waits" in first["reason"], first

    def told(wt: Path, kind: str) -> list[dict]:  # type: ignore[type-arg]
        assert main(["inbox", "--json", "-C", str(wt)]) == 0
        return [m["body"] for m in json.loads(capsys.readouterr().out)["messages"]
                if m["type"] == kind]

    assert [m["paths"] for m in told(b, "first")] == [["y.txt"]]
    git(b, "checkout", "-q", "--", "y.txt")  # set aside, as told
    (b / "z.txt").write_text(lines(10).replace("line 5\n", "line 5 by b\n"))
    assert main(["snapshot", "-C", str(b)]) == 0
    # two and a half minutes pass: every wait that was asked then is no longer asked
    ledger = sqlite3.connect(main_ / ".git" / "ecm" / layout.LEDGER)
    with ledger:
        for key, value in ledger.execute("SELECT key, value FROM cache WHERE kind='waits'"
                                         ).fetchall():
            since, last, *where = json.loads(value)
            ledger.execute("UPDATE cache SET value=? WHERE kind='waits' AND key=?",
                           (json.dumps([since - 150, last - 150, *where]), key))
    ledger.close()
    capsys.readouterr()
    _, again = run_check(a, "z.txt:5", capsys=capsys)
    assert again["decision"] == "ask", again["reason"]
    assert "'b' was told that you go first" in again["reason"], again["reason"]
    assert [c["right_of_way"] for c in again["conflicts"] if c["agent"] == "b"] == [True]
    assert [m["paths"] for m in told(b, "first")] == [["z.txt"]]  # the new file, at once
    _, gone = run_check(b, "x.txt:5", capsys=capsys)
    assert gone["decision"] == "deny", gone
    assert "'a' goes first over your live lines in y.txt, z.txt" in gone["reason"], gone
    # a's work lands from the main checkout: the order ends, and b is told
    (a / "z.txt").write_text(lines(10).replace("line 5\n", "line 5 by a\n"))
    git(a, "commit", "-qam", "a's lines")
    git(main_, "merge", "-q", "--ff-only", "a")
    pushed = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=main_,
                            capture_output=True, text=True, check=False)
    assert pushed.returncode == 0, pushed.stderr
    assert [m["from"] for m in told(b, "landed")] == ["a"]
    capsys.readouterr()
    _, after = run_check(b, "x.txt:5", capsys=capsys)
    assert "goes first" not in after["reason"], after["reason"]


def test_a_wait_cycles_order_ends_with_a_removed_worktree(space, capsys):
    """a went first over b's lines in a wait cycle; b's worktree is removed and `gc` runs:
    the order and the waits that named b end. A worktree added later under the same name
    is new work (git reuses removed worktrees' names): it was gone over by nobody."""
    sp, a, b = crossed(space, capsys)
    run_check(b, "x.txt:5", capsys=capsys)
    run_check(a, "y.txt:5", capsys=capsys)
    assert run_check(b, "x.txt:5", capsys=capsys)[1]["decision"] == "ask"  # b goes first

    def cycles() -> tuple[dict, dict]:  # type: ignore[type-arg]
        led = Ledger(str(sp.main / ".git" / "ecm"), create=False)
        try:
            return led.orders(time.time()), led.waits(time.time())
        finally:
            led.close()

    orders, waits = cycles()
    assert ("a", "b") in orders and ("a", "b") in waits
    # the order is seen where right-of-way is shown (status said "nobody waits")
    assert main(["scan", "--json", "-C", str(a)]) == 0
    assert json.loads(capsys.readouterr().out)["goes_first"] == [["b", "a"]]
    assert main(["status", "-C", str(a)]) == 0
    assert "b goes first over a" in " ".join(capsys.readouterr().out.split())
    git(sp.main, "worktree", "remove", "--force", str(b))
    assert main(["gc", "-C", str(a)]) == 0
    assert cycles() == ({}, {k: v for k, v in waits.items() if "b" not in k})
    again = sp.wt("b", branch="feat/new-b")
    sp.write(again, "x.txt", lines(10).replace("line 7\n", "line 7 by the new b\n"))
    assert main(["snapshot", "-C", str(again)]) == 0
    capsys.readouterr()
    _, got = run_check(a, "x.txt:7", capsys=capsys)
    assert "go first" not in got["reason"] and "told that you go" not in got["reason"], got


def test_a_side_told_to_yield_never_goes_first_in_a_wait_cycle(tmp_path, capsys):
    """b was told to yield to a (a standing Resolution Advisory on committed lines) and
    waits on a's lines. b then writes a line a asks for next, and a is denied there: a wait
    cycle, in which b had waited longest. The holder goes first, never the side told to
    yield (found by an attacker: b went first, pushed the work it was told to yield with,
    and a's push was blocked in its place)."""
    from test_hooks import BASE, collide, make_repo

    main_, _remote = make_repo(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main_, check=True,
                   capture_output=True)
    a, b, _ra, rb = collide(main_, tmp_path)
    assert "RESOLUTION ADVISORY" in rb.stderr + rb.stdout
    pushed = git(b, "push", "-q", "origin", "feat/b", check=False)
    assert pushed.returncode != 0 and "push blocked" in pushed.stderr
    capsys.readouterr()
    assert run_check(b, "f.txt:20", capsys=capsys)[1]["decision"] == "deny"  # b waits on a
    (b / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by b\n")
                             .replace("line 30\n", "line 30 by b\n"))
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    assert run_check(a, "f.txt:30", capsys=capsys)[1]["decision"] == "deny"  # a waits on b
    _, a_again = run_check(a, "f.txt:30", capsys=capsys)
    assert a_again["decision"] == "ask" and "you go first" in a_again["reason"], a_again
    _, b_again = run_check(b, "f.txt:20", capsys=capsys)
    assert b_again["decision"] == "deny", b_again
    assert "'wt-a' goes first" in b_again["reason"], b_again["reason"]
    git(b, "stash", "-q")
    still = git(b, "push", "-q", "origin", "feat/b", check=False)
    assert still.returncode != 0 and "must yield to 'wt-a'" in still.stderr, still.stderr
    ours = git(a, "push", "-q", "origin", "feat/a", check=False)
    assert ours.returncode == 0, ours.stderr


def test_the_headline_names_the_sibling_on_the_very_lines_asked_for(space, capsys):
    """a changed line 9 (touching line 10), d changed line 10 itself: asked about line 10,
    the deny names d first (it named a, first by name: the neighbour, not the owner of
    the line; found by a new user)."""
    sp = space({"f.txt": lines(20)})
    a, c, d = sp.wt("a"), sp.wt("c"), sp.wt("d")
    sp.write(a, "f.txt", lines(20).replace("line 9\n", "line 9 by a\n"))
    sp.write(d, "f.txt", lines(20).replace("line 10\n", "line 10 by d\n"))
    for wt in (a, d):
        assert main(["snapshot", "-C", str(wt)]) == 0
    capsys.readouterr()
    _, got = run_check(c, "f.txt:10", capsys=capsys)
    assert got["decision"] == "deny", got
    assert got["reason"].startswith("worktree 'd'"), got["reason"]
    assert [x["agent"] for x in got["conflicts"]][:2] == ["d", "a"], got["conflicts"]


def test_a_wait_cycle_of_three_lets_its_oldest_waiter_go(space, capsys):
    """a waits on b, b on c, c on a (each holds uncommitted lines the next one's edit
    meets): no two of them wait on each other, yet none can move. The member whose wait is
    the oldest goes on -- asked, with the right-of-way marked -- and the other two stay
    denied."""
    sp = space({"x.txt": lines(10), "y.txt": lines(10), "z.txt": lines(10)})
    a, b, c = sp.wt("a"), sp.wt("b"), sp.wt("c")
    for wt, path in ((a, "x.txt"), (b, "y.txt"), (c, "z.txt")):
        sp.write(wt, path, lines(10).replace("line 5\n", f"line 5 by {wt.name}\n"))
        assert main(["snapshot", "-C", str(wt)]) == 0
    capsys.readouterr()
    asks = ((a, "y.txt:5", "'b'"), (b, "z.txt:5", "'c'"), (c, "x.txt:5", "'a'"))
    for wt, spec, holder in asks:  # each denied once, in this order: a's wait is the oldest
        _, first = run_check(wt, spec, capsys=capsys)
        assert first["decision"] == "deny" and holder in first["reason"], first["reason"]
    (_, a_again), (_, b_again), (_, c_again) = (run_check(wt, spec, capsys=capsys)
                                                for wt, spec, _ in asks)
    assert a_again["decision"] == "ask", a_again["reason"]
    assert [x["right_of_way"] for x in a_again["conflicts"] if x["agent"] == "b"] == [True]
    # the words say why a goes first (a cycle of waits), not that b was told to yield
    assert "cycle of waits" in a_again["reason"], a_again["reason"]
    assert "was told to yield" not in a_again["reason"], a_again["reason"]
    assert b_again["decision"] == "deny" and "'c'" in b_again["reason"]
    assert c_again["decision"] == "deny" and "'a'" in c_again["reason"]
    assert all(not x["right_of_way"] for x in b_again["conflicts"] + c_again["conflicts"])
    # b, gone over, reads in its deny who goes first over which of its files, and what to do
    assert "'a' goes first over your live lines in y.txt" in b_again["reason"], b_again
    assert "git stash push -- PATH" in b_again["reason"]
    # (lines b committed cannot be stashed: the deny says what to do with them too)
    assert "a committed one you resolve when you rebase onto it" in b_again["reason"]
    assert "goes first" not in c_again["reason"], c_again  # (nobody goes over c's lines)
    # b is told that a goes on over its live lines, and what to do; once, not per ask
    run_check(a, "y.txt:5", capsys=capsys)
    assert main(["inbox", "--json", "-C", str(b)]) == 0
    told = [m for m in json.loads(capsys.readouterr().out)["messages"]
            if m["type"] == "first"]
    assert [(m["body"]["from"], m["body"]["paths"]) for m in told] == [("a", ["y.txt"])], told
    shown = messages.render(told[0])
    assert "GOES FIRST: 'a' goes on over your live lines in y.txt" in shown, shown
    assert "git stash push -- PATH" in shown
    assert "a committed one you resolve when you rebase onto it" in shown  # (as the deny)
    assert main(["inbox", "-C", str(c)]) == 0
    assert "GOES FIRST" not in capsys.readouterr().out  # (c goes on over nobody's lines)


def test_a_holder_is_told_who_waits_for_its_lines_until_that_wait_ends(pair, capsys):
    """A deny stands on the holder's live lines: the holder is told who waits for them and
    where (it can land that change first, or set it aside and redo it last), once per
    pair and files, at once for a file newly waited on; news of a wait that has ended by
    the time the holder reads is dropped."""
    sp, a, b = pair

    def told(wt: Path) -> list[dict]:  # type: ignore[type-arg]
        assert main(["inbox", "--json", "-C", str(wt)]) == 0
        return [m for m in json.loads(capsys.readouterr().out)["messages"]
                if m["type"] == "waited"]

    def snapshot(wt: Path) -> None:
        assert main(["snapshot", "-C", str(wt)]) == 0
        capsys.readouterr()

    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 changed by b\n"))
    sp.write(b, "other.txt", lines(5).replace("line 3\n", "line 3 by b\n"))
    snapshot(b)
    assert run_check(a, "app.txt:10-14", capsys=capsys)[1]["decision"] == "deny"
    (m,) = told(b)
    assert (m["from"], m["body"]["paths"], m["body"]["alone"]) == ("a", ["app.txt"], True)
    shown = messages.render(m)
    assert "WAITED ON: 'a' waits for your live lines in app.txt" in shown, shown
    assert "your lines are all they wait for" in shown
    assert "git stash push -- PATH" in shown and "after your other work" in shown
    assert "go on as soon as that change lands" in shown
    assert told(a) == []  # (the waiter is told nothing of the kind)
    # asking again while it waits: no second message
    assert run_check(a, "app.txt:10-14", capsys=capsys)[1]["decision"] == "deny"
    assert told(b) == []
    # a file it now waits on as well is told at once
    assert run_check(a, "other.txt:3", capsys=capsys)[1]["decision"] == "deny"
    (m,) = told(b)
    assert m["body"]["paths"] == ["app.txt", "other.txt"], m
    # waiting on a third worktree's lines as well: that one is told so, and setting its
    # lines aside is not what it is asked (the other wait would still hold them)
    c = sp.wt("c")
    sp.write(c, "lib.py", LIB.replace("RATE = 3", "RATE = 4"))
    snapshot(c)
    assert run_check(a, "lib.py:1", capsys=capsys)[1]["decision"] == "deny"
    (m,) = told(c)
    assert (m["body"]["paths"], m["body"]["alone"]) == (["lib.py"], False), m
    shown = messages.render(m)
    assert "they wait on others' lines as well" in shown and "git stash" not in shown
    # the holder had not read it yet when the wait ended: nothing is delivered
    sp.write(b, "other.txt", lines(5).replace("line 3\n", "line 3 by b, again\n"))
    snapshot(b)
    assert run_check(a, "other.txt:3", capsys=capsys)[1]["decision"] == "deny"
    assert run_check(a, "app.txt:10-14", capsys=capsys)[1]["decision"] == "deny"
    sp.write(b, "app.txt", APP)
    sp.write(b, "other.txt", lines(5))
    snapshot(b)
    for spec in ("app.txt:10-14", "other.txt:3"):
        assert run_check(a, spec, capsys=capsys)[1]["decision"] == "allow"
    assert told(b) == []


def test_a_siblings_change_of_a_file_past_the_read_limit_is_judged_whole(space, capsys):
    """A tracked text file past what the check reads whole (scratch.MAX_READ): a
    sibling's change of one line is a change of the whole file, found by comparing the
    file with its base in pieces, and said so (the check read it whole, with git's diff
    of it: 20 s and 900 MB for 150 MB)."""
    row = "x" * 70 + "\n"
    big = "".join(f"{i:08d} {row}" for i in range((scratch.MAX_READ // 80) + 1000))
    assert len(big) > scratch.MAX_READ
    sp = space({"big.txt": big, "small.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "big.txt", big.replace(f"00000010 {row}", "changed by b\n", 1))
    rc, out = run_check(a, "big.txt:400000", capsys=capsys)
    assert rc == 1 and out["decision"] == "deny", out
    assert "too large to compare by lines" in out["reason"], out
    rc, out = run_check(b, "big.txt:5", capsys=capsys)  # a has not changed it
    assert rc == 0 and out["decision"] == "allow", out


def typing_over_an_agent(space: Callable[[dict[str, str]], Space]
                         ) -> tuple[str, Space, Path, Path, str, str]:
    """Agent a changed f.py line 5 (saved, recorded); the person in h has typed over it
    in an unsaved buffer. (base, the space, a, h, the ledger's directory, h's buffer)."""
    base = "".join(f"v{i} = {i}\n" for i in range(1, 11))
    sp = space({"f.py": base})
    a, h = sp.wt("a"), sp.wt("h")
    sp.write(a, "f.py", base.replace("v5 = 5\n", "v5 = 555  # agent a\n"))
    assert main(["snapshot", "-C", str(a)]) == 0  # (the ledger the waits are kept in)
    common = git(h, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    ecm = os.path.join(common, "ecm")
    typed = base.replace("v5 = 5\n", "v5 = 50  # person, unsaved\n")
    unsaved.write(ecm, "h", "f.py", typed.encode())
    return base, sp, a, h, ecm, typed


def line_5(wt: Path, typed: str | None = None) -> CheckAnswer:
    """The check of an edit of f.py line 5 in ``wt`` (``typed``: its buffer's text)."""
    return answer(CheckRequest(str(wt), (edits.Edit(str(wt / "f.py"), ((5, 5),), typed),)))


def test_a_person_typing_over_an_agents_lines_takes_no_right_of_way_by_it(space):
    """Agent a changed line 5 (saved); a person in h types over it in an unsaved buffer
    and is shown the deny (an Error); a then asks about its own line 5, denied by the
    person's buffer: the two wait on each other. The person typed before being told, so
    that wait is never the cycle's oldest: a goes first and the person stays denied (the
    person went first, and a was told to set its change aside)."""
    _, _, a, h, ecm, typed = typing_over_an_agent(space)
    try:
        person = line_5(h, typed)
        assert person.decision == "deny", person
        for _ in range(2):  # (asked again: the wait a's first deny recorded stands)
            agent = line_5(a)
            assert "'h' goes first" not in agent.reason, agent.reason
        again = line_5(h, typed)
        assert again.decision == "deny", again
        assert "you have right-of-way" not in again.reason, again.reason
    finally:
        unsaved.remove(ecm, "h", "f.py")


def test_a_wait_ends_where_the_waiter_is_no_longer_denied(space):
    """A person in h typed over agent a's line 5 and was shown the deny: a wait that is
    never a cycle's oldest. a then set its change aside, and h, asking again, was allowed
    and saved. That wait ended there: when a, whose plan still holds line 5, is denied by
    h's saved lines and asks again, no cycle of waits is left for it to go first in (the
    person's old wait had made one, and a went over the lines h had saved, and committed
    since: a conflict at landing)."""
    base, sp, a, h, ecm, typed = typing_over_an_agent(space)
    try:
        person = line_5(h, typed)
        assert person.decision == "deny", person
        sp.write(a, "f.py", base)  # a sets its change aside
        assert main(["snapshot", "-C", str(a)]) == 0
        person = line_5(h, typed)
        assert person.decision == "allow", person
    finally:
        unsaved.remove(ecm, "h", "f.py")
    sp.write(h, "f.py", typed)  # saved
    git(h, "commit", "-qam", "the person's line 5")
    assert main(["snapshot", "-C", str(h)]) == 0
    for _ in range(2):  # a asks about line 5 again, and again
        agent = line_5(a)
        assert agent.decision == "deny", agent.reason
        assert "cycle of waits" not in agent.reason, agent.reason
    led = Ledger(ecm, create=False)
    try:
        assert set(led.waits(time.time())) == {("a", "h")}
    finally:
        led.close()


def test_a_wait_that_ended_gives_no_first_place_in_a_later_cycle(space, capsys):
    """a was denied by b's lines in y.txt, then b set them aside and a, asking again, was
    allowed: a's wait ended there. Later b waits on a (y.txt) and a on b (z.txt): the
    cycle's oldest wait is b's, so b goes first, not a by a wait it no longer stood in."""
    sp = space({"y.txt": lines(10), "z.txt": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "y.txt", lines(10).replace("line 5\n", "line 5 by b\n"))
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    assert run_check(a, "y.txt:5", capsys=capsys)[1]["decision"] == "deny"
    sp.write(b, "y.txt", lines(10))  # b sets it aside
    assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    assert run_check(a, "y.txt:5", capsys=capsys)[1]["decision"] == "allow"
    sp.write(a, "y.txt", lines(10).replace("line 5\n", "line 5 by a\n"))
    sp.write(b, "z.txt", lines(10).replace("line 5\n", "line 5 by b\n"))
    first = waiting_on_each_other(capsys, (b, "y.txt:5"), (a, "z.txt:5"))
    assert first["decision"] == "ask" and "you waited longest" in first["reason"], first
    _, gone = run_check(a, "z.txt:5", capsys=capsys)
    assert gone["decision"] == "deny", gone
    assert "'b' goes first over your live lines in y.txt" in gone["reason"], gone


def test_a_wait_cycle_never_closes_a_ring_of_landings(space, capsys):
    """Orders that stand: x was gone over by y (x waits for y to land), y by z. Then x
    and z meet: x is denied by z's lines, and z asks about x's. Had z been denied too, x's
    wait, the older, went first, and z waited for x, which waits for y, which waits for
    z: a ring of landings nobody leaves (the hard swarm's flask run deadlocked six times
    on one). The orders are an order of landings: z, which x waits for already, goes on
    over x's lines, and x never goes first over z's."""
    sp = space({"p.txt": lines(10), "q.txt": lines(10)})
    x, y, z = sp.wt("x"), sp.wt("y"), sp.wt("z")
    sp.write(x, "p.txt", lines(10).replace("line 5\n", "line 5 by x\n"))
    sp.write(z, "q.txt", lines(10).replace("line 5\n", "line 5 by z\n"))
    for wt in (x, y, z):
        assert main(["snapshot", "-C", str(wt)]) == 0
    common = git(x, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    led = Ledger(os.path.join(common, "ecm"), create=False)
    try:  # (what two wait cycles broken before left: their orders)
        led.order("x", "y", ["s.txt"], time.time())
        led.order("y", "z", ["t.txt"], time.time())
    finally:
        led.close()
    capsys.readouterr()
    assert run_check(x, "q.txt:5", capsys=capsys)[1]["decision"] == "deny"  # x's, the older
    _, first = run_check(z, "p.txt:5", capsys=capsys)
    assert first["decision"] == "ask", first["reason"]
    assert [c["right_of_way"] for c in first["conflicts"] if c["agent"] == "x"] == [True]
    assert "'x' waits for work that waits for yours to land" in first["reason"], first
    for _ in range(2):
        _, held = run_check(x, "q.txt:5", capsys=capsys)
        assert held["decision"] == "deny", held["reason"]
        assert "you go first" not in held["reason"], held["reason"]
