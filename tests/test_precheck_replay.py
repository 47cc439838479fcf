"""benchmarks/precheck_steps.py: the pre-edit check replayed from commits answers what the real
`proximity check` answers in real worktrees holding the same states."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import git, lines

from proximity import checker, hunks

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
    got = [checker.decide([s]) for s in precheck_steps.sides_for(g, p, other, calls)]
    kinds = [sorted({c.evidence for c in d.conflicts}) for d in got]
    assert [d.decision for d in got] == ["deny", "deny", "ask", "ask", "allow", "allow",
                                         "ask"]
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
