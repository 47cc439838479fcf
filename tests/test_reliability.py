"""Issues 3 and 6: the ledger under load and faults; hooks never break git."""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import git, init_repo, lines
from hypothesis import given, settings
from hypothesis import strategies as st

from proximity import config
from proximity.errors import ConfigError, LedgerError
from proximity.ledger import Ledger

PY = sys.executable


def many_worktrees(tmp_path: Path, n: int) -> tuple[Path, list[Path]]:
    main = init_repo(tmp_path / "main", {"f.txt": lines(50)})
    wts = []
    for i in range(n):
        wt = tmp_path / f"w{i:02}"
        git(main, "worktree", "add", "-q", "-b", f"b{i}", str(wt))
        (wt / "f.txt").write_text(lines(50).replace(f"line {i + 1}\n", f"w{i}\n"))
        wts.append(wt)
    return main, wts


def test_sixteen_simultaneous_snapshots(tmp_path):
    main, wts = many_worktrees(tmp_path, 16)
    procs = [subprocess.Popen([PY, "-m", "proximity", "snapshot", "-C", str(w)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in wts]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    led = Ledger(str(main / ".git" / "ecm"), create=False)
    try:
        assert led.integrity() == "ok"
        streams = led.streams()
        assert len(streams) == 16
        assert len(led.events(None, 1000)) == 16
        assert {c for s in led.clocks().values() for c in s} == set(streams)
    finally:
        led.close()


def test_thirty_two_processes_hammering_snapshots_and_scans(tmp_path):
    main, wts = many_worktrees(tmp_path, 8)
    script = ("import sys\nfrom proximity.main import main\n"
              "for _ in range(3):\n"
              "    assert main(['snapshot', '-C', sys.argv[1]]) == 0\n"
              "assert main(['scan', '--json', '-C', sys.argv[1]]) == 0\n")
    procs = [subprocess.Popen([PY, "-c", script, str(wts[i % 8])], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for i in range(32)]
    for p in procs:
        _, err = p.communicate(timeout=170)
        assert p.returncode == 0, err.decode()
    led = Ledger(str(main / ".git" / "ecm"), create=False)
    try:
        assert led.integrity() == "ok"
        assert len(led.events(None, 10_000)) == 96  # nothing lost
        for stream, clock in led.clocks().items():
            assert clock[stream] == 12  # 4 processes x 3 snapshots, each a distinct tick
    finally:
        led.close()


def test_sigkill_mid_write_leaves_a_usable_ledger(tmp_path):
    ecm = tmp_path / "ecm"
    script = (
        "import sys\nfrom proximity.ledger import Ledger\nled = Ledger(sys.argv[1])\n"
        "print('ready', flush=True)\ni = 0\n"
        "while True:\n"
        "    i += 1\n"
        "    led.record('s', 'commit', path='/x', head=None, branch=None, snapshot=None,"
        " tree=None, files={f'f{j}': 'x' * 40 for j in range(200)})\n")
    p = subprocess.Popen([PY, "-c", script, str(ecm)], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
    time.sleep(0.8)
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    led = Ledger(str(ecm), create=False)
    try:
        assert led.integrity() == "ok"
        n = len(led.events("s", 100_000))
        assert n > 0
        ev = led.record("s", "commit", path="/x", head=None, branch=None, snapshot=None,
                        tree=None, files={})
        assert ev.clock["s"] == n + 1  # the clock continues from the last whole event
    finally:
        led.close()


def test_future_schema_is_refused_and_left_untouched(tmp_path):
    ecm = tmp_path / "ecm"
    Ledger(str(ecm)).close()
    db = sqlite3.connect(ecm / "ledger.sqlite3")
    db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.commit()
    db.close()
    before = (ecm / "ledger.sqlite3").read_bytes()
    try:
        Ledger(str(ecm))
        raise AssertionError("a newer schema must be refused")
    except LedgerError as e:
        assert "newer" in str(e) and "99" in str(e)
    assert (ecm / "ledger.sqlite3").read_bytes() == before


def test_corrupt_ledger_is_a_clear_error(tmp_path, capsys):
    from proximity.main import main

    main_dir, _ = many_worktrees(tmp_path, 1)
    ecm = main_dir / ".git" / "ecm"
    ecm.mkdir()
    (ecm / "ledger.sqlite3").write_bytes(b"\0garbage" * 1000)
    assert main(["ledger", "-C", str(main_dir)]) == 4
    err = capsys.readouterr().err
    assert "ledger" in err and "mv " in err and "Traceback" not in err


def _commit_in(wt: Path, **kw):
    (wt / "new.txt").write_text("n\n")
    git(wt, "add", "new.txt")
    return subprocess.run(["git", "commit", "-qm", "x"], cwd=wt, capture_output=True,
                          text=True, **kw)


def test_unwritable_ledger_location_fails_open(tmp_path):
    main_dir, wts = many_worktrees(tmp_path, 1)
    subprocess.run([PY, "-m", "proximity", "install"], cwd=main_dir, check=True)
    (main_dir / ".git" / "ecm").write_text("a file where the ledger directory should be")
    r = _commit_in(wts[0])
    assert r.returncode == 0
    assert "cannot create the ledger" in r.stderr


def test_disk_full_fails_open(tmp_path):
    main_dir, wts = many_worktrees(tmp_path, 1)
    subprocess.run([PY, "-m", "proximity", "install"], cwd=main_dir, check=True)
    assert _commit_in(wts[0]).returncode == 0  # ledger exists now

    def tiny_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    (wts[0] / "big.txt").write_text("x" * 100_000)  # written before the limit applies
    git(wts[0], "add", "big.txt")
    r = subprocess.run(["git", "commit", "-qm", "full"], cwd=wts[0], capture_output=True,
                       text=True, preexec_fn=tiny_disk)
    assert "proximity: warning" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_deleted_worktree_is_retired_and_gc_drops_its_ref(tmp_path):
    import shutil

    from proximity.main import main

    main_dir, wts = many_worktrees(tmp_path, 2)
    for w in wts:
        assert main(["snapshot", "-C", str(w)]) == 0
    store = str(main_dir / ".git" / "ecm" / "store")  # snapshots are pinned there
    refs = git(main_dir, "--git-dir", store, "for-each-ref", "refs/ecm/").stdout
    assert "w00" in refs and "w01" in refs
    assert git(main_dir, "for-each-ref", "refs/ecm/").stdout == ""  # never the repo's
    shutil.rmtree(wts[1])
    assert main(["gc", "--json", "-C", str(main_dir)]) == 0
    assert "w01" not in git(main_dir, "--git-dir", store, "for-each-ref", "refs/ecm/").stdout
    led = Ledger(str(main_dir / ".git" / "ecm"), create=False)
    try:
        assert led.streams()["w01"]["retired"] is not None
    finally:
        led.close()


def test_clock_skew_does_not_change_decisions(tmp_path, capsys):
    """Right-of-way comes from the ledger's order of events, not from anyone's clock."""
    from proximity.main import main

    _main_dir, wts = many_worktrees(tmp_path, 2)
    (wts[0] / "f.txt").write_text(lines(50).replace("line 30\n", "A\n"))
    (wts[1] / "f.txt").write_text(lines(50).replace("line 30\n", "B\n"))
    assert main(["snapshot", "-C", str(wts[0])]) == 0
    skew = "import time, sys; time.time = lambda: 10.0; from proximity.main import main; " \
           "sys.exit(main(['snapshot', '-C', sys.argv[1]]))"
    subprocess.run([PY, "-c", skew, str(wts[1])], check=True)  # a clock stuck in 1970
    capsys.readouterr()
    outs = []
    for w in wts:
        assert main(["scan", "--json", "-C", str(w)]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    ys = {next(p for p in o["pairs"] if {p["a"], p["b"]} == {"w00", "w01"})["yielding"]
          for o in outs}
    assert ys == {"w01"}  # w00 recorded first, whatever w01's clock said


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12),
                       st.one_of(st.integers(), st.floats(allow_nan=False), st.text(),
                                 st.booleans(), st.lists(st.integers()), st.none(),
                                 st.dictionaries(st.text(max_size=5), st.floats(0, 2)))))
def test_config_parser_fuzz(table):
    try:
        cfg = config.from_table(table)
    except ConfigError as e:
        assert str(e)
    else:
        assert 0 < cfg.tau_ta <= cfg.tau_ra <= 1


paths = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(paths, st.text("0123456789abcdef", min_size=40, max_size=40),
                       max_size=20), st.text(max_size=30))
def test_ledger_rows_fuzz(tmp_path_factory, files, kind):
    ecm = tmp_path_factory.mktemp("fuzz")
    led = Ledger(str(ecm))
    try:
        ev = led.record("s\n☃", kind or "k", path="/p", head=None, branch="ü", snapshot=None,
                        tree=None, files=files)
        back = led.events("s\n☃", 1)[0]
        assert back.files == files and back.kind == (kind or "k") and back.clock == ev.clock
        assert led.integrity() == "ok"
    finally:
        led.close()


def test_corrupt_cache_row_does_not_crash_scan(tmp_path, capsys):
    from proximity.main import main

    main_dir, wts = many_worktrees(tmp_path, 2)
    assert main(["snapshot", "-C", str(wts[0])]) == 0
    db = sqlite3.connect(main_dir / ".git" / "ecm" / "ledger.sqlite3")
    db.execute("INSERT INTO cache VALUES ('imports', 'deadbeef', '[1, 2')")  # half a row
    db.commit()
    db.close()
    assert main(["scan", "-C", str(main_dir)]) == 0


def test_retention_keeps_the_newest_events_and_the_first_seq(tmp_path):
    ecm = str(tmp_path / "ecm")
    led = Ledger(ecm)
    try:
        for _ in range(30):
            led.record("s", "commit", path="/p", head=None, branch=None, snapshot=None,
                       tree=None, files={})
        first = led.streams()["s"]["first_seq"]
        stats = led.gc(10, live={"s"})
        assert stats["events"] == 20 and len(led.events("s", 100)) == 10
        assert led.streams()["s"]["first_seq"] == first  # right-of-way age survives gc
        assert led.last_event("s").clock["s"] == 30  # the clock keeps counting
        assert led.integrity() == "ok"
    finally:
        led.close()


def test_scan_without_a_usable_ledger_still_answers_and_says_why(tmp_path, capsys):
    from proximity.main import main

    main_dir, _wts = many_worktrees(tmp_path, 2)
    (main_dir / ".git" / "ecm").write_text("not a directory")
    assert main(["scan", "--json", "-C", str(main_dir)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["pairs"]
    assert "cannot create the ledger" in captured.err


def test_gc_drops_a_large_pair_cache(tmp_path, monkeypatch):
    from proximity.ledger import events as ledger_mod  # where gc reads it

    monkeypatch.setattr(ledger_mod, "PAIR_CACHE_MAX", 5)
    led = Ledger(str(tmp_path / "ecm"))
    try:
        pair, imports = led.cache("pair"), led.cache("imports")
        for i in range(8):
            pair[f"conflict:{i}"] = []
            imports[f"i1:{i}"] = []
        led.save_cache("pair", pair)
        led.save_cache("imports", imports)
        assert led.gc(100, live=set())["cache"] == 8
        assert led.cache("pair", lazy=False) == {}
        assert len(led.cache("imports", lazy=False)) == 8  # per-blob results are kept
    finally:
        led.close()
