"""Declared intents enter the airspace as look-ahead, with forward decay."""

from __future__ import annotations

import json

from conftest import lines, pair

from proximity.main import main


def setup(space):
    sp = space({"lib.py": lines(40), "other.py": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", lines(40).replace("line 20\n", "edited by a\n"))
    return sp, a, b


def test_intent_on_a_file_being_edited_is_traffic_never_resolution(space, scan_json, capsys):
    sp, _a, b = setup(space)
    assert pair(scan_json(sp.main, capsys=capsys), "a", "b")["advisory"] == "clear"
    assert main(["intend", "-C", str(b), "lib.py:18-22"]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "traffic"
    f = next(x for x in p["findings"] if "intent" in x["detail"])
    assert f["path_a"] == "lib.py" and f["ranges_b"] == [[18, 22]]


def test_a_whole_file_intent_reads_as_the_whole_file(space, capsys):
    sp, _a, b = setup(space)
    assert main(["intend", "-C", str(b), "lib.py"]) == 0  # no lines: the whole file
    capsys.readouterr()
    assert main(["scan", "-C", str(sp.main)]) == 0
    out = capsys.readouterr().out
    assert "lines 20 vs whole file" in out or "lines whole file vs 20" in out, out
    assert " vs -" not in out and "lines - vs" not in out


def test_scan_intent_is_a_what_if_and_records_nothing(space, scan_json, capsys):
    sp, _a, b = setup(space)
    p = pair(scan_json(b, "--intent", "lib.py", capsys=capsys), "a", "b")
    assert p["advisory"] == "traffic"
    assert main(["intend", "--json", "-C", str(b)]) == 0
    assert json.loads(capsys.readouterr().out)["intents"] == {}
    assert pair(scan_json(sp.main, capsys=capsys), "a", "b")["advisory"] == "clear"


def test_intent_decays_forward_and_clear_forgets(space, scan_json, capsys):
    sp, _a, b = setup(space)
    assert main(["intend", "-C", str(b), "lib.py"]) == 0
    for _ in range(21):  # 21 D-T-D hops of b's own stream: forward decay reaches 0 at 20
        assert main(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    assert pair(scan_json(sp.main, capsys=capsys), "a", "b")["advisory"] == "clear"
    assert main(["intend", "-C", str(b), "--clear", "other.py"]) == 0
    capsys.readouterr()
    assert main(["intend", "--json", "-C", str(b)]) == 0
    assert list(json.loads(capsys.readouterr().out)["intents"]) == ["other.py"]


def test_both_intending_the_same_file_is_reported(space, scan_json, capsys):
    sp = space({"lib.py": lines(10)})
    a, b = sp.wt("a"), sp.wt("b")
    assert main(["intend", "-C", str(a), "lib.py:1-3"]) == 0
    assert main(["intend", "-C", str(b), "lib.py:2-4"]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "traffic"
    assert any("both intend" in f["detail"] for f in p["findings"])


def test_bad_intent_spec_is_a_clear_error(space, capsys):
    _sp, _a, b = setup(space)
    # a malformed request is a usage error: exit 2, like every command's bad input (1 is
    # what `check` answers for ask/deny)
    assert main(["intend", "-C", str(b), "lib.py:9-3"]) == 2
    assert "bad line range" in capsys.readouterr().err


def test_an_intent_outside_the_worktree_is_refused_and_nothing_is_kept(space, capsys):
    """`proximity intend` names files of this worktree: a path that leaves it is refused
    (exit 2, saying why) before anything is recorded; one inside is kept normalised."""
    _sp, _a, b = setup(space)
    for bad in ("../../etc/passwd", "/etc/passwd", "lib.py\x00", "z" * 10_000):
        assert main(["intend", "-C", str(b), bad]) == 2, bad
        assert "proximity: error:" in capsys.readouterr().err
    assert main(["intend", "-C", str(b), str(b / "x" / ".." / "lib.py") + ":2-3"]) == 0
    capsys.readouterr()
    assert main(["intend", "--json", "-C", str(b)]) == 0
    assert json.loads(capsys.readouterr().out)["intents"] == {"lib.py": [[2, 3]]}
