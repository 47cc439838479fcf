"""Calls that stop binding, for the pre-edit check: the scan's own symbol channel
(channels/symbol.py over analysis/symbols/hazard.py) asked about two states of the code and
their merge base, as the scan asks it about two worktrees. A merge that would leave a call
in the resulting tree that no longer binds (the call on either side, the changed
definition on the other), and an edit that adds a call to a function a live sibling
changed, are judged by the very evidence the scan shows, in its words."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from proximity import config, gitio
from proximity.channels import symbol
from proximity.channels.evidence import Evidence, Result
from proximity.errors import ConfigError, LedgerError
from proximity.ledger import Ledger
from proximity.model import Agent, Facts, Finding, WorkingSet
from proximity.tcas.pairwise import Pairwise

# what breaks a call (a changed behaviour is approach evidence, never a broken contract;
# a missing argument that arrives undefined still runs: channels/symbol.py)
CONTRACT = frozenset(("incompatible-call", "incompatible-method-call", "removed-used",
                      "module-moved"))


class Broken(NamedTuple):
    """One call that stops binding: where the call is, the scan's words, and whether the
    scan would make it a Resolution Advisory on its own (its calibrated probability)."""

    path: str
    line: int
    detail: str
    ra: bool


def unbound(repo: gitio.Repo, ledger: Ledger | None, ours: Agent, theirs: Agent,
            base: str | None, *, mine: WorkingSet | None = None,
            conflicted: Sequence[str] = ()) -> list[Broken]:
    """The calls that stop binding between ``ours`` and ``theirs`` (their trees against
    ``base``), both ways. ``mine``: our side's working set when it is no tree of the
    repository (an edit about to be made); ``conflicted``: the paths git's merge of the
    two leaves conflicted (the merged program is judged only when there are none and both
    sides are commits)."""
    try:
        cfg = config.load(repo.workdir)
    except ConfigError:
        cfg = config.Config()
    facts = Facts(defer_cold_graph=True)
    if ledger is not None:  # the scan's caches: a file's facts are parsed once, anywhere
        try:
            facts.imports_cache = ledger.cache("imports")
            facts.symbols_cache = ledger.cache("symbols")
            facts.graph_cache = ledger.cache("graph")
            facts.graph_ever_built = ledger.has_cache("graph")
        except LedgerError:
            pass
    else:
        facts.graph_ever_built = False
    pw = Pairwise(repo, cfg, facts)
    base_tree = repo.commit_tree(base) if base else gitio.EMPTY_TREE
    wa = mine if mine is not None else pw.working_set(ours, base_tree)
    wb = pw.working_set(theirs, base_tree)
    if not wa.files or not wb.files:
        return []
    exact = Result(1.0 if conflicted else 0.0,
                   [Finding("conflict", 1.0, p, p) for p in conflicted])
    ev = Evidence(ours, theirs, wa, wb, base, base_tree, cfg, pw, agents=[ours, theirs],
                  prior={"conflict": exact})
    found = symbol.run(ev).findings
    return [Broken(*_call_site(f), f.detail, f.score >= cfg.tau_ra)
            for f in found if f.kind in CONTRACT]


def _call_site(f: Finding) -> tuple[str, int]:
    """The side of a finding that holds the call (the scan's words name it: "the call at
    PATH:LINE", "new code at PATH:LINE"); the other side holds the changed definition."""
    for path, ranges in (f.side(False), f.side(True)):
        if ranges and f" at {path}:{ranges[0][0]}" in f.detail:
            return path, ranges[0][0]
    path, ranges = f.side(False)
    return path, ranges[0][0] if ranges else 1

