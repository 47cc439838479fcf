"""Faults, each played for real, and what the user sees: the table of `faults.py --table`.

Every case builds a real repository with plain hooks (`proximity install`), a real bare
remote and two worktrees whose commits change the same line (so the push of one must
yield), injects one fault, runs what the user runs (a commit, a push, `sync`, `service
start`), and reports the proximity lines the user saw and whether the guard is still on:
``on`` (the push that must yield is blocked), ``off, said`` (it goes through, and a line
says the guard is OFF and why), or ``OFF, SILENT`` (it goes through without a word: a
bug). Cases that need root (a second uid, a private mount namespace) are left out where
they cannot run.

A helper module of benchmarks/faults.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from proximity import layout

PY = sys.executable
BASE = "".join(f"line {i}\n" for i in range(1, 21))
ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
       "GIT_CONFIG_NOSYSTEM": "1", "PROXIMITY_SERVICE": "0"}
CHANNELS = ("conflict", "overlap", "approach", "symbol", "dependency", "tree")


class Row(NamedTuple):
    fault: str
    sees: str  # what the user sees, in short
    guard: str  # on / off, said / OFF, SILENT / n/a
    seconds: float  # how long the command the user ran took


class Space(NamedTuple):
    root: Path
    main: Path
    a: Path
    b: Path
    env: dict[str, str]


def run(cwd: Path, *args: str, env: dict[str, str], extra: dict[str, str] | None = None,
        stdin: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    t = time.perf_counter()
    p = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, input=stdin,
                       env={**env, **(extra or {})}, timeout=600)
    return p, time.perf_counter() - t


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    p, _ = run(cwd, "git", *args, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {p.stderr}")
    return p.stdout.strip()


@contextlib.contextmanager
def space(deep: bool = False) -> Iterator[Space]:
    """A hooked main checkout with a bare origin and worktrees a and b whose commits edit
    line 10 of f.txt (b's push must yield), in a temporary directory, removed after;
    ``deep``: so deep that the service's socket goes to the runtime directory."""
    top = Path(tempfile.mkdtemp(prefix="proximity-fault-", dir="/tmp"))
    top.chmod(0o755)
    root = top / ("d" * 70) if deep else top
    root.mkdir(exist_ok=True)
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {**os.environ, **ENV, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}
    env.pop("XDG_RUNTIME_DIR", None)
    try:
        git(root, "init", "-q", "--bare", "remote.git", env=env)
        main = root / "main"
        main.mkdir()
        git(main, "init", "-q", env=env)
        (main / "f.txt").write_text(BASE)
        git(main, "add", "-A", env=env)
        git(main, "commit", "-qm", "base", env=env)
        git(main, "remote", "add", "origin", str(root / "remote.git"), env=env)
        git(main, "push", "-q", "origin", "main", env=env)
        p, _ = run(main, PY, "-m", "proximity", "install", env=env)
        assert p.returncode == 0, p.stderr
        wts = []
        for name in ("a", "b"):
            wt = root / f"wt-{name}"
            git(main, "worktree", "add", "-q", "-b", f"feat/{name}", str(wt), env=env)
            (wt / "f.txt").write_text(BASE.replace("line 10\n", f"line 10 by {name}\n"))
            git(wt, "commit", "-qam", name, env=env)
            wts.append(wt)
        yield Space(root, main, wts[0], wts[1], env)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def said(stderr: str, *keys: str) -> str:
    """The first proximity line of ``stderr`` holding one of ``keys`` (else the first
    warning), shortened for a table cell."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("proximity")]
    hit = next((ln for ln in lines if any(k in ln for k in keys)), None) or next(
        (ln for ln in lines if "warning" in ln or "OFF" in ln), "(nothing)")
    hit = hit.replace("proximity: warning: ", "").replace("proximity: ", "")
    return hit if len(hit) <= 150 else hit[:147] + "..."


def verdict(p: subprocess.CompletedProcess[str]) -> str:
    if p.returncode != 0 and "push blocked" in p.stderr:
        return "on"
    if "push guard is OFF" in p.stderr:
        return "off, said"
    return "OFF, SILENT"


def push(s: Space, extra: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str], float]:
    return run(s.b, "git", "push", "-q", "origin", "feat/b", env=s.env, extra=extra)


def commit_config(s: Space, name: str, data: bytes) -> None:
    (s.main / name).write_bytes(data)
    git(s.main, "add", name, env=s.env)
    git(s.main, "commit", "-qm", "a config", "--no-verify", env=s.env)


def committed(fault: str, name: str, data: bytes) -> Callable[[], Row]:
    def case() -> Row:
        with space() as s:
            commit_config(s, name, data)
            p, took = push(s)
            return Row(fault, said(p.stderr, name), verdict(p), took)
    return case


def huge_config() -> Row:
    data = ("exclude = [" + ",".join(f"'src/gen/{i}/**/*.py'" for i in range(1_100_000))
            + "]\n").encode()
    with space() as s:

        def timed_commit(k: int) -> tuple[subprocess.CompletedProcess[str], float]:
            (s.main / "n.txt").write_text(f"{k}\n")
            git(s.main, "add", "n.txt", env=s.env)
            return run(s.main, "git", "commit", "-qm", f"n {k}", env=s.env)

        before = min(timed_commit(k)[1] for k in range(2))
        commit_config(s, ".proximity.toml", data)
        c, took = timed_commit(2)
        took = min(took, timed_commit(3)[1])
        p, _ = push(s)
        return Row(f"a committed `.proximity.toml` of {len(data) // 1_000_000} MB (exclude list)",
                   said(c.stderr, "limit") + f" (a commit: {took:.2f} s, {before:.2f} s "
                   "before it)", verdict(p), took)


def config_at_the_limit() -> Row:
    """The most a committed file can cost: a pyproject.toml with proximity's table, just
    under the size limit (other tools' tables, one key a line), every hook reading it;
    commits timed alternately with and without it (medians of 5)."""
    import statistics

    from proximity.configlimits import MAX_CONFIG_BYTES

    big = ("[tool.proximity]\nnear_lines = 6\n[tool.other]\n"
           + "".join(f"key_{i} = {i}\n" for i in range(40_000))).encode()
    big = big[:big.rfind(b"\n", 0, MAX_CONFIG_BYTES - 1) + 1]
    with space() as s:
        times: dict[bool, list[float]] = {True: [], False: []}
        for k in range(10):
            on = k % 2 == 0
            (s.main / "pyproject.toml").write_bytes(big if on else b"[project]\nname = 'x'\n")
            (s.main / "n.txt").write_text(f"{k}\n")
            git(s.main, "add", "-A", env=s.env)
            git(s.main, "commit", "-qm", "setup", "--no-verify", env=s.env)
            (s.main / "n.txt").write_text(f"{k} more\n")
            git(s.main, "add", "n.txt", env=s.env)
            _, took = run(s.main, "git", "commit", "-qm", "timed", env=s.env)
            times[on].append(took)
        with_, without = statistics.median(times[True]), statistics.median(times[False])
        return Row(f"a committed pyproject.toml of {len(big) // 1000} KB (just under the "
                   "limit: read and parsed by every hook)",
                   f"nothing; a commit {with_:.2f} s against {without:.2f} s with a small one "
                   "(medians of 5, alternated)", "on", with_)


def git_config_off() -> Row:
    with space() as s:
        for c in CHANNELS:
            git(s.main, "config", f"proximity.weights.{c}", "0", env=s.env)
        p, took = push(s)
        return Row("the person's own git config sets every weight 0", said(p.stderr, "OFF"),
                   verdict(p), took)


def knob(name: str, value: str) -> Callable[[], Row]:
    def case() -> Row:
        with space() as s:
            p, took = push(s, {name: value})
            return Row(f"`{name}={value}`", said(p.stderr, name), verdict(p), took)
    return case


def unreadable_sibling() -> Row:
    with space() as s:
        git(s.main, "config", "filter.hang.clean", "sleep 61.2347", env=s.env)
        (s.a / ".gitattributes").write_text("*.hang filter=hang\n")
        (s.a / "x.hang").write_text("x\n")
        try:
            p, took = push(s, {"PROXIMITY_GIT_TIMEOUT": "1"})
        finally:
            subprocess.run(["pkill", "-f", "sleep 61.2347"], check=False)
        return Row("a sibling's state cannot be read (a clean filter that hangs)",
                   said(p.stderr, "OFF", "could not be read"), verdict(p), took)


def corrupt_config() -> Row:
    with space() as s:
        commit_config(s, ".proximity.toml", b"near_lines = 3\n" + b"# pad\n" * 2000)
        oid = git(s.main, "rev-parse", "HEAD:.proximity.toml", env=s.env)
        loose = s.main / ".git" / "objects" / oid[:2] / oid[2:]
        loose.chmod(0o644)
        loose.write_bytes(loose.read_bytes()[: loose.stat().st_size // 2])
        p, took = push(s)
        return Row("the committed config's object is corrupt", said(p.stderr, "OFF"),
                   verdict(p), took)


def damaged_object() -> Row:
    """A committed blob's loose file replaced by a cut-short copy (a bad restore) while the
    service runs: libgit2 would loop forever on it."""
    with space() as s:
        env = {**s.env, "PROXIMITY_SERVICE": "1", "PROXIMITY_SERVICE_IDLE": "60"}
        run(s.main, PY, "-m", "proximity", "service", "start", env=env)
        try:
            oid = git(s.main, "rev-parse", "feat/a:f.txt", env=s.env)
            loose = s.main / ".git" / "objects" / oid[:2] / oid[2:]
            whole = loose.read_bytes()
            loose.unlink()
            loose.write_bytes(whole[:len(whole) // 2])
            p, took = push(s, {"PROXIMITY_SERVICE": "1"})
        finally:
            run(s.main, PY, "-m", "proximity", "service", "stop", env=env)
        return Row("a committed object's loose file cut short (a bad copy), service on",
                   said(p.stderr, "damaged"), verdict(p), took)


def read_only_ledger() -> Row | None:
    if shutil.which("unshare") is None or os.getuid() != 0:
        return None
    with space() as s:
        ecm = s.main / ".git" / "ecm"
        (s.b / "n.txt").write_text("n\n")
        git(s.b, "add", "n.txt", env=s.env)
        setup = f"mount --bind {ecm} {ecm}; mount -o remount,ro,bind {ecm}"
        c, took = run(s.b, "unshare", "-m", "sh", "-c", f'{setup}; exec "$@"', "sh", "git",
                      "commit", "-qm", "n", env=s.env)
        p, _ = run(s.b, "unshare", "-m", "sh", "-c", f'{setup}; exec "$@"', "sh", "git",
                   "push", "-q", "origin", "feat/b", env=s.env)
        n = c.stderr.count("recording is off")
        return Row("`.git/ecm` read-only: a commit, then the push",
                   f"{n} line per commit: " + said(c.stderr, "recording is off"), verdict(p),
                   took)


def vanished_refs() -> Row | None:
    if shutil.which("ssh-keygen") is None:
        return None
    with space() as s:
        env = s.env
        m2 = s.root / "m2"
        git(s.root, "clone", "-q", "-b", "main", str(s.root / "remote.git"), str(m2), env=env)
        p, _ = run(m2, PY, "-m", "proximity", "install", env=env)
        key = s.root / "alice"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f",
                        str(key)], check=True, capture_output=True)
        allowed = s.root / "allowed"
        allowed.write_text(f"alice {key.with_suffix('.pub').read_text().strip()}\n")
        git(s.main, "config", "gpg.format", "ssh", env=env)
        git(s.main, "config", "user.signingKey", str(key), env=env)
        git(m2, "config", "gpg.ssh.allowedSignersFile", str(allowed), env=env)
        b2 = s.root / "m2-b"
        git(m2, "worktree", "add", "-q", "-b", "feat/b2", str(b2), env=env)
        (b2 / "f.txt").write_text(BASE.replace("line 10\n", "line 10 by b2\n"))
        git(b2, "commit", "-qam", "b2", env=env)
        for where in (s.main, m2):
            run(where, PY, "-m", "proximity", "sync", env=env)
        mid = (s.main / ".git" / "ecm" / "machine-id").read_text().strip()
        refs = git(m2, "ls-remote", "origin", f"refs/ecm/{mid}/*", env=env).splitlines()
        git(m2, "push", "-q", "--no-verify", "origin",
            *(f":{r.split(chr(9))[1]}" for r in refs), env=env)
        sync, took = run(m2, PY, "-m", "proximity", "sync", env=env)
        p, _ = run(b2, "git", "push", "-q", "origin", "feat/b2", env=env)
        return Row("a teammate's signed snapshots deleted on the remote, then `sync`",
                   said(sync.stderr, "vanished"), verdict(p), took)


def squatted_runtime() -> Row | None:
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="proximity-tmpdir-", dir="/tmp"))
    tmp.chmod(0o1777)
    try:
        with space(deep=True) as s:
            env = {**s.env, "TMPDIR": str(tmp), "PROXIMITY_SERVICE": "1"}
            main = s.main
            subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "mkdir", "-m", "0777", str(tmp / f"proximity-{os.getuid()}")],
                           check=True, cwd="/")
            p, took = run(main, PY, "-m", "proximity", "service", "start", env=env)
            sees = next((ln for ln in p.stdout.splitlines() if "refused" in ln), "(nothing)")
            return Row("`service start` with its runtime directory squatted by another uid",
                       sees.replace("proximity: ", "")[:150], "on (in process)", took)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def flood() -> Row:
    with space() as s:
        env = {**s.env, "PROXIMITY_SERVICE": "1", "PROXIMITY_SERVICE_IDLE": "60"}
        run(s.main, PY, "-m", "proximity", "service", "start", env=env)
        sock = layout.socket_path(os.path.realpath(s.main / ".git"))  # (short: under .git)
        held = []
        try:
            for _ in range(300):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(sock)
                held.append(c)
            time.sleep(1.0)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                c.connect(sock)
                with contextlib.suppress(BrokenPipeError):
                    c.sendall(b'{"v": 1, "op": "ping"}\n')
                line = c.makefile().readline().strip()
            p, took = push(s, {"PROXIMITY_SERVICE": "1"})
        finally:
            for c in held:
                c.close()
            run(s.main, PY, "-m", "proximity", "service", "stop", env=env)
        answer = json.loads(line) if line else {}
        sees = (f"a client: `{answer.get('error')}` refusal line" if answer.get("refused")
                else line or "(a reset)")
        return Row("300 idle connections held to the service, then a client and a push",
                   sees, verdict(p), took)


CASES: list[Callable[[], Row | None]] = [
    committed("a committed `.proximity.toml` nested 260 KB deep", ".proximity.toml",
              b"a = " + b"[" * 130_000 + b"]" * 130_000 + b"\n"),
    huge_config,
    config_at_the_limit,
    committed("a committed config with every channel weight 0", ".proximity.toml",
              ("[weights]\n" + "".join(f"{c} = 0\n" for c in CHANNELS)).encode()),
    committed("a committed `exclude = ['*']`", "pyproject.toml",
              b"[tool.proximity]\nexclude = ['*']\n"),
    committed("a committed `tau_ra = 1.5`", ".proximity.toml", b"tau_ra = 1.5\n"),
    committed("a committed `gamma` of 5,000 decimal digits", ".proximity.toml",
              b"gamma = " + b"9" * 5000 + b"\n"),
    committed("a committed `gamma` of 5,000 hexadecimal digits", ".proximity.toml",
              b"gamma = 0x" + b"f" * 5000 + b"\n"),
    git_config_off,
    knob("PROXIMITY_GIT_TIMEOUT", "0.001"),
    knob("PROXIMITY_ALLOW", "yes"),
    knob("PROXIMITY_SKIP", "true"),
    knob("PROXIMITY_HOOK_TIMEOUT", "99999999999999999999"),
    knob("PROXIMITY_PYTHON", "/bin/false"),
    knob("PROXIMITY_PYTHON", "/bin/true"),
    corrupt_config,
    damaged_object,
    unreadable_sibling,
    read_only_ledger,
    vanished_refs,
    squatted_runtime,
    flood,
]


def table(rows: list[Row]) -> str:
    out = ["| fault | what the user sees | guard | time (s) |", "|---|---|---|---|"]
    for r in rows:
        cell = r.sees.replace("|", "\\|")
        out.append(f"| {r.fault} | {cell} | {r.guard} | {r.seconds:.2f} |")
    return "\n".join(out)


def play(say: Callable[[str], None] | None = None,
         cases: list[Callable[[], Row | None]] | None = None) -> list[Row]:
    rows = []
    for case in CASES if cases is None else cases:
        try:
            row = case()
        except Exception as e:  # a case that cannot be played is a row saying so
            row = Row(getattr(case, "__name__", "a case"), f"could not be played: {e!r}"[:150],
                      "n/a", 0.0)
        if row is not None:
            rows.append(row)
            if say is not None:
                say(f"{row.fault}: {row.guard}")
    return rows
