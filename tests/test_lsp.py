"""`proximity lsp` end to end: the server as a subprocess, a real LSP client session
(pytest-lsp), real worktrees with real live work in them."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from conftest import git, held_over, lines
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from proximity import unsaved

APP = lines(30)
SERVER = [sys.executable, "-m", "proximity", "lsp"]
WAIT = 20.0  # seconds a test waits for what should come in well under one


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=os.getpid()))
    yield
    await lsp_client.shutdown_session()


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def open_doc(client: LanguageClient, path: Path, text: str | None = None) -> str:
    u = uri(path)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        u, "plaintext", 1, path.read_text() if text is None else text)))
    return u


def change(client: LanguageClient, u: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version, u),
        [types.TextDocumentContentChangeWholeDocument(text)]))


async def diagnostics(client: LanguageClient, u: str,
                      until: Callable[[Sequence[types.Diagnostic]], bool] = lambda d: True,
                      timeout: float = WAIT) -> list[types.Diagnostic]:
    """The document's diagnostics once ``until`` holds for the latest published."""
    deadline = time.monotonic() + timeout
    while True:
        got = client.diagnostics.get(u)
        if got is not None and until(got):
            return list(got)
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no such diagnostics for {u}: last {got!r}")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), left)


def lines_of(ds: Sequence[types.Diagnostic], severity: types.DiagnosticSeverity) -> list[int]:
    return sorted(d.range.start.line + 1 for d in ds if d.severity == severity)


@pytest.fixture
def work(space):  # type: ignore[no-untyped-def]
    """A person in worktree a; an agent in b rewriting line 12 of app.txt (unsaved to git:
    live work, uncommitted)."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    return sp, a, b


@pytest.mark.asyncio
async def test_open_shows_the_siblings_lines_and_an_unsaved_conflict_is_an_error(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, _b = work
    u = open_doc(client, a / "app.txt")
    ds = await diagnostics(client, u, lambda d: bool(d))
    (d,) = ds
    assert d.severity == types.DiagnosticSeverity.Information and d.range.start.line == 11
    assert "worktree 'b' (branch feat/b)" in d.message and "line 12 by b" in d.message
    assert d.source == "proximity"

    other = open_doc(client, a / "other.txt")
    assert await diagnostics(client, other) == []

    # the person types on b's line, without saving: an error, in the check's words
    change(client, u, 2, APP.replace("line 12\n", "line 12 typed by a\n"))
    ds = await diagnostics(client, u, lambda d: any(
        x.severity == types.DiagnosticSeverity.Error for x in d))
    (err,) = [x for x in ds if x.severity == types.DiagnosticSeverity.Error]
    assert err.range.start.line == 11
    assert err.message.startswith("proximity check: DENY: worktree 'b' (branch feat/b) changed")

    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(u), types.Position(11, 2)))
    assert hover is not None
    body = hover.contents.value  # type: ignore[union-attr]
    assert "+line 12 by b" in body and "Who yields" in body and "What to do" in body

    # typing elsewhere instead: back to information only
    change(client, u, 3, APP.replace("line 25\n", "line 25 typed by a\n"))
    ds = await diagnostics(client, u, lambda d: not lines_of(d, types.DiagnosticSeverity.Error))
    assert lines_of(ds, types.DiagnosticSeverity.Information) == [12]
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []


@pytest.mark.asyncio
async def test_right_of_way_on_the_persons_lines_is_information_not_a_warning(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    """A person who goes first in a wait cycle (denied for b's work before b was denied
    for theirs) sees b's lines as their right-of-way: information to go on with, never a
    warning they would stop at while b waits on them."""
    sp, a, b = work
    sp.write(a, "other.txt", lines(5).replace("line 3\n", "line 3 by a\n"))
    for wt in (a, b):
        subprocess.run([*SERVER[:-1], "snapshot", "-C", str(wt)], check=True,
                       capture_output=True)
    for wt, spec in ((a, "app.txt:12"), (b, "other.txt:3")):  # a waits first, then b
        got = subprocess.run([*SERVER[:-1], "check", "--json", spec], cwd=wt,
                             capture_output=True, text=True)
        assert json.loads(got.stdout)["decision"] == "deny", got.stdout
    u = open_doc(client, a / "app.txt")
    change(client, u, 2, APP.replace("line 12\n", "line 12 typed by a\n"))
    ds = await diagnostics(client, u, lambda d: any(
        "right-of-way" in x.message for x in d))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == []
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []
    (mine,) = [x for x in ds if "right-of-way" in x.message]
    assert mine.severity == types.DiagnosticSeverity.Information and mine.range.start.line == 11
    assert "you have right-of-way here" in mine.message and "'b'" in mine.message


@pytest.mark.asyncio
async def test_typing_onto_lines_only_the_yielding_side_changed_is_not_right_of_way(
        client: LanguageClient, space) -> None:  # type: ignore[no-untyped-def]
    """The person holds right-of-way over b (a standing Resolution Advisory: their
    committed lines meet on line 11, a came first). Typing on line 11 is theirs to go on
    with; typing on line 20, which only b changed, is a new collision where b came first:
    an error, as for anyone. The typed buffer is the edit asked about, not a change the
    person had made before it."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    held_over(sp, a, b, APP, far=20)
    subprocess.run([*SERVER[:-1], "scan", "-C", str(sp.main)], check=True,
                   capture_output=True)  # records the pair's decision: b yields to a
    mine = (a / "app.txt").read_text()
    u = open_doc(client, a / "app.txt")
    change(client, u, 2, mine.replace("line 20\n", "line 20 typed by a\n"))
    ds = await diagnostics(client, u, lambda d: any(
        x.severity == types.DiagnosticSeverity.Error for x in d))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == [20], ds
    assert not [x for x in ds if "right-of-way" in x.message and x.range.start.line == 19]
    change(client, u, 3, mine.replace("line 11 a\n", "line 11 typed again by a\n"))
    ds = await diagnostics(client, u, lambda d: any("right-of-way" in x.message for x in d))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == []
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=SERVER, server_env={**os.environ, "PROXIMITY_LSP_REASK": "1"}))
async def reasking(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """A session whose server judges a document showing a deny again every second."""
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=os.getpid()))
    yield
    await lsp_client.shutdown_session()


def standing_wait(sp, waiter: str, holder: str) -> tuple[float, float] | None:  # type: ignore[no-untyped-def]
    """(since, last asked) of the ledger's wait of ``waiter`` on ``holder``."""
    from proximity.ledger import Ledger

    led = Ledger(str(sp.main / ".git" / "ecm"), create=False)
    try:
        row = led.db.execute("SELECT value FROM cache WHERE kind='waits' AND key=?",
                             (f"{waiter}\t{holder}",)).fetchone()
    finally:
        led.close()
    return None if row is None else tuple(json.loads(row[0]))  # type: ignore[return-value]


@pytest.mark.asyncio
async def test_a_person_shown_a_deny_keeps_waiting_without_a_keystroke(
        reasking: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    """A person denied for b's lines who stops typing still waits on b: the document is
    judged again while the deny stands (here every second), so the wait stays standing
    in the ledger -- a wait asked no more lapses, and a cycle of waits through the person
    could no longer be broken. Typing elsewhere ends the deny, and the asking. Opening
    the file, which shows b's lines, is no wait at all."""
    client = reasking
    sp, a, b = work
    for wt in (a, b):  # (the ledger the waits are kept in)
        subprocess.run([*SERVER[:-1], "snapshot", "-C", str(wt)], check=True,
                       capture_output=True)
    u = open_doc(client, a / "app.txt")
    await diagnostics(client, u, lambda d: bool(d))  # b's line, shown: nobody waits for it
    assert standing_wait(sp, "a", "b") is None
    change(client, u, 2, APP.replace("line 12\n", "line 12 typed by a\n"))
    await diagnostics(client, u, lambda d: bool(lines_of(d, types.DiagnosticSeverity.Error)))
    first = standing_wait(sp, "a", "b")
    assert first is not None
    deadline = time.monotonic() + WAIT
    while True:  # no keystroke, no save, nothing moved
        await asyncio.sleep(0.5)
        now = standing_wait(sp, "a", "b")
        if now is not None and now[1] >= first[1] + 2:
            break
        assert time.monotonic() < deadline, (first, now)
    assert abs(now[0] - first[0]) < 0.01  # the same wait, asked again (SQLite rounds)
    assert lines_of(client.diagnostics[u], types.DiagnosticSeverity.Error) == [12]

    change(client, u, 3, APP.replace("line 25\n", "line 25 typed by a\n"))
    await diagnostics(client, u, lambda d: not lines_of(d, types.DiagnosticSeverity.Error))
    await asyncio.sleep(0.5)
    last = standing_wait(sp, "a", "b")
    await asyncio.sleep(3)
    assert standing_wait(sp, "a", "b") == last


@pytest.mark.asyncio
async def test_a_standing_deny_is_not_judged_again_by_its_own_wait(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    """The deny records the person's wait in the ledger; the live look saw that write as
    a sibling's change and judged again, which wrote again: the same diagnostics a few
    times a second (found by a new user: 77 in 15 s, the server at 13 % of a core). With
    nothing moving, the deny is asked again only when its re-asking is due."""
    sp, a, b = work
    for wt in (a, b):
        subprocess.run([*SERVER[:-1], "snapshot", "-C", str(wt)], check=True,
                       capture_output=True)
    u = open_doc(client, a / "app.txt")
    await diagnostics(client, u, lambda d: bool(d))
    change(client, u, 2, APP.replace("line 12\n", "line 12 typed by a\n"))
    await diagnostics(client, u, lambda d: bool(lines_of(d, types.DiagnosticSeverity.Error)))
    await asyncio.sleep(1.0)  # (the judgement's own write has been looked at)
    first = standing_wait(sp, "a", "b")
    assert first is not None
    await asyncio.sleep(3.0)
    assert standing_wait(sp, "a", "b") == first
    assert lines_of(client.diagnostics[u], types.DiagnosticSeverity.Error) == [12]


@pytest.mark.asyncio
async def test_traffic_next_to_a_sibling_waiting_on_the_person_is_information(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    """The person types two lines from b's line 12 (git merges that cleanly): traffic, a
    warning, which a person stops at. Once b is denied on the person's saved lines and
    waits on them, it is information: the person goes on, or both would wait unseen."""
    sp, a, b = work
    sp.write(a, "other.txt", lines(5).replace("line 3\n", "line 3 by a\n"))
    for wt in (a, b):
        subprocess.run([*SERVER[:-1], "snapshot", "-C", str(wt)], check=True,
                       capture_output=True)
    u = open_doc(client, a / "app.txt")
    change(client, u, 2, APP.replace("line 10\n", "line 10 typed by a\n"))
    ds = await diagnostics(client, u, lambda d: bool(
        lines_of(d, types.DiagnosticSeverity.Warning)))
    got = subprocess.run([*SERVER[:-1], "check", "--json", "other.txt:3"], cwd=b,
                         capture_output=True, text=True)
    assert json.loads(got.stdout)["decision"] == "deny", got.stdout  # b waits on a
    change(client, u, 3, APP.replace("line 10\n", "line 10 typed again by a\n"))
    ds = await diagnostics(client, u, lambda d: any("waits on your work" in x.message
                                                    for x in d))
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []
    (info,) = [x for x in ds if "waits on your work" in x.message]
    assert info.severity == types.DiagnosticSeverity.Information


@pytest.mark.asyncio
async def test_the_persons_lines_are_placed_where_gits_merge_places_them(
        client: LanguageClient, space) -> None:  # type: ignore[no-untyped-def]
    """The person adds a third `b = 2` to a run of two. Python's difflib places it after
    line 1; git's diff and git's merge after line 3, on b's change of line 4: an error,
    as the merge of the two would conflict (a warning, two lines away, before)."""
    base = "x = 1\nb = 2\nb = 2\n[deps]\nx = 1\n\n[deps]\n"
    sp = space({"setup.cfg": base})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "setup.cfg", base.replace("[deps]\nx", "[deps] # b\nx"))
    u = open_doc(client, a / "setup.cfg")
    change(client, u, 2, base.replace("b = 2\n[deps]", "b = 2\nb = 2\n[deps]"))
    ds = await diagnostics(client, u, lambda d: bool(
        lines_of(d, types.DiagnosticSeverity.Error)
        + lines_of(d, types.DiagnosticSeverity.Warning)))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == [4], ds


@pytest.mark.asyncio
async def test_the_same_change_as_theirs_is_not_a_conflict(client: LanguageClient,
                                                            work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, _b = work
    u = open_doc(client, a / "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    ds = await diagnostics(client, u, lambda d: bool(d))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == []
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []


@pytest.mark.asyncio
async def test_a_siblings_change_updates_the_open_buffer_with_no_client_action(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    sp, a, b = work
    u = open_doc(client, a / "app.txt")
    await diagnostics(client, u, lambda d: lines_of(d, types.DiagnosticSeverity.Information)
                      == [12])
    began = time.monotonic()
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n").replace(
        "line 20\n", "line 20 by b\n"))
    ds = await diagnostics(client, u, lambda d: lines_of(
        d, types.DiagnosticSeverity.Information) == [12, 20])
    assert time.monotonic() - began < 5
    assert all("feat/b" in d.message for d in ds)


@pytest.mark.asyncio
async def test_an_agents_check_sees_the_persons_unsaved_lines(client: LanguageClient,
                                                               work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, b = work
    u = open_doc(client, a / "app.txt")
    await diagnostics(client, u, lambda d: bool(d))
    change(client, u, 2, APP.replace("line 3\n", "line 3 typed by a\n"))
    await diagnostics(client, u, lambda d: True)
    proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--json",
                           "app.txt:3"], cwd=b, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert '"agent": "a"' in proc.stdout and "line 3 typed by a" in proc.stdout
    # closed without saving: the disk is the truth again
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        types.TextDocumentIdentifier(u)))
    await diagnostics(client, u, lambda d: not d)
    deadline = time.monotonic() + WAIT
    while os.listdir(unsaved.directory(os.path.join(git(a, "rev-parse", "--path-format=absolute",
                                                         "--git-common-dir").stdout.strip(),
                                                     "ecm"))):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    again = subprocess.run([sys.executable, "-m", "proximity", "check", "app.txt:3"], cwd=b,
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stdout


async def logged(client: LanguageClient, needle: str, timeout: float = WAIT) -> str:
    """The first log message containing ``needle`` (waiting for it)."""
    deadline = time.monotonic() + timeout
    while True:
        for m in client.log_messages:
            if needle in m.message:
                return m.message
        assert time.monotonic() < deadline, [m.message for m in client.log_messages]
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_what_cannot_be_judged_is_one_log_line_and_no_diagnostics(
        client: LanguageClient, space, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sp = space({"app.txt": APP})
    a = sp.wt("a")
    outside = tmp_path / "loose.txt"
    outside.write_text("not in any repository\n")
    u = open_doc(client, outside)
    assert await diagnostics(client, u) == []
    assert "not in a git worktree; no diagnostics" in await logged(client, "loose.txt")

    blob = a / "image.bin"
    blob.write_bytes(b"\x89PNG\0\0\x1b[31m")
    ub = open_doc(client, blob, "\x89PNG\0\0")
    assert await diagnostics(client, ub) == []
    await logged(client, "image.bin: a binary file")

    huge = a / "huge.txt"
    huge.write_text("x\n" * 600_000)
    uh = open_doc(client, huge)
    assert await diagnostics(client, uh) == []
    await logged(client, "huge.txt: too large to judge as you type")

    other = client.text_document_hover_async(types.HoverParams(  # the server still answers
        types.TextDocumentIdentifier(uh), types.Position(0, 0)))
    assert await other is None


@pytest.mark.asyncio
async def test_no_git_on_the_path_is_said_once_and_shows_nothing(space) -> None:  # type: ignore[no-untyped-def]
    from pytest_lsp.client import make_test_lsp_client

    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    lc = make_test_lsp_client()
    await lc.start_io(*SERVER, env={**os.environ, "PATH": "/nonexistent"})
    try:
        await lc.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), process_id=os.getpid()))
        u = open_doc(lc, a / "app.txt")
        assert await diagnostics(lc, u) == []
        line = await logged(lc, "app.txt: not judged (")
        assert "Traceback" not in line and "\n" not in line
        await lc.shutdown_session()
    finally:
        await lc.stop()


@pytest.mark.asyncio
async def test_a_malformed_message_is_logged_and_the_session_goes_on(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, _b = work
    proc = client._server
    assert proc is not None and proc.stdin is not None
    proc.stdin.write(b"Content-Length: 9\r\n\r\n{\"bad\": }")
    odd = b'{"jsonrpc": "2.0", "id": "x"}'  # a response to nothing
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(odd) + odd)
    big = 65 << 20
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % big + b" " * big)
    await proc.stdin.drain()
    await logged(client, "too large to read; skipped")
    u = open_doc(client, a / "app.txt")
    assert [d.range.start.line for d in await diagnostics(client, u, bool)] == [11]
    assert not any("Traceback" in m.message for m in client.log_messages)


def test_a_client_that_never_reads_costs_bounded_memory_and_the_server_still_exits(
        tmp_path: Path) -> None:
    """Thousands of notifications whose answers nobody reads, then the editor closes
    the pipe: the server is gone within seconds, its memory bounded on the way."""
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None

    def send(body: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    send(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
         b'{"processId": null, "capabilities": {}}}')
    send(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    for i in range(4000):
        u = (tmp_path / f"f{i}.txt").as_uri()
        send(b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":'
             b' {"uri": "%s", "languageId": "plaintext", "version": 1, "text": "%s"}}}'
             % (u.encode(), b"x" * 2000))
        send(b'{"jsonrpc": "2.0", "method": "textDocument/didClose", "params": '
             b'{"textDocument": {"uri": "%s"}}}' % u.encode())
    proc.stdin.flush()
    time.sleep(2)
    with open(f"/proc/{proc.pid}/status") as f:
        rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
    assert rss < 300_000, f"{rss} kB resident"
    proc.stdin.close()
    try:
        assert proc.wait(timeout=15) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.asyncio
async def test_their_text_is_shown_safe_and_actions_tell_them_and_show_the_inbox(
        client: LanguageClient, work) -> None:  # type: ignore[no-untyped-def]
    sp, a, b = work
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 \x1b[31mred\x1b]0;title\x07\n"))
    u = open_doc(client, a / "app.txt")
    (d,) = await diagnostics(client, u, lambda d: bool(d) and "red" in d[0].message)
    change(client, u, 2, APP.replace("line 12\n", "line 12 mine\n"))
    await diagnostics(client, u, lambda d: len(d) == 2)
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(u), types.Position(11, 0)))
    assert hover is not None
    body = hover.contents.value  # type: ignore[union-attr]
    for shown in (d.message, body):
        assert "\x1b" not in shown and "\x07" not in shown and "red" in shown

    acts = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(u), types.Range(types.Position(19, 0), types.Position(21, 0)),
        types.CodeActionContext([])))
    assert acts is not None
    titles = [x.title for x in acts]  # type: ignore[union-attr]
    assert titles == ["proximity: tell them I am taking these lines (20-21)",
                      "proximity: show inbox"]
    # lsprotocol's client converter reads any code action that carries a command as a bare
    # Command, its "command" the code action's command object turned into a string
    got = acts[0]
    assert isinstance(got, types.Command)
    intend = ast.literal_eval(got.command) if got.command.startswith("{") else {
        "command": got.command, "arguments": got.arguments}
    assert intend["command"] == "proximity.intend"
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        intend["command"], intend["arguments"]))
    deadline = time.monotonic() + WAIT
    while not any("is taking app.txt:20-21" in m.message for m in client.messages):
        assert time.monotonic() < deadline, client.messages
        await asyncio.sleep(0.05)
    told = subprocess.run([sys.executable, "-m", "proximity", "check", "--json", "app.txt:20"],
                          cwd=b, capture_output=True, text=True)
    assert '"evidence": "intent"' in told.stdout and '"agent": "a"' in told.stdout

    lens = await client.text_document_code_lens_async(types.CodeLensParams(
        types.TextDocumentIdentifier(u)))
    assert lens and "worktree 'b' (branch feat/b)" in lens[0].command.title  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_a_save_records_the_worktrees_state_at_once(client: LanguageClient,
                                                           work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, _b = work
    u = open_doc(client, a / "app.txt")
    await diagnostics(client, u, bool)
    (a / "app.txt").write_text(APP.replace("line 3\n", "line 3 saved\n"))
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(u)))
    deadline = time.monotonic() + WAIT
    while True:
        got = subprocess.run([sys.executable, "-m", "proximity", "ledger", "--json"], cwd=a,
                             capture_output=True, text=True)
        if got.returncode == 0 and any(e["stream"] == "a" and e["kind"] == "snapshot"
                                       and "app.txt" in e["files"]
                                       for e in json.loads(got.stdout)["events"]):
            break
        assert time.monotonic() < deadline, got.stdout + got.stderr
        await asyncio.sleep(0.2)


@pytest.mark.asyncio
async def test_a_definition_changed_unsaved_names_the_siblings_new_call(
        client: LanguageClient, space) -> None:  # type: ignore[no-untyped-def]
    lib = "RATE = 3\n\n\ndef total(n):\n    return n * RATE\n"
    sp = space({"lib.py": lib, "app.py": "import lib\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.py", "import lib\n\nprint(lib.total(3))\n")  # b's new call
    subprocess.run([sys.executable, "-m", "proximity", "snapshot"], cwd=b, check=True,
                   capture_output=True)
    u = open_doc(client, a / "lib.py")
    assert await diagnostics(client, u) == []
    change(client, u, 2, lib.replace("def total(n):", "def total(n, rate):"))
    ds = await diagnostics(client, u, bool)
    (w,) = ds
    assert w.severity == types.DiagnosticSeverity.Warning and w.range.start.line == 3
    assert "total, defined in your line 4 of lib.py, is used by worktree 'b'" in w.message
    assert "app.py:3" in w.message


@pytest.mark.asyncio
async def test_a_call_a_siblings_changed_signature_breaks_is_marked_with_the_new_one(
        client: LanguageClient, space) -> None:  # type: ignore[no-untyped-def]
    lib = "RATE = 3\n\n\ndef total(n):\n    return n * RATE\n"
    app = "import lib\n\nprint(lib.total(3))\n"
    sp = space({"lib.py": lib, "app.py": app})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "lib.py", lib.replace("def total(n):", "def total(n, rate):"))
    subprocess.run([sys.executable, "-m", "proximity", "snapshot"], cwd=b, check=True,
                   capture_output=True)  # (its PostToolUse records it)
    u = open_doc(client, a / "app.py")
    (w,) = await diagnostics(client, u, bool)
    assert w.severity == types.DiagnosticSeverity.Warning and w.range.start.line == 2
    assert "worktree 'b' (branch feat/b) changed the signature of total in lib.py:4" in w.message
    assert "`def total(n, rate):`" in w.message
    # a new call typed by the person is marked as it is typed
    change(client, u, 2, app + "x = lib.total(4)\n")
    ds = await diagnostics(client, u, lambda d: len(d) == 2)
    assert sorted(d.range.start.line for d in ds) == [2, 3]
    # the typed call is the check's own finding, once, in the scan's words
    (typed,) = [d for d in ds if d.range.start.line == 3]
    assert "the call at app.py:4 no longer binds (missing required 'rate')" in typed.message
    # in the file that defines it, their changed header is their line, not a call of ours
    other = open_doc(client, a / "lib.py")
    (info,) = await diagnostics(client, other, bool)
    assert info.severity == types.DiagnosticSeverity.Information and info.range.start.line == 3


def test_a_judgement_asked_for_again_since_is_skipped(work):  # type: ignore[no-untyped-def]
    """While the worker is busy, a document asked for at each sibling's move queues one
    judgement that counts, not one per move: a queued judgement older than the document's
    last is skipped (its buffer is not even shared), the last one is made."""
    from proximity.lsp import documents, server

    _sp, a, _b = work
    ls = server.build()
    path = str((a / "app.txt").resolve())
    doc = documents.Doc(uri(a / "app.txt"), path, documents.where_of(path), 1)
    ls.docs[doc.uri] = doc
    typed = APP.replace("line 12\n", "line 12 by the person\n")
    common = git(a, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    shared = os.path.join(common, "ecm", "unsaved")
    doc.asked = 2
    ls.judgement(doc, 1, typed, asked=1)
    assert not doc.shared
    assert not os.path.isdir(shared) or not os.listdir(shared)
    assert doc.seen is None  # nothing asked
    ls.judgement(doc, 1, typed, asked=2)
    try:
        assert doc.shared and doc.seen is not None and doc.seen[0] == typed
    finally:
        documents.unshare(doc)


def test_a_siblings_move_is_judged_at_the_documents_pace_and_a_keystroke_at_once(work):  # type: ignore[no-untyped-def]
    """However fast siblings move, a document is judged again for their moves no sooner
    than PACE times its last judgement's length after it (the judging thread is busy at
    most a fifth of the time); a keystroke is judged at once as ever, and a move never
    puts off a judgement already due sooner."""
    from proximity.lsp import documents, pacing, server

    _sp, a, _b = work
    ls = server.build()
    loop = asyncio.new_event_loop()
    ls.loop = loop
    clock = ls.pacing
    try:
        path = str((a / "app.txt").resolve())
        doc = documents.Doc(uri(a / "app.txt"), path, documents.where_of(path), 1)
        ls.docs[doc.uri] = doc
        doc.asked = 1
        ls.judgement(doc, 1, APP, asked=1)  # a real judgement: its end and length kept
        ended, took = clock.judged[doc.uri]
        assert took > 0 and ended <= time.monotonic()
        assert pacing.paced((ended, took), ended) == pytest.approx(pacing.PACE * took)
        assert pacing.paced(None, ended) == 0.0
        # a judgement that took half a second: the next move's waits two seconds
        now = time.monotonic()
        clock.judged[doc.uri] = (now, 0.5)
        clock.moved(doc.uri)
        assert (clock.due(doc.uri) or 0.0) >= now + 4 * 0.5 - 0.05
        # a keystroke does not wait for it; a move after it does not put it off
        clock.keystroke(doc.uri)
        due = clock.due(doc.uri)
        assert due is not None and due <= time.monotonic() + pacing.DEBOUNCE
        clock.moved(doc.uri)
        assert clock.due(doc.uri) == due
        # long after: a move is judged at once
        assert pacing.paced((now - 10.0, 0.5), now) == 0.0
        clock.forget(doc.uri)
        assert not clock.pending(doc.uri) and doc.uri not in clock.judged
    finally:
        for t in clock.timers.values():
            t.cancel()
        documents.unshare(doc)
        ls.worker.shutdown(wait=True)
        loop.close()


async def hover_once_shown(client: LanguageClient, path: Path, line: int) -> str:
    """The hover's text on ``line`` (0-based) of ``path``, opened, once a diagnostic
    covers that line."""
    u = open_doc(client, path)
    await diagnostics(client, u, lambda d: any(
        g.range.start.line <= line < g.range.end.line for g in d))
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(u), types.Position(line, 0)))
    assert hover is not None
    return str(hover.contents.value)  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_the_hover_reads_work_landed_over_the_holder_as_the_check_does(
        client: LanguageClient, tmp_path: Path) -> None:
    """y was told to yield to x and pushed onto the trunk anyway (PROXIMITY_ALLOW=1): x's
    pre-edit check denies on y's lines (landed work holds). The hover on them says the
    same, not that y was told to yield and x holds course."""
    from test_landing import held

    _main, x, y = held(tmp_path)
    over = subprocess.run(["git", "push", "origin", "y:main"], cwd=y, capture_output=True,
                          text=True, env={**os.environ, "PROXIMITY_ALLOW": "1"})
    assert over.returncode == 0, over.stderr
    asked = subprocess.run([*SERVER[:-1], "check", "--json", "f.txt:20"], cwd=x,
                           capture_output=True, text=True)
    assert json.loads(asked.stdout)["decision"] == "deny", asked.stdout
    body = await hover_once_shown(client, x / "f.txt", 19)
    assert "hold your course" not in body and "you yield now" in body, body


@pytest.mark.asyncio
async def test_the_hover_says_when_the_work_you_yield_to_has_landed(
        client: LanguageClient, tmp_path: Path) -> None:
    """y was told to yield to x; the main checkout lands x's work. y's hover on x's lines
    says it has landed and to rebase now (it said "wait until their work lands")."""
    from test_landing import held

    main, _x, y = held(tmp_path)
    git(main, "merge", "-q", "--ff-only", "x")
    landed = subprocess.run(["git", "push", "origin", "main"], cwd=main,
                            capture_output=True, text=True)
    assert landed.returncode == 0, landed.stderr
    body = await hover_once_shown(client, y / "f.txt", 19)
    assert "their work has landed: rebase onto it now" in body, body
    assert "wait until their work lands" not in body, body
