"""What one pair offers the channels (``Evidence``), what a channel returns (``Result``), and
what the channels read of the scan around the pair (``Scope``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from proximity.model import Agent, Facts, FileChange, Finding, WorkingSet

if TYPE_CHECKING:
    from proximity import gitio
    from proximity.analysis import depgraph, resolve
    from proximity.analysis.reach import Reach
    from proximity.config import Config


class Scope(Protocol):
    """What the channels read of the scan beyond the pair itself: the repository, the
    ledger's facts and caches, and the repository-wide import graph with its resolver,
    built once per scan and shared by every pair (tcas.pairwise.Pairwise)."""

    repo: gitio.Repo
    facts: Facts
    deferred: bool  # the first graph of a large repository was left for later: unknown
    graph: depgraph.Graph | depgraph.StoredGraph | depgraph.Edges | None
    changes: dict[tuple[str, str], list[FileChange]]  # (base tree, state tree) -> changes

    def ensure_graph(self, agents: list[Agent]) -> None: ...

    def agent_edges(self, agent: Agent, ws: WorkingSet) -> list[tuple[str, str]]: ...

    def reach(self, agent: Agent, ws: WorkingSet, edges: list[tuple[str, str]],
              base_tree: str) -> Reach: ...

    def resolver(self) -> resolve.Resolver: ...


class Result(NamedTuple):
    value: float | None  # calibrated probability in [0, 1]; None = unknown
    findings: list[Finding]


@dataclass
class Evidence:
    """Everything one pair offers the channels (plain data plus the scan's shared memo)."""

    a: Agent
    b: Agent
    wa: WorkingSet
    wb: WorkingSet
    base: str | None
    base_tree: str
    cfg: Config
    scope: Scope  # the scan's per-run memo: repo, import graph, caches (tcas.pairwise)
    agents: list[Agent] = field(default_factory=list)  # everyone in the airspace
    prior: dict[str, Result] = field(default_factory=dict)  # channels already run

    def exact(self) -> frozenset[str] | None:
        """Paths git's merge of the two live states conflicts on; None when it did not run."""
        res = self.prior.get("conflict")
        if res is None or res.value is None:
            return None
        return frozenset(p for f in res.findings for p in (f.path_a, f.path_b) if p)
