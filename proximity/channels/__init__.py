"""Channels: each module turns one pair's evidence into a calibrated probability.

A channel module has ``NAME`` and ``run(ev: Evidence) -> Result``. ``run`` returns the
probability that a pair with this evidence really collides (textually, or breaks when run),
looked up in the fitted calibration table by evidence class (``Finding.kind``), or ``None``
when the channel could not tell (unknown is never "clean"). ``ORDER`` runs the exact channel
first, so later channels can see what git's own merge said (``ev.prior["conflict"]``).
Adding a channel (call graph, test coverage) is one new module and one entry in ``ORDER``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple, Protocol

from proximity.model import Agent, Facts, FileChange, Finding, WorkingSet

if TYPE_CHECKING:
    from proximity import gitio
    from proximity.analysis import depgraph, resolve
    from proximity.config import Config

ORDER = ("conflict", "overlap", "approach", "dependency", "symbol", "tree")


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
              base_tree: str) -> depgraph.Reach: ...

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


_LOADED: dict[str, ModuleType] = {}


def module(name: str) -> ModuleType:
    if name not in _LOADED:
        _LOADED[name] = importlib.import_module(f"proximity.channels.{name}")
    return _LOADED[name]


def run_all(ev: Evidence) -> tuple[dict[str, float | None], list[Finding]]:
    values: dict[str, float | None] = {}
    findings: list[Finding] = []
    for name in ORDER:
        res: Result = module(name).run(ev)
        ev.prior[name] = res
        values[name] = res.value
        findings.extend(res.findings)
    return values, findings
