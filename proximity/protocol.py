"""The resident service's wire protocol, shared by the service and its clients.

One request per connection: a JSON object on one line; one answer: a JSON line, or (a
client that asks ``"reply": "marshal"``: hooks, which never import `json`) its length, a
newline and the answer in marshal's format. Every request carries the protocol version and
the client's code stamp; a service of other code refuses and exits.

Imported by the hook's thin path at no cost: plain constants here, and the request and
answer shapes as TypedDicts that only the type checker reads (TYPE_CHECKING is False at run
time: this module imports nothing).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (not typing's: hooks import this module)
if TYPE_CHECKING:
    # (Final: the type checker reads each constant as its literal value)
    from typing import Any, Final, Literal, NotRequired, TypedDict

PROTOCOL: Final = 1  # "v" of every request and answer
# characters of a harness's pre-edit event a check reads (and a check request carries): a
# 40 MB Write took seconds and hundreds of MB to judge; past this, it is allowed, saying so
MAX_EVENT_CHARS: Final = 4 << 20
MAX_MESSAGE: Final = 8 << 20  # bytes of one request or answer line

# the service's command line is `python -m SERVICE_MODULE COMMON`; the shell hook
# recognises the live service of a repository by it (hooks/proximity-hook matches
# /proc/PID/cmdline against *proximity.service"$common")
SERVICE_MODULE: Final = "proximity.service"

# ops answered on the connection's own thread
PING: Final = "ping"  # alive? ready?
STATUS: Final = "status"  # what `proximity service status` shows
SHUTDOWN: Final = "shutdown"
TOUCHED: Final = "touched"  # a worktree changed (rescanned later; nobody waits)
CHECK: Final = "check"  # `proximity check` and a harness's pre-edit hook
# ops the worker answers from the warm airspace, in order
HOOK: Final = "hook"  # everything a hook does: record, judge, take the inbox, decide the block
SCAN: Final = "scan"  # the `scan --json` document
WORKER_OPS: Final = (HOOK, SCAN)

# A connection the service cannot serve (every slot taken: a flood) gets this one line and
# is closed: a JSON line, which the marshal reader knows too, so every client reads it the
# same way, "nothing was done, judge in process". Sent before the close, it is read whether
# the request went out before the close or not (a Unix socket's reader gets what was queued
# before it sees the reset).
TURNED_AWAY: Final = (b'{"v": 1, "ok": false, "refused": true, '
                      b'"error": "busy: every slot is taken"}\n')

STAGES: Final = ("snapshot", "warn", "guard")  # a hook's stage (hooks/inputs.py)
MARSHAL: Final = "marshal"  # the "reply" a client asks for an answer in marshal's format

if TYPE_CHECKING:
    class Envelope(TypedDict, total=False):
        """What every request carries besides its op (client.exchange adds it)."""
        v: int  # PROTOCOL
        code: str  # the client's code stamp (stamp.code_stamp)
        budget: float  # seconds the client waits for the answer
        reply: Literal["marshal"]
        rid: str  # a claim on the job (journal.claim): recorded by one side only

    class HookRequest(Envelope):
        """One hook, whatever its stage (thin.hook_request)."""
        op: Literal["hook"]
        stage: str  # one of STAGES
        agent: str  # the worktree's id
        kind: str  # the ledger event it records (hooks/inputs.kind_of)
        index: str | None  # the index a commit is being made from
        allow: NotRequired[bool]  # PROXIMITY_ALLOW=1
        unstash: NotRequired[str | None]  # the host's patch of stashed edits (stash.py)
        # guard: (ref, commit, the remote's commit it replaces: zeros for a new ref, the
        # remote's ref: "" when not known) pushed
        pushed: NotRequired[list[tuple[str, str, str, str]] | None]
        remote: NotRequired[str]  # guard: the remote pushed to, as git names it to the hook
        cookie: NotRequired[str]  # the hook script's sync cookie
        # a commit's event (post-commit): the commit the hook ran for, recorded as itself
        # should HEAD move on (a rebase, the next commit) before the queued record is made
        head: NotRequired[str]
        later: NotRequired[bool]  # the service's own: nobody waits for the lines
        synced: NotRequired[bool]  # the service's own: its watcher had caught up

    class ScanRequest(Envelope):
        op: Literal["scan"]
        agent: NotRequired[str | None]  # the focus worktree
        index: NotRequired[str | None]  # its index file to snapshot from
        record: NotRequired[bool]  # record the risk samples

    class CheckRequest(Envelope):
        """The wire form of agents/answer.CheckRequest: the CLI's ``specs`` or ``merge``
        (``json``: it prints JSON), or a harness's ``harness``/``event_text`` (its event as
        read from stdin), with the client's ``cwd``."""
        op: Literal["check"]
        deny_on: str | None  # one of checkargs.DENY_ON
        cwd: str
        specs: NotRequired[list[str]]
        merge: NotRequired[str]
        json: NotRequired[bool]
        harness: NotRequired[str]  # one of checkargs.HARNESSES
        event_text: NotRequired[str]

    class TouchedRequest(Envelope):
        op: Literal["touched"]
        agent: str

    class ControlRequest(Envelope):
        op: Literal["ping", "status", "shutdown"]

    Request = HookRequest | ScanRequest | CheckRequest | TouchedRequest | ControlRequest

    class Answer(TypedDict, total=False):
        """What every answer may carry. ``ok`` False: ``error`` says why (``refused``:
        nothing was done); ``fallback``: a case the service leaves to the client."""
        v: int
        code: str  # the service's code stamp
        ok: bool
        error: str
        refused: bool
        fallback: str

    class PostNote(TypedDict):
        pid: int  # the service that takes the post-commit hook's note (thin.leave_post_note)

    class HookAnswer(Answer, total=False):
        lines: list[str]  # for the hook to print on stderr, in order
        block: bool  # the deliberate block: the hook exits with the block's code
        queued: bool  # a snapshot taken in order, not waited for
        post: PostNote  # pre-commit: the service the post-commit hook may tell by a file

    class ScanAnswer(Answer, total=False):
        scan: dict[str, Any]  # the `scan --json` document (views/report.scan_json)

    class ConflictDoc(TypedDict):
        """One sibling's evidence against a check (`check --json`'s ``conflicts``)."""
        agent: str
        branch: str | None
        path: str
        ranges: list[list[int]]  # base lines [start, end]
        hunk: str
        level: str  # ra | ta | info
        evidence: str  # conflict | merges | near | same-file | intent | symbol
        detail: str
        lines: list[list[int]] | None  # ``ranges`` in this worktree's file now (None: not known)
        right_of_way: bool  # they yield to this worktree here: this side goes on, they steer

    class MergeDoc(TypedDict):
        """What a checked merge would bring in (`check --merge --json`'s ``merge``)."""
        ref: str
        commit: str
        paths: list[str]
        own_conflicts: list[str]

    class DecisionDoc(TypedDict):
        """`check --json`, the MCP tools' result: the wire form of agents/answer.CheckAnswer."""
        decision: str  # allow | ask | deny
        reason: str
        conflicts: list[ConflictDoc]
        merge: NotRequired[MergeDoc]

    class CheckAnswer(Answer, total=False):
        stdout: str  # what the command prints
        exit: int  # and its exit code
        decision: DecisionDoc

    class PingAnswer(Answer, total=False):
        pid: int
        ready: bool  # warm: its baseline is done

    class ServiceStatus(TypedDict):
        """What the service says of itself (dispatch.Dispatch.status; `proximity service
        status --json` shows it)."""
        pid: int
        common: str  # the repository's git common dir
        socket: str
        started: float  # when it started (time.time)
        uptime: float  # seconds
        idle_timeout: float  # seconds without a request before it exits
        ready: bool  # warm: its baseline is done
        error: str | None  # why the warm airspace or the watcher failed
        worktrees: list[str]  # the ids of the worktrees it keeps warm
        watching: list[str]  # the directories its watcher watches
        requests: int
        busy: bool  # a job running or queued, or file events not read yet
        file_events: int
        scans: int
        messages_sent: int
        last_scan_ms: float | None
        rss_kb: int | None  # its resident memory
        code: str  # its code stamp
        answered: dict[str, int]  # requests answered, and left to the client, by kind
        git_calls: dict[str, int]  # git subcommands it ran, by name
        partial_snapshots: int  # snapshots built from the paths the watcher named
        early_syncs: int  # requests synced by their hook script's cookie
        read_ahead: int  # gates' verdicts read while their hook started (cookie hints)
        turned_away: dict[str, int]  # connections closed unserved, by why
        last_ms: dict[str, float]  # how long the last request of each kind took

    class StatusAnswer(Answer, total=False):
        status: ServiceStatus
