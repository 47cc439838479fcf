"""The resident airspace service (real worktrees, real inotify, real processes)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Space, git, lines, live_objects

from proximity import layout
from proximity.commands import service as service_cmd
from proximity.ledger import Ledger
from proximity.service import client
from proximity.service.report import service_state

BASE = {"f.txt": lines(60), "g.txt": lines(40),
        "pkg/__init__.py": "",
        "pkg/core.py": "def compute(x):\n    return x + 1\n\n\ndef other():\n    return 2\n",
        "pkg/use.py": "from pkg.core import compute\n\n\ndef run():\n    return compute(3)\n"}


def wait_for(cond: Callable[[], object], timeout: float = 15.0, step: float = 0.05) -> object:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s")


def pid_of(common: str) -> int | None:
    st = service_state(common).get("status")
    return int(st["pid"]) if isinstance(st, dict) else None


def edit(path: Path, lo: int, hi: int, tag: str) -> None:
    text = path.read_text().splitlines(keepends=True)
    for i in range(lo - 1, hi):
        text[i] = text[i].rstrip("\n") + f" {tag}\n"
    path.write_text("".join(text))


def hook_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Turns the service on (short idle timeout, so a leaked one dies soon anyway) and
    shuts down, at teardown, every service of the common dirs the test registers."""
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "60")
    commons: list[str] = []
    yield commons
    for common in commons:
        pid = pid_of(common)
        if not service_cmd.stop(common, timeout=10.0) and pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        recorded = service_state(common).get("recorded")
        if isinstance(recorded, dict):  # one that never answered: kill it by its record
            with contextlib.suppress(OSError):
                os.kill(int(recorded["pid"]), signal.SIGKILL)
        assert not client._alive(common) or wait_for(lambda c=common: not client._alive(c), 5)


def three(space: Callable[[dict[str, str]], Space], services: list[str]
          ) -> tuple[Space, Path, Path, str]:
    sp = space(BASE)
    a, b = sp.wt("a"), sp.wt("b")
    common = os.path.realpath(sp.main / ".git")
    services.append(common)
    return sp, a, b, common


def test_saves_raise_the_advisory_and_send_messages_without_git(space, services, tmp_path):
    sp, a, b, common = three(space, services)
    sink = tmp_path / "notified.jsonl"
    script = tmp_path / "sink.py"
    script.write_text("import json, sys\nmsg = json.load(sys.stdin)\n"
                      f"open({str(sink)!r}, 'a').write(json.dumps(msg) + '\\n')\n")
    git(sp.main, "config", "proximity.notify", f"{sys.executable} {script}")
    assert service_cmd.start(common)
    edit(a / "f.txt", 10, 20, "from a")  # saves only: no git command from here on
    edit(b / "f.txt", 12, 18, "from b")

    def inbox() -> dict[str, list[str]]:
        led = Ledger(os.path.join(common, "ecm"))
        try:
            return {w: sorted(m["type"] for m in led.messages(w)) for w in ("a", "b")}
        finally:
            led.close()

    got = wait_for(lambda: (lambda x: x if x["a"] and x["b"] else None)(inbox()))
    assert got == {"a": ["hold"], "b": ["steer"]} or got == {"a": ["steer"], "b": ["hold"]}
    sent = wait_for(lambda: sink.exists() and len(sink.read_text().splitlines()) >= 2)
    assert sent
    notes = [json.loads(x) for x in sink.read_text().splitlines()]
    assert sorted(n["type"] for n in notes) == ["hold", "steer"]
    assert all(n["advisory"] == "resolution" for n in notes)
    wait_for(lambda: service_state(common)["status"]["messages_sent"] == 2)
    assert service_state(common)["status"]["file_events"] >= 2
    # the risk samples for closure rate were recorded as the saves happened
    led = Ledger(os.path.join(common, "ecm"))
    try:
        assert led.history("a", "b")
    finally:
        led.close()


def test_ignored_and_git_internal_changes_do_not_rescan(space, services):
    sp, a, _b, common = three(space, services)
    sp.write(a, ".gitignore", "build/\n")
    assert service_cmd.start(common)
    scans = service_state(common)["status"]["scans"]
    sp.write(a, "build/out.o", "x")
    (a / "build" / "more.o").write_text("y")
    git(sp.main, "update-index", "--refresh", check=False)  # git's own files change
    sp.write(sp.main, ".git/proximity-probe", "git internals")
    time.sleep(1.0)
    st = service_state(common)["status"]
    assert st["file_events"] >= 1
    assert st["scans"] == scans  # only ignored files changed: nothing to re-snapshot
    sp.write(a, "new.txt", "z")
    wait_for(lambda: service_state(common)["status"]["scans"] > scans)


def same_pairs(x: dict, y: dict) -> None:  # type: ignore[type-arg]
    keys = ("a", "b", "risk", "advisory", "channels", "yielding", "findings", "concurrent")
    assert [{k: p[k] for k in keys} for p in x["pairs"]] == \
        [{k: p[k] for k in keys} for p in y["pairs"]]
    assert [(g["id"], g["tree"], g["head"]) for g in x["agents"]] == \
        [(g["id"], g["tree"], g["head"]) for g in y["agents"]]


def in_process_scan(where: Path) -> dict:  # type: ignore[type-arg]
    out = subprocess.run([sys.executable, "-m", "proximity", "scan", "--json"], cwd=where,
                         env=hook_env(PROXIMITY_SERVICE="0"), capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def test_service_and_in_process_give_identical_pairs(space, services):
    sp, a, b, common = three(space, services)
    c = sp.wt("c")
    assert service_cmd.start(common)
    states = [
        lambda: edit(a / "f.txt", 5, 15, "a"),  # overlap + conflict with b below
        lambda: edit(b / "f.txt", 10, 12, "b"),
        lambda: sp.write(c, "pkg/core.py", "def compute(x):\n    return x * 2\n\n\n"
                         "def other():\n    return 2\n"),  # symbol / dependency
        lambda: sp.write(a, "pkg/use.py", "from pkg.core import compute\n\n\ndef run():\n"
                         "    return compute(4)\n"),
        lambda: sp.commit(b, "b commits"),
        lambda: edit(c / "g.txt", 1, 3, "c"),
    ]
    for make in states:
        make()
        time.sleep(0.4)  # let the watcher see it (the scan op re-reads stale ones anyway)
        svc = client.scan(common, None, budget=30.0)
        assert svc is not None
        same_pairs(svc, in_process_scan(sp.main))
    # the committing worktree's state from an index, as git's pre-commit hook sees it
    # (inside the git dir, where git keeps a commit's index: the service reads no index
    # from elsewhere)
    idx = str(Path(common) / "partial.idx")
    git(a, "read-tree", "HEAD", env={"GIT_INDEX_FILE": idx})
    git(a, "add", "f.txt", env={"GIT_INDEX_FILE": idx})
    svc = client.scan(common, "a", index=idx, budget=30.0)
    assert svc is not None
    code = ("import json, sys\nfrom proximity.snapshot import workspace\n"
            "from proximity.tcas import pipeline\nfrom proximity.views import report\n"
            "from proximity.snapshot.agents import live_agents\n"
            "ctx = workspace.open_context('.')\n"
            "ag, ret = live_agents(ctx.repo, {'a': sys.argv[1]})\n"
            "r = pipeline.run_scan(ctx, focus='a', agents=ag, retired=ret, record=False)\n"
            "print(json.dumps(report.scan_json(r)))\n")
    mine = json.loads(subprocess.run([sys.executable, "-c", code, idx], cwd=a,
                                     env=hook_env(PROXIMITY_SERVICE="0"), capture_output=True,
                                     text=True, check=True).stdout)
    same_pairs(svc, mine)
    assert any(p["advisory"] != "clear" for p in svc["pairs"])


def test_the_main_checkouts_untracked_attributes_never_decide_a_pair(space, services,
                                                                     tmp_path):
    """The service runs git's merge of every pair from one worktree (the main checkout):
    an untracked `.gitattributes` there (`merge=union`, built into git; `merge=x`, a driver
    the repository's config defines) decided every pair it judged. Work on f.txt and g.txt
    of a and b conflicts; the pair stays a conflict on both files, and the driver never
    runs."""
    sp, a, b, common = three(space, services)
    mark = tmp_path / "driver-ran"
    git(sp.main, "config", "merge.x.driver", f"touch '{mark}'")
    sp.write(sp.main, ".gitattributes", "f.txt merge=union\ng.txt merge=x\n")
    for wt, tag in ((a, "a"), (b, "b")):
        edit(wt / "f.txt", 10, 12, tag)
        edit(wt / "g.txt", 5, 6, tag)
    assert service_cmd.start(common)
    svc = client.scan(common, None, budget=30.0)
    assert svc is not None
    assert not mark.exists()
    (p,) = [p for p in svc["pairs"] if {p["a"], p["b"]} == {"a", "b"}]
    assert p["channels"]["conflict"] == 1.0 and p["advisory"] == "resolution", p
    assert sorted(f["path_a"] for f in p["findings"] if f["channel"] == "conflict") \
        == ["f.txt", "g.txt"], p["findings"]


def commit_with_hooks(where: Path, msg: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", msg], cwd=where, env=hook_env(),
                          capture_output=True, text=True, timeout=120)


def install(sp: Space) -> None:
    subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=sp.main, check=True,
                   env=hook_env(), capture_output=True)


def test_hooks_ask_the_service_and_fall_back_when_it_is_killed(space, services):
    sp, a, b, common = three(space, services)
    install(sp)
    edit(a / "f.txt", 10, 20, "a")
    edit(b / "f.txt", 12, 18, "b")
    assert service_cmd.start(common)
    before = service_state(common)["status"]["requests"]
    git(a, "add", "f.txt")
    done = commit_with_hooks(a, "a via the service")
    assert done.returncode == 0, done.stderr
    assert "RESOLUTION ADVISORY with worktree 'b'" in done.stderr
    assert service_state(common)["status"]["requests"] > before
    # SIGKILL while it works on a scan: its socket is left behind, stale
    pid = pid_of(common)
    assert pid
    slow = threading.Thread(target=client.scan, args=(common, None), kwargs={"budget": 5.0})
    slow.start()
    time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    slow.join()
    wait_for(lambda: not client._alive(common))
    assert os.path.exists(layout.socket_path(common))
    edit(b / "g.txt", 1, 2, "b")
    t0 = time.monotonic()
    pre = subprocess.run([sys.executable, "-m", "proximity", "hook", "pre-commit"], cwd=b,
                         env=hook_env(), capture_output=True, text=True, timeout=120)
    assert pre.returncode == 0
    # judged in process, with the same verdict, and without waiting on the dead service
    assert "RESOLUTION ADVISORY with worktree 'a'" in pre.stderr
    assert time.monotonic() - t0 < 60
    # ... and the hook started a new one
    new = wait_for(lambda: pid_of(common))
    assert new != pid


def test_the_service_records_what_the_snapshot_hook_would(space, services):
    sp, a, b, common = three(space, services)
    install(sp)
    edit(a / "f.txt", 10, 20, "a")
    sp.write(a, "untracked.txt", "new\n")
    assert service_cmd.start(common)
    git(a, "add", "f.txt")
    done = commit_with_hooks(a, "a commits; the service records")
    assert done.returncode == 0, done.stderr

    def last(stream: str) -> tuple[str | None, str | None, str | None]:
        led = Ledger(os.path.join(common, "ecm"))
        try:
            ev = led.last_event(stream)
            assert ev is not None
            return ev.kind, ev.head, ev.tree
        finally:
            led.close()

    # a snapshot hook with nothing to print does not wait for its record (the service
    # takes it in order, before any later verdict): it lands a moment later
    wait_for(lambda: last("a")[0] == "commit")
    by_service = last("a")
    assert by_service[0] == "commit"
    assert by_service[1] == git(a, "rev-parse", "HEAD").stdout.strip()
    subprocess.run([sys.executable, "-m", "proximity", "snapshot"], cwd=a, check=True,
                   env=hook_env(PROXIMITY_SERVICE="0"), capture_output=True)
    assert last("a")[1:] == by_service[1:]  # the same head and tree, in process
    # a switch changes files: the service snapshots them, never a stale tree
    git(b, "switch", "-q", "-c", "other", "HEAD~0")
    sp.write(sp.main, "h.txt", "main moves on\n")
    sp.commit(sp.main, "main moves")
    switched = subprocess.run(["git", "switch", "-q", "--detach", "main"], cwd=b,
                              env=hook_env(), capture_output=True, text=True, timeout=120)
    assert switched.returncode == 0, switched.stderr
    now = git(b, "rev-parse", "HEAD").stdout.strip()
    wait_for(lambda: last("b")[:2] == ("checkout", now))
    assert (b / "h.txt").exists()
    svc_tree = last("b")[2]
    subprocess.run([sys.executable, "-m", "proximity", "snapshot"], cwd=b, check=True,
                   env=hook_env(PROXIMITY_SERVICE="0"), capture_output=True)
    assert last("b")[2] == svc_tree


def test_a_worktree_added_while_the_service_runs_is_judged_on_its_files(space, services):
    """A worktree added while the service starts or runs, then a new file written and
    committed at once: the commit is judged on that file, never on the state the worktree
    had when added (seen on real code: a worktree the service found during its start was
    never watched, so its commits were judged on that state and a real break went unblocked)."""
    sp, _a, _b, common = three(space, services)
    install(sp)
    for i in range(3):
        if i == 0:  # added while the service starts
            subprocess.run([sys.executable, "-m", "proximity", "service", "start"],
                           cwd=sp.main, env=hook_env(), capture_output=True, check=True)
        wt = sp.main.parent / f"late{i}"
        added = subprocess.run(["git", "worktree", "add", "-q", "-b", f"late{i}", str(wt)],
                               cwd=sp.main, env=hook_env(), capture_output=True, text=True,
                               timeout=120)
        assert added.returncode == 0, added.stderr
        (wt / f"new{i}.py").write_text("from pkg.core import compute\n\nX = compute(1)\n")
        git(wt, "add", "-A")
        done = commit_with_hooks(wt, f"late {i}")
        assert done.returncode == 0, done.stderr
        led = Ledger(os.path.join(common, "ecm"))
        try:
            pre = [e for e in led.events(None, 200)
                   if e.kind == "pre-commit" and e.stream.startswith(f"late{i}")]
        finally:
            led.close()
        assert pre and pre[0].tree, (i, pre)  # the state judged holds the new file
        assert git(sp.main, "cat-file", "-e", f"{pre[0].tree}:new{i}.py", check=False,
                   env=live_objects(sp.main)).returncode == 0, (i, pre)
    assert client._alive(common)


def test_a_service_a_client_starts_runs_this_code_not_the_callers_pythonpath(
        space, services, tmp_path):
    """A project's PYTHONPATH (an agent's `PYTHONPATH=src`, another checkout of proximity)
    is the caller's: the service a hook starts imports neither a planted `proximity` nor a
    module that shadows the standard library from it, and answers as this code."""
    sp, a, b, common = three(space, services)
    install(sp)
    planted = tmp_path / "planted"
    marker = tmp_path / "imported"
    for name in ("proximity/__init__.py", "selectors.py"):
        (planted / name).parent.mkdir(parents=True, exist_ok=True)
        (planted / name).write_text(f"open({str(marker)!r}, 'a').write({name!r})\n"
                                    "raise ImportError('planted')\n")
    edit(a / "f.txt", 10, 20, "a")
    edit(b / "f.txt", 12, 18, "b")
    git(a, "add", "f.txt")
    env = {**os.environ, "PYTHONPATH": str(planted)}

    def hook() -> subprocess.CompletedProcess[str]:
        # the hook's own process does not import from there (that is not what is tested)
        return subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.remove(sys.argv[1]);"
             "from proximity.main import main; sys.exit(main(sys.argv[2:]))",
             str(planted), "hook", "pre-commit"],
            cwd=a, env=env, capture_output=True, text=True, timeout=120)

    first = hook()
    assert first.returncode == 0, first.stderr
    pid = wait_for(lambda: pid_of(common))  # started by that hook, with its environment
    with open(f"/proc/{pid}/environ", "rb") as fh:
        assert not [v for v in fh.read().split(b"\0") if v.startswith(b"PYTHON")]
    again = hook()
    assert again.returncode == 0, again.stderr
    assert "RESOLUTION ADVISORY with worktree 'b'" in again.stderr
    assert service_state(common)["status"]["answered"]["hook"] >= 1  # the service's verdict
    assert not marker.exists(), marker.read_text()


def test_service_stop_says_what_it_stopped(space, services):
    sp, _a, _b, common = three(space, services)

    def cmd(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "proximity", "service", *args],
                              cwd=sp.main, env=hook_env(), capture_output=True, text=True,
                              check=True, timeout=120).stdout

    cmd("start")
    pid = pid_of(common)
    said = cmd("stop")
    assert f"stopped the service of {common}: pid {pid}" in said and "watching a, b" in said
    assert "no service was running" in cmd("stop")
    cmd("start")
    pid = pid_of(common)
    doc = json.loads(cmd("stop", "--json"))
    assert doc["stopped"]["pid"] == pid and not doc["running"]
    assert json.loads(cmd("stop", "--json"))["stopped"] is None


def test_a_service_whose_repository_was_made_again_exits(tmp_path, services):
    """A repository deleted and made again at the same path (a harness, a re-clone): its
    old service, kept busy by the new files' events, exits instead of living on unreachable
    (found on a real repository: four such services outlived their idle timeout)."""
    repo = tmp_path / "again"

    def fresh() -> str:
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / "f.txt").write_text("x\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        return os.path.realpath(repo / ".git")

    common = fresh()
    services.append(common)
    assert service_cmd.start(common)
    old = pid_of(common)
    assert old
    import shutil

    shutil.rmtree(repo)
    fresh()

    def gone() -> bool:
        (repo / "f.txt").write_text(str(time.monotonic()))
        try:
            os.kill(old, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{old}/stat") as fh:  # a zombie until its parent reaps it
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"

    wait_for(gone, timeout=10.0, step=0.2)


def test_two_services_raced_one_survives(space, services):
    _sp, _a, _b, common = three(space, services)
    procs = [subprocess.Popen([sys.executable, "-m", "proximity.service", common],
                              cwd=common, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(3)]
    try:
        wait_for(lambda: sum(p.poll() is not None for p in procs) == 2, 30)
        alive = [p for p in procs if p.poll() is None]
        assert len(alive) == 1
        assert all(p.returncode == 0 for p in procs if p not in alive)
        assert wait_for(lambda: pid_of(common)) == alive[0].pid
    finally:
        service_cmd.stop(common)
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stderr:
                p.stderr.close()


def test_stale_socket_is_recovered(space, services):
    _sp, _a, _b, common = three(space, services)
    path = layout.socket_path(common)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)  # a socket file nobody listens on, as a killed service leaves
    dead.close()
    # refused by the socket itself, not left waiting for an answer: given a minute to
    # connect and to be answered, the client is back with nothing long before either
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with pytest.raises(ConnectionRefusedError):
        probe.connect(path)
    probe.close()
    t0 = time.monotonic()
    assert client.request(common, {"op": "ping"}, budget=60.0, connect_timeout=60.0) is None
    assert time.monotonic() - t0 < 30.0  # (not a speed target: a wait out of its budget)
    state = service_state(common)
    assert state["stale_socket"] and not state["running"]
    assert service_cmd.start(common)
    assert client.request(common, {"op": "ping"}) is not None
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_long_common_dir_uses_a_private_short_socket(tmp_path, services):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    git(deep, "init", "-q")
    (deep / "x.txt").write_text("x\n")
    git(deep, "add", "-A")
    git(deep, "commit", "-q", "-m", "base")
    common = os.path.realpath(deep / ".git")
    services.append(common)
    path = layout.socket_path(common)
    assert not path.startswith(common) and len(path) <= layout.SUN_PATH_MAX
    assert service_cmd.start(common)
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    assert service_state(common)["recorded"]["socket"] == path


def test_idle_service_exits(space, services, monkeypatch):
    monkeypatch.setenv("PROXIMITY_SERVICE_IDLE", "1.5")
    _sp, _a, _b, common = three(space, services)
    assert service_cmd.start(common)
    wait_for(lambda: not client._alive(common), 20)
    assert not os.path.exists(layout.socket_path(common))


def test_protocol_is_versioned_and_bounded(space, services):
    _sp, _a, _b, common = three(space, services)
    assert service_cmd.start(common)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(layout.socket_path(common))
        s.sendall(b'{"v": 99, "op": "ping"}\n')
        answer = json.loads(s.makefile().readline())
    assert answer["ok"] is False and "protocol" in answer["error"]
    assert client.request(common, {"op": "nope"}) is None
    assert client.request(common, {"op": "ping"})["ready"] is True  # type: ignore[index]


def test_service_off_switch(space, services, monkeypatch):
    _sp, _a, _b, common = three(space, services)
    monkeypatch.setenv("PROXIMITY_SERVICE", "0")
    asked = {"op": "hook", "rid": client.new_request_id(), "stage": "warn", "agent": "a",
             "kind": "pre-commit", "index": None}
    assert client.hook(common, asked) == (None, True)  # judged (and recorded) in process
    time.sleep(0.3)
    assert not client._alive(common)


def stamp_of(root: Path, runtime: Path) -> str:
    """The code stamp a hook computes from the package installed at ``root`` (a fresh
    interpreter without site, as the hook script starts it)."""
    code = ("import sys\nsys.path.insert(0, sys.argv[1])\n"
            "from proximity.service import stamp\nprint(stamp.code_stamp())")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    out = subprocess.run([sys.executable, "-S", "-c", code, str(root)], env=env,
                         capture_output=True, text=True, check=True, cwd=root)
    return out.stdout.strip()


def test_two_installs_of_the_same_code_share_one_stamp(tmp_path):
    """Two copies of the package with other modification times (pre-commit's environment
    and a pip install of one commit) have one stamp, so neither stops the other's
    service; a one-byte edit changes it, even one that keeps the size and the time."""
    import shutil

    import proximity

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    src = Path(proximity.__file__).parent
    roots = []
    for i, when in enumerate((1_000_000_000, 1_500_000_000)):
        root = tmp_path / f"install{i}"
        shutil.copytree(src, root / "proximity",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for f in (root / "proximity").rglob("*.py"):
            os.utime(f, (when, when))
        roots.append(root)
    first = stamp_of(roots[0], runtime)
    assert first == stamp_of(roots[1], runtime) == stamp_of(roots[0], runtime)
    assert first.startswith(proximity.__version__ + "+")

    mod = roots[1] / "proximity" / "thin.py"
    st = mod.stat()
    data = mod.read_bytes()
    mod.write_bytes(data[:-1] + (b" " if data[-1:] != b" " else b"\n"))
    os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stamp_of(roots[1], runtime) != first
    mod.write_bytes(data)
    assert stamp_of(roots[1], runtime) == first


def install_copy(src: Path, where: Path, change: str | None = None) -> Path:
    """The package written into ``where``/site-packages as an installer writes it: the old
    copy removed, every file written anew (``change``: a line added to one module, as
    other code would differ)."""
    site = where / "site-packages"
    shutil.rmtree(site / "proximity", ignore_errors=True)
    shutil.copytree(src, site / "proximity", ignore=shutil.ignore_patterns("__pycache__"))
    if change is not None:
        with open(site / "proximity" / "tcas" / "risk.py", "a") as f:
            f.write(f"\n# {change}\n")
    return site


def test_an_installed_copy_is_known_by_its_directory_and_a_reinstall_reads_it_again(
        tmp_path):
    """A copy an installer wrote into site-packages has the stamp of a source checkout of
    the same code (the content decides, so the two share one service) but is keyed by its
    directory and its __init__.py alone; an upgrade or a reinstall of other code, which
    writes every file anew, changes the stamp, and a reinstall of the first code brings it
    back."""
    import proximity
    from proximity.service import stamp

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    src = Path(proximity.__file__).parent
    checkout = tmp_path / "checkout"
    shutil.copytree(src, checkout / "proximity", ignore=shutil.ignore_patterns("__pycache__"))
    first = stamp_of(checkout, runtime)
    a = install_copy(src, tmp_path / "a")
    b = install_copy(src, tmp_path / "b")
    assert stamp.installed_key(str(a / "proximity")) is not None
    assert stamp.installed_key(str(checkout / "proximity")) is None
    assert stamp_of(a, runtime) == stamp_of(b, runtime) == first
    install_copy(src, tmp_path / "b", change="an upgrade")
    upgraded = stamp_of(b, runtime)
    assert upgraded != first and upgraded.startswith(proximity.__version__ + "+")
    assert stamp_of(a, runtime) == first  # the other install keeps its own
    install_copy(src, tmp_path / "b")
    assert stamp_of(b, runtime) == first


def test_the_service_answers_a_hostile_harness_event_allow_with_the_reason(space, services):
    """The pre-edit hook asked of the service: a harness event nested past any parser's
    depth is answered by the service itself, exit 0: let through with the reason told to
    the person, and no decision (no allow either: the harness's own flow decides)."""
    _sp, a, _b, common = three(space, services)
    assert service_cmd.start(common)
    deep = '{"tool_name": "Edit", "tool_input": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}"
    for name in ("claude", "gemini"):
        proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", name],
                              input=deep, capture_output=True, text=True, cwd=a,
                              check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert set(out) == {"systemMessage"}, out
        assert "nested too deeply" in out["systemMessage"]
    answered = client.request(common, {"op": "status"})["status"]["answered"]  # type: ignore[index]
    assert answered.get("check") == 2 and not answered.get("check_fallback"), answered


def plant_scratch(common: str) -> tuple[list[str], list[str]]:
    """Scratch files in the ledger's index directory as a killed writer leaves them (a
    dead pid, minutes old), and ones that must stay (a live writer's, a fresh one, one
    naming no process, the shadow indexes): (names that go, names that stay)."""
    d = Path(common) / "ecm" / "index"
    d.mkdir(parents=True, exist_ok=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid is nobody's now
    dead, live = gone.pid, os.getpid()
    old = time.time() - 3600
    goes = [f".a.{dead}.0badc0de", f".index.proximity.{dead}.12345678",
            f".a.{dead}.0badc0de.lock"]
    stays = [f".a.{live}.abcdef01", f".b.{dead}.feedf00d", "a.idx", f"a.{dead}.0badc0de",
             ".c.0.abcdef02"]  # (pid 0 is no writer's)
    for name in goes + stays:
        (d / name).write_bytes(b"DIRC")
        if name != f".b.{dead}.feedf00d":  # (fresh: its writer may be just gone)
            os.utime(d / name, (old, old))
    return goes, stays


def test_a_killed_writers_scratch_files_go_at_service_start_and_in_gc(space, services):
    """A service (or hook) killed mid-snapshot leaves its scratch index in .git/ecm/index:
    the next service removes it as it starts, and `proximity gc` does too; a live
    writer's, a fresh one and the shadow indexes stay."""
    from proximity.main import main

    sp, _a, _b, common = three(space, services)
    assert service_cmd.start(common)
    pid = pid_of(common)
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not client._alive(common))
    goes, stays = plant_scratch(common)
    assert service_cmd.start(common)
    left = set(os.listdir(Path(common) / "ecm" / "index"))
    assert not left & set(goes), left
    assert set(stays) <= left

    goes, stays = plant_scratch(common)
    assert main(["gc", "-C", str(sp.main)]) == 0
    left = set(os.listdir(Path(common) / "ecm" / "index"))
    assert not left & set(goes), left
    assert set(stays) <= left


def test_the_check_reads_a_siblings_unrecorded_new_call_as_the_service_keeps_it(
        space, services):
    """b writes a new call to compute() and nothing records it (no hook, no snapshot: an
    editor's save, or a tool without hooks). a asks about the lines defining compute: with
    the service on, its kept state of b is read, as its scan reads it (it read b's last
    recorded state, and allowed; found by a new user)."""
    _sp, a, b, common = three(space, services)
    assert service_cmd.start(common)
    (b / "pkg" / "extra.py").write_text("from pkg.core import compute\n\n\nVALUE = compute(7)\n")

    def asked() -> dict[str, object]:
        proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--json",
                               "pkg/core.py:1-2"], cwd=a, capture_output=True, text=True,
                              check=False, timeout=60)
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    got = wait_for(lambda: (lambda d: d if d["decision"] != "allow" else None)(asked()),
                   timeout=20)
    assert got["decision"] == "ask", got  # type: ignore[index]
    assert "compute" in got["reason"] and "'b'" in got["reason"], got  # type: ignore[index]
    # nothing recorded b's new file: the ledger holds no event naming it
    led = Ledger(os.path.join(common, "ecm"))
    try:
        assert all("pkg/extra.py" not in e.files for e in led.events("b", 50))
    finally:
        led.close()


def test_the_policy_is_read_again_only_when_a_committed_config_file_changes(space):
    """The service keeps the policy it read until one of its inputs changes. A commit in
    the main checkout that leaves both committed config files as they were is not one (each
    such commit cost every next hook a `git config` and two `cat-file` runs); a commit of
    `.proximity.toml` or `pyproject.toml` is, at once."""
    from proximity import gitio
    from proximity.service.warm import _policy_key

    sp = space({"app.txt": lines(10), "pyproject.toml": "[project]\nname = 'x'\n"})
    repo = gitio.Repo(str(sp.main))
    first = _policy_key(repo)
    sp.write(sp.main, "app.txt", lines(10).replace("line 3\n", "line 3 changed\n"))
    sp.commit(sp.main, "an ordinary commit")
    assert _policy_key(gitio.Repo(str(sp.main))) == first
    for name, text in ((".proximity.toml", "[proximity]\n"),
                       ("pyproject.toml", "[project]\nname = 'y'\n")):
        sp.write(sp.main, name, text)
        sp.commit(sp.main, f"commits {name}")
        now = _policy_key(gitio.Repo(str(sp.main)))
        assert now != first, name
        first = now


def test_a_commit_recorded_after_head_moved_on_is_recorded_as_itself(space, services):
    """A post-commit's record is made by the service after the hook returns (queued, or
    late on a loaded machine) and reads the worktree as it is then: a rebase may have
    rewritten the commit, or the next commit come. The request names its commit, which is
    recorded as history, then the present; before, only the present was, and the commit
    the hook ran for had no event in the ledger."""
    _sp, a, _b, common = three(space, services)
    assert service_cmd.start(common)
    shas = []
    for k in range(2):  # two commits with no hook: the first one's record comes late
        edit(a / "f.txt", 3 + k, 4 + k, f"late {k}")
        git(a, "commit", "-qam", f"late {k}")
        shas.append(git(a, "rev-parse", "HEAD").stdout.strip())
    asked = {"op": "hook", "rid": client.new_request_id(), "stage": "snapshot", "agent": "a",
             "kind": "commit", "index": None, "head": shas[0]}
    answer, record = client.hook(common, asked, budget=30.0)
    assert answer is not None and record is False, answer

    def events() -> list[tuple[str, str | None]]:
        led = Ledger(os.path.join(common, "ecm"))
        try:
            return [(e.kind, e.head) for e in reversed(led.events("a", 20))]
        finally:
            led.close()

    wait_for(lambda: any(h == shas[1] for _, h in events()))
    time.sleep(0.5)  # (anything recorded after it)
    got = events()
    commits = [h for kind, h in got if kind == "commit"]
    assert commits.count(shas[0]) == 1 and commits.count(shas[1]) == 1, got
    assert got[-1][1] == shas[1]  # the stream ends at the worktree as it is
    # a request naming no commit id is refused whole (the hook then records in process)
    bad = {**asked, "rid": client.new_request_id(), "head": "HEAD~1"}
    assert client.request(common, bad) is None
