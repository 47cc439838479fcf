"""`proximity mcp`: a Model Context Protocol server on stdio (official `mcp` SDK).

Tools: ``check`` (may I edit these lines?), ``check_merge`` (may I merge this ref?),
``status`` (pairs involving this worktree), ``intend`` (declare what I will touch) and
``inbox`` (messages for me). Every result is
JSON that names the other agent and shows its hunk. The SDK is imported only here, so
the git hooks and ``proximity check --hook`` never pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from proximity import __version__, checkargs, gitfiles
from proximity.agents import output
from proximity.agents.answer import CheckRequest, answer, of_specs
from proximity.analysis import hunks
from proximity.analysis.intervals import bounded_specs
from proximity.errors import FatalError, UsageError
from proximity.model import last_commit
from proximity.safetext import text
from proximity.snapshot import declared, workspace
from proximity.tcas import pipeline
from proximity.views import messages, report

if TYPE_CHECKING:
    from proximity.protocol import DecisionDoc

INSTRUCTIONS = (
    "proximity is collision avoidance for agents working one git repository in parallel "
    "worktrees. Before editing lines, call `check` with PATH:START-END; on 'ask' or 'deny' "
    "read the other agent's hunk and coordinate (or edit elsewhere). Before merging or "
    "rebasing onto a branch, call `check_merge` with it. Call `intend` with the files you are "
    "about to work on, and read `inbox` for messages from other agents."
)

Paths = Annotated[list[str], Field(
    description="files to check, relative to the worktree root or absolute, each optionally "
    "with 1-based line ranges: 'src/app.py:40-60', 'src/app.py:3,10-12', or 'README.md' for "
    "the whole file", min_length=1)]
DENY_ON = f"^({'|'.join(checkargs.DENY_ON)})$"
MAX_CONTENT = 4 << 20  # characters of a file's text after an edit (an editor's buffer's bound)
Repo = Annotated[str | None, Field(
    description="a directory inside the worktree to act for (default: where the server runs)")]


def _where(repo: str | None, default: str) -> str:
    """The directory a tool acts for: ``repo`` when given, a checkout of the repository
    the server runs in (a nested repository, a submodule or another repository is
    refused before any git runs there: git reading its index runs what its config names,
    core.fsmonitor), else where the server runs."""
    if repo is None:
        return os.path.abspath(default)
    bounded_specs([repo])  # (a NUL, a megabyte: refused before anything opens it)
    where = os.path.abspath(os.path.join(default, repo))
    mine = gitfiles.common_of(default)
    if mine is not None and not gitfiles.of_repository(where, mine):
        raise UsageError(f"{text(repo, 300)!r} is not in a checkout of this repository "
                         "(the one the server runs in): not acted on, and no git run there")
    return where


def check_tool(paths: list[str], deny_on: str | None, repo: str | None, default: str,
               content: str | None = None) -> DecisionDoc:
    """`check PATH…`: the one answerer's answer, as `check --json` prints it; with
    ``content`` (one path: the whole file after the edit, as a harness's Write gives it)
    the edit's own text is judged too (the calls it writes, the same change on both
    sides)."""
    req = of_specs(_where(repo, default), paths, deny_on)
    if content is not None:
        if len(req.edits) != 1:
            raise UsageError("content is the text of one file after the edit: name one path")
        if len(content) > MAX_CONTENT:
            raise UsageError(f"content of {len(content)} characters: at most {MAX_CONTENT}")
        req = replace(req, edits=(req.edits[0]._replace(result=content),))
    return output.doc(answer(req))


def check_merge_tool(ref: str, deny_on: str | None, repo: str | None, default: str
                     ) -> DecisionDoc:
    """`check --merge REF`: what merging REF here would change, checked like edits; a ref
    that names no commit here is a bad argument like any other (the tool's error)."""
    return output.doc(answer(CheckRequest(_where(repo, default), merge=ref,
                                          deny_on=deny_on)))


def status_tool(repo: str | None, default: str) -> dict[str, Any]:
    ctx = workspace.open_context(_where(repo, default))
    try:
        result = pipeline.run_scan(ctx, focus=ctx.here)
        by_id = {a.id: a for a in result.agents}
        pairs = []
        for p in result.involving(ctx.here):
            other_id = p.b if p.a == ctx.here else p.a
            other = by_id.get(other_id)
            pairs.append({
                "agent": other_id, "branch": other.branch if other else None,
                "advisory": p.advisory, "risk": round(p.risk, 3),
                "yielding": p.yielding, "channels": {k: v for k, v in p.channels.items() if v},
                "evidence": [ln.strip() for ln in report.evidence_lines(p, ctx.here)],
                "their_hunks": hunks.of_pair(ctx.repo, p, other),
                "last_commit": last_commit(p, other),
            })
    finally:
        ctx.close()
    return {"agent": ctx.here, "pairs": pairs}


def intend_tool(paths: list[str], clear: bool, repo: str | None, default: str
                ) -> dict[str, Any]:
    here, current = declared.declare(_where(repo, default), paths, clear)
    return {"agent": here, "intents": current}


def inbox_tool(include_delivered: bool, repo: str | None, default: str) -> dict[str, Any]:
    here, msgs = declared.inbox(_where(repo, default), 50 if include_delivered else 0)
    return {"agent": here, "messages": [{**m, "text": messages.render(m)} for m in msgs]}


def build(default: str) -> Any:
    """The server, acting for the worktree that contains ``default`` unless told otherwise."""
    server = MCPServer("proximity", version=__version__, instructions=INSTRUCTIONS)

    def run_tool(tool: Callable[..., Mapping[str, object]], *args: Any) -> dict[str, Any]:
        """A failure the command line states in one line (a path outside the worktree, a
        range such as 0-3, no repository there) is the tool's answer: an error result with
        that reason, logged without a traceback (the SDK reports any other exception as a
        crash: "Error executing tool", the reason only in a traceback on stderr)."""
        try:
            return dict(tool(*args))
        except FatalError as e:
            raise ToolError(str(e)) from None

    @server.tool(description="May this worktree edit these lines now? Answers 'allow', "
                 "'ask' or 'deny' with the reason and, for each sibling worktree in the way, "
                 "its agent id, branch, path, line ranges and the hunk it changed (its live "
                 "work, uncommitted included).")
    def check(paths: Paths,
              deny_on: Annotated[str | None, Field(
                  description="'ra': deny only where the merge would conflict (default), "
                  "'ta': deny on any traffic, 'never': only ask",
                  pattern=DENY_ON)] = None,
              repo: Repo = None,
              content: Annotated[str | None, Field(
                  description="with one path: the whole file as your edit will leave it; "
                  "the calls it writes are checked against the siblings' changed "
                  "definitions (their new signatures)")] = None) -> dict[str, Any]:
        return run_tool(check_tool, paths, deny_on, repo, default, content)

    @server.tool(description="May this worktree merge (or rebase onto) this branch now? "
                 "What the merge would bring in is checked like edits of those lines, "
                 "before anything is written: 'allow', 'ask' or 'deny', naming the sibling "
                 "whose work it would meet.")
    def check_merge(ref: Annotated[str, Field(description="the branch or commit to merge")],
                    deny_on: Annotated[str | None, Field(
                        description="'ra' (default), 'ta' or 'never', as for check",
                        pattern=DENY_ON)] = None,
                    repo: Repo = None) -> dict[str, Any]:
        return run_tool(check_merge_tool, ref, deny_on, repo, default)

    @server.tool(description="Collision risk between this worktree and each sibling: "
                 "advisory (clear / traffic / resolution), risk, channels, evidence, who must "
                 "yield, and the other agent's hunks for the contested lines.")
    def status(repo: Repo = None) -> dict[str, Any]:
        return run_tool(status_tool, repo, default)

    @server.tool(description="Declare the files (and lines) this worktree is about to "
                 "touch, so sibling agents see it before you edit. Returns the current "
                 "intents.")
    def intend(paths: Annotated[list[str], Field(
                   description="PATH or PATH:START-END entries")] = [],  # noqa: B006
               clear: Annotated[bool, Field(
                   description="forget earlier intents first")] = False,
               repo: Repo = None) -> dict[str, Any]:
        return run_tool(intend_tool, list(paths), clear, repo, default)

    @server.tool(description="Messages for this worktree from other agents (transmit, "
                 "steer, hold), each naming the sender and showing its hunk. New messages "
                 "are marked delivered unless include_delivered is set.")
    def inbox(include_delivered: Annotated[bool, Field(
                  description="also list messages already delivered")] = False,
              repo: Repo = None) -> dict[str, Any]:
        return run_tool(inbox_tool, include_delivered, repo, default)

    return server


def serve(default: str) -> None:
    build(default).run("stdio")
