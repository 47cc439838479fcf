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
from typing import TYPE_CHECKING, Any, NamedTuple

from proximity.model import Agent, Finding, WorkingSet

if TYPE_CHECKING:
    from proximity.config import Config

ORDER = ("conflict", "overlap", "approach", "dependency", "symbol", "tree")


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
    scope: Any  # the scan's per-run memo: repo, import graph, caches (airspace._Pairwise)
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
