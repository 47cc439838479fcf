"""The resident service's warm airspace: every worktree's last snapshot (kept by
``snapshots``), the ledger's caches kept in memory, and each pair's last advisory (to tell
when one rises).

Owned by the service's one worker thread (scheduler.py). Re-snapshots only the worktrees
that changed and runs each hook by the stage runner the in-process hook uses.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

from proximity import gitio
from proximity.hooks import stages
from proximity.policy import load_policy
from proximity.protocol import STAGES
from proximity.service.snapshots import WarmSnapshots, own_index
from proximity.snapshot import recorder, workspace
from proximity.tcas import actions, pipeline
from proximity.views import report

if TYPE_CHECKING:
    from proximity.model import Agent, PairResult
    from proximity.protocol import HookAnswer, HookRequest, ScanRequest
    from proximity.snapshot.workspace import Context

LEVEL = {"clear": 0, "traffic": 1, "resolution": 2}


CACHE_ENTRIES = 200_000  # per kind; past it the warm copy starts again from the ledger


class WarmAirspace:
    """The warm state: one context, every worktree's last snapshot (its ``snapshots``
    part), each pair's last advisory (to tell when one rises). Used from the worker
    thread only."""

    def __init__(self, common: str) -> None:

        self.common = common
        self.ctx: Context = workspace.open_context(self._a_worktree(common), strict=False)
        self.ctx.memo = {}  # channel results and resolvers, across scans
        if self.ctx.ledger is not None:
            self.ctx.ledger.keep_warm(CACHE_ENTRIES)
        self.snapshots = WarmSnapshots(self.ctx)
        self.levels: dict[tuple[str, str], int] = {}
        self.scans = 0
        self.fired = 0
        self.last_scan_seconds = 0.0
        self.policy_key: tuple[object, ...] = ()
        self.policy_read = 0.0
        # what the policy's reading ignored (a bad key…): every hook answered says it, as
        # the in-process hook does, so a bad setting is never silent
        self.policy_warnings: list[str] = []

    @staticmethod
    def _a_worktree(common: str) -> str:

        out = gitio.git(["worktree", "list", "--porcelain", "-z"], cwd=common).stdout
        for item in out.decode("utf-8", "surrogateescape").split("\0"):
            # (the repository is opened from it: never one whose `.git` names a git dir
            # this repository does not list, whose config would then be read as ours)
            if item.startswith("worktree ") and os.path.isdir(item[9:]) and \
                    gitio.of_repository(item[9:], common):
                return item[9:]
        raise OSError(f"no live worktree of {common}")

    def ctx_for(self, agent_id: str) -> Context:
        import copy

        c = copy.copy(self.ctx)
        c.here = agent_id
        return c

    def reload_policy(self, aged: bool = True) -> None:
        """The airspace policy, read again (a request must judge by today's rules) when
        any of its inputs may have changed: the main checkout's HEAD (committed config)
        or a git config file (repository, worktree, global, system); and, unless
        ``aged`` is False, when it is older than POLICY_MAX_AGE seconds (for files those
        include, which nothing here stats). Hooks' requests pass False: the service
        reads an old policy again in the background, after them (scheduler.Scheduler)."""

        key = _policy_key(self.ctx.repo)
        now = time.monotonic()
        if key == self.policy_key and (not aged or now - self.policy_read < POLICY_MAX_AGE):
            return
        policy = load_policy(*gitio.policy_inputs(self.ctx.repo))
        cfg = policy.config
        self.policy_warnings = list(policy.warnings)
        if cfg != self.ctx.cfg or self.ctx.memo is None or len(self.ctx.memo) > MEMO_ENTRIES:
            self.ctx.memo = {}  # results under other rules (or too many) are not kept
        self.ctx.cfg = cfg
        self.policy_key, self.policy_read = key, now

    def policy_stale(self) -> bool:
        return time.monotonic() - self.policy_read >= POLICY_MAX_AGE

    def commit_recorded(self, agent: str) -> bool:
        """Whether the worktree's last ledger event is a commit at its HEAD now (a second
        post-commit note for it, or a forged one, records nothing)."""
        led = self.ctx.ledger
        head = next((wt.head for wt in self.snapshots.worktrees() if wt.id == agent), None)
        ev = led.last_event(agent) if led is not None else None
        return ev is not None and ev.kind == "commit" and head is not None and ev.head == head

    def agent_of_admin(self, admin: str) -> str | None:
        """The worktree whose git dir is named ``admin`` under the common dir's
        ``worktrees/`` ("" : the main checkout, whose git dir is the common dir)."""
        for wt in self.snapshots.worktrees():
            if not wt.admin or wt.id not in self.snapshots.paths:
                continue
            if os.path.realpath(wt.admin) == os.path.realpath(self.common):
                if admin == "":
                    return wt.id
            elif admin and os.path.basename(os.path.normpath(wt.admin)) == admin:
                return wt.id
        return None

    def changed(self, ids: set[str], dirty: bool = True) -> int:
        """Re-snapshot the changed worktrees, rescan their pairs, record the risk samples,
        and send the messages of every advisory that rose; returns messages posted."""
        from dataclasses import replace


        if dirty:
            self.snapshots.dirty |= ids
        t0 = time.perf_counter()
        self.reload_policy()
        agents, retired = self.snapshots.agents_now(partial=True)
        ids = {i for i in ids if i in self.snapshots.paths}
        if not ids:
            return 0
        focus = next(iter(ids)) if len(ids) == 1 else None
        result = pipeline.run_scan(self.ctx, focus=focus, agents=agents, retired=retired,
                                  record=True)
        risen = []
        for p in result.pairs:
            if focus is None and not ids & {p.a, p.b}:
                continue
            level = _level(p)
            if level > self.levels.get((p.a, p.b), 0):
                risen.append(p)
            self.levels[(p.a, p.b)] = level
        posted = actions.fire(self.ctx, replace(result, pairs=risen)) if risen else []
        self.scans += 1
        self.fired += len(posted)
        self.last_scan_seconds = time.perf_counter() - t0
        return len(posted)

    def baseline(self) -> None:
        """Warm everything (snapshots, caches, the import graph) and learn the current
        advisories without sending anything: hooks already told of those."""

        agents, retired = self.snapshots.agents_now()
        result = pipeline.run_scan(self.ctx, agents=agents, retired=retired, record=False)
        self.levels = {(p.a, p.b): _level(p) for p in result.pairs}
        self.scans += 1

    def hook(self, msg: HookRequest, files_settled: bool) -> HookAnswer:
        """Everything a hook does, for its one request (thin.hook_request), by the stage
        runner the in-process hook uses (hooks/stages.py) on the warm state: the stderr
        lines to print and whether it blocks. ``fallback``: a case this service leaves to
        the in-process hook (no ledger, sync on, an unknown worktree, nothing recorded)."""
        here, stage = msg["agent"], msg.get("stage")
        self.reload_policy(aged=False)
        if stage not in STAGES:
            return {"fallback": f"stage {stage!r}"}
        if self.ctx.ledger is None:
            return {"fallback": "no ledger"}
        if stage == "guard" and self.ctx.cfg.sync:
            return {"fallback": "sync is on: the pre-push hook syncs in process"}
        if here not in self.snapshots.paths:
            self.snapshots.agents_now()
            if here not in self.snapshots.paths:
                return {"fallback": f"unknown worktree {here!r}"}
        later = msg.get("later") is True  # nobody waits for it: the messages stay
        head = msg.get("head")
        if stage == "snapshot" and msg.get("kind") == "commit" and head:
            with contextlib.suppress(Exception):  # (the present is recorded whatever comes)
                self.overtaken(here, head)
        done = stages.run_stage(self.ctx_for(here), stages.Stage.of(msg, deliver=not later),
                                _Requested(self, msg, files_settled))
        if not done.recorded:
            return {"fallback": "not recorded"}
        if later:
            return {"lines": [], "block": False}
        warned = [workspace.warning_line(w) for w in self.policy_warnings] \
            if stages.says_config(stage) else []
        return {"lines": warned + list(done.lines), "block": done.block}

    def overtaken(self, here: str, head: str) -> None:
        """Commit ``head`` of worktree ``here``, whose record is made after its hook
        returned (a request queued or answered late, a post-commit note) and reads the
        worktree as it is then: where HEAD has moved on (a rebase rewrote the commit, the
        next commit came) and no event of it is recorded, it goes in first, as history;
        the caller records the present after it, so the stream ends at the worktree as it
        is. Raises what recording raises."""
        ctx = self.ctx_for(here)
        wt = next((w for w in self.snapshots.worktrees() if w.id == here), None)
        if wt is not None and wt.head != head and ctx.ledger is not None \
                and not ctx.ledger.has_commit(here, head):
            recorder.record_superseded(ctx, head, wt)

    def ahead(self, gate: str, admin: str) -> bool:
        """What the verdict of ``gate`` (pre-commit, pre-push) in the worktree whose git
        dir is named ``admin`` ("": the main checkout) reads, read ahead of its request:
        while the hook's interpreter starts, its hook script's cookie came back (every
        change before the hook is reported), so this worktree's state and its pairs'
        channel results are what the request will find; it finds them kept (the
        snapshots, the memo), and records, judges and tells as always. Nothing is
        recorded or sent here. A commit from a private index (`commit -a`, `commit
        PATH`) names none (the script gives no hint): that state is read by its
        request. Whether a worktree was read."""
        # (a worktree's id is its git dir's name, as every listing of them derives it:
        # agents_now lists them once more, this reads none)
        wid = gitio.worktree_id(admin) if admin else gitio.MAIN_ID
        if wid not in self.snapshots.paths:
            return False
        self.reload_policy(aged=False)
        gitdir = os.path.join(self.ctx.repo.common, "worktrees", admin) if admin \
            else self.ctx.repo.common
        index = os.path.join(gitdir, "index") if gate == "pre-commit" else None
        agents, retired = self.snapshots.agents_now(wid, index, synced=True)
        pipeline.run_scan(self.ctx_for(wid), focus=wid, agents=agents, retired=retired,
                          record=False, remote=False)
        return True

    def scan(self, msg: ScanRequest) -> dict[str, Any]:

        focus = msg.get("agent")
        self.reload_policy(aged=False)
        agents, retired = self.snapshots.agents_now(focus, msg.get("index"))
        result = pipeline.run_scan(self.ctx, focus=focus, agents=agents, retired=retired,
                                  record=bool(msg.get("record")))
        self.scans += 1
        return report.scan_json(result)


class _Requested:
    """The warm airspace as one hook request sees it (stages.Airspace): snapshots kept
    warm, re-read where files changed; this worktree's reused when a commit changed no
    file since."""

    in_hook = False  # (the service builds the import graph itself; no hook waits)

    def __init__(self, air: WarmAirspace, msg: HookRequest, files_settled: bool) -> None:
        self.air, self.msg, self.files_settled = air, msg, files_settled

    def this(self, stage: stages.Stage) -> recorder.Snap | None:
        """This worktree's state for its snapshot hook (a commit outside any rebase/merge
        with no file event pending reuses the tree)."""
        air, here, index = self.air, self.msg["agent"], stage.index_file
        admin = next((wt.admin for wt in air.snapshots.worktrees() if wt.id == here), "")
        own = bool(index) and own_index(admin, str(index))
        reuse = (stage.kind == "commit" and (not index or own) and self.files_settled
                 and bool(admin) and gitio.operation_in_progress(admin) is None)
        # a commit a post-commit note told of is synced (the note came back through the
        # watcher after the commit's changes): what changed since is what it reported
        agents, _ = air.snapshots.agents_now(None if reuse else here, index,
                                             same_files=here if reuse else None,
                                             synced=self.msg.get("synced") is True)
        me = next((a for a in agents if a.id == here), None)
        if me is None or me.error or me.unread or me.tree is None:
            return None
        return recorder.Snap(me.id, me.path, me.branch, me.head, None, me.tree)

    def agents(self, index: str | None) -> tuple[list[Agent], list[str]]:
        return self.air.snapshots.agents_now(self.msg["agent"], index,
                                             synced=self.msg.get("synced") is True)

    def live(self) -> set[str]:
        return set(self.air.snapshots.paths)


MEMO_ENTRIES = 20_000  # kept pair results and resolvers before the memo starts again
POLICY_MAX_AGE = 5.0  # seconds a policy read stays good while none of its files changed


def _policy_key(repo: gitio.Repo) -> tuple[object, ...]:
    """What the policy's inputs look like now: the config files committed on the main
    checkout's HEAD (their blob ids: a commit there that changes neither keeps the policy
    read) and the stat of every git config file git reads (a change of any: read it
    again)."""
    paths = gitio.config_files(repo.common, repo.gitdir)
    out: list[object] = [repo.committed_blobs(repo.read_head(repo.common)[0],
                                              gitio.POLICY_FILES)]
    for p in paths:
        try:
            st = os.stat(p)
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _level(p: PairResult) -> int:
    level = LEVEL.get(p.advisory, 0)
    return min(2, level + 1) if p.escalated else level
