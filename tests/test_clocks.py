"""D-T-D vector clocks, brief/debrief through real hooks, decays, recency."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import git, init_repo, lines
from hypothesis import given
from hypothesis import strategies as st

from proximity.ledger import Ledger, clocks

clock = st.dictionaries(st.sampled_from("abcde"), st.integers(0, 20))


@given(clock, clock)
def test_merge_is_an_upper_bound_and_dominance_is_consistent(a, b):
    m = clocks.merge(a, b)
    assert clocks.dominates(m, a) and clocks.dominates(m, b)
    if a and b and clocks.dominates(a, b) and not clocks.dominates(b, a):
        assert not clocks.concurrent(a, b)


@given(clock, st.sampled_from("abcde"))
def test_tick_advances_exactly_one_hop(c, s):
    assert clocks.hop_count(c, clocks.tick(c, s)) == (1 if s in c else 0)
    assert clocks.tick(c, s)[s] == c.get(s, 0) + 1


def test_hop_count_only_counts_streams_in_the_edge_clock():
    assert clocks.hop_count({"a": 2, "b": 1}, {"a": 5, "b": 1, "c": 9}) == 3


def test_decays_follow_the_seed():
    assert clocks.backward_decay(0) == 1.0
    assert clocks.backward_decay(5) == 0.5
    assert clocks.backward_decay(10) == 0.15 == clocks.backward_decay(50)  # floor
    assert clocks.forward_decay(5) == 1.0
    assert abs(clocks.forward_decay(12.5) - 0.5) < 1e-9  # type: ignore[arg-type]
    assert clocks.forward_decay(20) == 0.0


def _install(tmp_path):
    main = init_repo(tmp_path / "main", {"f.txt": lines(20)})
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    return main


def _clocks(main):
    led = Ledger(str(main / ".git" / "ecm"), create=False)
    try:
        return led.clocks(), led
    finally:
        led.close()


def test_brief_on_worktree_add_and_debrief_on_merge(tmp_path):
    main = _install(tmp_path)
    (main / "g.txt").write_text("g\n")
    git(main, "add", "g.txt")
    git(main, "commit", "-qm", "main works")  # main: pre-commit + commit events
    git(main, "worktree", "add", "-q", "-b", "feat", str(tmp_path / "feat"))
    c, _ = _clocks(main)
    assert c["feat"]["main"] == c["main"]["main"]  # inherited (brief)
    assert c["feat"]["feat"] == 1
    feat = tmp_path / "feat"
    (feat / "h.txt").write_text("h\n")
    git(feat, "add", "h.txt")
    git(feat, "commit", "-qm", "feat works")
    before = _clocks(main)[0]["feat"]["feat"]
    git(main, "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    c, _ = _clocks(main)
    assert c["main"]["feat"] == before  # merged element-wise (debrief)


def test_merged_work_is_causally_ordered_not_a_collision(tmp_path, capsys):
    from proximity.main import main as cli

    main = _install(tmp_path)
    git(main, "worktree", "add", "-q", "-b", "feat", str(tmp_path / "feat"))
    feat = tmp_path / "feat"
    (feat / "f.txt").write_text(lines(20).replace("line 3\n", "feat\n"))
    git(feat, "commit", "-qam", "feat edits line 3")
    git(main, "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    (main / "f.txt").write_text(lines(20).replace("line 3\n", "main edits after merge\n"))
    capsys.readouterr()
    assert cli(["scan", "--json", "-C", str(main)]) == 0
    p = json.loads(capsys.readouterr().out)["pairs"][0]
    assert p["concurrent"] is False and p["advisory"] == "clear"


def test_recency_decays_with_hops_since_last_touch(tmp_path):
    main = _install(tmp_path)
    (main / "f.txt").write_text(lines(20).replace("line 3\n", "edited\n"))
    from proximity.main import main as cli

    assert cli(["snapshot", "-C", str(main)]) == 0
    led = Ledger(str(main / ".git" / "ecm"), create=False)
    try:
        oid = led.last_event("main").files["f.txt"]
        assert led.recency("main", {"f.txt": oid})["f.txt"] == 1.0
    finally:
        led.close()
    for _ in range(5):
        assert cli(["snapshot", "-C", str(main)]) == 0
    led = Ledger(str(main / ".git" / "ecm"), create=False)
    try:
        assert abs(led.recency("main", {"f.txt": oid})["f.txt"] - 0.5) < 1e-9
        # one Ledger kept open (the resident service's): remembered until the stream
        # records again, then computed anew from the new events
        assert abs(led.recency("main", {"f.txt": oid})["f.txt"] - 0.5) < 1e-9
        for _ in range(5):
            assert cli(["snapshot", "-C", str(main)]) == 0
        later = led.recency("main", {"f.txt": oid})["f.txt"]
        fresh = Ledger(str(main / ".git" / "ecm"), create=False)
        assert later < 0.5 and later == fresh.recency("main", {"f.txt": oid})["f.txt"]
        fresh.close()
        assert led.recency("main", {"f.txt": "0" * 40})["f.txt"] == 1.0  # other content
    finally:
        led.close()
