"""The swarm benchmark on tiny histories: three agents, two of which really conflict; and
the hard options together (hot-file contention, a person among three, the repository's own
check after every landing, landing through the main checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(ENV)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).write_text(text)


def lines(n: int, tag: str = "") -> str:
    return "".join(f"def f{i}():\n    return {i}{tag}\n\n" for i in range(n))


def history(repo: Path) -> None:
    """Trunk T; branches b1 and b2 rewrite the same function of app.py (git conflicts on
    merging them), b3 works in util.py; a merge brings b3 into the trunk, then one brings
    b1, then b2, whose conflict was resolved by taking the trunk's side."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "app.py", lines(12))
    write(repo, "util.py", lines(6))
    write(repo, "other.py", lines(4))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "T")
    trunk = git(repo, "rev-parse", "HEAD")
    for name, edits in (("b3", [("util.py", lines(6, " + 3"))]),
                        ("b1", [("app.py", lines(12).replace("return 5\n", "return 50\n")),
                                ("other.py", lines(4, " * 2"))]),
                        ("b2", [("app.py", lines(12).replace("return 5\n", "return -5\n"))])):
        git(repo, "checkout", "-q", "-b", name, trunk)
        for k, (path, text) in enumerate(edits):
            write(repo, path, text)
            git(repo, "commit", "-qam", f"{name} {k}")
        git(repo, "checkout", "-q", "main")
        git(repo, "merge", "-q", "--no-ff", "-s", "ours" if name == "b2" else "ort",
            "-m", f"merge {name}", name)


@pytest.mark.parametrize("policy", ["none", "reservations", "proximity"])
def test_swarm_lands_everything_and_only_the_baseline_conflicts(tmp_path, policy):
    repo = tmp_path / "src"
    history(repo)
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PROXIMITY_SERVICE"] = "0"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "swarm.py"), "--git-dir",
                    str(repo), "--agents", "3", "--policy", policy, "--seed", "1", "--json",
                    str(out)], check=True, env=env, timeout=120, capture_output=True)
    r = json.loads(out.read_text())
    assert r["policy"] == policy and r["agents"] == 3 and r["landed"] == 3
    assert r["planned_conflicting_pairs"] == 1
    assert r["deadlocks"] == 0 and r["lost_events"] == 0
    if policy == "none":
        assert r["conflicts_at_landing"] >= 1
    else:
        assert r["conflicts_at_landing"] == 0


def hot_history(repo: Path) -> None:
    """Every step of the trunk adds its line at the top of CHANGES.rst (the hot file: any
    two of them replayed from T conflict there). One step makes ``helper`` take an argument
    and updates its caller; a branch started before it calls ``helper()`` in a new module.
    Each passes the repository's check alone; together they break it."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "CHANGES.rst", "Changes\n=======\n\n- first\n")
    write(repo, "util.py", "def helper():\n    return 1\n")
    write(repo, "app.py", "from util import helper\n\nhelper()\n")
    write(repo, "check.sh", 'for f in *.py; do python3 "$f" || exit 1; done\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "T")
    trunk = git(repo, "rev-parse", "HEAD")

    def changes(line: str) -> None:
        text = (repo / "CHANGES.rst").read_text().split("\n\n", 1)
        write(repo, "CHANGES.rst", f"{text[0]}\n\n- {line}\n{text[1]}")

    git(repo, "checkout", "-q", "-b", "extra", trunk)
    changes("an extra module")
    write(repo, "extra.py", "from util import helper\n\nhelper()\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "extra module")
    git(repo, "checkout", "-q", "main")
    changes("helper takes x")
    write(repo, "util.py", "def helper(x):\n    return x\n")
    write(repo, "app.py", "from util import helper\n\nhelper(1)\n")
    git(repo, "commit", "-qam", "helper takes x")
    git(repo, "merge", "-q", "--no-ff", "-X", "ours", "-m", "merge extra", "extra")
    for k in range(3):
        changes(f"note {k}")
        write(repo, f"note{k}.txt", f"{k}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"note {k}")


@pytest.mark.parametrize("policy", ["none", "proximity"])
def test_hot_swarm_with_people_tests_at_landing_and_the_main_checkout(tmp_path, policy):
    repo = tmp_path / "src"
    hot_history(repo)
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k != "PROXIMITY_SERVICE"}  # its memory is measured
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "swarm.py"), "--git-dir",
                    str(repo), "--agents", "3", "--humans", "1", "--policy", policy,
                    "--contention", "hot", "--hot-files", "1", "--pool", "5",
                    "--land-from", "main", "--verify", "sh check.sh", "--seed", "1",
                    # (the lanes wait for each other's CHANGES.rst entry, so that an agent
                    # asks while the person's typed lines are unsaved; an entry made
                    # elsewhere at once is the test below)
                    "--no-elsewhere", "--json", str(out)], check=True, env=env, timeout=180,
                   capture_output=True)
    r = json.loads(out.read_text())
    assert r["landed"] == 3 and r["humans"] == 1 and r["land_from"] == "main"
    assert r["contention"] == "hot" and r["verify"] == "sh check.sh"
    assert r["conflicting_pairs_planned"] == 3  # all three on CHANGES.rst's top line
    assert r["lanes_broken_alone"] == []
    assert r["deadlocks"] == 0 and r["lost_events"] == 0 and r["doubled_events"] == 0
    assert r["hook_p95_ms"] > 0 and set(r["hook_ms"]) >= {"pre-commit", "pre-push"}
    if policy == "none":
        assert r["conflicts_at_landing"] >= 2
        # each conflict resolved with the lane's side threw away the trunk's entry at the
        # top of CHANGES.rst: a landed lane's work, gone
        assert all(c["dropped"] >= 1 for c in r["conflict_log"])
        assert r["dropped_at_landing"] == sum(c["dropped"] for c in r["conflict_log"])
        # the lanes that change helper's signature and call it the old way both landed
        assert r["broken_at_landing"] == 1
        assert "TypeError" in r["broken_log"][0]["tail"]
    else:
        assert r["conflicts_at_landing"] == 0 and r["dropped_at_landing"] == 0
        assert r["check_p95_ms"] > 0 and r["check_ms"]["n"] >= 3
        assert r["peak_service_rss_mb"] > 0
        # the person edits through a real `proximity lsp` session: every look answered,
        # and an agent's check named them while their typed lines were still unsaved
        assert r["editor_looks"] >= 1 and r["editor_unanswered"] == 0
        assert r["editor_ms"]["n"] == r["editor_looks"]
        assert r["unsaved_seen"] >= 1
        assert any(d["holder"] == "h0" for d in r["deny_log"] if d["agent"].startswith("a"))


def test_the_swarm_counts_a_cycle_of_waiters_whoever_else_moves() -> None:
    """A gridlock of three (each waiting on the next's work) is a deadlock even while the
    rest of the swarm moves; a chain that ends in someone working is not."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from swarm import wait_cycles
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert wait_cycles({"a0": "h1", "h1": "h2", "h2": "a0", "a5": "a0"}) == {
        frozenset({"a0", "h1", "h2"})}
    assert wait_cycles({"a0": "h1", "h1": "h2", "h2": "a7"}) == set()
    assert wait_cycles({"a": "b", "b": "a", "c": "d", "d": "c"}) == {
        frozenset({"a", "b"}), frozenset({"c", "d"})}


def test_a_participant_gone_over_in_a_wait_cycle_reads_the_files_as_the_product_says_them(
        ) -> None:
    """The swarm's participants set aside what the product tells them a wait cycle's first
    member goes over: the files its GOES FIRST message names (as the inbox prints it) and
    those its deny names; a STEER AWAY, HOLD COURSE or TRANSMIT is no such order."""
    from proximity.agents.cycles import gone_over
    from proximity.views import messages

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from swarm import steer_orders
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    first = {"type": "first", "from": "a3", "to": "a5", "paths": ["uv.lock", "src/a b.py"]}
    steer = {"type": "steer", "from": "a7", "branch": "agent/a7", "risk": 0.93,
             "advisory": "resolution", "last_commit": "",
             "their_files": [{"path": "tox.ini", "ranges": [[12, 40]],
                              "channels": ["conflict"]}],
             "avoid": ["tox.ini"], "elsewhere": [], "override": "PROXIMITY_ALLOW=1 git push"}
    said = "\n".join(messages.render(m) for m in (steer, first, {**steer, "type": "hold"}))
    assert steer_orders(said) == {"uv.lock": "a3", "src/a b.py": "a3"}
    assert steer_orders(messages.render(steer)) == {}

    denied = "worktree 'a9' changed tox.ini line 3" + gone_over({"a3": first["paths"]})
    assert steer_orders(denied) == {"uv.lock": "a3", "src/a b.py": "a3"}


def entries(root: Path, base: str) -> tuple[set[str], set[str]]:
    """The lanes' own CHANGES.rst entries in a kept run's ``root`` (each agent branch
    against ``base``), and the trunk's lines at the end."""
    lanes = set()
    for ref in git(root / "repo", "for-each-ref", "--format=%(refname)",
                   "refs/heads/agent/").split():
        lanes |= {ln[1:] for ln in git(root / "repo", "diff", f"{base}..{ref}", "--",
                                        "CHANGES.rst").split("\n") if ln.startswith("+- ")}
    trunk = git(root / "remote.git", "show", "main:CHANGES.rst").split("\n")
    return lanes, set(trunk)


@pytest.mark.parametrize("land_from", ["own", "main"])
def test_an_uncoordinated_conflict_redone_on_top_of_the_trunk_costs_steps_and_keeps_both(
        tmp_path, land_from):
    """``--resolve redo``: a conflict at landing is no longer free. The lane's author redoes
    its change of each conflicting file on top of the trunk (a step a file) and lands
    again; every lane's CHANGES.rst entry is on the trunk at the end, none thrown away."""
    repo = tmp_path / "src"
    hot_history(repo)
    keep = tmp_path / "keep"
    runs = {}
    for resolve in ("theirs", "redo"):
        out = tmp_path / f"{resolve}.json"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "swarm.py"), "--git-dir",
                        str(repo), "--agents", "3", "--policy", "none", "--contention", "hot",
                        "--hot-files", "1", "--pool", "5", "--land-from", land_from,
                        "--resolve", resolve, "--seed", "1", "--keep", str(keep / resolve),
                        "--json", str(out)], check=True, timeout=180, capture_output=True,
                       env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
        runs[resolve] = json.loads(out.read_text())
    theirs, redo = runs["theirs"], runs["redo"]
    assert redo["resolve"] == "redo" and redo["landed"] == 3 and redo["deadlocks"] == 0
    assert redo["conflicts_at_landing"] >= 2
    assert redo["resolve_steps"] >= redo["conflicts_at_landing"]
    assert redo["dropped_at_landing"] == 0 and theirs["dropped_at_landing"] >= 1
    assert theirs["resolve_steps"] == 0
    assert redo["makespan_steps"] > theirs["makespan_steps"]

    lanes, trunk = entries(keep / "redo" / "none", redo["trunk"])
    assert len(lanes) >= 2 and lanes <= trunk
    lanes, trunk = entries(keep / "theirs" / "none", redo["trunk"])
    assert not lanes <= trunk  # (the free resolution threw a landed entry away)


def test_a_denied_changelog_entry_is_asked_for_among_its_sections_other_items() -> None:
    """Told to edit elsewhere, a participant adding a changelog or docs entry asks for it
    at the other items' places of its section, nearest first; a change of code, one that
    rewrites lines, or a block that is no list item has no other place."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from swarm_people import elsewhere
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    now = ("Version 2\n---------\n\nUnreleased\n\n-   one\n    more of one\n-   two\n"
           "-   three\n\nVersion 1\n---------\n\n-   old\n")
    mine = "-   mine\n    more of mine\n"
    new = now.replace("Unreleased\n\n", "Unreleased\n\n" + mine)
    placed = [x.decode() for x in elsewhere("CHANGES.rst", now.encode(), new.encode())]
    assert placed == [now.replace("-   two\n", mine + "-   two\n"),
                      now.replace("-   three\n", mine + "-   three\n"),
                      now.replace("-   three\n", "-   three\n" + mine)]
    # (never into the released version's section below)
    assert all(x.split("Version 1")[1] == now.split("Version 1")[1] for x in placed)
    assert elsewhere("CHANGES.md", b"# 2\n\n* a\n* b\n", b"# 2\n\n* new\n* a\n* b\n") == [
        b"# 2\n\n* a\n* new\n* b\n", b"# 2\n\n* a\n* b\n* new\n"]
    assert elsewhere("CHANGES.rst", b"# 2\n\n* a\n", b"# 2\n\n* a\n") == []
    assert elsewhere("app.py", now.encode(), new.encode()) == []
    assert elsewhere("CHANGES.rst", now.encode(), new.replace("-   two", "-   2").encode()) == []
    assert elsewhere("CHANGES.rst", now.encode(),
                     now.replace("Unreleased\n", "Unreleased, soon\n").encode()) == []
    assert elsewhere("CHANGES.rst", now.encode(),
                     now.replace("\n\n-   one", "\n\nSome prose.\n-   one").encode()) == []


def test_a_hot_changelog_entry_denied_is_made_elsewhere_and_every_entry_lands(tmp_path):
    """Three lanes add their entry at the top of CHANGES.rst. With proximity, a
    participant denied there puts its entry among the file's other items where its check
    allows it, at once: no conflict at landing, every lane's entry on the trunk at the
    end, and less waiting than when it waits for the holder (``--no-elsewhere``)."""
    repo = tmp_path / "src"
    hot_history(repo)
    keep = tmp_path / "keep"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k != "PROXIMITY_SERVICE"}
    runs = {}
    for mode in ("elsewhere", "no-elsewhere"):
        out = tmp_path / f"{mode}.json"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "swarm.py"), "--git-dir",
                        str(repo), "--agents", "3", "--policy", "proximity", "--contention",
                        "hot", "--hot-files", "1", "--pool", "5", "--seed", "1",
                        "--keep", str(keep / mode), "--json", str(out),
                        *(["--no-elsewhere"] if mode == "no-elsewhere" else [])],
                       check=True, env=env, timeout=180, capture_output=True)
        runs[mode] = json.loads(out.read_text())
    r, waited = runs["elsewhere"], runs["no-elsewhere"]
    assert r["elsewhere"] is True and waited["elsewhere"] is False
    assert r["landed"] == 3 and r["conflicts_at_landing"] == 0 and r["deadlocks"] == 0
    assert r["placed_elsewhere"] >= 1 and waited["placed_elsewhere"] == 0
    assert all(x["path"] == "CHANGES.rst" for x in r["elsewhere_log"])
    assert r["waiting_steps"] < waited["waiting_steps"]
    lanes, trunk = entries(keep / "elsewhere" / "proximity", r["trunk"])
    assert len(lanes) == 3 and lanes <= trunk
