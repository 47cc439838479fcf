"""Landing the holder's work: right-of-way belongs to lines of work, not to the checkout
that holds them. The person integrating merges a finished lane in the main checkout and
pushes it; what the remote already has is never blocked; the merge check there agrees with
the push guard.

Real repositories, real worktrees, plain hooks (`proximity install`), real pushes to a
real bare remote.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import git, pair
from test_hooks import BASE, make_repo, run


def holders(stderr: str) -> list[str]:
    """The worktrees a blocked push names as the ones it must yield to (the trunk that
    landed a holder's lines is one of them)."""
    m = re.search(r"this worktree must yield to ((?:'[^']*'(?:, )?)+)", stderr)
    return re.findall(r"'([^']*)'", m.group(1)) if m else []


def held(tmp_path: Path) -> tuple[Path, Path, Path]:
    """x reaches line 20 first and commits; y edits it too (told to yield), then piles
    more committed lines on it than x has: x keeps right-of-way (the standing advice)."""
    main, _remote = make_repo(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    x, y = tmp_path / "x", tmp_path / "y"
    git(main, "worktree", "add", "-q", "-b", "x", str(x))
    git(main, "worktree", "add", "-q", "-b", "y", str(y))
    (x / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by x\n"))
    git(x, "commit", "-qam", "x edits line 20")
    (y / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by y\n"))
    run(y, sys.executable, "-m", "proximity", "snapshot")
    more = "".join(f"y {i}\n" if 18 <= i <= 23 else f"line {i}\n" for i in range(40))
    (y / "f.txt").write_text(more)
    git(y, "commit", "-qam", "y piles more on line 20")
    scan = json.loads(run(main, sys.executable, "-m", "proximity", "scan", "--json").stdout)
    p = pair(scan, "x", "y")
    assert p["advisory"] == "resolution" and p["yielding"] == "y", p
    assert p["priority"]["y"]["committed"] > p["priority"]["x"]["committed"]
    return main, x, y


def test_a_push_of_what_the_remote_has_is_never_blocked(tmp_path):
    """x pushes its commit to the remote's main itself; the main checkout, fast-forwarded
    to that very commit, pushes main: git has nothing to send (its pre-push hook reads no
    ref update), and the guard passes, saying so (it judged the checkout as a guard run by
    hand, and blocked: "this worktree must yield to 'y'")."""
    main, x, _y = held(tmp_path)
    ok = run(x, "git", "push", "-q", "origin", "x:main")
    assert ok.returncode == 0, ok.stderr
    git(main, "merge", "-q", "--ff-only", "x")
    again = run(main, "git", "push", "origin", "main")
    assert again.returncode == 0, again.stderr
    assert "push blocked" not in again.stderr
    assert "nothing to judge in this push" in again.stderr, again.stderr


def test_the_main_checkout_lands_the_holders_work_fast_forward(tmp_path):
    """The person integrating does what most teams do: in the main checkout, `git merge
    --ff-only x`, `git push origin main`. The commit holds right-of-way under the name x:
    it does under the name of the main checkout too (it was blocked: "this worktree must
    yield to 'y'"). The same push again goes through; y, which must yield, stays blocked,
    now yielding to the trunk that holds x's lines as well."""
    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--ff-only", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    assert git(main, "ls-remote", "origin", "refs/heads/main").stdout.split()[0] \
        == git(main, "rev-parse", "x").stdout.strip()
    again = run(main, "git", "push", "origin", "main")
    assert again.returncode == 0, again.stderr
    blocked = run(y, "git", "push", "origin", "y")
    assert blocked.returncode != 0, blocked.stderr
    assert "this worktree must yield to 'main', 'x'" in blocked.stderr, blocked.stderr


def test_the_main_checkout_lands_the_holders_work_as_a_merge_commit(tmp_path):
    """The same with `git merge --no-ff x`: the merge commit joins the holder's work to
    the trunk and brings no line of its own; it is pushed as x's."""
    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--no-ff", "-m", "land x", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    blocked = run(y, "git", "push", "origin", "y")
    assert blocked.returncode != 0 and "x" in holders(blocked.stderr), blocked.stderr


def test_the_trunk_that_landed_the_holders_work_never_yields_to_the_other_side(tmp_path):
    """Once the main checkout has landed x's work (merged and pushed), the trunk holds
    those lines: y, which must yield to x, yields to the trunk too, whatever it has
    committed there, and the person's next push from the main checkout, which carries
    nothing of either (a README line), goes through (it was blocked: the main checkout,
    reaching the lines after y, was told to yield to y)."""
    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--no-ff", "-m", "land x", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    scan = json.loads(run(main, sys.executable, "-m", "proximity", "scan", "--json").stdout)
    p = pair(scan, "main", "y")
    assert p["advisory"] == "resolution" and p["yielding"] == "y", p
    told = [m for m in inbox_of(y, "--all") if m["type"] == "landed"]
    assert told, "y is told that the work it yields to lands"
    (main / "README").write_text("a note of the integrator's\n")
    git(main, "add", "README")
    git(main, "commit", "-qm", "a note")
    again = run(main, "git", "push", "origin", "main")
    assert again.returncode == 0 and "push blocked" not in again.stderr, again.stderr
    # a push that brings none of the lines y yields over is no news to y
    assert [m for m in inbox_of(y, "--all") if m["type"] == "landed"] == told
    blocked = run(y, "git", "push", "origin", "y")
    assert blocked.returncode != 0 and "must yield" in blocked.stderr, blocked.stderr


def test_a_checkout_that_merged_the_yielding_side_is_judged_as_it(tmp_path):
    """Landing is no way around the advice: the main checkout that merged y (which must
    yield to x) pushes y's work, and is blocked as y; its own commit on the trunk, pushed
    alone, is its own work and passes."""
    main, _x, _y = held(tmp_path)
    (main / "other.txt").write_text("integrator's own line\n")
    git(main, "commit", "-qam", "the integrator's own change")
    own = run(main, "git", "push", "origin", "main")
    assert own.returncode == 0, own.stderr
    git(main, "merge", "-q", "--no-ff", "-m", "land y", "y")
    blocked = run(main, "git", "push", "origin", "main")
    assert blocked.returncode != 0, blocked.stderr
    assert "'y', whose work this push carries, must yield to 'x'" in blocked.stderr, \
        blocked.stderr


def test_a_checkout_that_merged_both_sides_is_judged_on_the_merge(tmp_path):
    """The main checkout merges x, then y, resolving their conflict: the merge holds both
    lines of work, so neither has anything left to yield to in it, and it lands."""
    main, _x, _y = held(tmp_path)
    git(main, "merge", "-q", "--no-ff", "-m", "land x", "x")
    assert run(main, "git", "merge", "-q", "--no-ff", "-m", "land y", "y").returncode != 0
    (main / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by x and y\n"))
    git(main, "commit", "-qam", "land y (resolved)", "--no-verify")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr


def check_merge(where: Path, ref: str) -> dict:  # type: ignore[type-arg]
    out = run(where, sys.executable, "-m", "proximity", "check", "--merge", ref, "--json")
    assert out.returncode in (0, 1, 2), out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_the_main_checkouts_merge_check_agrees_with_the_push_guard(tmp_path):
    """x committed first on History.md; y's entry at the same place is live, uncommitted,
    and nobody has judged the pair yet. x's own `check --merge origin/main` allows and its
    push lands; in the main checkout `check --merge x` denied naming y ("Bring it in
    later"): every lane that finished first waited for the ones still working on its lines
    (a swarm gridlocked so). It now answers as the push guard does: y yields to x, so the
    merge is asked, not denied, and the push of it lands; merging y (once committed)
    instead is denied, as the push of it is blocked."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "History.md").write_text("History\n=======\n\n- one\n- two\n")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "T")
    git(main, "remote", "add", "origin", str(remote))
    git(main, "push", "-q", "-u", "origin", "main")
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    x, y = tmp_path / "x", tmp_path / "y"
    git(main, "worktree", "add", "-q", "-b", "x", str(x), "main")
    git(main, "worktree", "add", "-q", "-b", "y", str(y), "main")
    (x / "History.md").write_text("History\n=======\n\n- from x\n- one\n- two\n")
    git(x, "commit", "-qam", "x entry")
    (y / "History.md").write_text("History\n=======\n\n- from y\n- one\n- two\n")
    run(y, sys.executable, "-m", "proximity", "snapshot")
    assert check_merge(x, "origin/main")["decision"] == "allow"
    got = check_merge(main, "x")
    assert got["decision"] != "deny", got
    assert {c["agent"] for c in got["conflicts"]} == {"y"} and got["decision"] == "ask", got
    git(y, "commit", "-qam", "y entry")  # told to yield to x by its own commit hook
    denied = check_merge(main, "y")
    assert denied["decision"] == "deny", denied
    assert check_merge(main, "x")["decision"] == "ask"
    git(main, "merge", "-q", "--ff-only", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr


def test_the_merge_check_of_the_holders_work_follows_the_standing_advice(tmp_path):
    """With the advice told (y committed more on x's lines and was told to yield), the
    main checkout's merge of x is asked, of y denied: what the guard does with each push."""
    main, _x, _y = held(tmp_path)
    assert check_merge(main, "x")["decision"] == "ask"
    assert check_merge(main, "y")["decision"] == "deny"


def test_a_rebase_onto_the_holders_work_leaves_no_stale_yield(tmp_path):
    """y, told to yield to x, rebases onto x's work: the pair is clear, and the scan's
    yield graph says so in the same scan (it listed "y waits for x" from the last advice
    recorded, although the pair it had just judged was clear)."""
    main, _x, y = held(tmp_path)
    r = run(y, "git", "rebase", "-X", "ours", "x")  # x's lines kept; y's own on top
    assert r.returncode == 0, r.stderr
    scan = json.loads(run(main, sys.executable, "-m", "proximity", "scan", "--json").stdout)
    p = pair(scan, "x", "y")
    assert p["advisory"] != "resolution" and p["yielding"] is None, p
    assert scan["yields"] == [], scan["yields"]
    # and it stays so: the next scan reads the advice as ended
    again = json.loads(run(main, sys.executable, "-m", "proximity", "scan", "--json").stdout)
    assert again["yields"] == []


def test_the_yielding_side_is_told_the_work_landed_and_clears_once_rebased(tmp_path):
    """When the main checkout lands x's work, y (told to yield to x) is told so in its
    inbox; it stays blocked until it rebases onto the landed work, then its push goes
    through."""
    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--ff-only", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    told_then_cleared(y, by="main")


def test_the_landing_names_the_remote_it_was_pushed_to(tmp_path):
    """The main checkout lands x's work on a remote that is not origin: y is told where,
    and the pull it is told to run names that remote (it said origin, whatever was
    pushed to)."""
    main, _x, y = held(tmp_path)
    url = git(main, "remote", "get-url", "origin").stdout.strip()
    git(main, "remote", "add", "pub", url)
    git(main, "merge", "-q", "--ff-only", "x")
    landed = run(main, "git", "push", "pub", "main")
    assert landed.returncode == 0, landed.stderr
    told_then_cleared(y, by="main", remote="pub")


def told_then_cleared(y: Path, by: str, remote: str = "origin", url: bool = False) -> None:
    """y, told to yield to x, stays blocked and is told x's work landed (pushed from
    ``by`` to ``remote``), and clears once it rebased onto it; told once. A push to a
    remote by name is told once the remote-tracking ref shows it (landed); one by ``url``
    moves no such ref, and is told as it is pushed."""
    blocked = run(y, "git", "push", "origin", "y")
    assert blocked.returncode != 0 and "x" in holders(blocked.stderr), blocked.stderr
    said = " ".join(blocked.stderr.split())
    assert (f"LANDING: the work of 'x' (branch x) is being pushed as main to {remote} from "
            f"'{by}'" if url else f"LANDING: the work of 'x' (branch x) landed as main on "
            f"{remote}, pushed from '{by}'") in said, blocked.stderr
    assert f"git pull --rebase {remote} main" in said
    r = run(y, "git", "pull", "-q", "--rebase", "-X", "ours", remote, "main")
    assert r.returncode == 0, r.stderr
    ok = run(y, "git", "push", "origin", "y")
    assert ok.returncode == 0, ok.stderr
    assert "LANDING" not in ok.stderr  # told once


def test_the_holder_pushing_its_work_onto_the_trunk_itself_lands_it(tmp_path):
    """x pushes its own branch onto the remote's main (`git push origin x:main`), the
    branch the main checkout holds: that lands x's work as the main checkout's push of it
    does, so y (told to yield to x) is told, and clears once rebased. It was judged as a
    push of branch x: nobody was told."""
    _main, x, y = held(tmp_path)
    landed = run(x, "git", "push", "origin", "x:main")
    assert landed.returncode == 0, landed.stderr
    told_then_cleared(y, by="x")
    # a push of x's branch under its own name lands nothing
    again = run(x, "git", "push", "origin", "x")
    assert again.returncode == 0 and "LANDING" not in again.stderr, again.stderr


def test_work_pushed_onto_the_remotes_trunk_lands_when_no_checkout_holds_it(tmp_path):
    """The main checkout is detached (or on another branch): nobody here holds main. x
    pushes its work onto the remote's main, the branch the remote's HEAD names: it lands,
    and y is told (it was judged as a push of x's branch: nobody was told, and a wait
    cycle's order on x's work stood for its hour)."""
    main, x, y = held(tmp_path)
    git(main, "remote", "set-head", "origin", "main")
    git(main, "checkout", "-q", "--detach")
    landed = run(x, "git", "push", "origin", "HEAD:main")
    assert landed.returncode == 0, landed.stderr
    told_then_cleared(y, by="x")


def test_the_holders_work_lands_after_its_worktree_is_gone(tmp_path):
    """x finished and its worktree was removed (as an agent's is), its branch merged
    later in the main checkout: the push lands x's work, which held right-of-way over y,
    so it goes through and y is told. It was judged as the main checkout's own work and
    blocked: "must yield to 'y'", the side that was told to yield."""
    main, x, y = held(tmp_path)
    git(main, "worktree", "remove", "--force", str(x))
    git(main, "merge", "-q", "--ff-only", "x")
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    assert "must yield" not in landed.stderr, landed.stderr
    told = run(y, "git", "push", "origin", "y")  # y's next hook reads it
    assert "LANDING: the work of 'x' (branch x)" in told.stderr, told.stderr


def test_the_resident_service_lands_the_holders_work_alike(tmp_path, monkeypatch):
    """The same landing through the resident service (the thin client hands it the pushed
    refs with the remote's commits): the holder's work lands from the main checkout, the
    yielding side's does not."""
    from test_thin import stop

    from proximity.commands import service as service_cmd
    from proximity.service.report import service_state

    main, _x, y = held(tmp_path)
    common = str(main / ".git")
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "60")
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    try:
        assert service_cmd.start(common)
        git(main, "merge", "-q", "--ff-only", "x")
        landed = run(main, "git", "push", "origin", "main")
        assert landed.returncode == 0, landed.stderr
        blocked = run(y, "git", "push", "origin", "y")
        assert blocked.returncode != 0 and "x" in holders(blocked.stderr), \
            blocked.stderr
        status = service_state(common).get("status")
        assert isinstance(status, dict), status
        assert status["answered"]["hook"] >= 2 and status["answered"]["hook_fallback"] == 0
    finally:
        stop(common)


def test_a_checkout_holding_a_blocked_landing_does_not_deny_the_holder(tmp_path):
    """The main checkout merged y, which must yield to x, and its push is blocked; until it
    lands, the merge sits in the main checkout. x editing its own contested lines was
    denied naming the main checkout (the merge's lines are there, and no advice stood
    between x and 'main'): x waited for the main checkout, which waited for x (a swarm
    deadlocked so). The main checkout's unpushed work is y's: x is asked, as y yields."""
    main, x, _y = held(tmp_path)
    git(main, "merge", "-q", "--no-ff", "-m", "land y", "y")
    assert run(main, "git", "push", "origin", "main").returncode != 0
    got = json.loads(run(x, sys.executable, "-m", "proximity", "check", "f.txt:20",
                         "--json").stdout)
    assert got["decision"] == "ask", got
    assert "main" in {c["agent"] for c in got["conflicts"]}, got


def test_the_pull_a_landing_advises_is_quoted_for_a_shell(tmp_path):
    """A remote or branch name may hold backticks, `$(…)` and `;` (git allows them): the
    command the LANDING message advises, copied into a shell, runs git with those names
    and nothing else (found by an attacker: it ran what the remote's name held)."""
    import shlex

    from proximity.views import messages

    marker = tmp_path / "ran"
    remote = f"../evil`touch {marker}`$(touch {marker});x.git"
    said = messages.landed({"from": "x", "branch": "x", "onto": "m`id`;y", "by": "main",
                            "remote": remote})
    command = said.split("(`", 1)[1].split("`, or", 1)[0]
    assert shlex.split(command) == ["git", "pull", "--rebase", remote, "m`id`;y"]
    subprocess.run(["bash", "-c", "echo " + command], cwd=tmp_path, check=True,
                   capture_output=True)
    assert not marker.exists()


def test_a_push_by_url_onto_the_remotes_trunk_lands_too(tmp_path):
    """git hands pre-push the URL when the push names one: the configured remote with that
    URL says which branch is its trunk (a push by URL with the main checkout detached left
    the order standing and told nobody)."""
    main, x, y = held(tmp_path)
    git(main, "remote", "set-head", "origin", "main")
    git(main, "checkout", "-q", "--detach")
    url = git(main, "remote", "get-url", "origin").stdout.strip()
    landed = run(x, "git", "push", url, "HEAD:main")
    assert landed.returncode == 0, landed.stderr
    told_then_cleared(y, by="x", remote=url, url=True)


def inbox_of(where: Path, *extra: str) -> list[dict]:  # type: ignore[type-arg]
    got = run(where, sys.executable, "-m", "proximity", "inbox", "--json", *extra)
    return json.loads(got.stdout)["messages"]  # type: ignore[no-any-return]


def test_advice_that_a_landing_reversed_is_withdrawn(tmp_path):
    """y, told to yield to x, lands its work on the trunk anyway (PROXIMITY_ALLOW=1): the
    trunk holds y's lines now, so x yields to them, and the HOLD COURSE x had not read yet
    is withdrawn (x read "HOLD COURSE from 'y'" after it had become the side to yield)."""
    main, x, y = held(tmp_path)
    waiting = [m for m in inbox_of(x, "--all") if m["delivered"] is None]
    assert [m["type"] for m in waiting if m["from"] == "y"] == ["hold"], waiting
    over = run(y, "git", "push", "origin", "y:main", env={"PROXIMITY_ALLOW": "1"})
    assert over.returncode == 0, over.stderr
    # before anything judges the pair again: x's check on its contested line already
    # reads y's landed work as holding (it said "'y' was told to yield to you here: you
    # have right-of-way" until a scan)
    asked = run(x, sys.executable, "-m", "proximity", "check", "f.txt:20", "--json")
    said = json.loads(asked.stdout)
    assert said["decision"] == "deny" and "told to yield to you" not in said["reason"], said
    # nor does x's next hook hand it y's HOLD COURSE beside the news that y lands over it
    waiting = [m for m in inbox_of(x, "--all") if m["delivered"] is None]
    assert [m["type"] for m in waiting if m["from"] == "y"] == ["landed"], waiting
    scan = json.loads(run(main, sys.executable, "-m", "proximity", "scan", "--json").stdout)
    p = pair(scan, "x", "y")
    assert p["advisory"] == "resolution" and p["yielding"] == "x", p
    got = inbox_of(x)
    assert not [m for m in got if m["type"] == "hold" and m["from"] == "y"]
    # and x hears that y's work lands over its lines, when it lands: not first at its own
    # push, blocked
    over_x = [m for m in got if m["type"] == "landed" and m["from"] == "y"]
    assert len(over_x) == 1 and over_x[0]["body"].get("over") is True, got
    from proximity.views import messages
    said = messages.render(over_x[0]["body"])
    assert "LANDING" in said and "overrode the guard" in said and "rebase onto it" in said


def test_a_push_the_remote_rejects_tells_nobody_it_landed(tmp_path):
    """The guard judges before the remote answers: a LANDING posted then is held until
    the remote-tracking ref shows the pushed commit. The remote refuses the main
    checkout's push of x's work (its own hook), then a dry run: y hears nothing of a
    landing. The push goes through on the next try: y is told once (the three tries
    landed one commit), even after x's later dry run of new work, which stays held and is
    dropped unseen once older than any push takes."""
    main, x, y = held(tmp_path)
    remote = Path(git(main, "remote", "get-url", "origin").stdout.strip())
    gate = remote / "hooks" / "pre-receive"
    gate.parent.mkdir(exist_ok=True)
    gate.write_text("#!/bin/sh\necho 'the remote refuses this push' >&2\nexit 1\n")
    gate.chmod(0o755)
    git(main, "merge", "-q", "--ff-only", "x")
    refused = run(main, "git", "push", "origin", "main")
    assert refused.returncode != 0 and "refuses" in refused.stderr, refused.stderr
    dry = run(main, "git", "push", "--dry-run", "origin", "main")
    assert dry.returncode == 0, dry.stderr
    assert not [m for m in inbox_of(y) if m["type"] == "landed"]
    blocked = run(y, "git", "push", "origin", "y")
    assert blocked.returncode != 0 and "LANDING" not in blocked.stderr, blocked.stderr
    assert len([m for m in inbox_of(y, "--all")
                if m["type"] == "landed" and m["delivered"] is None]) == 2
    gate.unlink()
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    # before y reads it, x dry-runs new work onto the trunk: told later, if ever
    (x / "f.txt").write_text((x / "f.txt").read_text().replace("line 30\n", "line 30 x\n"))
    git(x, "commit", "-qam", "x goes on")
    again = run(x, "git", "push", "--dry-run", "origin", "x:main")
    assert again.returncode == 0, again.stderr
    told = [m for m in inbox_of(y) if m["type"] == "landed"]
    assert len(told) == 1 and told[0]["from"] == "x", told
    from proximity.views import messages
    said = " ".join(messages.render(told[0]).split())
    assert "landed as main on origin, pushed from 'main'" in said, said
    assert not [m for m in inbox_of(y) if m["type"] == "landed"]  # taken once
    waiting = [m for m in inbox_of(y, "--all")
               if m["type"] == "landed" and m["delivered"] is None]
    assert len(waiting) == 1, waiting  # x's dry run
    from proximity import layout
    from proximity.snapshot import delivery
    db = sqlite3.connect(main / ".git" / "ecm" / layout.LEDGER)
    with db:
        db.execute("UPDATE inbox SET created = created - ? WHERE id = ?",
                   (delivery.HOLD_MAX + 1, waiting[0]["id"]))
    db.close()
    assert not [m for m in inbox_of(y) if m["type"] == "landed"]
    assert all(m["delivered"] is not None for m in inbox_of(y, "--all"))


def test_only_a_remote_tracking_ref_confirms_a_push(tmp_path):
    """A push is confirmed by the ref under refs/remotes/ that the remote's fetch refspec
    maps its destination to. A refspec that fetches into local branches, a push by URL, or
    an unknown remote confirms nothing (None: the LANDING says "being pushed")."""
    from proximity import gitio

    main, _remote = make_repo(tmp_path)
    sha = git(main, "rev-parse", "HEAD").stdout.strip()
    url = git(main, "remote", "get-url", "origin").stdout.strip()
    repo = gitio.Repo(str(main))
    assert repo.push_arrived("origin", "refs/heads/main", sha) is True
    assert repo.push_arrived("origin", "refs/heads/other", sha) is False  # (no such ref yet)
    assert repo.push_arrived(url, "refs/heads/main", sha) is None
    assert repo.push_arrived("nowhere", "refs/heads/main", sha) is None
    git(main, "config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    assert gitio.Repo(str(main)).push_arrived("origin", "refs/heads/main", sha) is None


def test_a_later_push_of_other_files_tells_the_yielding_side_nothing_new(tmp_path):
    """The main checkout fast-forwards onto x's lane (a scan judging main~y between) and
    pushes it: y is told once. Its later pushes of other files (a README line) are no
    news to y, which yields on f.txt."""
    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--ff-only", "x")
    run(main, sys.executable, "-m", "proximity", "scan", "--json")  # (decides main~y)
    landed = run(main, "git", "push", "origin", "main")
    assert landed.returncode == 0, landed.stderr
    told = [m for m in inbox_of(y) if m["type"] == "landed"]
    assert len(told) == 1, told
    for k in range(2):
        (main / "README").write_text(f"a note of the integrator's, {k}\n")
        git(main, "add", "README")
        git(main, "commit", "-qm", f"a note {k}")
        again = run(main, "git", "push", "origin", "main")
        assert again.returncode == 0, again.stderr
    every = [m for m in inbox_of(y, "--all") if m["type"] == "landed"]
    assert len(every) == 1, every
