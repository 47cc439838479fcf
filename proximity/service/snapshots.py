"""The resident service's warm snapshots: every worktree's last snapshot kept, and only the
worktrees (and, where the watcher says which, only the paths) that changed read again; a
commit's own index judged without being kept; the shadow index each snapshot started from
tracked so the next one can start there."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from typing import TYPE_CHECKING

from proximity import gitio, layout
from proximity.errors import FatalError
from proximity.model import Agent
from proximity.snapshot.agents import committed_only, readable, summarized

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

    from proximity.snapshot.workspace import Context


TOUCHED_MAX = 256  # paths past which a snapshot reads the whole worktree again
HASH_EARLY_MAX = 8  # files hashed while the index is checked (WarmSnapshots._hash_early)


class WarmSnapshots:
    """Every live worktree's state, kept warm: part of the warm airspace (warm.py), which
    shares its context (the repository, the policy's limits) with it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.agents: dict[str, Agent] = {}
        self.paths: dict[str, str] = {}  # every live worktree's id -> its directory
        self.ats: dict[str, gitio.At] = {}  # and where git runs in it (gitio.At)
        self.dirty: set[str] = set()  # worktrees whose kept state is not known current
        self.known: dict[str, str] = {}  # snapshot commits made: "snap:tree:head" -> id
        self.start_trees: dict[str, str] = {}  # the index tree each warm snapshot began at
        self.shadow_stat: dict[str, tuple[int, int, int] | None] = {}
        self.shadow_trees: dict[str, str] = {}  # the tree each shadow index holds
        # paths the watcher reported per worktree since its shadow index was written by
        # this service (None: not known -- the next snapshot reads the whole worktree)
        self.touched: dict[str, set[str] | None] = {}
        self.partials = 0  # snapshots made from the touched paths only (status, tests)
        # one listing of the worktrees per job of the worker thread (one_listing): a job
        # judges one moment, and a hook's job lists them four times over
        self._listing: list[gitio.WorktreeInfo] | None = None
        self._listing_for: int | None = None

    def _snap(self, wt: gitio.WorktreeInfo, tree: str | Exception) -> Agent:
        """One agent from its snapshot tree: what airspace.live_agents makes."""

        repo = self.ctx.repo
        if not isinstance(tree, Exception):
            tree = readable(repo, wt, tree)
        if isinstance(tree, Exception):
            return committed_only(repo, wt, tree)
        key = f"snap:{tree}:{wt.head}"
        snap = self.known.get(key)
        if not snap or not repo.has_object(snap):
            snap = repo.snapshot_commit(tree, wt.head)
            self.known[key] = snap
        return Agent(wt.id, wt.path, wt.branch, wt.head, snap, tree,
                     subject=repo.subject(wt.head),
                     operation=gitio.operation_in_progress(wt.admin) if wt.admin else None,
                     summarized=summarized(repo, wt.id))

    def agents_now(self, focus: str | None = None, index: str | None = None,
                   same_files: str | None = None, synced: bool = False,
                   partial: bool | None = None) -> tuple[list[Agent], list[str]]:
        """Every live worktree's state now: cached snapshots where nothing changed, fresh
        ones for changed worktrees and the focus (from ``index`` when given: the index a
        commit is being made from; that state is not kept). ``same_files``: a worktree
        whose files are known unchanged (a commit, no file event since): a new HEAD keeps
        its snapshot tree. ``synced``: the watcher has reported every change made before
        this request (see cookies.Cookies.sync), so the focus keeps its warm snapshot
        when no file of it changed and ``index`` holds the tree the warm snapshot started
        from (what `add -A` gives from either index is then the same tree).
        ``partial``: a changed worktree may be snapshotted from the paths the watcher
        reported (_paths_since) -- by default when ``synced``; background rescans may
        (a change not reported yet is read by the rescan its report starts)."""
        from concurrent.futures import ThreadPoolExecutor
        from dataclasses import replace


        repo = self.ctx.repo
        live, retired = [], []
        for wt in self.worktrees():
            if not wt.populating:  # not in the airspace until git has written it
                (retired.append(wt.id) if wt.prunable else live.append(wt))
        self.paths = {wt.id: wt.path for wt in live}
        self.ats = {wt.id: wt.at for wt in live}
        # the pre-commit and post-commit of a plain `git commit` name the worktree's own
        # index: that state is the worktree's state (kept), not a commit's private index
        own = bool(index) and any(wt.id == focus and own_index(wt.admin, str(index))
                                  for wt in live)
        need = []
        for wt in live:
            a = self.agents.get(wt.id)
            if (a is None or wt.id in self.dirty or a.unread
                    or (a.head, a.branch, a.path) != (wt.head, wt.branch, wt.path)
                    or (wt.id == focus and not (synced and self._warm_focus(wt, index)))):
                need.append(wt)
        stale = set(self.dirty)  # (what the watcher or a private-index focus left)
        self.dirty -= {wt.id for wt in need}
        if index and focus and not own:
            # judged from a commit's private index (`commit -a`, `commit PATH`), not kept:
            # the kept state may predate the worktree's edits, so the next request reads
            # it again (a post-commit that took it as current recorded them as reverted)
            self.dirty.add(focus)
        partial = synced if partial is None else partial
        starts: dict[str, list[str]] = {}

        def tree_of(wt: gitio.WorktreeInfo) -> str | Exception:
            try:
                if index and wt.id == focus and not own:
                    since = self._paths_since(wt, index) if partial else None
                    if since is not None:
                        with contextlib.suppress(FatalError):  # e.g. a path in a submodule
                            tree = self._overlay(wt, since) or repo.snapshot_paths(
                                wt, since, keep=False)
                            self.partials += 1
                            return tree
                    # the shadow index stays as this service last wrote it
                    return repo.snapshot_tree(wt, index, keep=False)
                # the few files the watcher named are hashed while _paths_since checks
                # the index (two git processes at once)
                early = self._hash_early(wt) if partial else None
                since = self._paths_since(wt, None) if partial else None
                if since is None and early is not None:
                    gitio.reap(early[1])
                if since is not None:
                    with contextlib.suppress(FatalError):
                        # built from the shadow's tree, which stays as it is: the watcher's
                        # paths keep counting from it
                        built = self._overlay(wt, since, early)
                        if built:
                            self.partials += 1
                            return built
                self.touched[wt.id] = None
                if since is not None:
                    with contextlib.suppress(FatalError):
                        tree = repo.snapshot_paths(wt, since, keep=True)
                        self.shadow_stat[wt.id] = _stat(self._shadow(wt.id))
                        self.shadow_trees[wt.id] = tree
                        self.touched[wt.id] = set()
                        self.partials += 1
                        return tree
                if _stat(self._shadow(wt.id)) != self.shadow_stat.get(wt.id):
                    self.start_trees.pop(wt.id, None)  # someone else's snapshot since
                # from the user's index when the tree it holds is not known yet (then it is)
                tree = repo.snapshot_tree(wt, None, starts.setdefault(wt.id, []),
                                          from_user_index=wt.id not in self.start_trees)
                self.shadow_stat[wt.id] = _stat(self._shadow(wt.id))
                self.shadow_trees[wt.id] = tree
                if starts[wt.id]:
                    self.start_trees[wt.id] = starts[wt.id][0]
                if self.shadow_stat[wt.id] is not None:
                    self.touched[wt.id] = set()  # the watcher's paths count from here
                return tree
            except (FatalError, OSError) as e:
                return e

        fresh: dict[str, Agent] = {}
        keep = next((wt for wt in need if wt.id == same_files and wt.id != focus
                     and wt.id not in stale and self.agents.get(wt.id) is not None
                     and self.agents[wt.id].tree and not self.agents[wt.id].error
                     and not self.agents[wt.id].unread), None)
        if keep is not None:
            need.remove(keep)
            fresh[keep.id] = self.agents[keep.id] = self._snap(keep, self.agents[keep.id].tree
                                                               or "")
        if need:
            if len(need) == 1:  # (a hook's own worktree, mostly: no thread to start)
                trees = [tree_of(need[0])]
            else:
                with ThreadPoolExecutor(max_workers=min(8, len(need))) as pool:
                    trees = list(pool.map(tree_of, need))
            for wt, tree in zip(need, trees, strict=True):
                fresh[wt.id] = self._snap(wt, tree)
                if not (index and wt.id == focus and not own):
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

    def _shadow(self, wid: str) -> str:

        return os.path.join(layout.index_dir(self.ctx.repo.ecm_dir), f"{gitio.safe_name(wid)}.idx")

    def _overlay(self, wt: gitio.WorktreeInfo, since: list[str],
                 hashing: tuple[list[str], subprocess.Popen[bytes]] | None = None
                 ) -> str | None:
        """The tree of the shadow's tree with ``since`` (the paths changed since the shadow
        was written) read again, built in process (gitio.Repo.snapshot_overlay); None:
        snapshot them with git."""

        base = self.shadow_trees.get(wt.id)
        if not base:
            if hashing is not None:
                gitio.reap(hashing[1])
            return None
        return self.ctx.repo.snapshot_overlay(wt, base, since, hashing)

    def _hash_early(self, wt: gitio.WorktreeInfo
                    ) -> tuple[list[str], subprocess.Popen[bytes]] | None:
        """`git hash-object` of the few regular files the watcher named for ``wt``,
        started now (see agents_now); None when there is nothing small to hash."""

        touched = self.touched.get(wt.id)
        repo = self.ctx.repo
        if (not touched or len(touched) > HASH_EARLY_MAX or not self.shadow_trees.get(wt.id)
                or not repo.warm()):
            return None
        files = []
        for rel in sorted(touched):
            try:
                st = os.lstat(os.path.join(wt.path, rel))
            except OSError:
                continue  # (a deletion: nothing to hash)
            if not stat.S_ISREG(st.st_mode) or st.st_size > repo.large_bytes or "\n" in rel:
                return None
            files.append(rel)
        if not files:
            return None
        try:
            return files, repo.hash_start(wt.at, files)
        except FatalError:
            return None

    def _warm_focus(self, wt: gitio.WorktreeInfo, index: str | None) -> bool:
        """Whether the focus's warm snapshot is its state now (no file changed, see
        agents_now): without an index, yes; with one, when `add -A` over these same files
        gives the same tree from that index as from the one the warm snapshot started at.
        It does unless the two differ in a path that exists and is ignored (tracked in
        one only) or is a large file (hashed in one, a stub in the other): so `git add`
        of any files, then `git commit`, keeps it."""
        a = self.agents.get(wt.id)
        if a is None or a.error or a.unread or not a.tree:
            return False
        if not index:
            return True
        start = self.start_trees.get(wt.id)
        if not start or _stat(self._shadow(wt.id)) != self.shadow_stat.get(wt.id):
            return False
        return self._same_add(wt, index, start)

    def _same_add(self, wt: gitio.WorktreeInfo, index: str, start: str) -> bool:
        """Whether `add -A` over the same files gives the same tree from ``index`` as
        from an index holding ``start`` (see _warm_focus)."""

        repo = self.ctx.repo
        try:
            now = repo.index_tree(index, wt.at)
            if now == start:
                return True
            delta = repo.tree_delta(start, now)
            differ = [p for p in delta if os.path.lexists(os.path.join(wt.path, p))]
            for p in differ:
                if os.lstat(os.path.join(wt.path, p)).st_size > repo.large_bytes:
                    return False
            # a path tracked in both (modified) is taken from the file either way; only
            # one tracked in one index alone, if ignored, makes `add -A` differ
            once = [p for p in differ if delta[p][0] in "AD"]
            return not once or not repo.any_ignored_in(wt, once)
        except Exception:
            return False

    def in_snapshot(self, wid: str, rels: list[str]) -> set[str]:
        """Those of ``rels`` the worktree's warm snapshot holds: tracked there (or added
        by `add -A`), so a change to them always matters, whatever ignore rules say."""
        a = self.agents.get(wid)
        if a is None or not a.tree:
            return set()
        return {r for r in rels if self.ctx.repo.tree_has(a.tree, r)}

    def worktrees(self) -> list[gitio.WorktreeInfo]:
        """Every worktree, from files when they say (else from git): listed once in a
        job of the thread that holds one_listing, at every call elsewhere."""
        if self._listing_for != threading.get_ident():
            return list(self.ctx.repo.worktrees_fast())
        if self._listing is None:
            self._listing = list(self.ctx.repo.worktrees_fast())
        return list(self._listing)

    @contextlib.contextmanager
    def one_listing(self) -> Iterator[None]:
        """Within it, this thread lists the worktrees once (a job: the worker's)."""
        self._listing, self._listing_for = None, threading.get_ident()
        try:
            yield
        finally:
            self._listing, self._listing_for = None, None

    def note_files(self, wid: str, rels: list[str]) -> None:
        """The watcher reported these paths (relative to worktree ``wid``) changed."""
        got = self.touched.get(wid)
        if got is not None:
            got.update(rels)
            if len(got) > TOUCHED_MAX:
                self.touched[wid] = None  # a checkout, a build: read the whole worktree

    def forget_files(self) -> None:
        """The watcher may have missed changes (restarted, not watching): every next
        snapshot reads its whole worktree."""
        self.touched = dict.fromkeys(self.touched)

    def _paths_since(self, wt: gitio.WorktreeInfo, index: str | None) -> list[str] | None:
        """The paths to `add -A` over the worktree's shadow index for the tree a whole
        `add -A` would give now (from ``index``, the index of a commit being made, else
        from the user's index), or None: snapshot the whole worktree. Only when the shadow
        is the one this service last wrote, the watcher has named every path changed
        since (few: TOUCHED_MAX), none of them is a large file (stubbed, not hashed), and
        the index the whole snapshot would start from gives the same tree by `add -A` as
        the one the shadow started from (it does unless they differ in an ignored or a
        large file: _same_add)."""
        touched = self.touched.get(wt.id)
        a = self.agents.get(wt.id)
        start = self.start_trees.get(wt.id)
        shadow = _stat(self._shadow(wt.id))
        if (touched is None or a is None or a.error or a.unread or not a.tree or not start
                or shadow is None or shadow != self.shadow_stat.get(wt.id)):
            return None
        groups = self.ctx.repo.summaries.get(wt.id)
        if groups and any(gitio.under_summary(p, groups) for p in touched):
            return None  # (untracked files in bulk: the whole snapshot summarizes them)
        user = index or (os.path.join(wt.admin, "index") if wt.admin else None)
        user_stat = _stat(user) if user else None
        if (user and (index or (user_stat is not None and user_stat[0] > shadow[0]))
                and not self._same_add(wt, user, start)):
            return None
        count = 0
        for rel in touched:
            full = os.path.join(wt.path, rel)
            try:
                st = os.lstat(full)
            except OSError:
                count += 1
                continue
            if stat.S_ISDIR(st.st_mode):
                for _dir, dirs, files in os.walk(full):
                    dirs[:] = [d for d in dirs if d != ".git"]
                    for f in files:
                        count += 1
                        if count > TOUCHED_MAX or _large(os.path.join(_dir, f),
                                                         self.ctx.repo.large_bytes):
                            return None
            elif stat.S_ISREG(st.st_mode) and st.st_size > self.ctx.repo.large_bytes:
                return None
            count += 1
            if count > TOUCHED_MAX:
                return None
        return sorted(touched)

    def watch_roots(self) -> dict[str, str]:
        return dict(self.paths)


def own_index(admin: str | None, index: str) -> bool:
    """Whether ``index`` (GIT_INDEX_FILE of a hook) is the own index file of the worktree
    whose git dir is ``admin``."""
    if not admin:
        return False
    try:
        return os.path.samefile(index, os.path.join(admin, "index"))
    except OSError:
        return False


def _large(path: str, limit: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > limit


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
