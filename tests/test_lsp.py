"""`proximity lsp` end to end: the server as a subprocess, a real LSP client session
(pytest-lsp), real worktrees with real live work in them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from conftest import git, lines
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from proximity import unsaved

APP = lines(30)
SERVER = [sys.executable, "-m", "proximity", "lsp"]
pytestmark = pytest.mark.asyncio
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


async def test_the_same_change_as_theirs_is_not_a_conflict(client: LanguageClient,
                                                            work) -> None:  # type: ignore[no-untyped-def]
    _sp, a, _b = work
    u = open_doc(client, a / "app.txt", APP.replace("line 12\n", "line 12 by b\n"))
    ds = await diagnostics(client, u, lambda d: bool(d))
    assert lines_of(ds, types.DiagnosticSeverity.Error) == []
    assert lines_of(ds, types.DiagnosticSeverity.Warning) == []


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
