"""TCAS actions: transmit on TA, steer/hold on RA, inbox, cooldown, notify."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import git, lines

from proximity.errors import FatalError
from proximity.ledger import Ledger
from proximity.main import main
from proximity.views import messages


def hook(where, stage="pre-commit"):
    cwd = os.getcwd()
    os.chdir(where)
    try:
        return main(["hook", stage])
    finally:
        os.chdir(cwd)


def inbox(where, capsys, *extra):
    capsys.readouterr()
    assert main(["inbox", "--json", "-C", str(where), *extra]) == 0
    return json.loads(capsys.readouterr().out)["messages"]


def ra_space(space, toml=""):
    files = {"f.txt": lines(30)}
    if toml:
        files[".proximity.toml"] = toml
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "f.txt", lines(30).replace("line 10\n", "A\n"))
    sp.commit(a, "a: rewrite line 10")
    sp.write(b, "f.txt", lines(30).replace("line 10\n", "B\n"))
    return sp, a, b


def test_ra_sends_steer_to_the_yielding_agent_and_hold_to_the_other(space, capsys):
    _sp, a, b = ra_space(space)
    assert hook(b) == 0  # pre-commit never blocks by default
    err = capsys.readouterr().err
    assert "RESOLUTION ADVISORY" in err
    # b's own steer is shown by the run that fired it, as the advisory (not twice)…
    assert "you must yield" in err and "STEER AWAY" not in err
    assert inbox(b, capsys) == []  # …and so it counts as delivered, exactly once
    steer = inbox(b, capsys, "--all")  # b has no commit: a has right of way
    assert [m["type"] for m in steer] == ["steer"]
    body = steer[0]["body"]
    assert body["from"] == "a" and body["branch"] == "feat/a"
    assert body["last_commit"] == "a: rewrite line 10"
    assert body["avoid"] == ["f.txt"] and "PROXIMITY_ALLOW=1" in body["override"]
    assert body["their_files"][0]["ranges"] == [[10, 10]]
    hold = inbox(a, capsys)  # a's message waited for a's next look
    assert [m["type"] for m in hold] == ["hold"]
    assert inbox(a, capsys) == []  # delivered once
    assert len(inbox(a, capsys, "--all")) == 1


def test_a_sibling_without_commits_is_not_given_the_base_commit_as_its_own(space, capsys):
    sp, a, b = ra_space(space)  # b has only uncommitted work on the base commit
    assert hook(a) == 0
    err = capsys.readouterr().err
    base_subject = git(sp.main, "log", "-1", "--format=%s").stdout.strip()
    assert "RESOLUTION ADVISORY" in err
    assert "uncommitted work only" in err and f"their last commit: {base_subject}" not in err
    hold = inbox(b, capsys, "--all") + inbox(a, capsys, "--all")
    from_b = [m for m in hold if m["body"]["from"] == "b"]
    assert from_b and all(m["body"]["last_commit"] == "" for m in from_b)
    from proximity.views.messages import render

    assert all("uncommitted work only" in render(m) for m in from_b)


def test_cooldown_suppresses_repeats_and_expires(space, capsys):
    _sp, a, b = ra_space(space)
    hook(b)
    hook(b)
    hook(a)
    assert len(inbox(b, capsys, "--all")) == 1  # same pair and type: within the cooldown


def test_no_cooldown_repeats(tmp_path, space, capsys):
    _sp, _a, b = ra_space(space, toml="cooldown_seconds = 0\ncooldown_hops = 0\n")
    hook(b)
    hook(b)
    assert len(inbox(b, capsys, "--all")) == 2


def test_traffic_transmits_both_ways_with_intents(space, capsys):
    files = {"core/db.py": "def connect():\n    return 1\n",
             "web/users.py": "from core import db\n\n\ndef get():\n    return db.connect()\n"}
    sp = space(files)
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "core/db.py", "def connect():\n    return 2\n")
    sp.write(b, "web/users.py", files["web/users.py"] + "\nX = 1\n")
    # an import alone is a few percent; b's declared intent on a's file is traffic
    assert main(["intend", "-C", str(b), "core/db.py"]) == 0
    hook(a)
    err = capsys.readouterr().err
    assert "TRAFFIC ADVISORY" in err and "TRANSMIT" not in err  # shown once, as advisory
    ma, mb = inbox(a, capsys, "--all"), inbox(b, capsys)
    assert [m["type"] for m in ma] == [m["type"] for m in mb] == ["transmit"]
    assert ma[0]["body"]["from"] == "b" and "core/db.py" in ma[0]["body"]["intents"]
    assert mb[0]["body"]["their_files"][0]["path"] == "core/db.py"


def test_notify_command_gets_valid_json(space, capsys, tmp_path):
    out = tmp_path / "notified.jsonl"
    script = tmp_path / "sink.py"
    script.write_text("import json, sys\nmsg = json.load(sys.stdin)\n"
                      f"open({str(out)!r}, 'a').write(json.dumps(msg) + '\\n')\n")
    sp, _a, b = ra_space(space)
    # a command to run comes only from the user's own git config, never a committed file
    git(sp.main, "config", "proximity.notify", f"{sys.executable} {script}")
    hook(b)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(m["type"] for m in got) == ["hold", "steer"]
    assert all(m["advisory"] == "resolution" and "risk" in m for m in got)


def test_next_hook_run_delivers_the_inbox(space, capsys):
    _sp, a, b = ra_space(space)
    hook(a)  # a's scan posts steer for b
    capsys.readouterr()
    hook(b, "post-commit")
    err = capsys.readouterr().err
    assert "STEER AWAY" in err and "avoid: f.txt" in err
    assert inbox(b, capsys) == []  # delivered exactly once


def test_advice_about_a_collision_that_ended_is_never_delivered(space, capsys):
    """a's scan posts b a STEER AWAY; before b's next hook, b's edit goes (the pair is
    judged clear by a recorded scan): the advice is withdrawn, not delivered late (b read
    "STEER AWAY from 'a'" after the collision was over). Kept in the history."""
    sp, a, b = ra_space(space)
    hook(a)  # a's scan posts steer for b
    posted = inbox(b, capsys, "--all")  # (the history: read, not taken)
    assert [(m["type"], m["delivered"]) for m in posted] == [("steer", None)]
    sp.write(b, "f.txt", lines(30))  # b's edit goes: the pair is clear
    hook(a)
    capsys.readouterr()
    hook(b, "post-commit")
    assert "STEER AWAY" not in capsys.readouterr().err
    assert inbox(b, capsys) == []
    assert [m["type"] for m in inbox(b, capsys, "--all")] == ["steer"]


def test_inbox_survives_concurrent_writers_and_readers(tmp_path):
    ecm = str(tmp_path / "ecm")
    Ledger(ecm).close()
    post = ("import sys\nfrom proximity.ledger import Ledger\nled = Ledger(sys.argv[1])\n"
            "for i in range(10):\n"
            "    led.post('r', 's' + sys.argv[2], 'transmit', {'i': i}, 0, 0, 0)\n")
    procs = [subprocess.Popen([sys.executable, "-c", post, ecm, str(k)]) for k in range(16)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    take = ("import sys, json\nfrom proximity.ledger import Ledger\nled = Ledger(sys.argv[1])\n"
            "got = []\nfor _ in range(20):\n    got += [m['id'] for m in led.take('r')]\n"
            "print(json.dumps(got))\n")
    readers = [subprocess.Popen([sys.executable, "-c", take, ecm], stdout=subprocess.PIPE)
               for _ in range(4)]
    ids = []
    for r in readers:
        out, _ = r.communicate(timeout=120)
        ids += json.loads(out)
    assert sorted(ids) == list(range(1, 161))  # every message, each exactly once
    led = Ledger(ecm)
    try:
        assert led.integrity() == "ok"
    finally:
        led.close()


def test_messages_of_a_symbol_collision_name_the_symbol(space, capsys):
    lib = "def legacy():\n    return 1\n\n\ndef other():\n    return 2\n"
    sp = space({"lib.py": lib, "cli.py": "print(0)\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", "def other():\n    return 2\n")  # legacy removed
    sp.commit(a, "a: drop legacy")
    sp.write(b, "cli.py", "from lib import legacy\n\nprint(legacy())\n")
    hook(b)
    capsys.readouterr()
    msgs = inbox(a, capsys, "--all") + inbox(b, capsys, "--all")
    assert msgs and all(any("legacy" in s for s in m["body"]["symbols"]) for m in msgs)
    from proximity.views.messages import render

    assert all("  symbol: " in render(m) and "legacy" in render(m) for m in msgs)


def test_message_hunks_made_in_process_are_gits(tmp_path):
    """The hunks a message or an advisory shows come from libgit2 in the service; they
    are git's own `diff -U0` (modified, added, deleted, binary, a path outside the asked
    ones left out), and from git itself when libgit2 cannot read an object."""
    import random

    from conftest import init_repo

    from proximity import gitio
    from proximity.analysis import hunks

    rnd = random.Random(7)
    files = {f"d{i % 3}/f{i}.py": "".join(f"def f{j}():\n    return {j}\n\n" for j in range(40))
             for i in range(6)}
    path = init_repo(tmp_path / "r", {**files, "gone.txt": "x\n" * 5, "blob.bin": "a\0b"})
    old = git(path, "rev-parse", "HEAD").stdout.strip()
    for rel, text in files.items():
        rows = text.splitlines(keepends=True)
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(rows))
            op = rnd.choice(["edit", "insert", "drop"])
            if op == "edit":
                rows[at] = f"    return {rnd.random()}\n"
            elif op == "insert":
                rows[at:at] = [f"def g{at}():\n", "    pass\n", "\n"]
            else:
                del rows[at:at + rnd.randint(1, 6)]
        (path / rel).write_text("".join(rows))
    (path / "gone.txt").unlink()
    (path / "new.txt").write_text("one\ntwo\n")
    (path / "blob.bin").write_bytes(b"c\0d")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "edits")
    new = git(path, "rev-parse", "HEAD^{tree}").stdout.strip()
    repo = gitio.Repo(str(path))
    every = [*files, "gone.txt", "new.txt", "blob.bin"]
    for paths in (every, every[:3], ["new.txt", "gone.txt"], ["nothing.txt"]):
        want = hunks.parse(git(path, *gitio.DIFF_ARGS, old, new, "--", *paths).stdout)
        assert hunks.parse(repo.tree_diff(old, new, paths)) == want, paths
    assert hunks.parse(repo.tree_diff(old, new, ["new.txt"]))["new.txt"].new_file
    with pytest.raises(FatalError, match="bad object"):  # unreadable: git says why
        repo.tree_diff(old, "0" * 40, ["new.txt"])


def test_a_move_is_named_as_a_move_with_only_the_lines_it_changed(space, capsys):
    big = lines(200)
    sp = space({"f.txt": big})
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "f.txt", "g.txt")
    sp.write(a, "g.txt", big.replace("line 10\n", "A\n"))
    sp.commit(a, "a: move f.txt to g.txt and rewrite line 10")
    sp.write(b, "f.txt", big.replace("line 10\n", "B\n"))
    assert hook(b) == 0
    capsys.readouterr()
    (msg,) = inbox(b, capsys, "--all")
    hunks = [f.get("hunk", "") for f in msg["body"]["their_files"]]
    shown = "\n".join(hunks)
    assert "moved: f.txt -> g.txt" in shown, msg["body"]["their_files"]
    assert "+A" in shown and "more diff lines" not in shown and shown.count("\n+") <= 3


def test_a_message_read_later_dates_what_it_says(space, capsys):

    msg = {"type": "transmit", "created": 1_000_000.0,
           "body": {"type": "transmit", "from": "a", "branch": "feat/a", "risk": 0.5,
                    "last_commit": "", "their_files": []}}
    later = messages.render({**msg, "created": __import__("time").time() - 600})
    assert "had not committed since your common base when this was sent, 10 min ago" in later
    fresh = messages.render({**msg, "created": __import__("time").time()})
    assert "had not committed since your common base: uncommitted" in fresh
