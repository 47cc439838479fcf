"""Plain data passed between stages: git state -> working sets -> channels -> advisories."""

from __future__ import annotations

from dataclasses import dataclass, field

from proximity.analysis.intervals import Range

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

    def weight(self, path: str) -> float:
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
