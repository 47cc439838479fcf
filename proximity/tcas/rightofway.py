"""Right-of-way: which of two colliding worktrees yields. Computed from facts both sides
share (committed work on the contested lines, then who reached them first in the ledger,
then a stable id), never from either side's clock; a standing decision holds once told,
and work a remote's trunk holds already holds over all of it."""

from __future__ import annotations

from typing import Protocol

from proximity import gitio
from proximity.analysis import intervals
from proximity.model import Agent, Facts, FileChange, Finding, Range
from proximity.tcas import risk

Contested = dict[str, tuple[Range, ...] | None]  # path -> base lines (None: whole file)


class Work(Protocol):
    """What right-of-way reads of a scan: the repository, and an agent's committed lines
    on a contested region since a base (tcas.pairwise.Pairwise)."""

    repo: gitio.Repo

    def committed_lines(self, agent: Agent, base: str | None, contested: Contested) -> int:
        ...

    def landed_lines(self, agent: Agent, base: str | None, contested: Contested) -> int:
        ...


def lines_of_work(fc: FileChange, region: tuple[Range, ...] | None = None, near: int = 0
                  ) -> int:
    """Changed lines of one file change: per hunk the larger of its base and new sides (a
    replaced line is one line of work); only hunks within ``near`` unchanged lines of
    ``region`` count when it is given; 1 for a change without line information."""
    if fc.ranges is None:
        return 1
    total = 0
    for i, (lo, hi) in enumerate(fc.ranges):
        if region is not None:
            g = intervals.gap([(lo, hi)], region)
            if g is None or g > near:
                continue
        new = fc.new_ranges[i] if i < len(fc.new_ranges) else (1, 0)
        total += max(1, hi - lo + 1, new[1] - new[0] + 1)
    return total


def standing(pw: Work, a: Agent, b: Agent, base: str | None, yielding: str,
             contested: Contested, facts: Facts, prio: dict[str, risk.Priority]) -> str:
    """The side a Resolution Advisory keeps telling to yield: the one it told first, for as
    long as the other side's claim holds -- every committed line it had on the files the
    advice was about is there still (a revert ends it), or, with none committed, its work
    on the contested files has run without a break since before it was told; else
    ``yielding``. So the side told to yield buys nothing by committing more to the
    contested lines, and the advice does not flip under the agents, not even when the
    holder's own later edit narrows what is contested."""
    if facts.held is None or facts.reached is None or not contested:
        return yielding
    got = facts.held(a.id, b.id)
    if got is None or got[0] == yielding or got[0] not in (a.id, b.id):
        return yielding
    told, since, lines = got
    holder = b.id if told == a.id else a.id
    files = facts.held_files(a.id, b.id) if facts.held_files is not None else None
    if files:  # the claim as it was made: on the files the advice was about then
        had = pw.committed_lines(a if holder == a.id else b, base, dict.fromkeys(files))
    else:
        had = -prio[holder][0]
    if had < lines:
        return yielding
    if lines > 0:  # committed work it had then is all there still
        return told
    seq = facts.reached(holder, set(contested), pw.repo.committed_path)
    if seq is not None and seq <= since:
        return told
    # no event before the telling records the holder's work there: it was live work (the
    # service and the commands judge worktrees unrecorded), and it was there when told,
    # being one side of the collision; it holds unless an event since records it ending
    # (else the side told to yield took right-of-way by committing first)
    if seq is not None and facts.broke_since is not None and not facts.broke_since(
            holder, set(contested), since, pw.repo.committed_path):
        return told
    return yielding


def landed(pw: Work, a: Agent, b: Agent, base: str | None, contested: Contested,
           yielding: str) -> str:
    """Work a remote's trunk holds already is not undone by an advice: when one side's
    committed work on the contested lines has landed and the other's has not, the other
    side yields, whatever was told before or would decide (committed counts, who came
    first). So the main checkout that merged and pushed the holder's lines is never told
    to yield to the side that must rebase onto them."""
    la, lb = (pw.landed_lines(x, base, contested) for x in (a, b))
    if la and not lb:
        return b.id
    if lb and not la:
        return a.id
    return yielding


def ordered(facts: Facts, a: str, b: str, yielding: str) -> str:
    """The side a broken wait cycle's order went over yields to the one it let go first
    (agents/cycles.py), whatever else would decide: the pre-edit check let that one go on
    over its lines, so the push of that work is not blocked by them."""
    if (a, b) in facts.orders:
        return a
    if (b, a) in facts.orders:
        return b
    return yielding


def in_order(facts: Facts, a: str, b: str, yielding: str) -> str:
    """The pair's decision as one edge of the yield graph, which stays acyclic: when the
    side it would tell to yield already comes first (the other side yields to it, through
    any chain of standing decisions), the pair follows that order instead. Recorded in
    ``facts.yields`` so the scan's later pairs see it."""
    for x, y in ((a, b), (b, a)):  # the pair's own earlier edge is what is decided now
        facts.yields.get(x, set()).discard(y)
    holder = b if yielding == a else a
    if reaches(facts.yields, holder, yielding):
        yielding, holder = holder, yielding
    facts.yields.setdefault(yielding, set()).add(holder)
    return yielding


def cleared(facts: Facts, a: str, b: str) -> None:
    """A pair judged now without a decision (clear, traffic, or one side mid-rebase):
    whatever advice stood between them has ended, so its edge leaves the yield graph in
    this very scan (else the scan that judged the pair clear still listed one side
    waiting for the other, from the advice recorded before a rebase)."""
    for x, y in ((a, b), (b, a)):
        edges = facts.yields.get(x)
        if edges is not None:
            edges.discard(y)


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether ``goal`` is reached from ``start`` along the graph's edges."""
    todo, seen = [start], {start}
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as the agents in it (empty: none), found deterministically."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def priority(pw: Work, x: Agent, base: str | None, contested: Contested,
              facts: Facts) -> risk.Priority:
    """Local pairs: committed work on the contested files, then who reached them first in
    the shared ledger's order of events (immune to clock skew), then the id."""
    seq = facts.reached(x.id, set(contested), pw.repo.committed_path) \
        if facts.reached and contested else None
    # no retained event says: the stream's own first event
    first = float(seq) if seq is not None else facts.started.get(x.id)
    return risk.priority(pw.committed_lines(x, base, contested), first, x.id)


def shared_priority(pw: Work, x: Agent, base: str | None, contested: Contested,
                     facts: Facts) -> risk.Priority:
    """Pairs with a remote agent: committed work (git objects), the stream's published
    creation time and the global id machine/worktree: the same data on every machine."""
    started = x.started if x.remote else facts.created.get(x.id)
    gid = x.id if x.remote else f"{facts.machine}/{x.id}"
    return risk.priority(pw.committed_lines(x, base, contested), started, gid)


def contested_of(findings: list[Finding], tau_ta: float) -> Contested:
    """The region the advisory is about (for right-of-way): per contested file the base
    lines where the two sides' edits meet (overlap evidence), or the whole file (an exact
    conflict without line evidence, a symbol's definition and use)."""
    lines: dict[str, list[Range]] = {}
    files: set[str] = set()
    for f in findings:
        if f.channel not in ("conflict", "overlap", "symbol") or f.score < tau_ta:
            continue
        for path, ranges in ((f.path_a, f.ranges_a), (f.path_b, f.ranges_b)):
            if not path:
                continue
            files.add(path)
            if f.channel == "overlap" and ranges:
                lines.setdefault(path, []).extend(ranges)
    return {p: tuple(sorted(set(lines[p]))) if p in lines else None for p in sorted(files)}
