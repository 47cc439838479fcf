"""The resident service's warm airspace: every worktree's last snapshot, the ledger's
caches kept in memory, and each pair's last advisory (to tell when one rises).

Owned by the service's one worker thread (service.py). Re-snapshots only the worktrees that
changed and judges with the very functions the in-process hook uses.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proximity import gitio
    from proximity.context import Context
    from proximity.ledger import Event, Ledger, TrackedDict
    from proximity.model import Agent, PairResult

LEVEL = {"clear": 0, "traffic": 1, "resolution": 2}


class Airspace:
    """The warm state: one context, every worktree's last snapshot, each pair's last
    advisory (to tell when one rises). Used from the worker thread only."""

    def __init__(self, common: str) -> None:
        from proximity import context

        self.common = common
        self.ctx: Context = context.open_context(self._a_worktree(common))
        if self.ctx.ledger is not None:
            _keep_caches_warm(self.ctx.ledger)
        self.agents: dict[str, Agent] = {}
        self.paths: dict[str, str] = {}
        self.dirty: set[str] = set()
        self.levels: dict[tuple[str, str], int] = {}
        self.known: dict[str, str] = {}
        self.scans = 0
        self.fired = 0
        self.last_scan_seconds = 0.0

    @staticmethod
    def _a_worktree(common: str) -> str:
        from proximity import gitio

        out = gitio.git(["worktree", "list", "--porcelain", "-z"], cwd=common).stdout
        for item in out.decode("utf-8", "surrogateescape").split("\0"):
            if item.startswith("worktree ") and os.path.isdir(item[9:]):
                return item[9:]
        raise OSError(f"no live worktree of {common}")

    def ctx_for(self, agent_id: str) -> Context:
        import copy

        c = copy.copy(self.ctx)
        c.here = agent_id
        return c

    def reload_policy(self) -> None:
        """The airspace policy, read again (a request must judge by today's rules)."""
        from proximity import config, gitio

        self.ctx.cfg = config.load_policy(*gitio.policy_inputs(self.ctx.repo)).config

    def _snap(self, wt: gitio.WorktreeInfo, tree: str | Exception) -> Agent:
        """One agent from its snapshot tree: what airspace.live_agents makes."""
        from proximity import gitio
        from proximity.model import Agent

        repo = self.ctx.repo
        if isinstance(tree, Exception):
            return Agent(wt.id, wt.path, wt.branch, wt.head, error=str(tree))
        key = f"snap:{tree}:{wt.head}"
        snap = self.known.get(key)
        if not snap or not repo.has_object(snap):
            snap = repo.snapshot_commit(tree, wt.head)
            self.known[key] = snap
        return Agent(wt.id, wt.path, wt.branch, wt.head, snap, tree,
                     subject=repo.subject(wt.head),
                     operation=gitio.operation_in_progress(wt.admin) if wt.admin else None)

    def agents_now(self, focus: str | None = None, index: str | None = None,
                   same_files: str | None = None) -> tuple[list[Agent], list[str]]:
        """Every live worktree's state now: cached snapshots where nothing changed, fresh
        ones for changed worktrees and the focus (from ``index`` when given: the index a
        commit is being made from; that state is not kept). ``same_files``: a worktree
        whose files are known unchanged (a commit, no file event since): a new HEAD keeps
        its snapshot tree."""
        from concurrent.futures import ThreadPoolExecutor
        from dataclasses import replace

        from proximity import gitio
        from proximity.errors import FatalError

        repo = self.ctx.repo
        live, retired = [], []
        for wt in repo.worktrees():
            (retired.append(wt.id) if wt.prunable else live.append(wt))
        self.paths = {wt.id: wt.path for wt in live}
        need = []
        for wt in live:
            a = self.agents.get(wt.id)
            if (wt.id == focus or a is None or wt.id in self.dirty
                    or (a.head, a.branch, a.path) != (wt.head, wt.branch, wt.path)):
                need.append(wt)
        self.dirty -= {wt.id for wt in need}

        def tree_of(wt: gitio.WorktreeInfo) -> str | Exception:
            try:
                return repo.snapshot_tree(wt, index if wt.id == focus else None)
            except (FatalError, OSError) as e:
                return e

        fresh: dict[str, Agent] = {}
        keep = next((wt for wt in need if wt.id == same_files and wt.id != focus
                     and wt.id not in self.dirty and self.agents.get(wt.id) is not None
                     and self.agents[wt.id].tree and not self.agents[wt.id].error), None)
        if keep is not None:
            need.remove(keep)
            fresh[keep.id] = self.agents[keep.id] = self._snap(keep, self.agents[keep.id].tree
                                                               or "")
        if need:
            with ThreadPoolExecutor(max_workers=min(8, len(need))) as pool:
                trees = list(pool.map(tree_of, need))
            for wt, tree in zip(need, trees, strict=True):
                fresh[wt.id] = self._snap(wt, tree)
                if not (index and wt.id == focus):
                    self.agents[wt.id] = fresh[wt.id]
        for gone in set(self.agents) - set(self.paths):
            del self.agents[gone]
        out = []
        for wt in live:
            a = fresh.get(wt.id) or self.agents[wt.id]
            op = gitio.operation_in_progress(wt.admin) if wt.admin and not a.error else None
            if op != a.operation and not a.error:
                a = self.agents[wt.id] = replace(a, operation=op)
            out.append(a)
        return out, retired

    def watch_roots(self) -> dict[str, str]:
        return dict(self.paths)

    def changed(self, ids: set[str], dirty: bool = True) -> int:
        """Re-snapshot the changed worktrees, rescan their pairs, record the risk samples,
        and send the messages of every advisory that rose; returns messages posted."""
        from dataclasses import replace

        from proximity import context, triggers

        if dirty:
            self.dirty |= ids
        t0 = time.perf_counter()
        self.reload_policy()
        agents, retired = self.agents_now()
        ids = {i for i in ids if i in self.paths}
        if not ids:
            return 0
        focus = next(iter(ids)) if len(ids) == 1 else None
        result = context.run_scan(self.ctx, focus=focus, agents=agents, retired=retired,
                                  record=True)
        risen = []
        for p in result.pairs:
            if focus is None and not ids & {p.a, p.b}:
                continue
            level = _level(p)
            if level > self.levels.get((p.a, p.b), 0):
                risen.append(p)
            self.levels[(p.a, p.b)] = level
        posted = triggers.fire(self.ctx, replace(result, pairs=risen)) if risen else []
        self.scans += 1
        self.fired += len(posted)
        self.last_scan_seconds = time.perf_counter() - t0
        return len(posted)

    def baseline(self) -> None:
        """Warm everything (snapshots, caches, the import graph) and learn the current
        advisories without sending anything: hooks already told of those."""
        from proximity import context

        agents, retired = self.agents_now()
        result = context.run_scan(self.ctx, agents=agents, retired=retired, record=False)
        self.levels = {(p.a, p.b): _level(p) for p in result.pairs}
        self.scans += 1

    def record(self, msg: dict[str, Any], files_settled: bool) -> Event | None:
        """What the snapshot hook does, for it: record the worktree as one event (a
        commit outside any rebase/merge with no file event pending reuses the tree)."""
        from proximity import gitio, recorder
        from proximity.commands import hook

        here, kind, index = str(msg["agent"]), str(msg["kind"]), msg.get("index")
        self.reload_policy()
        admin = next((wt.admin for wt in self.ctx.repo.worktrees() if wt.id == here), "")
        reuse = (kind == "commit" and not index and files_settled and bool(admin)
                 and gitio.operation_in_progress(admin) is None)
        agents, _ = self.agents_now(None if reuse else here, index,
                                    same_files=here if reuse else None)
        me = next((a for a in agents if a.id == here), None)
        if me is None or me.error or me.tree is None:
            return None
        ctx = self.ctx_for(here)
        ev = recorder.record(ctx, kind, recorder.Snap(me.id, me.path, me.branch, me.head,
                                                      None, me.tree))
        if ev is not None and ctx.ledger is not None and ev.seq % hook.GC_EVERY == 0:
            ctx.ledger.gc(ctx.cfg.retain_events, set(self.paths))
        return ev

    def judge(self, msg: dict[str, Any]) -> dict[str, Any]:
        from proximity.commands import hook

        here = str(msg["agent"])
        self.reload_policy()
        pushed = msg.get("pushed")
        pushed_refs = [(str(r), str(s)) for r, s in pushed] if pushed is not None else None
        verdict = hook.judge(self.ctx_for(here), str(msg["stage"]), str(msg["kind"]),
                             msg.get("index"), pushed_refs,
                             agents_of=lambda ix: self.agents_now(here, ix), in_hook=False)
        return verdict

    def hook(self, msg: dict[str, Any], files_settled: bool) -> dict[str, Any]:
        """Everything a hook does, for the thin client (thin.py): record (snapshot
        stages) or judge (pre-commit, pre-push), take the inbox, decide the block by the
        airspace policy; the stderr lines to print and whether it blocks. By the very
        functions the in-process hook uses, so both print alike. ``fallback``: a case this
        service leaves to the in-process hook (no ledger, sync on, an unknown worktree)."""
        from proximity.commands import hook

        here, stage = str(msg["agent"]), str(msg.get("stage"))
        self.reload_policy()
        if stage not in ("snapshot", "warn", "guard"):
            return {"fallback": f"stage {stage!r}"}
        if self.ctx.ledger is None:
            return {"fallback": "no ledger"}
        if stage == "guard" and self.ctx.cfg.sync:
            return {"fallback": "sync is on: the pre-push hook syncs in process"}
        if here not in self.paths:
            self.agents_now()
            if here not in self.paths:
                return {"fallback": f"unknown worktree {here!r}"}
        ctx = self.ctx_for(here)
        if stage == "snapshot":
            ev = self.record(msg, files_settled)
            if ev is None:
                return {"fallback": "not recorded"}
            return {"lines": hook.queued_note(ev) + hook.inbox_lines(ctx), "block": False}
        verdict = self.judge(msg)
        lines, block = hook.outcome(ctx, stage, verdict, bool(msg.get("allow")))
        return {"lines": lines, "block": block}

    def scan(self, msg: dict[str, Any]) -> dict[str, Any]:
        from proximity import context, report

        focus = msg.get("agent")
        self.reload_policy()
        agents, retired = self.agents_now(focus, msg.get("index"))
        result = context.run_scan(self.ctx, focus=focus, agents=agents, retired=retired,
                                  record=bool(msg.get("record")))
        self.scans += 1
        return report.scan_json(result)


CACHE_ENTRIES = 200_000  # per kind; past it the warm copy starts again from the ledger


def _keep_caches_warm(ledger: Ledger) -> None:
    """The ledger's derived-data caches (parsed imports, symbols, edges, the graph: keyed
    by content, so never stale) stay in memory from one scan to the next instead of being
    read and decoded again; new entries are still persisted by each scan."""
    kept: dict[str, TrackedDict] = {}
    read = ledger.cache

    def cache(kind: str, lazy: bool = True) -> TrackedDict:
        if not lazy:
            return read(kind, lazy)
        warm = kept.get(kind)
        if warm is None or len(warm) > CACHE_ENTRIES:
            warm = kept[kind] = read(kind, True)
        return warm

    setattr(ledger, "cache", cache)  # noqa: B010 -- this one instance, in this process


def _level(p: PairResult) -> int:
    level = LEVEL.get(p.advisory, 0)
    return min(2, level + 1) if p.escalated else level
