"""The documents the editor has open: where each lives (worktree, path), whether it can be
judged at all, and its unsaved text shared as live work (``unsaved``). Memory is what is
open: a closed document is forgotten, its shared buffer removed."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote, urlparse

from proximity import gitfiles, layout, owned, unsaved
from proximity.agents.definitions import Signature
from proximity.lsp.judge import Finding

MAX_BYTES = 1 << 20  # a larger document is not judged as it is typed
MAX_LINES = 20_000


class Where(NamedTuple):
    """A file's place in a repository."""

    root: str  # the worktree's top directory
    gitdir: str
    common: str
    agent: str  # the worktree's id (gitfiles.agent_id)
    rel: str  # the path inside the worktree, '/'-separated

    @property
    def ecm(self) -> str:
        return layout.ecm_dir(self.common)


@dataclass
class Doc:
    uri: str
    path: str | None  # absolute; None: not a file on disk
    where: Where | None
    version: int = 0
    findings: list[Finding] = field(default_factory=list)
    shared: bool = False  # its unsaved text is kept for the other worktrees
    said: str | None = None  # the last reason logged for not judging it
    stale: bool = True  # the siblings' picture must be asked again (not only typed over)
    seen: tuple[str, list[Finding]] | None = None  # the text the siblings' lines are for
    asked: int = 0  # judgements asked for so far (the worker runs only the last one queued)
    # the definitions siblings rewrote the header of: (worktree, branch, signature)
    signatures: list[tuple[str, str | None, Signature]] = field(default_factory=list)


def path_of(uri: str) -> str | None:
    """The file a ``file:`` URI names (None: another scheme)."""
    u = urlparse(uri)
    if u.scheme != "file" or (u.netloc not in ("", "localhost")):
        return None
    return os.path.realpath(unquote(u.path))


def where_of(path: str) -> Where | None:
    """The worktree holding ``path``, from files alone; None: in no worktree, or inside a
    git directory."""
    found = gitfiles.checkout_of(os.path.dirname(path))
    if found is None:
        return None
    root, gitdir = found
    root = os.path.realpath(root)
    gitdir = os.path.realpath(os.path.join(root, gitdir))
    rel = os.path.relpath(path, root)
    if rel.startswith(".." + os.sep) or rel.split(os.sep)[0] == ".git" or not os.path.isdir(gitdir):
        return None
    common = os.path.realpath(gitfiles.common_dir(gitdir))
    return Where(root, gitdir, common, gitfiles.agent_id(gitdir, common),
                 rel.replace(os.sep, "/"))


def unjudged(doc: Doc, text: str) -> str | None:
    """Why this document is not judged (None: it is)."""
    if doc.path is None:
        return "not a file on disk"
    if doc.where is None:
        return "not in a git worktree"
    if "\0" in text:
        return "a binary file"
    if len(text) > MAX_BYTES or text.count("\n") > MAX_LINES:
        return f"too large to judge as you type ({len(text)} characters)"
    return None


def disk_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    return data.decode("utf-8", "surrogateescape")


def share(doc: Doc, text: str) -> str | None:
    """Keep the document's text as its worktree's live file while it differs from the
    disk (removed when it is the same again); the reason when it cannot be kept."""
    if doc.where is None or doc.path is None:
        return None
    if text == disk_text(doc.path):
        unshare(doc)
        return None
    try:
        unsaved.write(doc.where.ecm, doc.where.agent, doc.where.rel,
                      text.encode("utf-8", "surrogateescape"))
    except (OSError, ValueError) as e:  # (owned.NotOurs is an OSError)
        unshare(doc)
        return f"your unsaved lines are not shared with the other worktrees ({e})"
    doc.shared = True
    return None


def unshare(doc: Doc) -> None:
    if doc.shared and doc.where is not None:
        unsaved.remove(doc.where.ecm, doc.where.agent, doc.where.rel)
    doc.shared = False


def sweep_all(commons: set[str]) -> None:
    """Every buffer this process kept, and any a dead editor server left."""
    for common in commons:
        with contextlib.suppress(OSError, owned.NotOurs):
            unsaved.sweep(layout.ecm_dir(common))
