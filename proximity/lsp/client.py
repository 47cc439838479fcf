"""A person in an editor, as a program: drives `proximity lsp` over stdio the way an editor
does (open, type, save, close) and reads back what the editor would show. The demo's person
and the benchmarks' people (benchmarks/lsp_human.py) edit through it.

    from proximity.lsp.client import Editor
    with Editor(worktree) as h:
        h.open("src/app.py")                      # didOpen with the file's text
        h.change("src/app.py", new_text)          # didChange (the whole text), unsaved
        ds = h.diagnostics("src/app.py")          # the diagnostics for that text
        h.save("src/app.py")                      # write it to disk, didSave
        h.close("src/app.py")

Diagnostics come back as plain dicts (``line``: 1-based, ``severity``: error | warning |
info, ``message``, ``agent``). Standard library only, synchronous: a reader thread keeps the
latest diagnostics per document with the version they were made for and when they came.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypedDict

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


class Shown(TypedDict):
    """One diagnostic as the editor shows it."""

    line: int  # 1-based
    severity: str  # error | warning | info | hint
    message: str
    code: object  # the evidence (conflict, intent, symbol…)
    agent: str | None  # the sibling worktree it names


Diags = list[Shown]
Json = dict[str, object]


class Editor:
    """One editor session of ``proximity lsp`` rooted at ``worktree``."""

    def __init__(self, worktree: str | os.PathLike[str], python: str = sys.executable,
                 env: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
        self.root = Path(worktree).resolve()
        self.timeout = timeout
        self.started = time.monotonic()
        self.proc = subprocess.Popen([python, "-m", "proximity", "lsp"], cwd=self.root,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(env or os.environ))
        self._cond = threading.Condition()
        self._diags: dict[str, tuple[int | None, Diags, float]] = {}
        self._replies: dict[int, object] = {}
        self.logs: list[str] = []
        self._versions: dict[str, int] = {}
        self._texts: dict[str, str] = {}
        self._open: set[str] = set()  # uris of the open documents
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                    "rootUri": self.root.as_uri()})
        self.notify("initialized", {})

    # -- the wire -----------------------------------------------------------------------
    def _send(self, msg: Json) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: object) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: object) -> object:
        with self._cond:
            self._next += 1
            rid = self._next
        self._send({"id": rid, "method": method, "params": params})
        with self._cond:
            if not self._cond.wait_for(lambda: rid in self._replies, self.timeout):
                raise TimeoutError(f"{method}: no answer in {self.timeout} s")
            return self._replies.pop(rid)

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
                elif line in (b"\r\n", b"\n"):
                    break
            msg = json.loads(out.read(length))
            now = time.monotonic()
            with self._cond:
                if msg.get("method") == "textDocument/publishDiagnostics":
                    p = msg["params"]
                    if p.get("version") is None and p["uri"] in self._open:
                        continue  # the clearing of an earlier close: the document reopened
                    self._diags[p["uri"]] = (p.get("version"), [_plain(d) for d in
                                                                  p["diagnostics"]], now)
                elif msg.get("method") == "window/logMessage":
                    self.logs.append(str(msg["params"]["message"]))
                elif "id" in msg and "method" in msg:  # a request of the server's: answered
                    self._send({"id": msg["id"], "result": None})
                elif "id" in msg:
                    self._replies[msg["id"]] = msg.get("result")
                self._cond.notify_all()

    # -- what a person does -------------------------------------------------------------
    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def open(self, rel: str, text: str | None = None) -> float:
        """didOpen (the file's text unless given); when it was sent."""
        text = (self.root / rel).read_text() if text is None else text
        self._versions[rel], self._texts[rel] = 1, text
        with self._cond:  # (what was published before it was closed is gone)
            self._diags.pop(self.uri(rel), None)
            self._open.add(self.uri(rel))
        t = time.monotonic()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri(rel), "languageId": "plaintext", "version": 1, "text": text}})
        return t

    def change(self, rel: str, text: str) -> float:
        """didChange to ``text`` (not saved); when it was sent."""
        self._versions[rel] += 1
        self._texts[rel] = text
        t = time.monotonic()
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri(rel), "version": self._versions[rel]},
            "contentChanges": [{"text": text}]})
        return t

    def save(self, rel: str) -> None:
        (self.root / rel).write_text(self._texts[rel])
        self.notify("textDocument/didSave", {"textDocument": {"uri": self.uri(rel)}})

    def text(self, rel: str) -> str | None:
        """The open document's text (None: not open)."""
        return self._texts.get(rel)

    def saved(self, rel: str) -> None:
        """didSave of a file the person's editor wrote itself (the caller did)."""
        self.notify("textDocument/didSave", {"textDocument": {"uri": self.uri(rel)}})

    def close(self, rel: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": self.uri(rel)}})
        with self._cond:
            self._open.discard(self.uri(rel))
        self._versions.pop(rel, None)
        self._texts.pop(rel, None)

    def diagnostics(self, rel: str, until: Callable[[Diags], bool] | None = None,
                    after: float | None = None, timeout: float | None = None
                    ) -> tuple[Diags, float]:
        """The diagnostics for the document's current text (and, with ``until``, once
        that holds; with ``after``, published after that moment), and when they came."""
        uri, want = self.uri(rel), self._versions.get(rel)

        def ready() -> bool:
            got = self._diags.get(uri)
            return got is not None and got[0] in (want, None) and (
                after is None or got[2] >= after) and (until is None or until(got[1]))

        with self._cond:
            if not self._cond.wait_for(ready, self.timeout if timeout is None else timeout):
                raise TimeoutError(f"{rel}: no such diagnostics: {self._diags.get(uri)}")
            _v, diags, when = self._diags[uri]
            return diags, when

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))

    def cpu_seconds(self) -> float:
        """The server's processor time so far (user and system, its own threads)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()

    def __enter__(self) -> Editor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _plain(d: object) -> Shown:
    """A published diagnostic as kept (what it lacks: line 1, an error, no agent)."""
    got = d if isinstance(d, dict) else {}
    rng = got.get("range")
    start = rng.get("start") if isinstance(rng, dict) else None
    line = start.get("line") if isinstance(start, dict) else None
    severity = got.get("severity", 1)
    data = got.get("data")
    agent = data.get("agent") if isinstance(data, dict) else None
    return {"line": (line if isinstance(line, int) else 0) + 1,
            "severity": SEVERITY.get(severity if isinstance(severity, int) else 1, "error"),
            "message": str(got.get("message", "")), "code": got.get("code"),
            "agent": None if agent is None else str(agent)}
