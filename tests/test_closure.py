"""Closure rate escalation, and the lazy-import promise of the snapshot hook."""

from __future__ import annotations

import subprocess
import sys

from conftest import init_repo, lines, pair

from proximity.main import main
from proximity.tcas import risk
from proximity.views import messages


def test_escalation_needs_a_fast_closure_near_the_threshold():
    assert risk.closure([(10, 0.0, 0.1), (12, 5.0, 0.5)]) == (0.2, 0.08)
    # traffic, closing 0.2 per hop: crosses tau_RA within a hop -> escalate
    assert risk.escalate("traffic", 0.55, 0.2, 0.35, 0.7, 0.15)
    # slow closure, or opening, or far from the next threshold -> no
    assert not risk.escalate("traffic", 0.55, 0.05, 0.35, 0.7, 0.15)
    assert not risk.escalate("traffic", 0.55, -0.3, 0.35, 0.7, 0.15)
    assert not risk.escalate("clear", 0.05, 0.2, 0.35, 0.7, 0.15)
    assert risk.escalate("clear", 0.2, 0.2, 0.35, 0.7, 0.15)
    assert not risk.escalate("resolution", 0.9, 0.5, 0.35, 0.7, 0.15)


def test_a_pair_closing_fast_is_escalated_in_the_scan(space, scan_json, capsys):
    files = {"core/db.py": "def connect():\n    return 1\n\n\ndef close():\n    return 3\n",
             "web/u.py": "X = 1\n"}
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "core/db.py", files["core/db.py"].replace("return 1", "return 2"))
    assert main(["snapshot", "-C", str(a)]) == 0
    capsys.readouterr()
    r1 = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert r1["advisory"] == "clear" and not r1["escalated"]
    # one hop later b declares it will edit a's lines: risk jumps toward the RA threshold
    assert main(["intend", "-C", str(b), "core/db.py:2-2"]) == 0
    capsys.readouterr()
    r2 = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert r2["closure_per_hop"] is not None and r2["closure_per_hop"] > 0.15
    assert r2["advisory"] == "traffic"
    assert r2["risk"] + r2["closure_per_hop"] >= 0.7  # would cross tau_RA within a hop…
    assert r2["escalated"] is True  # …so both are told now (the push is not blocked)
    # and the messages it sends say it is advice, not a block (seen on real code: "HOLD
    # COURSE" read as an RA)

    for kind in ("steer", "hold"):
        t = messages.render({"body": {"type": kind, "advisory": r2["advisory"],
                                      "escalated": r2["escalated"], "from": "a",
                                      "branch": "feat/a", "risk": r2["risk"]}})
        assert "escalated traffic advisory, closing fast: no push is blocked" in t, t


def test_snapshot_hook_loads_neither_libgit2_nor_tree_sitter(tmp_path):
    repo = init_repo(tmp_path / "r", {"f.py": lines(3)})
    code = ("import sys\nfrom proximity.main import main\n"
            "assert main(['hook', 'post-commit']) == 0\n"
            "heavy = [m for m in ('pygit2', 'tree_sitter', 'networkx', 'rich', 'argparse')"
            " if m in sys.modules]\nprint(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
