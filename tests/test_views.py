"""The control pane (rendered into a string console) and the HTML view in a real
headless Chromium."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import shutil
import subprocess

import pytest

from proximity.commands import demo, watch
from proximity.main import main
from proximity.snapshot import workspace
from proximity.views import tables, timeline

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--virtual-time-budget=3000"]


@pytest.fixture
def airspace(tmp_path):
    return demo.build(str(tmp_path / "demo"))


def test_watch_frame_fits_80_columns(airspace):
    ctx = workspace.open_context(airspace)
    try:
        frame = watch.render(ctx, 80)
        frame2 = watch.render(ctx, 80)  # a second frame has risk history to draw
    finally:
        ctx.close()
    buf = io.StringIO()
    con = tables.console(file=buf, width=80)
    con.print(frame)
    con.print(frame2)
    text = buf.getvalue()
    assert "\x1b[" not in text  # a StringIO is not a terminal: plain text
    assert all(len(line) <= 80 for line in text.splitlines())
    for name in ("alice", "bob", "carol", "RA bob", "TA"):
        assert name in text
    # carol's new call of find_user no longer binds after alice's change: an RA at a
    # distance; carol's intent on bob's file is traffic
    assert re.search(r"alice~carol .* RA ", text)
    assert re.search(r"bob~carol .* TA ", text)
    assert "alice~bob" in text


def test_watch_once_cli(airspace, capsys):
    assert main(["watch", "--once", "-C", airspace]) == 0
    assert "proximity ·" in capsys.readouterr().out


def test_view_json_has_stable_coordinates(airspace, capsys):
    assert main(["view", "--json", "-C", airspace]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["view", "--json", "-C", airspace]) == 0
    two = json.loads(capsys.readouterr().out)
    assert one["files"] == two["files"] and one["agents"] == two["agents"]
    pos = {a["id"]: a["position"] for a in one["agents"]}
    assert pos["main"] is None and all(pos[k] for k in ("alice", "bob", "carol"))
    assert pos["alice"] != pos["bob"]  # same file, still distinguishable
    assert {(link["a"], link["b"]) for link in one["links"]} >= {("alice", "bob")}


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> str:
    """The browser, else a skip (a failure in CI, where tests/run.sh installs it)."""
    exe = chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: tests/run.sh installs it from the OS packages")
        pytest.skip("Chromium is not installed (tests/run.sh installs it)")
    return exe


@pytest.mark.browser
def test_view_in_headless_chromium(airspace, tmp_path):
    exe = chromium_or_skip()
    out = tmp_path / "view.html"
    assert main(["view", "--out", str(out), "-C", airspace]) == 0
    html = out.read_text()
    assert "http://" not in html and "https://" not in html  # self-contained, offline
    profile = tmp_path / "profile"
    dom = subprocess.run([exe, *CHROME_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          out.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="state"[^>]*>(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    state = json.loads(m.group(1))
    assert state["ready"] is True and state["errors"] == []
    assert state["agents"] == 3  # alice, bob, carol (main has no changes to place)
    assert state["links"] == 3
    assert "Uncaught" not in dom.stderr
    # the pair table: two RAs (alice~bob, alice~carol) and one traffic pair (bob~carol)
    assert dom.stdout.count('<td class="resolution">') == 2
    assert dom.stdout.count('<td class="traffic">') == 1
    shot = tmp_path / "view.png"
    subprocess.run([exe, *CHROME_FLAGS, f"--user-data-dir={profile}", "--window-size=1200,700",
                    f"--screenshot={shot}", out.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


@pytest.mark.parametrize("parent_ignores", [False, True])
def test_watch_quits_cleanly_on_ctrl_c(airspace, parent_ignores):
    """Ctrl-C ends the pane, also when its parent started it with SIGINT ignored (a
    script's background job passes that on)."""
    import signal
    import sys
    import time

    def ignoring() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, "-m", "proximity", "watch", "--interval", "0.5",
                             "-C", airspace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": "80"},
                            preexec_fn=ignoring if parent_ignores else None)
    assert proc.stdout is not None
    seen = b""
    end = time.monotonic() + 60  # interrupted once its first frame is out, however slow
    while b"alice~bob" not in seen and time.monotonic() < end and proc.poll() is None:
        seen += proc.stdout.readline()
    assert b"alice~bob" in seen and proc.poll() is None, seen[-400:]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err


def test_watch_without_a_terminal_prints_each_new_frame_as_plain_text(airspace):
    """Piped (a log, `| less`, an agent's tool) there is no screen to redraw: each frame is
    printed in turn while it runs, plain, and one like the last is not printed again."""
    import signal
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "proximity", "watch", "--interval", "0.3",
                             "-C", airspace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": "80"})
    assert proc.stdout is not None
    seen = ""
    end = time.monotonic() + 60
    while "alice~bob" not in seen and time.monotonic() < end:
        seen += proc.stdout.readline().decode()
    assert "alice~bob" in seen and proc.poll() is None  # shown while it runs
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=30)
    text = seen + rest.decode()
    assert proc.returncode == 0, err.decode()
    assert "\x1b[" not in text and "proximity watch" in text
    # a frame like the one before it (apart from the scan's time) is not printed again
    shown = [re.sub(r"scan \d+ ms", "", f) for f in re.split(r".*proximity watch.*\n", text)]
    frames = shown[1:]  # (before the first rule: nothing)
    assert frames and all(x != y for x, y in itertools.pairwise(frames))


@pytest.fixture(scope="module")
def swarm_recording(tmp_path_factory):
    """One run of `demo --swarm` (it commits through real hooks: some seconds) for the
    tests that read its recording."""
    root = tmp_path_factory.mktemp("swarm")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["demo", "--swarm", "--json", "--dir", str(root)]) == 0
    out = root / "view.html"
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>',
                     out.read_text(), re.S)
    assert blob
    return out, json.loads(blob.group(1).replace("<\\/", "</")), json.loads(said.getvalue())


def test_demo_swarm_records_a_timeline_with_an_ra_and_a_steer_away(swarm_recording):
    _, data, _ = swarm_recording
    frames = data["timeline"]
    assert 1 < len(frames) <= 500
    ras = [i for i, f in enumerate(frames)
           if any(p["advisory"] == "resolution" for p in f["pairs"])]
    assert ras, "no frame with a resolution advisory"
    first = frames[ras[0]]
    assert "RA carol~dave" in first["events"] and "steer → dave from carol" in first["events"]
    assert [p["yielding"] for p in first["pairs"] if p["advisory"] == "resolution"] == ["dave"]
    # dave steers away: a later frame clears that pair, and dave sits elsewhere then
    # (carol's later broken call to alice's function stays an RA to the end: facts do
    # not fade while nothing changes)
    pair_ras = [i for i in ras
                if any(p["advisory"] == "resolution" and {p["a"], p["b"]} == {"carol", "dave"}
                       for p in frames[i]["pairs"])]
    later = [f for f in frames[pair_ras[-1] + 1:] if "clear carol~dave" in f["events"]]
    assert any(
        p["advisory"] == "resolution" and {p["a"], p["b"]} == {"alice", "carol"}
        for p in frames[-1]["pairs"])
    assert later
    where = {f: {a["id"]: a["position"] for a in g["agents"]}["dave"]
             for f, g in (("ra", first), ("after", later[0]))}
    assert where["ra"] and where["after"] and where["ra"] != where["after"]


def test_demo_swarm_has_a_person_editing_through_the_editors_server(swarm_recording):
    """erin edits in her editor (a real `proximity lsp` session): the Error it shows on
    the line bob changed makes her type elsewhere; bob's check is denied by her lines
    while they are unsaved; her save and commit are in the recording."""
    _, data, said = swarm_recording
    steps = said["steps"]
    typed = next(s for s in steps if "erin types lib/util.py:5" in s)
    assert "the editor shows an error from bob" in typed and typed.endswith("unsaved")
    after = steps[steps.index(typed) + 1]
    assert "bob asks check lib/util.py:1" in after and "deny (erin's work there)" in after
    assert any("erin saves lib/util.py" in s and s.endswith("commits") for s in steps)
    frames = data["timeline"]
    assert "erin" in {a["id"] for a in frames[-1]["agents"]}
    moved = [a["position"] for f in frames for a in f["agents"] if a["id"] == "erin"]
    assert moved[0] != moved[-1]  # her commit moved her in the airspace


def test_json_has_no_timeline_without_history_and_with_no_timeline(airspace, capsys):
    assert main(["view", "--json", "--no-timeline", "-C", airspace]) == 0
    assert json.loads(capsys.readouterr().out)["timeline"] == []


def _state(exe: str, url: str, profile) -> dict:
    dom = subprocess.run([exe, *CHROME_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="state"[^>]*>(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    state = json.loads(m.group(1).replace("&gt;", ">").replace("&lt;", "<")
                       .replace("&amp;", "&"))
    assert state["ready"] is True and state["errors"] == []
    return state


@pytest.mark.browser
def test_timeline_moments_render_differently_in_headless_chromium(swarm_recording, tmp_path):
    exe = chromium_or_skip()
    out, data, _ = swarm_recording
    frames = data["timeline"]
    assert "http://" not in out.read_text() and "https://" not in out.read_text()
    ra = next(i for i, f in enumerate(frames)
              if any(p["advisory"] == "resolution" for p in f["pairs"]))
    calm = ra - 3  # before dave touched save
    at_ra = _state(exe, f"{out.as_uri()}#t={ra}", tmp_path / "p1")
    before = _state(exe, f"{out.as_uri()}#t={calm}", tmp_path / "p2")
    now = _state(exe, out.as_uri(), tmp_path / "p3")
    assert (at_ra["frame"], before["frame"], now["frame"]) == (ra, calm, len(frames))
    assert now["now"] is True and at_ra["now"] is False
    # the agents moved between the two moments, and the advisories differ
    assert at_ra["positions"] != before["positions"]
    assert at_ra["advisories"]["carol~dave"] == "resolution"
    assert before["advisories"].get("carol~dave", "clear") == "clear"
    assert at_ra["yielding"] == {"carol~dave": "dave"}
    # the events list names what happened at each moment
    assert "RA carol~dave" in at_ra["events"]
    assert at_ra["events"] != before["events"] and before["events"]


def test_a_long_history_is_thinned_evenly_and_keeps_every_event():
    seq = [{"time": i, "events": [f"e{i}"]} for i in range(2000)]
    kept = timeline.thin(seq, most=500)
    assert len(kept) == 500 and kept[0]["time"] == 0 and kept[-1]["time"] == 1999
    assert all(len(f["events"]) <= timeline.MAX_NOTES + 1 for f in kept)
    assert kept[1]["events"][:3] == ["e1", "e2", "e3"]  # a dropped frame's events move on


def test_status_and_watch_say_a_worktree_is_mid_rebase(space, capsys, monkeypatch):
    """A worktree stopped in a rebase blocks nobody; status and watch say why it is so (they
    showed only "(detached)", as for a worktree on no branch at all)."""
    from conftest import git, lines

    sp = space({"app.txt": lines(10)})
    b = sp.wt("b")
    sp.write(sp.main, "app.txt", lines(10).replace("line 3\n", "line 3 main\n"))
    sp.commit(sp.main, "main's line 3")
    sp.write(b, "app.txt", lines(10).replace("line 3\n", "line 3 b\n"))
    sp.commit(b, "b's line 3")
    stopped = git(b, "rebase", "main", check=False)
    assert stopped.returncode != 0  # stopped on the conflict, in progress
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "200")  # (a table cell of 80 columns wraps the words)
    main(["status", "-C", str(sp.main)])
    out = capsys.readouterr().out
    assert "(detached) (rebase in progress)" in out, out
    main(["watch", "--once", "-C", str(sp.main)])
    assert "(rebase in progress)" in capsys.readouterr().out
