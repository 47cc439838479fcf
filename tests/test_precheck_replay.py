"""benchmarks/precheck_steps.py: the pre-edit check replayed from commits answers what the real
`proximity check` answers in real worktrees holding the same states."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import git, lines

from proximity.agents import decision
from proximity.analysis import hunks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import precheck_steps
import replay

APP = lines(40)
LIB = "RATE = 3\n\n\ndef total(n):\n    return n * RATE\n\n\ndef other():\n    return 1\n"


def head(where: Path) -> str:
    return str(git(where, "rev-parse", "HEAD").stdout).strip()


def test_replayed_checks_match_the_real_check_in_worktrees(space, tmp_path):  # type: ignore[no-untyped-def]
    sp = space({"app.txt": APP, "lib.py": LIB})
    base = head(sp.main)
    x, y = sp.wt("x"), sp.wt("y")
    sp.write(y, "app.txt", APP.replace("line 12\n", "line 12 by y\n"))
    sp.write(y, "use.py", "from lib import total\n\nprint(total(2))\n")
    sp.commit(y)
    sp.write(x, "app.txt", APP.replace("line 30\n", "line 30 by x\n"))
    sp.commit(x)
    p, other = head(x), head(y)
    g = precheck_steps.Replayer(replay.Source("t", str(sp.main / ".git"), str(tmp_path / "s")))
    assert g.merge_base(p, other) == base
    calls = [("app.txt", ((12, 12),)), ("app.txt", ((13, 13),)), ("app.txt", ((20, 20),)),
             ("lib.py", ((4, 5),)), ("lib.py", ((8, 9),)), ("new.txt", None),
             ("app.txt", ((31, 31),))]
    got = [decision.decide([s]) for s in precheck_steps.sides_for(g, p, other, calls)]
    kinds = [sorted({c.evidence for c in d.conflicts}) for d in got]
    assert [d.decision for d in got] == ["deny", "deny", "allow", "ask", "allow", "allow",
                                         "allow"]  # same-file alone: shown, allowed
    assert kinds == [["conflict"], ["conflict"], ["same-file"], ["symbol"], [], [],
                     ["same-file"]]
    checks = [{"parent": p, "other": other, "path": path,
               "lines": None if r is None else [list(t) for t in r],
               "decision": d.decision, "evidence": k}
              for (path, r), d, k in zip(calls, got, kinds, strict=True)]
    v = precheck_steps.validate(g, checks, [sys.executable, "-m", "proximity"])
    assert (v["agree"], v["n"]) == (len(calls), len(calls)), v["calls"]


def test_a_commit_asks_its_changed_lines_in_the_parent_and_new_files_whole(space, tmp_path):  # type: ignore[no-untyped-def]
    sp = space({"app.txt": APP, "gone.txt": "x\n"})
    p = head(sp.main)
    sp.write(sp.main, "app.txt", APP.replace("line 5\n", "line 5 changed\n")
             .replace("line 9\n", "line 9\nnew line\n"))
    sp.write(sp.main, "added.txt", "hello\n")
    (sp.main / "gone.txt").unlink()
    sp.commit(sp.main)
    g = precheck_steps.Replayer(replay.Source("t", str(sp.main / ".git"), str(tmp_path / "s")))
    calls = precheck_steps.requests(hunks.parse(g.diff(p, head(sp.main))))
    assert calls == [("added.txt", None), ("app.txt", ((5, 5), (9, 9))),
                     ("gone.txt", ((1, 1),))]


def test_a_pair_is_warned_before_the_commit_that_conflicts(space, tmp_path):  # type: ignore[no-untyped-def]
    sp = space({"app.txt": APP})
    base = head(sp.main)
    a, b = sp.wt("a"), sp.wt("b")

    def commit(where: Path, old: str, new: str, when: int) -> str:
        text = (where / "app.txt").read_text().replace(old, new)
        sp.write(where, "app.txt", text)
        git(where, "commit", "-qam", new, env={"GIT_COMMITTER_DATE": f"{when} +0000"})
        return head(where)

    a1 = commit(a, "line 5\n", "line 5 a\n", 1_700_000_100)
    b1 = commit(b, "line 30\n", "line 30 b\n", 1_700_000_200)
    b2 = commit(b, "line 5\n", "line 5 b\n", 1_700_000_300)
    case = {"id": "t:1", "repo": "t", "base": base, "a": {"commit": a1}, "b": {"commit": b2}}
    rows = [{"a": a1, "b": b1, "conflict_now": False, "advisory": "clear"},
            {"a": a1, "b": b2, "conflict_now": True, "advisory": "resolution"}]
    g = precheck_steps.Replayer(replay.Source("t", str(sp.main / ".git"), str(tmp_path / "s")))
    got = precheck_steps.replay_pair(g, case, rows)
    assert (got["cut"], got["first_conflict_step"], got["conflict_paths"]) == (2, 1, ["app.txt"])
    assert [(c["commit"], c["decision"], c["evidence"]) for c in got["checks"]] == [
        (a1, "allow", []), (b1, "allow", ["same-file"]), (b2, "deny", ["conflict"])]
    assert got["checks"][2]["then_conflicts"] is True  # the deny was right: git conflicts
    s = precheck_steps.summary([got])
    assert s["warned_early_advisory"] == 0.0
    assert s["warned_early_check"] == s["warned_early_check-on-file"] == 1.0
    assert s["warned_early_check-relaxed"] == 1.0  # the deny at b2 still warns
    # b1's same-file check is shown but allowed: the deny asked before b2 is the warning
    assert s["warned_early_check_only_at_conflicting_commit"] == 1.0
