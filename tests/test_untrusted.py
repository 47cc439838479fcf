"""Everything from a remote or other people is untrusted data.

Two real clones of a real bare remote; a hostile teammate writes crafted refs/ecm/* commits
straight into the remote (as anyone with push access can). Nothing they publish may crash a
command, turn the guard off, reach a terminal with control characters, or outlive its
welcome; nothing secret of ours may leave.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, lines
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sync import cli, machines

from proximity import safetext
from proximity.remote import inbound as remote_mod
from proximity.remote import untrusted
from proximity.snapshot import workspace

PY = sys.executable
# C0 except \t \n, DEL, C1 (as UTF-8), bidi overrides/isolates (as UTF-8)
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xaa-\xae]"
                     rb"|\xe2\x81[\xa6-\xa9]")
NOW = 1_700_000_000.0


def meta(machine: str, wt: str, **over: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"schema": 1, "machine": machine, "worktree": wt,
                         "branch": f"feat/{wt}", "head": None, "clock": {wt: 1},
                         "time": NOW, "created": NOW - 60, "subject": "their work"}
    m.update(over)
    return m


def publish_raw(bare: Path, base: str, refs: dict[str, bytes]) -> None:
    """Commits with exactly these message bodies at refs/ecm/<name>, written into the bare
    remote in one `git fast-import` (parent: base; tree: base's)."""
    chunks = []
    for ref, body in refs.items():
        msg = b"proximity snapshot " + ref.encode() + b"\n\n" + body + b"\n"
        chunks += [f"commit refs/ecm/{ref}\n".encode(),
                   b"committer x <x@localhost> 0 +0000\n", f"data {len(msg)}\n".encode(), msg,
                   f"from {base}\n\n".encode()]
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=bare, check=True,
                   input=b"".join(chunks), capture_output=True)


def assert_clean(*outputs: bytes) -> None:
    for out in outputs:
        found = CONTROL.search(out)
        assert found is None, f"control character {found.group()!r} in output: {out[:300]!r}"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([PY, "-m", "proximity", *args], capture_output=True, cwd=cwd)


def warned(err: bytes, ref: str) -> int:
    return err.decode().count(f"remote snapshot refs/ecm-remote/origin/{ref} skipped")


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.bare, self.m1, self.m2 = machines(tmp_path)
        self.base = git(self.m1, "rev-parse", "HEAD").stdout.strip()
        # a real local collision on machine one: a (first, right of way; a branch name with
        # a bidi override and a C1 control) and b (yields)
        self.a, self.b = tmp_path / "m1-a", tmp_path / "m1-b"
        self.branch_a = "feat/\u202eevil\u009b"
        git(self.m1, "worktree", "add", "-q", "-b", self.branch_a, str(self.a))
        git(self.m1, "worktree", "add", "-q", "-b", "feat/b", str(self.b))
        (self.a / "f.txt").write_text(lines(30).replace("line 10\n", "alpha\n"))
        git(self.a, "commit", "-qam", "a")
        (self.b / "f.txt").write_text(lines(30).replace("line 10\n", "beta\n"))
        git(self.b, "commit", "-qam", "b")


BAD: dict[str, bytes] = {
    "list": b"[1, 2, 3]",
    "strclock": json.dumps(meta("evil", "strclock", clock="12")).encode(),
    "deep": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "deep16k": b"[" * 5000 + b"]" * 5000,
    "huge": json.dumps(meta("evil", "huge", subject="s" * 2_000_000)).encode(),
    "nan": json.dumps(meta("evil", "nan", time=float("nan"))).encode(),
    "negclock": json.dumps(meta("evil", "negclock", clock={"x": -1})).encode(),
    "bigclock": json.dumps(meta("evil", "bigclock", clock={"x": 10**30})).encode(),
    "floatclock": json.dumps(meta("evil", "floatclock", clock={"x": 1.5})).encode(),
    "noschema": json.dumps({k: v for k, v in meta("evil", "noschema").items()
                            if k != "schema"}).encode(),
    "impostor": json.dumps(meta("someone-else", "impostor")).encode(),
    "garbage": b"\x1b]0;pwned\x07\xff\xfe not json",
}
HOSTILE_OK: dict[str, bytes] = {
    "escapes": json.dumps(meta(
        "evil", "escapes", branch="\x1b]0;owned\x07feat/\x1b[31mred\u202e\u009b",
        subject="\u009b2J hi \x1b[2J\x07\x08\x00 bye")).encode(),
    "future": json.dumps(meta("evil", "future", time=1e12, created=1e12)).encode(),
}


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path)
    refs = {f"evil/{k}": v for k, v in {**BAD, **HOSTILE_OK}.items()}
    publish_raw(w.bare, w.base, refs)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=w.bare, input=b"x",
                          capture_output=True, check=True).stdout.decode().strip()
    git(w.bare, "update-ref", "refs/ecm/evil/blob", blob)
    return w


BAD_REFS = [*BAD, "blob"]


def test_crafted_refs_never_break_a_command_nor_the_guard(world: World, tmp_path: Path):
    w = world
    r = run("sync", "-C", str(w.m1))
    assert r.returncode == 0, r.stderr
    outputs = [r]
    for args in (["scan"], ["scan", "--json"], ["status"], ["watch", "--once"],
                 ["view", "--out", str(tmp_path / "view.html")], ["view", "--json"],
                 ["sync", "--dry-run"], ["sync", "--json"]):
        p = run(*args, "-C", str(w.a))
        assert p.returncode == 0, (args, p.stderr[-2000:])
        assert b"Traceback" not in p.stderr
        outputs.append(p)
    for p in outputs:
        assert_clean(p.stdout, p.stderr)
        if b"skipped" in p.stderr:  # commands that read remote agents: one warning per ref
            for name in BAD_REFS:
                assert warned(p.stderr, f"evil/{name}") == 1, (name, p.stderr.decode())
    scan = json.loads(run("scan", "--json", "-C", str(w.a)).stdout)
    by_id = {a["id"]: a for a in scan["agents"]}
    assert {"evil/escapes", "evil/future"} <= set(by_id)  # valid ones still count
    assert not set(by_id) & {f"evil/{n}" for n in BAD_REFS}
    # pairs of two other machines' agents are theirs to judge: thousands of remote agents
    # cost this machine pairs with its own worktrees only (never quadratic)
    assert scan["pairs"] and not any(by_id[p["a"]]["remote"] and by_id[p["b"]]["remote"]
                                     for p in scan["pairs"])
    for a in scan["agents"]:
        for key in ("id", "branch", "subject", "path"):
            assert safetext.is_clean(a[key] or ""), (key, a[key])
    html = (tmp_path / "view.html").read_bytes()
    assert_clean(html)
    assert b"evil/escapes" in html
    # the guard still judges the local pair: b yields to a and is blocked, a goes through
    p = subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=w.b, capture_output=True)
    assert p.returncode == 1 and b"push blocked" in p.stderr, p.stderr.decode()
    assert_clean(p.stdout, p.stderr)
    for name in BAD_REFS:
        assert warned(p.stderr, f"evil/{name}") == 1
    p = subprocess.run(["git", "push", "-q", "origin", w.branch_a], cwd=w.a,
                       capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    assert_clean(p.stdout, p.stderr)
    # the commit hooks never read others' snapshots: no remote warning, no failure
    (w.b / "g.txt").write_text("g\n")
    git(w.b, "add", "g.txt")
    p = subprocess.run(["git", "commit", "-qm", "g"], cwd=w.b, capture_output=True)
    assert p.returncode == 0 and b"remote snapshot" not in p.stderr, p.stderr.decode()
    assert_clean(p.stdout, p.stderr)


def test_times_are_bounded_by_what_this_machine_saw(world: World):
    w = world
    assert run("sync", "-C", str(w.m1)).returncode == 0
    ctx = workspace.open_context(str(w.m1))
    try:
        import time

        t0 = time.time()
        fresh = {a.id: a for a in remote_mod.agents(ctx, now=t0)}
        future = fresh["evil/future"]
        # a claimed creation in the far future is clamped to when we first saw it
        assert future.started is not None and future.started <= t0
        # 4 days after we first saw it unchanged it is stale, whatever time it claims
        later = t0 + remote_mod.TTL_SECONDS + 60
        assert "evil/future" not in {a.id for a in remote_mod.agents(ctx, now=later)}
        assert "evil/future" in {a.id for a in remote_mod.agents(ctx, include_stale=True,
                                                                 now=later)}
    finally:
        ctx.close()
    # a changed snapshot is a new one: first seen now, fresh again
    publish_raw(w.bare, w.base, {"evil/future": json.dumps(
        meta("evil", "future", time=1e12, created=1e12, subject="again")).encode()})
    assert run("sync", "-C", str(w.m1)).returncode == 0
    ctx = workspace.open_context(str(w.m1))
    try:
        t1 = time.time()
        again = {a.id: a for a in remote_mod.agents(ctx, now=t1)}
        assert again["evil/future"].subject == "again"
        # still fresh just before its own TTL runs out (counted from when we saw *it*)
        soon = t1 + remote_mod.TTL_SECONDS - 60
        assert "evil/future" in {a.id for a in remote_mod.agents(ctx, now=soon)}
    finally:
        ctx.close()


def test_thousands_of_refs_are_bounded_and_cheap(tmp_path: Path):
    w = World(tmp_path)
    # an established teammate, known before the flood of new machine ids
    publish_raw(w.bare, w.base, {"team/w0": json.dumps(meta("team", "w0")).encode()})
    assert run("sync", "-C", str(w.m1)).returncode == 0
    refs = {f"crowd{i // 50}/w{i % 50}": json.dumps(meta(f"crowd{i // 50}", f"w{i % 50}"))
            .encode() for i in range(1500)}
    refs.update({f"greedy/w{i}": json.dumps(meta("greedy", f"w{i}")).encode()
                 for i in range(100)})
    publish_raw(w.bare, w.base, refs)
    r = run("sync", "--json", "-C", str(w.m1))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["remote_agents"] == untrusted.MAX_REFS
    assert r.stderr.decode().count("over the limits") == 1
    ctx = workspace.open_context(str(w.m1))
    try:
        found = remote_mod.agents(ctx, include_stale=True)
        assert sum(a.machine == "greedy" for a in found) <= untrusted.MAX_REFS_PER_MACHINE
        assert "team/w0" in {a.id for a in found}  # not crowded out by the newcomers
    finally:
        ctx.close()
    # the guard still blocks the real local collision, and pays for no remote pair
    p = subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=w.b, capture_output=True)
    assert p.returncode == 1 and b"push blocked" in p.stderr, p.stderr.decode()
    loose = git(w.m1, "count-objects", "-v").stdout
    assert int(re.search(r"^count: (\d+)", loose, re.M).group(1)) < 100  # type: ignore[union-attr]
    # teammates retire their refs: the next sync prunes our copies and the cached verdicts
    gone = git(w.bare, "for-each-ref", "--format=delete %(refname)", "refs/ecm/").stdout
    subprocess.run(["git", "update-ref", "--stdin"], cwd=w.bare, input=gone.encode(), check=True)
    assert run("sync", "-C", str(w.m1)).returncode == 0
    assert git(w.m1, "for-each-ref", "refs/ecm-remote/origin/crowd0/").stdout == ""
    ctx = workspace.open_context(str(w.m1))
    try:
        assert ctx.ledger is not None
        assert len(ctx.ledger.cache("remote", lazy=False)) < 100
    finally:
        ctx.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids,
                                                              max_size=4),
    max_leaves=12)


@st.composite
def metas(draw: st.DrawFn) -> bytes:
    """Valid metadata with some fields replaced by anything, or anything at all."""
    base = meta("hyp", "w")
    if draw(st.booleans()):
        for key in draw(st.lists(st.sampled_from(sorted(base)), max_size=3)):
            base[key] = draw(json_values)
        return json.dumps(base).encode()
    return json.dumps(draw(json_values)).encode()


@settings(max_examples=300, deadline=None)
@given(st.one_of(metas(), st.binary(max_size=200)))
def test_parse_meta_accepts_or_rejects_never_crashes(raw: bytes):
    try:
        m = untrusted.parse_meta(raw)
    except untrusted.Invalid:
        return
    for s in (m.machine, m.worktree, m.branch or "", m.subject, *m.clock):
        assert safetext.is_clean(s)
    assert all(0 <= v <= untrusted.MAX_CLOCK_VALUE for v in m.clock.values())


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=300))
def test_text_is_printable_and_bounded(s: str, limit: int):
    out = safetext.text(s, limit)
    assert len(out) <= limit and safetext.is_clean(out)
    assert CONTROL.search(out.encode("utf-8")) is None


def test_hypothesis_metadata_end_to_end(tmp_path: Path):
    w = World(tmp_path)
    n = [0]

    @settings(max_examples=4, deadline=None)
    @given(st.lists(metas(), min_size=1, max_size=4))
    def check(bodies: list[bytes]) -> None:
        refs = {}
        for body in bodies:
            n[0] += 1
            refs[f"hyp/w{n[0]}"] = body.replace(b'"worktree": "w"', f'"worktree": "w{n[0]}"'
                                                .encode())
        publish_raw(w.bare, w.base, refs)
        for args in (["sync"], ["scan", "--json"], ["status"]):
            p = run(*args, "-C", str(w.a))
            assert p.returncode == 0, (args, p.stderr[-2000:])
            assert_clean(p.stdout, p.stderr)
        for ref in refs:  # each bad one named exactly once
            count = warned(p.stderr, ref)
            assert count in (0, 1)
        p = subprocess.run(["git", "push", "-q", "origin", "feat/b"], cwd=w.b,
                           capture_output=True)
        assert p.returncode == 1 and b"push blocked" in p.stderr, p.stderr.decode()
        assert_clean(p.stdout, p.stderr)

    check()


def secret_world(tmp_path: Path) -> tuple[Path, Path, Path]:
    toml = 'sync_exclude = ["build/*", "*.log"]\nsync_max_bytes = 2000\n'
    bare, m1, _ = machines(tmp_path, toml=toml)
    (m1 / "data.csv").write_text("x,y\n" * 100)  # tracked, 400 bytes
    git(m1, "add", "data.csv")
    git(m1, "commit", "-qm", "data")
    untracked = [".env", ".env.local", "prod.env", "id_rsa", "id_ed25519.pub", "server.key",
                 "cert.pem", "store.p12", "store.pfx", "credentials.json", ".netrc", ".npmrc",
                 ".pypirc", "my_secret.txt", "conf/.env.production", "build/out.txt",
                 "debug.log", "notes.txt", "src/new.py"]
    for name in untracked:
        (m1 / name).parent.mkdir(parents=True, exist_ok=True)
        public = name in ("notes.txt", "src/new.py")
        (m1 / name).write_text(f"{name} = {'public' if public else 'hunter2'}\n")
    (m1 / "big.bin").write_bytes(b"\0" * 3000)
    (m1 / "f.txt").write_text(lines(30).replace("line 3\n", "mine\n"))  # tracked, published
    (m1 / "data.csv").write_text("x,y\n" * 1000)  # tracked, now over the limit
    sib = tmp_path / "m1-sib"
    git(m1, "worktree", "add", "-q", "-b", "feat/sib", str(sib))
    (sib / "secret.env").write_text("TOKEN=hunter2\n")
    (sib / "ok.txt").write_text("fine\n")
    return bare, m1, sib


def test_secrets_large_and_excluded_files_never_leave(tmp_path: Path):
    bare, m1, _sib = secret_world(tmp_path)
    r = cli("sync", "--json", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    mid = (m1 / ".git" / "ecm" / "machine-id").read_text().strip()
    main = set(git(bare, "ls-tree", "-r", "--name-only", f"refs/ecm/{mid}/main").stdout.split())
    assert {"notes.txt", "src/new.py", "f.txt", "data.csv", ".proximity.toml"} <= main
    never = {".env", ".env.local", "prod.env", "id_rsa", "id_ed25519.pub", "server.key",
             "cert.pem", "store.p12", "store.pfx", "credentials.json", ".netrc", ".npmrc",
             ".pypirc", "my_secret.txt", "conf/.env.production", "build/out.txt", "debug.log",
             "big.bin"}
    assert not main & never
    # the tracked file over the limit is published as HEAD has it (no change shown)
    blob = git(bare, "rev-parse", f"refs/ecm/{mid}/main:data.csv").stdout.strip()
    assert blob == git(m1, "rev-parse", "HEAD:data.csv").stdout.strip()
    assert git(bare, "show", f"refs/ecm/{mid}/main:f.txt").stdout.count("mine") == 1
    sib = set(git(bare, "ls-tree", "-r", "--name-only", f"refs/ecm/{mid}/m1-sib").stdout
              .split())
    assert "ok.txt" in sib and "secret.env" not in sib
    # nothing that leaves anywhere holds the secret's content
    everything = git(bare, "rev-list", "--objects", "--all").stdout.split()
    texts = subprocess.run(["git", "cat-file", "--batch"], cwd=bare, capture_output=True,
                           input="\n".join(x for x in everything if len(x) == 40).encode()
                           ).stdout
    assert b"hunter2" not in texts


def test_dry_run_sends_nothing_and_lists_what_would_leave(tmp_path: Path):
    bare, m1, _sib = secret_world(tmp_path)
    before = git(bare, "count-objects", "-v").stdout
    r = cli("sync", "--dry-run", "--json", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["dry_run"] is True
    mid = plan["machine"]
    refs = {x["ref"]: x for x in plan["refs"]}
    assert set(refs) == {f"refs/ecm/{mid}/main", f"refs/ecm/{mid}/m1-sib"}
    main = refs[f"refs/ecm/{mid}/main"]
    paths = {c["path"]: c for c in main["paths"]}
    assert paths["notes.txt"]["size"] == len("notes.txt = public\n")
    assert {"notes.txt", "src/new.py", "f.txt"} <= set(paths)
    held = {x["path"]: x["reason"] for x in main["withheld"]}
    assert held[".env"] == "secret" and held["big.bin"] == "too large"
    assert held["build/out.txt"] == "excluded" and held["data.csv"] == "too large"
    assert not set(paths) & set(held)
    assert git(bare, "ls-remote", str(bare), "refs/ecm/*").stdout == ""
    assert git(bare, "count-objects", "-v").stdout == before
    assert git(m1, "for-each-ref", "refs/ecm-remote/").stdout == ""
    text = cli("sync", "--dry-run", "-C", str(m1))
    assert text.returncode == 0 and "nothing sent" in text.stdout
    assert "withheld (secret): .env" in text.stdout and "notes.txt" in text.stdout
    assert git(bare, "ls-remote", str(bare), "refs/ecm/*").stdout == ""


def test_every_rendering_of_hostile_strings_is_clean():
    """Advisory text, scan text, inbox messages, the notify JSON, tables and the view data:
    no control character, whatever the names, paths and details hold."""
    import io

    from proximity.commands import view
    from proximity.model import Agent, Finding, PairResult, Scan
    from proximity.tcas import actions
    from proximity.views import messages, report, tables

    evil = "\x1b]0;title\x07\x1b[2J\u202e\u009b\x00" + "x" * 100_000
    me = Agent("main", "/w", "feat/\u202emine", "a" * 40)
    them = Agent("evil/w", "origin:evil/w", evil, "b" * 40, remote=True, subject=evil)
    finding = Finding("overlap", 1.0, "src/" + evil, "src/" + evil, ((1, 2),), ((1, 2),),
                      detail=evil)
    pair = PairResult("main", "evil/w", 0.9, dict.fromkeys(
        ("conflict", "overlap", "symbol", "dependency", "tree"), 0.9), "resolution", "main",
        (finding,))
    scan = Scan([me, them], [pair], changed={"main": {"src/" + evil}, "evil/w": {evil}})
    outs = [report.advisory_text(pair, "main", {a.id: a for a in scan.agents}),
            report.scan_text(scan)]
    for recipient, sender, kind, p in actions.plan(scan):
        msg = actions.body(p, {"main": me, "evil/w": them}[sender], recipient, kind, scan, {})
        outs += [json.dumps(msg, ensure_ascii=False), messages.render(msg)]
    buf = io.StringIO()
    con = tables.console(file=buf, width=100)
    tables.status(scan, con)
    con.print(tables.frame(scan, {}, [{"type": evil, "from": evil, "to": "main"}]))
    outs.append(buf.getvalue())
    outs.append(json.dumps(view.data(scan, evil), ensure_ascii=False))
    for out in outs:
        assert_clean(out.encode("utf-8", "surrogateescape"))
        assert len(out) < 20_000  # a 100k-character name is never printed in full
