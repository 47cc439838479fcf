"""Plain data passed between stages: git state -> working sets -> channels -> advisories."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

# A closed range (start, end) of 1-based base-side line numbers; a pure insertion after line
# p is the empty range (p + 1, p) (analysis/intervals.py does the arithmetic)
Range = tuple[int, int]

# What a change of one path is, beyond its line ranges.
TEXT = "text"
BINARY = "binary"
SYMLINK = "symlink"
SUBMODULE = "submodule"
LARGE = "large"  # text too large to diff within the configured budget
MODE = "mode"  # only the file mode changed


@dataclass(frozen=True)
class FileChange:
    """One path changed by one side, in base coordinates.

    ``path`` is the base-side path (the new path for an added file); ``new_path`` differs
    only for a rename. ``ranges`` are base-side line ranges; ``None`` means the change has
    no line information (binary, symlink, submodule, large): its meaning is given by
    ``kind`` and the blob ids, never silently "whole file".
    """

    path: str
    status: str  # A, D, M, R, T (type change)
    kind: str = TEXT
    ranges: tuple[Range, ...] | None = ()
    new_ranges: tuple[Range, ...] = ()
    new_path: str = ""
    old_oid: str = ""
    new_oid: str = ""
    old_mode: int = 0
    new_mode: int = 0
    old_lines: int = 0

    @property
    def dest(self) -> str:
        return self.new_path or self.path

    @property
    def paths(self) -> tuple[str, ...]:
        if self.new_path and self.new_path != self.path:
            return (self.path, self.new_path)
        return (self.path,)


@dataclass(frozen=True)
class WorkingSet:
    """Everything one agent changed relative to a base, plus declared intents."""

    files: dict[str, FileChange] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)  # recency w_f per path
    intents: dict[str, tuple[Range, ...] | None] = field(default_factory=dict)
    intent_weights: dict[str, float] = field(default_factory=dict)

    def recency(self, path: str) -> float:
        """How lately this side changed ``path`` (backward decay of the hops since). Only
        evidence that can go stale reads it (see ``proximity.channels``): a fact of the
        live tree holds at full weight whatever the number of events since."""
        return self.weights.get(path, 1.0)

    def touched(self) -> set[str]:
        out: set[str] = set()
        for fc in self.files.values():
            out.update(fc.paths)
        return out


@dataclass(frozen=True)
class Agent:
    """One worktree (or a remote one) flying in the airspace."""

    id: str
    path: str
    branch: str | None
    head: str | None  # commit id, None for an unborn branch
    snapshot: str | None = None  # commit whose tree is the live working state
    tree: str | None = None
    remote: bool = False
    machine: str = ""
    clock: dict[str, int] = field(default_factory=dict)
    started: float | None = None  # order of the first ledger event, same for every reader
    subject: str = ""  # last commit subject
    error: str | None = None  # why the working state could not be read
    # why only the committed state (HEAD) is judged: the live changes could not be read
    unread: str | None = None
    # untracked files left out of the snapshot in bulk: (directory, how many), see
    # gitio/bulk.py; what is tracked is always read
    summarized: tuple[tuple[str, int], ...] = ()
    operation: str | None = None  # a git operation in progress (rebase, merge, ...)


@dataclass(frozen=True)
class Finding:
    """Evidence behind a channel value: the files, ranges and route that make it."""

    channel: str
    score: float
    path_a: str = ""
    path_b: str = ""
    ranges_a: tuple[Range, ...] = ()
    ranges_b: tuple[Range, ...] = ()
    detail: str = ""
    route: tuple[str, ...] = ()
    # evidence class the calibration maps to a probability (e.g. "touch", "import-direct",
    # "incompatible-call"); empty for evidence that is not calibrated
    kind: str = ""

    def swapped(self) -> Finding:
        """The same evidence seen from the other agent of the pair."""
        return Finding(self.channel, self.score, self.path_b, self.path_a, self.ranges_b,
                       self.ranges_a, self.detail, tuple(reversed(self.route)), self.kind)

    def side(self, first: bool) -> tuple[str, tuple[Range, ...]]:
        """(path, ranges) of the pair's first agent (``first``) or of the second."""
        return (self.path_a, self.ranges_a) if first else (self.path_b, self.ranges_b)


@dataclass(frozen=True)
class PairResult:
    a: str
    b: str
    risk: float
    channels: dict[str, float | None]
    advisory: str  # clear | traffic | resolution
    yielding: str | None
    findings: tuple[Finding, ...] = ()
    base: str | None = None
    concurrent: bool = True
    escalated: bool = False
    closure_per_hop: float | None = None
    priority: dict[str, tuple[int, float, str]] = field(default_factory=dict)
    in_progress: dict[str, str] = field(default_factory=dict)  # agent -> operation
    contested: tuple[str, ...] = ()  # the files right-of-way was decided on

    @property
    def distance(self) -> float:
        return 1.0 - self.risk


# A worktree's recency weights: (agent, {path: blob}) -> {path: weight}
Recency = Callable[[str, Mapping[str, str]], dict[str, float]]


@dataclass
class Facts:
    """What the ledger knows, handed to the scan as plain data (all optional)."""
    started: dict[str, float] = field(default_factory=dict)
    clocks: dict[str, dict[str, int]] = field(default_factory=dict)
    intents: dict[str, dict[str, tuple[Range, ...] | None]] = field(default_factory=dict)
    intent_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    recency: Recency | None = None
    history: Callable[[str, str], list[tuple[float, float, float]]] | None = None
    # ledger order of first work (stream, paths, committed(old head, new head, path))
    reached: Callable[[str, set[str], Callable[[str, str, str], bool]], int | None] | None = None
    # a pair's standing right-of-way decision: (told to yield, ledger order when told,
    # the other side's committed lines then)
    held: Callable[[str, str], tuple[str, int, int] | None] | None = None
    held_files: Callable[[str, str], tuple[str, ...] | None] | None = None
    broke_since: Callable[[str, set[str], int, Callable[[str, str, str], bool]], bool] \
        | None = None
    # the yield graph: agent -> the agents it yields to (standing decisions still at RA,
    # then this scan's own): a new decision never closes a cycle in it
    yields: dict[str, set[str]] = field(default_factory=dict)
    # a broken wait cycle's orders that stand: (the member gone over, the one that goes
    # first over it): the first holds right-of-way over it until its work lands
    orders: set[tuple[str, str]] = field(default_factory=set)
    imports_cache: dict[str, Any] = field(default_factory=dict)
    symbols_cache: dict[str, Any] = field(default_factory=dict)
    pair_cache: dict[str, Any] = field(default_factory=dict)
    graph_cache: dict[str, Any] = field(default_factory=dict)  # ref tree -> resolved graph
    # hooks set this: never parse a whole repository inside a git command (first run only)
    defer_cold_graph: bool = False
    graph_ever_built: bool = True
    remote: list[Agent] = field(default_factory=list)
    created: dict[str, float] = field(default_factory=dict)  # stream -> creation time
    machine: str = ""  # this machine's id, for pairs that involve remote agents
    # the resident service keeps one across scans: each pair's channel results keyed by
    # everything the channels read (both states, base, working-set weights and intents,
    # the graph's reference commit), and resolvers keyed by their paths
    memo: dict[Any, Any] | None = None
    # a progress bar for long work (views/progress.bar), for commands run on a terminal
    progress: Callable[[str, int], AbstractContextManager[Callable[[int], None]]] | None = None


@dataclass
class Scan:
    agents: list[Agent]
    pairs: list[PairResult]
    retired: list[str] = field(default_factory=list)
    seconds: float = 0.0
    changed: dict[str, set[str]] = field(default_factory=dict)  # agent -> paths, any base
    timing: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    graph: Any = None  # the import graph of the reference tree (for the view)
    graph_deferred: bool = False  # the first graph was left for a background warm-up
    paths: set[str] = field(default_factory=set)  # files of the reference tree
    # right-of-way as one order: agent -> the live agents it waits for (acyclic)
    yields: dict[str, set[str]] = field(default_factory=dict)
    # wait cycles broken by the pre-edit check whose orders stand: (the member gone over,
    # the one that goes first), live agents only
    orders: set[tuple[str, str]] = field(default_factory=set)

    def involving(self, agent_id: str) -> list[PairResult]:
        return [p for p in self.pairs if agent_id in (p.a, p.b)]


def last_commit(p: PairResult, other: Agent | None) -> str:
    """The subject of the other side's own last commit; "" when it has none since the
    pair's common base (its HEAD is the base: only uncommitted work), so the base commit's
    subject is never passed off as theirs."""
    if other is None or not other.head or (p.base and other.head == p.base):
        return ""
    return other.subject
