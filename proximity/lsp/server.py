"""`proximity lsp`: the wiring of the language server (pygls on lsprotocol, over stdio).

The editor's messages arrive on pygls's event loop; every judgement runs on one worker
thread (so the shared unsaved buffers are written and removed in order) and its findings
come back to the loop to be published, unless the document moved on meanwhile. A
document is judged when it opens, as the person types, when it is saved, and when the
live look (``live``) sees a sibling's change (when: ``pacing``).

Never in the way: whatever cannot be judged (no repository, no git, a binary or huge file,
a failure of ours) is one ``window/logMessage`` saying why, and no diagnostics.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from proximity import __version__, gitfiles, gitio
from proximity.agents import decision, scratch
from proximity.lsp import commands, documents, judge, present
from proximity.lsp.answer import ask, signatures
from proximity.lsp.documents import Doc, Where
from proximity.lsp.live import Looker
from proximity.lsp.pacing import Pacing
from proximity.lsp.transport import Input, Output
from proximity.model import Range
from proximity.safetext import text as shown


class Proximity(LanguageServer):
    """The server and the state of what is open."""

    def __init__(self) -> None:
        super().__init__("proximity", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.docs: dict[str, Doc] = {}
        self.lock = threading.Lock()  # docs, as the live look reads them
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pacing = Pacing(self.submit, lambda: self.loop)
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="lsp-judge")
        self.recorder = ThreadPoolExecutor(1, thread_name_prefix="lsp-record")
        self.asker = ThreadPoolExecutor(1, thread_name_prefix="lsp-ask")
        self.heads: dict[tuple[str, str], tuple[str, str | None]] = {}
        self.commons: set[str] = set()
        self.looker = Looker(self.watched, self.moved, self.orphaned)
        self.output: Output | None = None

    # -- telling the person -------------------------------------------------------------
    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_log_message(types.LogMessageParams(kind, shown(message, 1000)))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """One line in the log, never a traceback or a pop-up in the editor."""
        self.log(f"proximity lsp: {type(error).__name__}: {error}", types.MessageType.Warning)

    # -- judging ------------------------------------------------------------------------
    def submit(self, uri: str) -> None:
        """On the loop, when ``uri``'s timer fires (pacing): judge it on the worker."""
        doc = self.docs.get(uri)
        if doc is None:
            return
        text = self.workspace.get_text_document(uri).source
        doc.asked += 1
        self.worker.submit(self.judgement, doc, doc.version, text, doc.asked)

    def judgement(self, doc: Doc, version: int, text: str, asked: int = 0) -> None:
        """On the worker: share the buffer, ask, and hand the findings to the loop. A
        judgement asked for again since (``asked`` is not the document's last) is skipped:
        while the worker is busy (siblings moving, every open file asked again at each
        move) the queue holds one judgement per document, not one per move."""
        why: str | None = None
        found: list[judge.Finding] = []
        try:
            if self.docs.get(doc.uri) is not doc:
                return  # closed meanwhile
            if asked and asked != doc.asked:
                return  # a later judgement of this document is queued
            why = documents.unjudged(doc, text)
            if why is None:
                assert doc.path is not None and doc.where is not None
                note = documents.share(doc, text)
                if note and note != doc.said:
                    self.log(f"proximity: {doc.where.rel}: {note}", types.MessageType.Warning)
                start = time.monotonic()
                found = self.findings(doc, doc.path, doc.where, text)
                self.pacing.took(doc.uri, start)
                if any(f.decision == decision.DENY for f in found):  # (it recorded a wait)
                    self.looker.wrote(doc.where.common)
            else:
                documents.unshare(doc)
        except Exception as e:  # a failure of ours, git's absence: said, never shown as red
            why = f"not judged ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
            found = []
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.publish, doc, version, found, why)

    def findings(self, doc: Doc, path: str, where: Where, text: str) -> list[judge.Finding]:
        """The siblings' lines (asked again when their picture may have moved, else the
        last answer moved along the person's keystrokes) and the conflicts of the
        person's own lines (asked each time)."""
        size = text.count("\n") + (0 if text.endswith("\n") else 1)
        mine = self.own_lines(text, where)
        # the two questions wait on git, not on Python: asked side by side
        edit = self.asker.submit(ask, path, mine, text) if mine else None
        if doc.stale or doc.seen is None:
            doc.stale = False
            theirs = judge.siblings(ask(path, None, look=True), where.rel, size)
            doc.signatures = signatures(path)
        else:
            theirs = judge.remap(doc.seen[1], doc.seen[0], text, size)
        doc.seen = (text, theirs)
        calls = judge.broken_calls(doc.signatures, text, where.rel, size)  # (typed ones too)
        own = judge.conflicts(edit.result() if edit else None, mine or (), size)
        # a call the person wrote that the check found unbound is said once, in its words
        judged = {f.lines for f in own if f.evidence == "symbol"}
        return theirs + [c for c in calls if c.lines not in judged] + own

    def own_lines(self, text: str, where: Where) -> tuple[Range, ...] | None:
        """The person's lines in the buffer, where git's diff from HEAD (and git's merge)
        places them (Python's difflib can place a line that repeats its neighbours
        elsewhere: it answers only where git cannot)."""
        head = self.head_text(where)
        if text == head:
            return ()
        if head is None or judge.too_large(text, head):
            return judge.own_lines(text, head)  # (no file at HEAD: all of it; too large: None)
        (raw,) = gitio.git_many([(gitio.file_diff_args(
            scratch.holding(head.encode("utf-8", "surrogateescape")),
            scratch.holding(text.encode("utf-8", "surrogateescape"))), where.root)])
        if raw is None:
            return judge.own_lines(text, head)
        return judge.typed_lines(raw.decode("utf-8", "replace"))

    def head_text(self, where: Where) -> str | None:
        """The file as HEAD has it (remembered per HEAD commit)."""
        head = gitfiles.head_commit(where.gitdir, where.common)
        got = self.heads.get((where.root, where.rel))
        if head and got is not None and got[0] == head:
            return got[1]
        (blob,) = gitio.git_many([(gitio.blob_args(head or "HEAD", where.rel), where.root)],
                                 ok=(0,))
        out = None if blob is None else blob.decode("utf-8", "surrogateescape")
        if head:
            if len(self.heads) > 256:
                self.heads.clear()
            self.heads[where.root, where.rel] = (head, out)
        return out

    def publish(self, doc: Doc, version: int, found: list[judge.Finding], why: str | None
                ) -> None:
        """On the loop: the findings become the document's diagnostics, unless it was
        closed or changed since they were asked for (a newer judgement is on its way)."""
        if self.docs.get(doc.uri) is not doc or doc.version != version:
            return
        if why is not None and why != doc.said:
            name = doc.where.rel if doc.where else doc.uri
            self.log(f"proximity: {name}: {why}; no diagnostics")
        doc.said = why
        doc.findings = found
        lines = self.workspace.get_text_document(doc.uri).lines
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            doc.uri, present.diagnostics(found, [ln.rstrip("\r\n") for ln in lines]),
            version))
        if not self.pacing.pending(doc.uri) and any(f.decision == decision.DENY
                                                    for f in found):
            # (a keystroke or a move comes first: sooner)
            self.pacing.schedule(doc.uri, self.pacing.reask)

    # -- live ---------------------------------------------------------------------------
    def watched(self) -> dict[str, tuple[str, str]]:
        with self.lock:
            return {u: (d.where.common, d.where.rel) for u, d in self.docs.items()
                    if d.where is not None and d.said is None}

    def moved(self, uris: list[str], at_once: bool = False) -> None:
        """From the live look's thread: a sibling's change may move these documents
        (judged again at their pace, or ``at_once``)."""
        for uri in uris:
            doc = self.docs.get(uri)
            if doc is not None:
                doc.stale = True
        if self.loop is not None:
            for uri in uris:
                if at_once:
                    self.loop.call_soon_threadsafe(self.pacing.schedule, uri, 0.0)
                else:
                    self.loop.call_soon_threadsafe(self.pacing.moved, uri)

    def everything(self) -> None:
        """Judge every open document again (after output was dropped)."""
        if self.loop is not None:
            self.moved(list(self.docs), at_once=True)

    def orphaned(self) -> None:
        """The editor is gone without a word: leave nothing behind."""
        self.cleanup()
        os._exit(0)

    def cleanup(self) -> None:
        self.looker.stop()
        documents.sweep_all(self.commons)

    # -- documents ----------------------------------------------------------------------
    def opened(self, uri: str, version: int) -> None:
        path = documents.path_of(uri)
        where = documents.where_of(path) if path else None
        doc = Doc(uri, path, where, version)
        with self.lock:
            self.docs[uri] = doc
        if where is not None:
            self.commons.add(where.common)
            self.looker.mark(uri, where.common, where.rel)
        self.pacing.schedule(uri, 0.0)

    def closed(self, uri: str) -> None:
        self.pacing.forget(uri)
        with self.lock:
            doc = self.docs.pop(uri, None)
        if doc is not None:
            self.worker.submit(documents.unshare, doc)  # (in order with the judgements)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))

    def saved(self, uri: str) -> None:
        """The disk has the text now: stop sharing it, record the worktree's state at once
        (as an agent's PostToolUse does), and judge again."""
        doc = self.docs.get(uri)
        if doc is None:
            return
        self.worker.submit(documents.unshare, doc)
        doc.stale = True
        if doc.where is not None:
            self.recorder.submit(commands.record, doc.where.root)
        self.pacing.schedule(uri, 0.0)


def build() -> Proximity:
    server = Proximity()

    @server.feature(types.INITIALIZE)
    def initialize(ls: Proximity, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.looker.parent = params.process_id

    @server.feature(types.INITIALIZED)
    def initialized(ls: Proximity, params: types.InitializedParams) -> None:
        ls.looker.start()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Proximity, params: types.DidOpenTextDocumentParams) -> None:
        ls.opened(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Proximity, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is not None:
            doc.version = params.text_document.version
            ls.pacing.keystroke(doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Proximity, params: types.DidSaveTextDocumentParams) -> None:
        ls.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Proximity, params: types.DidCloseTextDocumentParams) -> None:
        ls.closed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: Proximity, params: types.HoverParams) -> types.Hover | None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None or doc.where is None:
            return None
        line = params.position.line + 1
        here = [f for f in doc.findings if judge.covers(f, line)]
        if not here:
            return None
        body = present.hover(here, commands.yields(doc.where, {f.agent for f in here}))
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, body))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    def code_action(ls: Proximity, params: types.CodeActionParams
                    ) -> list[types.CodeAction] | None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None or doc.where is None:
            return None
        first, last = params.range.start.line + 1, params.range.end.line + 1
        near = [f for f in doc.findings if judge.covers(f, first, last)]
        return present.actions(doc.uri, params.range, near)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: Proximity, params: types.CodeLensParams) -> list[types.CodeLens]:
        doc = ls.docs.get(params.text_document.uri)
        return present.lens(doc.uri, doc.findings) if doc is not None else []

    @server.command(present.INTEND)
    def intend(ls: Proximity, uri: str, first: int, last: int) -> None:
        doc = ls.docs.get(str(uri))
        if doc is None or doc.where is None:
            return
        where, spec = doc.where, f"{doc.where.rel}:{int(first)}-{int(last)}"
        ls.recorder.submit(run_and_tell, ls, lambda: commands.intend_lines(where, spec))

    @server.command(present.INBOX)
    def inbox(ls: Proximity, uri: str = "") -> None:
        doc = ls.docs.get(str(uri)) or next(iter(ls.docs.values()), None)
        if doc is None or doc.where is None:
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Info, "proximity: open a file of a worktree first"))
            return
        where = doc.where
        ls.recorder.submit(run_and_tell, ls, lambda: commands.inbox_text(where))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: Proximity, params: None) -> None:
        ls.cleanup()

    @server.feature(types.EXIT)
    def exit_(ls: Proximity, params: None) -> None:
        ls.cleanup()

    @server.feature("$/proximity/skipped")
    def skipped(ls: Proximity, params: Any) -> None:
        """(transport.Input: a message too large to read was skipped; it said so)"""

    return server


def run_and_tell(ls: Proximity, job: Any) -> None:
    """A command's work off the loop; its answer as a message the person sees."""
    try:
        text, kind = str(job()), types.MessageType.Info
    except Exception as e:
        text, kind = f"proximity: {type(e).__name__}: {e}", types.MessageType.Warning
    if ls.loop is not None:
        ls.loop.call_soon_threadsafe(ls.window_show_message,
                                     types.ShowMessageParams(kind, shown(text, 4000)))


def quiet_logging() -> None:
    """pygls's own log: one line per record on stderr (the editor's log file), warnings
    and worse only, never a traceback."""
    handler = logging.StreamHandler(sys.stderr)

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            first = (record.getMessage().strip().splitlines() or [""])[0]
            return f"proximity lsp: {record.levelname.lower()}: {first[:500]}"

    handler.setFormatter(OneLine())
    for name in ("pygls", "asyncio"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(logging.WARNING)
        log.propagate = False


def serve() -> None:
    quiet_logging()
    server = build()

    def skipped(n: int) -> None:
        server.log(f"proximity lsp: a message of {n} bytes from the editor was too large "
                   "to read; skipped", types.MessageType.Warning)

    server.output = Output(sys.stdout.buffer, server.everything)
    try:
        server.start_io(Input(sys.stdin.buffer, skipped), server.output)  # type: ignore[arg-type]
    finally:
        server.cleanup()
        server.output.close()
