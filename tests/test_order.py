"""Right-of-way as one order over every live agent: three worktrees whose pairwise contested
files form a ring (each pair's committed-lines comparison points a different way) never
block each other in a cycle; advice once given stands while its holder keeps its claim;
a yield ends when the holder lands.

Real repositories, real worktrees, plain hooks (`proximity install`), real pushes to a
real bare remote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import git, init_repo, lines

PY = sys.executable
FILES = {"f.txt": lines(30, "f"), "g.txt": lines(30, "g"), "h.txt": lines(30, "h")}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=120)


def hooked(tmp_path: Path) -> Path:
    """The main checkout of a repository of FILES with the plain hooks installed, its main
    pushed to a bare remote (origin)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = init_repo(tmp_path / "main", FILES)
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "origin", "main")
    r = run(main, PY, "-m", "proximity", "install")
    assert r.returncode == 0, r.stderr
    return main


def edit(wt: Path, name: str, lo: int, hi: int, tag: str) -> None:
    text = (wt / name).read_text().splitlines(keepends=True)
    for i in range(lo - 1, hi):
        text[i] = f"{name[0]} {i + 1} by {tag}\n"
    (wt / name).write_text("".join(text))


def ring(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """a, b, c: a~b contest f (b has more committed there: a yields), b~c contest g (c has
    more: b yields), c~a contest h (a has more: c yields) -- pairwise, a ring."""
    main = hooked(tmp_path)
    wts = {}
    for name in "abc":
        wts[name] = tmp_path / f"wt-{name}"
        git(main, "worktree", "add", "-q", "-b", f"feat/{name}", str(wts[name]))
    # each pair's two sides change overlapping lines of one file, one side many more
    edit(wts["a"], "f.txt", 10, 10, "a")
    edit(wts["b"], "f.txt", 8, 14, "b")
    edit(wts["b"], "g.txt", 10, 10, "b")
    edit(wts["c"], "g.txt", 8, 14, "c")
    edit(wts["c"], "h.txt", 10, 10, "c")
    edit(wts["a"], "h.txt", 8, 14, "a")
    for name, wt in wts.items():
        git(wt, "commit", "-qam", f"work of {name}")
    return main, wts


def scan(where: Path) -> dict:  # type: ignore[type-arg]
    r = run(where, PY, "-m", "proximity", "scan", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_a_ring_of_contested_files_is_one_order_and_someone_goes(tmp_path):
    main, wts = ring(tmp_path)
    pushes = {n: run(wt, "git", "push", "-q", "origin", f"feat/{n}") for n, wt in wts.items()}
    blocked = {n for n, p in pushes.items() if p.returncode != 0}
    for n in blocked:
        assert "push blocked" in pushes[n].stderr, pushes[n].stderr
    assert len(blocked) < 3, "every push blocked: a yield cycle"
    out = scan(main)
    ras = [p for p in out["pairs"] if p["advisory"] == "resolution"]
    assert len(ras) == 3, [(p["a"], p["b"], p["advisory"]) for p in out["pairs"]]
    assert out["yield_cycle"] == []
    waits = {y["agent"]: set(y["waits_for"]) for y in out["yields"]}
    assert sum(len(v) for v in waits.values()) == 3
    # every worktree reads the same order
    for wt in wts.values():
        theirs = scan(wt)
        assert {y["agent"]: set(y["waits_for"]) for y in theirs["yields"]} == waits
    text = " ".join(run(main, PY, "-m", "proximity", "status").stdout.split())  # (wrapped)
    assert "right-of-way:" in text and "no cycle" in text, text


def test_the_holders_edit_that_narrows_the_contest_does_not_flip_the_advice(tmp_path):
    main = hooked(tmp_path)
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        git(main, "worktree", "add", "-q", "-b", br, str(wt))
    # b holds on f and g together (10 committed lines against a's 5); on f alone a has
    # more (4 against 2)
    edit(b, "f.txt", 6, 7, "b")
    edit(b, "g.txt", 3, 10, "b")
    git(b, "commit", "-qam", "b's work")
    edit(a, "f.txt", 5, 8, "a")
    edit(a, "g.txt", 7, 7, "a")
    git(a, "commit", "-qam", "a's work")
    first = scan(main)
    (p,) = [x for x in first["pairs"] if x["advisory"] == "resolution"]
    assert p["yielding"] == "wt-a", p
    # the holder's uncommitted edit gives g back: only f is contested now, where the
    # committed-lines comparison points the other way; the advice stands
    (b / "g.txt").write_text(FILES["g.txt"])
    again = scan(main)
    (q,) = [x for x in again["pairs"] if x["advisory"] == "resolution"]
    assert q["yielding"] == "wt-a", (p["priority"], q["priority"])
    # a revert the holder commits is a release: then the comparison decides again
    git(b, "commit", "-qam", "b reverts its g work")
    last = scan(main)
    (r,) = [x for x in last["pairs"] if x["advisory"] == "resolution"]
    assert r["yielding"] == "wt-b", r["priority"]


def test_a_yield_ends_when_the_holder_lands(tmp_path):
    main, wts = ring(tmp_path)
    out = scan(main)
    waits = {y["agent"]: set(y["waits_for"]) for y in out["yields"]}
    # someone nobody blocks lands its branch on the trunk
    free = next(n for n, wt in wts.items()
                if not waits.get(f"wt-{n}") and not waits.get(n))
    landed = run(wts[free], "git", "push", "-q", "origin", f"feat/{free}:main")
    assert landed.returncode == 0, landed.stderr
    git(main, "worktree", "remove", "--force", str(wts[free]))
    after = scan(main)
    assert not any(f"wt-{free}" in y["waits_for"] for y in after["yields"]), after["yields"]
    # whoever waited for it alone goes now
    for n, wt in wts.items():
        if n != free and waits.get(f"wt-{n}") == {f"wt-{free}"}:
            p = run(wt, "git", "push", "-q", "origin", f"feat/{n}")
            assert p.returncode == 0, p.stderr


def test_advice_told_on_live_work_stands_when_the_side_told_to_yield_commits_first(tmp_path):
    """Two worktrees edit the same line, uncommitted; a scan tells one to yield (the other
    holds on live work, which no ledger event records: the service and the commands judge
    worktrees as they are). The side told to yield then commits first: it buys nothing by
    it, and the holder's own commit does not flip the advice either (found by a new user:
    the one told to yield was told, at its commit, that it had right-of-way, and the
    holder, at its own, to yield)."""
    main = hooked(tmp_path)
    wts = {n: tmp_path / f"wt-{n}" for n in "ab"}
    for n, wt in wts.items():
        git(main, "worktree", "add", "-q", "-b", f"feat/{n}", str(wt))
        edit(wt, "f.txt", 10, 10, n)
    told = scan(main)
    (p,) = [x for x in told["pairs"] if x["advisory"] == "resolution"]
    yielding = p["yielding"]
    holder = "wt-b" if yielding == "wt-a" else "wt-a"
    first = run(wts[yielding[-1]], "git", "commit", "-qam", "the side told to yield")
    out = " ".join((first.stdout + first.stderr).split())
    assert "you must yield" in out and "right-of-way: hold course" not in out, out
    second = run(wts[holder[-1]], "git", "commit", "-qam", "the holder")
    out = " ".join((second.stdout + second.stderr).split())
    assert "you have right-of-way" in out and "you must yield" not in out, out
    (q,) = [x for x in scan(main)["pairs"] if x["advisory"] == "resolution"]
    assert q["yielding"] == yielding, q
    blocked = run(wts[yielding[-1]], "git", "push", "-q", "origin", f"feat/{yielding[-1]}")
    assert blocked.returncode != 0 and "push blocked" in blocked.stderr, blocked.stderr
    ok = run(wts[holder[-1]], "git", "push", "-q", "origin", f"feat/{holder[-1]}")
    assert ok.returncode == 0, ok.stderr


def test_advice_ends_when_the_collision_is_over_whoever_recorded_it(tmp_path):
    """a's live lines were recorded and b was told to yield. a gives them back with no
    hook running (its file as at HEAD), and a scan judges the pair clear: the collision is
    over, and the advice with it. b commits its line; a redoes its lines, again with no
    hook: a new collision, decided anew (b holds by its committed line) -- as when a had
    never claimed them (found by an attacker: a, told once, kept right-of-way through a
    revert no event recorded, and blocked b's push)."""
    main = hooked(tmp_path)
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    for wt, br in ((a, "feat/a"), (b, "feat/b")):
        git(main, "worktree", "add", "-q", "-b", br, str(wt))
    edit(a, "f.txt", 5, 7, "a")
    assert run(a, PY, "-m", "proximity", "snapshot").returncode == 0
    edit(b, "f.txt", 5, 5, "b")
    (p,) = [x for x in scan(main)["pairs"] if x["advisory"] == "resolution"]
    assert p["yielding"] == "wt-b", p
    (a / "f.txt").write_text(FILES["f.txt"])  # given back, no hook
    assert all(x["advisory"] == "clear" for x in scan(main)["pairs"])
    git(b, "commit", "-qam", "b's line")
    edit(a, "f.txt", 5, 7, "a")  # redone, no hook
    (q,) = [x for x in scan(main)["pairs"] if x["advisory"] == "resolution"]
    assert q["yielding"] == "wt-a", q
    ok = run(b, "git", "push", "-q", "origin", "feat/b")
    assert ok.returncode == 0, ok.stderr
