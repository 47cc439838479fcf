"""What a sibling's recorded work means for an edit: its work against the pair's base (the
last state the ledger holds, else its commits), the names its new code uses, the headers it
rewrote, and the calls an edit writes that its work leaves unbound."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence

from proximity import gitio
from proximity.agents import calls, decision, definitions
from proximity.agents.edits import Target
from proximity.agents.kept import BASES, TREE_DIFFS, USES, remember
from proximity.agents.scratch import read_bytes
from proximity.agents.standing import open_ledger
from proximity.analysis.languages import registry
from proximity.errors import FatalError, LedgerError
from proximity.ledger import Ledger
from proximity.model import Agent, Range

# where a resident service answers: common dir -> {worktree id: (HEAD, the tree of its
# working state)} as its watcher keeps them (current ones only); None elsewhere
LIVE: Callable[[str], Mapping[str, tuple[str | None, str]]] | None = None


def recorded_trees(ledger: Ledger | None, repo: gitio.Repo,
                   siblings: Sequence[gitio.WorktreeInfo], now: bool = False
                   ) -> dict[str, str]:
    """Each sibling's working tree as the resident service keeps it (its watcher sees
    every save, recorded or not); in process with ``now``, as it is on disk now
    (snapshotted as a scan does: the service's answer, only slower); else as last
    recorded, else its HEAD."""
    kept = LIVE(repo.common) if LIVE is not None else (
        _snapshots(repo, siblings) if now else {})
    out = {}
    for w in siblings:
        live = kept.get(w.id)
        if live is not None and live[0] == w.head and live[1]:
            out[w.id] = live[1]
            continue
        ev = None
        if ledger is not None:
            try:
                ev = ledger.last_event(w.id)
            except LedgerError:
                ev = None
        out[w.id] = ev.tree if ev is not None and ev.tree and ev.head == w.head \
            else w.head or gitio.EMPTY_TREE
    return out


def _snapshots(repo: gitio.Repo, siblings: Sequence[gitio.WorktreeInfo]
               ) -> dict[str, tuple[str | None, str]]:
    """The siblings' working trees now (git's work, in parallel); one that cannot be
    snapshotted is left out (its recorded state answers)."""
    from concurrent.futures import ThreadPoolExecutor

    def tree(w: gitio.WorktreeInfo) -> str | None:
        try:
            return repo.snapshot_tree(w)
        except (FatalError, OSError):
            return None

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(siblings)))) as pool:
        trees = list(pool.map(tree, siblings))
    return {w.id: (w.head, t) for w, t in zip(siblings, trees, strict=True) if t}


def new_uses(pair: tuple[str | None, str], fresh: Mapping[tuple[str | None, str], bytes | None],
             names: list[str], path: str) -> tuple[decision.Use, ...]:
    """definitions.new_uses of ``names`` (defined in ``path``) in the sibling's recorded
    work, the diff of the trees ``pair``; kept by the two trees and the names (the person
    typing in one definition asks the same question at every keystroke)."""
    key = (pair, tuple(names), path)
    if key in USES:
        return USES[key]
    raw = TREE_DIFFS.get(pair, fresh.get(pair))
    found = tuple(definitions.new_uses((raw or b"").decode("utf-8", "replace"), names, path))
    if raw is not None:
        remember(USES, {key: found})
    return found


def their_work(repo: gitio.Repo, ledger: Ledger | None, siblings: Sequence[gitio.WorktreeInfo],
                bases: Mapping[str, str | None]) -> dict[str, tuple[str, str]]:
    """Each sibling's work as the service keeps it, or as it is on disk now (in process:
    the calls an edit writes are judged against what the siblings' files say, as the
    service judges them), else as last recorded, else its committed work: (its tree, its
    diff against the pair's base; two trees' diff never changes: kept by the pair of
    ids)."""
    states = recorded_trees(ledger, repo, siblings, now=True)
    pairs = {w.id: (bases[w.id], states[w.id]) for w in siblings}
    asked_trees = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS}, key=str)
    more = gitio.git_many([(gitio.tree_diff_args(b, t), repo.here) for b, t in asked_trees],
                          env=repo.objects_env())  # (recorded trees: the store)
    fresh = dict(zip(asked_trees, more, strict=True))
    remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
    return {w.id: (states[w.id], (TREE_DIFFS.get(pairs[w.id], fresh.get(pairs[w.id]))
                                  or b"").decode("utf-8", "replace")) for w in siblings}


def writing(targets: Sequence[Target], lives: Mapping[tuple[str, str], str]
             ) -> dict[str, tuple[tuple[Range, ...], set[str], bytes]]:
    """Per edited file whose text after the edit is known: the lines the edit writes
    (against the file as it is now; an editor's buffer that is the live file already: its
    own lines, as asked), the names those lines call, and the text after the edit. Files
    whose edit writes no call: left out."""
    out = {}
    for t in targets:
        if t.result is None or registry.dialect_of(t.path) is None:
            continue
        now = read_bytes(lives.get(("", t.path), ""))
        result = t.result.decode("utf-8", "replace")
        if now is not None and now == t.result:
            lines = tuple(t.ranges or ((1, result.count("\n") + 1),))
        else:
            lines = calls.added(None if now is None else now.decode("utf-8", "replace"),
                                result)
        names = calls.called(result, lines)
        if names:
            out[t.path] = (lines, names, t.result)
    return out


def broken_calls(repo: gitio.Repo, ledger: Ledger | None, me: gitio.WorktreeInfo,
                  siblings: Sequence[gitio.WorktreeInfo], bases: Mapping[str, str | None],
                  base_blob: Mapping[tuple[str | None, str], bytes | None],
                  writing: Mapping[str, tuple[tuple[Range, ...], set[str], bytes]],
                  works: Mapping[str, tuple[str, str]]
                  ) -> dict[tuple[str, str], tuple[decision.Call, ...]]:
    """(sibling, path) -> the calls the edit writes there that the sibling's recorded
    work leaves unbound, and whether this worktree must yield to them (a standing RA)."""
    if not writing:
        return {}
    called = set().union(*(names for _, names, _ in writing.values()))
    suspects = [w for w in siblings if called & calls.defined(works[w.id][1])]
    if not suspects:
        return {}
    ours = Agent(me.id, me.path, me.branch, me.head)
    edited = [calls.Edited(p, result, lines)
              for p, (lines, _, result) in sorted(writing.items())]
    try:
        # the files after the edit, as blobs the symbol channel reads (written, as a
        # snapshot's are: an object nothing refers to is git's to prune)
        oids = {result: gitio.git(["hash-object", "-w", "--stdin"], cwd=repo.here,
                                  input=result).stdout.decode().strip()
                for _, _, result in writing.values()}
        found = calls.new_calls(repo, ledger, ours, [
            (Agent(w.id, w.path, w.branch, w.head, None, works[w.id][0]), bases[w.id])
            for w in suspects], edited, base_blob, oids)
    except Exception:  # the symbol machinery is optional evidence, never a failure
        return {}
    out: dict[tuple[str, str], tuple[decision.Call, ...]] = {}
    for w, got in zip(suspects, found, strict=True):
        held = None
        if got and ledger is not None:
            with contextlib.suppress(LedgerError):
                held = ledger.held(me.id, w.id)
        must_yield = held is not None and held[0] == me.id
        for b in got:
            out[w.id, b.path] = (*out.get((w.id, b.path), ()),
                                 decision.Call(b.path, b.line, b.detail, must_yield))
    return out


def signatures(start: str) -> list[tuple[str, str | None, definitions.Signature]]:
    """Each sibling's rewritten definition headers (its work as last recorded, against
    the pair's merge base): (worktree id, branch, signature). The evidence for a call that a
    sibling's changed signature may break, wherever the call is."""
    repo = gitio.Repo(start, fast=True)
    me = repo.current()
    siblings = [w for w in repo.worktrees_fast()  # (as the check's own)
                if w.id != me.id and not w.prunable and os.path.isdir(w.path)]
    if not siblings:
        return []
    heads = sorted({w.head for w in siblings if w.head})
    asked = [h for h in heads if me.head and (me.head, h) not in BASES]
    found = gitio.git_many([(["merge-base", me.head or "", h], repo.here) for h in asked])
    remember(BASES, {(me.head, h): (out.decode().strip() or None)
                     for h, out in zip(asked, found, strict=True) if out is not None})
    base_of = {h: BASES.get((me.head, h)) for h in heads}
    ledger = open_ledger(repo)
    try:
        states = recorded_trees(ledger, repo, siblings)
    finally:
        if ledger is not None:
            ledger.close()
    # (two trees' diff never changes: kept by the pair of ids, as the symbol evidence's)
    pairs = {w.id: (base_of.get(w.head or ""), states[w.id]) for w in siblings}
    todo = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS}, key=str)
    fresh = dict(zip(todo, gitio.git_many([(gitio.tree_diff_args(b, t), repo.here)
                                           for b, t in todo],
                                          env=repo.objects_env()),  # (recorded: the store)
                     strict=True))
    remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
    texts = [TREE_DIFFS.get(pairs[w.id], fresh.get(pairs[w.id])) for w in siblings]
    return [(w.id, w.branch, sig) for w, raw in zip(siblings, texts, strict=True)
            for sig in definitions.changed_signatures((raw or b"").decode("utf-8", "replace"))]
