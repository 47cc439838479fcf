"""A block you can trust — what the guard judges, who yields, and whose policy.

Real repositories, real worktrees, plain hooks (`proximity install`), real pushes to a
real bare remote.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import git, init_repo, lines, pair
from test_hooks import BASE, collide, make_repo, run

from proximity.commands.hook import pushed_refs


def installed(tmp_path: Path) -> Path:
    main, _remote = make_repo(tmp_path)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    return main


def test_pushed_refs_reads_what_the_push_carries():
    z = "0" * 40
    a, b = "a" * 40, "b" * 40
    text = (f"refs/heads/x {a} refs/heads/x {z}\n"  # new branch: judged
            f"refs/tags/v1 {a} refs/tags/v1 {z}\n"  # a tag: no work to judge
            f"(delete) {z} refs/heads/old {b}\n"  # a deletion
            f"refs/heads/y {b} refs/heads/y {b}\n"  # the remote has it already
            f"refs/tags/t {b} refs/heads/main {a}\n"  # a tag pushed onto a branch: judged
            f"refs/heads/x {b} refs/tags/x {z}\n")  # a branch pushed as a tag: lands nothing
    assert pushed_refs(text, {}) == [("refs/heads/x", a, z, "refs/heads/x"),
                                     ("refs/tags/t", b, a, "refs/heads/main")]
    assert pushed_refs(None, {}) is None
    assert pushed_refs("", {}) == []  # git's hook of a push that updates nothing
    env = {"PRE_COMMIT_TO_REF": a, "PRE_COMMIT_FROM_REF": z,
           "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/x"}
    assert pushed_refs(None, env) == [("refs/heads/x", a, z, "")]  # (no remote branch named)


def test_a_hosts_push_down_to_a_root_commit_is_read_from_git(tmp_path, monkeypatch):
    """pre-commit names the local branch of a push of history down to a root commit (a new
    remote) without its commit: git says which commit it is, and a name git cannot resolve
    is judged as a guard run by hand (None), never read as an option."""
    repo = init_repo(tmp_path / "r", {"f.txt": "x\n"})
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    branch = git(repo, "symbolic-ref", "HEAD").stdout.strip()
    monkeypatch.chdir(repo)
    env = {"PRE_COMMIT_LOCAL_BRANCH": branch, "PRE_COMMIT_REMOTE_BRANCH": branch}
    assert pushed_refs(None, env) == [(branch, head, "0" * 40, branch)]  # a new ref: zeros
    for name in ("refs/heads/none", "--all"):
        assert pushed_refs(None, {**env, "PRE_COMMIT_LOCAL_BRANCH": name}) is None


def test_tag_push_branch_deletion_and_another_branch_are_never_blocked(tmp_path):
    main = installed(tmp_path)
    _a, b, _ra, _rb = collide(main, tmp_path)
    blocked = run(b, "git", "push", "-q", "origin", "feat/b")
    assert blocked.returncode != 0 and "push blocked" in blocked.stderr
    # a tag on the colliding commit carries no branch work: never blocked
    git(b, "tag", "v-b")
    t = run(b, "git", "push", "-q", "origin", "v-b")
    assert t.returncode == 0, t.stderr
    # a branch from the base, pushed from the yielding worktree: not the colliding commits
    git(b, "branch", "side", "main")
    s = run(b, "git", "push", "-q", "origin", "side")
    assert s.returncode == 0, s.stderr
    # deleting a remote branch from the yielding worktree
    d = run(b, "git", "push", "-q", "origin", "--delete", "side")
    assert d.returncode == 0, d.stderr


def test_a_tag_pushed_onto_a_branch_is_judged_as_the_work_it_carries(tmp_path):
    """A tag is no work on the remote, but one pushed onto a branch lands its commits: the
    remote ref decides (found by an attacker: `git push origin t:main`, t a tag on the
    branch that must yield, passed as "nothing to judge")."""
    main = installed(tmp_path)
    collide(main, tmp_path)
    git(main, "tag", "t", "feat/b")
    blocked = run(main, "git", "push", "-q", "origin", "t:refs/heads/main")
    assert blocked.returncode != 0, blocked.stderr
    assert "'wt-b', whose work this push carries, must yield to 'wt-a'" in blocked.stderr, \
        blocked.stderr
    assert git(main, "ls-remote", "origin", "refs/heads/main").stdout.split()[0] \
        != git(main, "rev-parse", "feat/b").stdout.strip()


def test_a_detached_checkout_pushing_yielding_work_is_judged_as_that_work(tmp_path):
    """A detached checkout holds no line of work: the commits its HEAD has are others'.
    Pushed from a new worktree detached at the branch that must yield, or from the main
    checkout detached there, they are judged as that branch's worktree (found by an
    attacker: `git worktree add --detach ../wd feat/b; git push origin HEAD:main` landed
    them, judged as a worktree with no standing advice)."""
    main = installed(tmp_path)
    a, b, _ra, _rb = collide(main, tmp_path)
    # told to yield, b commits more on the contested lines: it buys b nothing, but a new
    # identity carrying these commits would hold by their count
    text = (b / "f.txt").read_text()
    for n in range(17, 24):
        text = text.replace(f"line {n}\n", f"line {n} by b\n")
    (b / "f.txt").write_text(text)
    git(b, "commit", "-qam", "b: more on the contested lines")
    wd = tmp_path / "wd"
    git(main, "worktree", "add", "-q", "--detach", str(wd), "feat/b")
    for where in (wd, main):
        if where == main:
            git(main, "checkout", "-q", "--detach", "feat/b")
        blocked = run(where, "git", "push", "-q", "origin", "HEAD:refs/heads/main")
        assert blocked.returncode != 0, (where, blocked.stderr)
        assert "must yield to 'wt-a'" in blocked.stderr, blocked.stderr
    # the holder's side, detached too, passes; and a branch's own HEAD is its own work
    git(main, "checkout", "-q", "--detach", "feat/a")
    ok = run(main, "git", "push", "-q", "origin", "HEAD:refs/heads/side")
    assert ok.returncode == 0, ok.stderr
    own = run(a, "git", "push", "-q", "origin", "HEAD:refs/heads/a-copy")
    assert own.returncode == 0, own.stderr


def test_every_ref_of_a_long_push_is_judged(tmp_path):
    """git hands pre-push one line per pushed ref: the one that must yield is judged where
    it comes in the list, past a megabyte of others too (the guard read the first 1 MiB
    and passed the rest unjudged and unsaid)."""
    main = installed(tmp_path)
    _a, b, _ra, _rb = collide(main, tmp_path)
    base = git(main, "rev-parse", "main").stdout.strip()
    head = git(b, "rev-parse", "HEAD").stdout.strip()
    pad = "".join(f"refs/heads/p{i:06d}-{'x' * 80} {base} refs/heads/p{i:06d}-{'x' * 80} "
                  f"{base}\n" for i in range(12000))  # refs the remote has: nothing to judge
    assert len(pad) > 2 << 20
    stdin = pad + f"refs/heads/feat/b {head} refs/heads/feat/b {'0' * 40}\n"
    hook = main / ".git" / "hooks" / "pre-push"
    r = subprocess.run([str(hook), "origin", str(tmp_path / "remote.git")], cwd=b,
                       input=stdin, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "push blocked" in r.stderr and "wt-a" in r.stderr


def test_a_branch_pushed_from_another_worktree_is_judged_as_its_own(tmp_path):
    """A branch checked out in a worktree is that worktree's work, whoever pushes it: the
    branch that must yield is blocked when pushed from the other side's worktree or the
    main checkout, the one with right-of-way passes from anywhere (seen on real code: pushed
    from the other side's worktree it stood in for that worktree and passed; pushed from a
    third one it took that worktree's place in the order and was blocked)."""
    main = installed(tmp_path)
    a, b, _ra, _rb = collide(main, tmp_path)
    for where in (a, main):
        blocked = run(where, "git", "push", "-q", "origin", "feat/b")
        assert blocked.returncode != 0, blocked.stderr
        assert "'wt-b', whose work this push carries, must yield to 'wt-a'" \
            in blocked.stderr, blocked.stderr
    assert git(main, "ls-remote", "origin", "refs/heads/feat/b").stdout == ""
    for where in (main, b):
        ok = run(where, "git", "push", "-q", "origin", "feat/a")
        assert ok.returncode == 0, ok.stderr
        git(main, "push", "-q", "origin", "--delete", "feat/a")
    own = run(b, "git", "push", "-q", "origin", "feat/b")
    assert own.returncode != 0 and "this worktree must yield to 'wt-a'" in own.stderr


def test_a_copy_of_a_branch_that_must_yield_is_judged_as_its_worktree(tmp_path):
    """A branch checked out nowhere stands for the worktree whose own commits it carries:
    a copy of the branch that must yield, or one built on it, is blocked under any name,
    from anywhere; a copy of the one with right-of-way, and history every worktree shares,
    pass (found on a real repository: `git branch copy feat/b; git push origin copy` passed)."""
    main = installed(tmp_path)
    a, _b, _ra, _rb = collide(main, tmp_path)
    git(main, "branch", "copy", "feat/b")
    git(main, "branch", "built-on", "feat/b")
    git(main, "branch", "other", "feat/a")
    blocked = run(main, "git", "push", "-q", "origin", "copy")
    assert blocked.returncode != 0, blocked.stderr
    assert "'wt-b', whose work this push carries, must yield to 'wt-a'" in blocked.stderr, \
        blocked.stderr
    assert run(a, "git", "push", "-q", "origin", "copy:review2").returncode != 0
    on = tmp_path / "on"
    git(main, "worktree", "add", "-q", "--detach", str(on), "built-on")
    (on / "extra.txt").write_text("more\n")
    git(on, "add", "extra.txt")
    git(on, "commit", "-qm", "more on b's work", "--no-verify")
    sha = git(on, "rev-parse", "HEAD").stdout.strip()
    git(main, "worktree", "remove", "--force", str(on))
    git(main, "branch", "-f", "built-on", sha)
    assert run(main, "git", "push", "-q", "origin", "built-on").returncode != 0
    assert git(main, "ls-remote", "origin").stdout.count("refs/heads/") == 1  # main only
    ok = run(main, "git", "push", "-q", "origin", "other", "main")
    assert ok.returncode == 0, ok.stderr


def test_guard_judges_the_pushed_commit_not_the_uncommitted_worktree(tmp_path):
    main = installed(tmp_path)
    a, b = tmp_path / "wt-a", tmp_path / "wt-b"
    git(main, "worktree", "add", "-q", "-b", "feat/a", str(a))
    git(main, "worktree", "add", "-q", "-b", "feat/b", str(b))
    (a / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by a\n"))
    git(a, "commit", "-qam", "a edits line 20")
    # b commits work elsewhere, and has an uncommitted edit on a's line
    (b / "other.txt").write_text(lines(10, "other") + "b elsewhere\n")
    git(b, "commit", "-qam", "b elsewhere")
    (b / "f.txt").write_text(BASE.replace("line 20\n", "line 20 by b\n"))
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode == 0, p.stderr  # the push carries only the clean commit


def test_a_worktree_mid_rebase_blocks_nobody(tmp_path):
    main = installed(tmp_path)
    a, b, _ra, _rb = collide(main, tmp_path)
    # b starts a rebase onto a's work and stops on the conflict
    r = run(b, "git", "rebase", "feat/a")
    assert r.returncode != 0
    assert os.path.isdir(git(b, "rev-parse", "--git-path", "rebase-merge").stdout.strip()) \
        or os.path.isdir(git(b, "rev-parse", "--git-path", "rebase-apply").stdout.strip())
    # a's push is not blocked by b's half-replayed state, and the scan says why
    pa = run(a, "git", "push", "-q", "origin", "feat/a")
    assert pa.returncode == 0, pa.stderr
    out = run(main, sys.executable, "-m", "proximity", "scan", "--json")
    import json

    p = pair(json.loads(out.stdout), "wt-a", "wt-b")
    assert p["in_progress"] == {"wt-b": "rebase"}
    assert p["advisory"] != "resolution" and p["yielding"] is None
    # the text says so too (found on a real repository: only the JSON did)
    txt = run(main, sys.executable, "-m", "proximity", "scan").stdout
    assert "rebase in progress: blocks nobody" in txt and "wt-b is in the middle of a rebase" \
        in txt, txt


def test_a_trivial_commit_elsewhere_buys_no_right_of_way(tmp_path, space, scan_json, capsys):
    sp = space({"f.txt": lines(30), "other.txt": "x\n"})
    a, b = sp.wt("a"), sp.wt("b")  # a comes first in the ledger order
    from proximity.main import main as cli

    for wt in (a, b):
        assert cli(["snapshot", "-C", str(wt)]) == 0
    capsys.readouterr()
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A\n"))
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B\n"))
    before = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert before["advisory"] == "resolution"
    # b commits one line elsewhere: no work on the contested file, no right-of-way
    sp.write(b, "other.txt", "y\n")
    git(b, "commit", "-qm", "trivial", "other.txt")
    after = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert after["yielding"] == before["yielding"]
    assert after["priority"]["b"]["committed"] == 0
    # committing the contested work itself counts as work, but the advice was told: the
    # side told to yield buys nothing by committing, while the holder's live run goes on
    git(b, "commit", "-qam", "b's real work")
    won = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert won["priority"]["b"]["committed"] == 1
    assert won["yielding"] == before["yielding"] == "b"


def test_identical_edits_are_not_a_collision(space, scan_json, capsys):
    text = lines(30)
    sp = space({"f.txt": text})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", text.replace("line 10\n", "fixed\n") + "a's own tail\n")
    sp.write(b, "f.txt", text.replace("line 10\n", "fixed\n").replace("line 1\n", "b head\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0  # git merges the same hunk cleanly
    assert p["advisory"] != "resolution"
    assert not any("conflict" in f["detail"] for f in p["findings"]
                   if f["channel"] == "overlap")


def test_touching_edits_git_merges_are_traffic_at_most(space, scan_json, capsys):
    text = lines(30)
    sp = space({"f.txt": text})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", text.replace("line 10\n", "ten\n"))
    sp.write(b, "f.txt", text.replace("line 10\n", "line 10\nnew after ten\n")
             .replace("line 30\n", "line 30\n"))
    merged = git(sp.main, "merge-tree", "--write-tree", "HEAD", "HEAD", check=False)
    assert merged.returncode == 0
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    if p["channels"]["conflict"] == 0.0:  # git merged it: approach evidence only
        hit = next(f for f in p["findings"] if f["channel"] == "overlap")
        assert hit["kind"] in ("touch-merged", "near", "near-far")
        assert p["advisory"] != "resolution"
    else:
        assert p["advisory"] == "resolution"


def test_soft_evidence_alone_never_adds_up_to_an_ra(space, scan_json, capsys):
    """A direct import + the same directory + a body change the other side calls + a
    nearby edit: git merges cleanly, so no Resolution Advisory."""
    lib = "".join(f"def apply{i}(x):\n    return x + {i}\n\n\n" for i in range(8))
    files = {"pkg/lib.py": lib,
             "pkg/app.py": "from pkg import lib\n\n\ndef run(x):\n    return lib.apply1(x)\n"}
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "pkg/lib.py", lib.replace("return x + 1\n", "return x + 100\n"))
    sp.write(b, "pkg/app.py", files["pkg/app.py"] + "\n\ndef more(x):\n    return lib.apply1(x)"
             " + lib.apply2(x)\n")
    sp.write(b, "pkg/lib.py", lib.replace("return x + 3\n", "return x + 3  # b\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0
    assert p["advisory"] != "resolution", p


def test_a_worktree_cannot_switch_its_own_guard_off(tmp_path):
    main = installed(tmp_path)
    _a, b, _ra, _rb = collide(main, tmp_path)
    # b's uncommitted (and even committed-on-its-branch) config cannot weaken the policy
    (b / ".proximity.toml").write_text("[weights]\nconflict = 0\noverlap = 0\n")
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr
    git(b, "add", ".proximity.toml")
    git(b, "commit", "-qm", "relax the guard", "--no-verify")
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr
    # the airspace's policy: committed on the main checkout, or shared git config
    git(main, "config", "proximity.weights.conflict", "0")
    git(main, "config", "proximity.weights.overlap", "0")
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode == 0, p.stderr


def test_committed_config_cannot_run_a_command(tmp_path):
    main, _remote = make_repo(tmp_path)
    marker = tmp_path / "pwned"
    (main / ".proximity.toml").write_text(f'notify = "touch {marker}"\n')
    git(main, "add", ".proximity.toml")
    git(main, "commit", "-qm", "sneaky")
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    a, _b, _ra, rb = collide(main, tmp_path)
    assert "ignored" in rb.stderr and "notify" in rb.stderr
    assert not marker.exists()
    # the user's own git config may
    git(main, "config", "proximity.notify", f"touch {marker}")
    git(main, "config", "proximity.cooldownSeconds", "0")
    git(main, "config", "proximity.cooldownHops", "0")
    (a / "f.txt").write_text(BASE.replace("line 21\n", "line 21 by a\n"))
    git(a, "commit", "-qam", "a again")
    assert marker.exists()


def test_non_finite_config_is_a_one_line_error_naming_the_key(tmp_path):
    main, _remote = make_repo(tmp_path)
    for value in ("nan", "inf", "-1", "1e400"):
        (main / ".proximity.toml").write_text(f"near_lines = {value}\n")
        git(main, "add", ".proximity.toml")
        git(main, "commit", "-qm", f"near_lines {value}")
        r = run(main, sys.executable, "-m", "proximity", "scan")
        assert r.returncode == 2, (value, r.stderr)
        assert "near_lines" in r.stderr and "Traceback" not in r.stderr


def test_doctor_shows_where_the_policy_comes_from_and_drift(space, capsys):
    import json

    from proximity.main import main as cli

    sp = space({".proximity.toml": "tau_ra = 0.8\nnotify = 'echo hi'\n", "f.txt": "x\n"})
    b = sp.wt("b")
    sp.write(b, ".proximity.toml", "tau_ra = 0.95\n")
    git(sp.main, "config", "proximity.nearLines", "3")
    cli(["doctor", "--json", "-C", str(b)])
    checks = json.loads(capsys.readouterr().out)["checks"]
    service = next(r for r in checks if r["check"] == "service")
    assert service["status"] == "ok" and "PROXIMITY_SERVICE=0" in service["detail"]
    rows = [r for r in checks if r["check"].startswith("config")]
    text = json.dumps(rows)
    assert ".proximity.toml committed at the main checkout's HEAD" in text
    assert "git config (repository)" in text
    assert "'notify' ignored" in text
    drift = next(r for r in rows if r["check"] == "config drift")
    assert "tau_ra" in drift["detail"] and drift["status"] == "warn"


def test_who_reached_the_contested_file_first_has_right_of_way(space, scan_json, capsys):
    from proximity.main import main as cli

    sp = space({"f.txt": lines(30), "g.txt": "g\n"})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (a, b):  # a enters the ledger first…
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "g.txt", "a elsewhere\n")
    assert cli(["snapshot", "-C", str(a)]) == 0
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B\n"))  # …but b reaches f.txt first
    assert cli(["snapshot", "-C", str(b)]) == 0
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A\n"))
    assert cli(["snapshot", "-C", str(a)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution" and p["yielding"] == "a"
    # reverting ends b's claim: when b comes back later, a was there first
    sp.write(b, "f.txt", lines(30))
    assert cli(["snapshot", "-C", str(b)]) == 0
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B again\n"))
    assert cli(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["yielding"] == "b"


def test_skipping_the_hooks_buys_no_right_of_way(space, scan_json, capsys):
    """a commits its edit of line 9 with its hooks; b edits the same line and commits with
    its hooks skipped (``--no-verify``; ``PROXIMITY_SKIP=1`` alike), so no event records b
    reaching the file: b reached it after everything recorded, and yields. (Seen on real
    code: b's worktree-add event stood for the moment it reached the file, so b took right-of-way
    and a's push was blocked.)"""
    from proximity.main import main as cli

    sp = space({"f.txt": lines(30), "g.txt": "g\n"})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (b, a):  # b enters the ledger first
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A\n"))
    assert cli(["snapshot", "-C", str(a)]) == 0
    git(a, "commit", "-qam", "a")
    assert cli(["snapshot", "-C", str(a)]) == 0
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B\n"))
    git(b, "commit", "-qam", "b", "--no-verify")  # nothing recorded
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution" and p["yielding"] == "b", p


def test_committing_the_contested_change_keeps_its_place(space, scan_json, capsys):
    """Found on click: a change that is committed no longer differs from HEAD,
    which the ledger used to read as a revert (the worktree then lost its place and the
    tie went to whoever entered the ledger first). Committed, it is the same work."""
    from proximity.main import main as cli

    sp = space({"f.txt": lines(30), "g.txt": "g\n"})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (b, a):  # b enters the ledger first…
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A\n"))  # …a reaches f.txt first
    assert cli(["snapshot", "-C", str(a)]) == 0
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B\n"))
    assert cli(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution" and p["yielding"] == "b"
    for wt in (a, b):  # both commit their change (the same committed lines each)
        git(wt, "commit", "-qam", f"{wt.name}'s change")
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "g.txt", "a elsewhere\n")  # and go on elsewhere
    git(a, "commit", "-qam", "a elsewhere")
    assert cli(["snapshot", "-C", str(a)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert p["priority"]["a"]["committed"] == p["priority"]["b"]["committed"]
    assert p["yielding"] == "b"
    # a real revert still ends a's claim
    assert _revert_and_redo(sp, a, scan_json, capsys)["yielding"] == "a"


def _revert_and_redo(sp: Any, a: Path, scan_json: Any, capsys: Any) -> dict[str, Any]:
    """``a`` commits the revert of its line-9 change, then makes it again (uncommitted):
    the pair a-b as `scan --json` gives it then."""
    from proximity.main import main as cli

    sp.write(a, "f.txt", lines(30))
    git(a, "commit", "-qam", "a reverts")
    assert cli(["snapshot", "-C", str(a)]) == 0
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A again\n"))
    assert cli(["snapshot", "-C", str(a)]) == 0
    capsys.readouterr()
    return pair(scan_json(sp.main, capsys=capsys), "a", "b")


def test_padding_the_contested_file_far_away_buys_no_right_of_way(space, scan_json, capsys):
    """Found on click: committed comment lines at the end of the contested file
    must not outweigh the work on the contested lines."""
    from proximity.main import main as cli

    sp = space({"f.txt": lines(60)})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (a, b):
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "f.txt", lines(60).replace("line 9\n", "A\n"))
    git(a, "commit", "-qam", "a's work")
    sp.write(b, "f.txt", lines(60).replace("line 9\n", "B\n"))
    git(b, "commit", "-qam", "b's work")
    capsys.readouterr()
    before = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert before["advisory"] == "resolution"
    assert before["priority"]["a"]["committed"] == before["priority"]["b"]["committed"] == 1
    for i in range(6):  # b pads the end of the contested file, commit after commit
        sp.write(b, "f.txt", (b / "f.txt").read_text() + f"# pad {i}\n")
        git(b, "commit", "-qam", f"pad {i}")
    after = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert after["priority"]["b"]["committed"] == 1
    assert after["yielding"] == before["yielding"]
    # more work on the contested lines themselves does count
    sp.write(b, "f.txt", (b / "f.txt").read_text().replace("line 10\n", "B10\n")
             .replace("line 8\n", "B8\n"))
    git(b, "commit", "-qam", "b extends its edit")
    more = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert more["priority"]["b"]["committed"] > 1


def test_the_side_told_to_yield_buys_nothing_by_committing_more(space, scan_json, capsys):
    """Found on click: the side told to yield kept committing to the contested
    lines, outgrew the holder's committed work there, and took the right-of-way -- the
    holder's push was then blocked. The advice stands while the holder's claim does."""
    from proximity.main import main as cli

    sp = space({"f.txt": lines(30)})
    a, b = sp.wt("a"), sp.wt("b")
    for wt in (a, b):
        assert cli(["snapshot", "-C", str(wt)]) == 0
    sp.write(a, "f.txt", lines(30).replace("line 9\n", "A\n"))
    git(a, "commit", "-qam", "a's change")
    assert cli(["snapshot", "-C", str(a)]) == 0
    sp.write(b, "f.txt", lines(30).replace("line 9\n", "B\n"))
    assert cli(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution" and p["yielding"] == "b"
    # b ignores the advice: commits more lines than a has, right there
    more = "".join(f"B {i}\n" if 6 <= i <= 12 else f"line {i}\n" for i in range(30))
    sp.write(b, "f.txt", more)
    git(b, "commit", "-qam", "b insists")
    assert cli(["snapshot", "-C", str(b)]) == 0
    capsys.readouterr()
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["advisory"] == "resolution"
    assert p["priority"]["b"]["committed"] > p["priority"]["a"]["committed"]
    assert p["yielding"] == "b"  # still
    # a gives its claim up (reverts): the decision is made again
    assert _revert_and_redo(sp, a, scan_json, capsys)["yielding"] == "a"


def test_a_push_of_head_names_the_worktrees_branch_to_the_other_side(tmp_path):
    """`git push origin HEAD:feat/b`: the pushed ref is HEAD, the line of work is feat/b;
    the other side read "HOLD COURSE from 'wt-b' (branch HEAD)"."""
    import json

    main, _remote = make_repo(tmp_path, "cooldown_seconds = 0\ncooldown_hops = 0\n",
                              ".proximity.toml")  # (every judgement tells again)
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
                   capture_output=True)
    a, b, _ra, _rb = collide(main, tmp_path)
    pb = run(b, "git", "push", "-q", "origin", "HEAD:feat/b")
    assert pb.returncode != 0 and "push blocked" in pb.stderr, pb.stderr
    got = run(a, sys.executable, "-m", "proximity", "inbox", "--json", "--all")
    told = [m["body"] for m in json.loads(got.stdout)["messages"] if m["from"] == "wt-b"]
    assert told and told[0].get("branch") == "feat/b", told  # (the newest: the push's)
