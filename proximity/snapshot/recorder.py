"""Recording this worktree's state as a ledger event: snapshot, clock tick, brief/debrief."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from typing import NamedTuple

from proximity import gitfiles, gitio, layout
from proximity.errors import FatalError
from proximity.ledger import Event
from proximity.snapshot import workspace
from proximity.snapshot.workspace import Context

GC_EVERY = 1000  # events; retention runs in the hook that records the 1000th


QUEUED = ("proximity: warning: the ledger is busy (another process holds it); this event "
          "is queued and the next hook records it")


def queued_note(ev: object) -> list[str]:
    """The warning for an event the busy ledger spooled (seq 0), if it was."""
    return [QUEUED] if getattr(ev, "seq", None) == 0 else []


class Snap(NamedTuple):
    """One worktree's recorded state (a light stand-in for model.Agent in the hook path)."""

    id: str
    path: str
    branch: str | None
    head: str | None
    snapshot: str | None
    tree: str | None

REF_PREFIX = "refs/ecm/local/"


def this_worktree(ctx: Context) -> gitio.WorktreeInfo:
    wt = ctx.repo.current()
    if wt.id != ctx.here:
        raise FatalError(f"worktree {ctx.here!r} does not match its git dir {wt.admin}")
    return wt


def snapshot_agent(ctx: Context, wt: gitio.WorktreeInfo, index_file: str | None = None,
                   commit: bool = True) -> Snap:
    """This worktree's live state; ``commit=False`` skips the snapshot commit (the
    post-* hooks record the tree; a scan makes the content-addressed commit when needed)."""
    tree = ctx.repo.snapshot_tree(wt, index_file)
    snap = ctx.repo.snapshot_commit(tree, wt.head) if commit else None
    return Snap(wt.id, wt.path, wt.branch, wt.head, snap, tree)


def unstashed(ctx: Context, snap: Snap, patch: str | None) -> Snap:
    """``snap`` (a state to record, without its snapshot commit) as its user has it: the
    unstaged edits the hook host holds out while hooks run (``patch``, stash.py) put back
    on the tree read from its files (that tree when the patch does not apply)."""
    if not patch or not snap.tree:
        return snap
    tree = ctx.repo.tree_with_patch(snap.tree, patch, ctx.repo.at(snap.path))
    return snap._replace(tree=tree) if tree else snap


def _brief_source(ctx: Context, head: str | None) -> str | None:
    """The stream a new worktree branched from: same HEAD first, else an ancestor's."""
    if ctx.ledger is None or not head:
        return None
    best = None
    for ev in ctx.ledger.events(None, 200):
        if ev.stream == ctx.here or not ev.head:
            continue
        if ev.head == head:
            return ev.stream
        if best is None and ctx.repo.is_ancestor_cli(ev.head, head):
            best = ev.stream
    return best or None


def _debrief_sources(ctx: Context, head: str | None) -> list[str]:
    """Streams whose work a merge commit at ``head`` brought in (its non-first parents)."""
    if ctx.ledger is None or not head:
        return []
    parents = ctx.repo.parents_cli(head)
    if len(parents) < 2:
        return []
    out = []
    for stream in ctx.ledger.streams():
        if stream == ctx.here:
            continue
        last = ctx.ledger.last_event(stream)
        if last and last.head and any(ctx.repo.is_ancestor_cli(last.head, p)
                                      for p in parents[1:]):
            out.append(stream)
    return out


def record(ctx: Context, kind: str, agent: Snap, rid: str | None = None) -> Event | None:
    """Store one event for this worktree and pin its snapshot under refs/ecm/ (``rid``: the
    hook request it answers, recorded once whoever records it)."""
    if ctx.ledger is None or agent.tree is None or ctx.repo.store.off():
        return None  # (objects in a scratch store go with this process: nothing to keep)
    # files changed since HEAD only (committed work is identified by HEAD itself);
    # git plumbing only, so a snapshot hook never loads libgit2
    files = ctx.repo.changed_paths(agent.head or gitio.EMPTY_TREE, agent.tree)
    new_stream = ctx.ledger.last_event(ctx.here) is None
    brief = _brief_source(ctx, agent.head) if new_stream else None
    debrief = _debrief_sources(ctx, agent.head) if kind in ("merge", "commit") else []
    if kind == "commit" and agent.head:
        # one commit, one event, whoever records it (the service, its post-commit note
        # taken after a restart, the hook that gave up waiting, a replay)
        rid = f"commit:{ctx.here}:{agent.head}"
    ev = ctx.ledger.record(ctx.here, kind, path=agent.path, head=agent.head,
                           branch=agent.branch, snapshot=agent.snapshot, tree=agent.tree,
                           files=files, brief_from=brief, debrief=debrief,
                           machine=ctx.cfg.machine_id, spool=True, rid=rid)
    if files or agent.snapshot:  # a clean worktree's tree is kept alive by HEAD itself
        with contextlib.suppress(FatalError):  # keeps the snapshot alive through `git gc`
            ctx.repo.pin(REF_PREFIX + gitio.safe_name(ctx.here), agent.snapshot or agent.tree)
    return ev


def record_here(ctx: Context, kind: str, index_file: str | None = None,
                commit: bool = False, rid: str | None = None) -> Event | None:
    """Snapshot this worktree and record it as one event (what commands do)."""
    return record(ctx, kind, snapshot_here(ctx, index_file, commit), rid)


def snapshot_here(ctx: Context, index_file: str | None = None, commit: bool = False) -> Snap:
    """This worktree's state (see snapshot_agent). A worktree git is still populating is
    not recorded (FatalError: said in one line)."""
    wt = this_worktree(ctx)
    if wt.populating:
        raise FatalError("git is still populating this worktree (`git worktree add` in "
                         "progress): it is recorded once complete")
    return snapshot_agent(ctx, wt, index_file, commit)


PENDING_AGE = 10.0  # seconds after which a hook's pending event is nobody else's to record


def replay_pending(common: str, older_than: float = PENDING_AGE) -> int:
    """Events a hook handed to a service that never recorded them (killed or stopped
    mid-job): recorded now, from their worktree as it is, under their request id, so an
    event the service did record after all is not recorded twice. How many were."""
    done = _replay_post_notes(common, older_than)  # (notes exist without pending ones)
    d = layout.pending_dir(common)
    try:
        names = os.listdir(d)
    except OSError:
        return done
    for name in names:
        path = os.path.join(d, name)
        try:
            if time.time() - os.lstat(path).st_mtime < older_than:
                continue  # its hook may still be waiting for its answer
            with open(path, encoding="utf-8") as fh:
                item = json.load(fh)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        done += _replay(item, name) or _departed(common, item)
        with contextlib.suppress(OSError):
            os.unlink(path)
    return done


def _replay(item: object, rid: str, any_agent: bool = False) -> int:
    if not isinstance(item, dict) or item.get("rid") != rid or not all(
            isinstance(item.get(k), str) for k in ("agent", "kind", "cwd")):
        return 0
    try:
        ctx = workspace.open_context(item["cwd"], check_git=False)
    except (FatalError, OSError):
        return 0  # the worktree is gone: nothing left to record
    try:
        if (ctx.here != item["agent"] and not any_agent) or ctx.ledger is None:
            return 0
        head = item.get("head")
        sha = head if item["kind"] == "commit" and isinstance(head, str) \
            and _SHA.fullmatch(head) else None
        if sha is not None:
            record_superseded(ctx, sha)
        done = record_here(ctx, item["kind"], rid=rid or None) is not None
        return int(done and (sha is None or record_overtaken(ctx, sha)))
    except (FatalError, OSError):
        return 0
    finally:
        ctx.close()


POST_PREFIX = "post-commit-"  # the hook script's note of a commit (service/cookies.py)


def _replay_post_notes(common: str, older_than: float) -> int:
    """Commits whose post-commit hook left its note for a service that died before taking
    it (and none came since): recorded here, once (a commit's event is keyed by it)."""
    d = layout.cookies_dir(common)
    try:
        names = [n for n in os.listdir(d) if n.startswith(POST_PREFIX)]
    except OSError:
        return 0
    done = 0
    for name in names:
        path = os.path.join(d, name)
        try:
            if os.path.islink(path) or time.time() - os.lstat(path).st_mtime < older_than:
                continue
        except OSError:
            continue
        admin, sha = post_note_parts(name)
        top = _worktree_of(common, admin)
        if top is not None and os.path.isdir(top):
            done += _replay({"rid": "", "agent": "", "kind": "commit", "cwd": top,
                             "head": sha}, "", any_agent=True)
        else:  # its worktree removed right after the commit
            done += _departed(common, {"agent": note_agent(admin), "kind": "commit",
                                       "head": sha})
        with contextlib.suppress(OSError):
            os.rmdir(path)
    return done


def _worktree_of(common: str, admin: str) -> str | None:
    """The top of the worktree whose git dir is ``<common>/worktrees/<admin>`` (empty:
    the main checkout's, beside the common dir)."""
    if not admin:
        return os.path.dirname(common) if os.path.basename(common) == ".git" else None
    if "/" in admin or admin in (".", ".."):
        return None
    try:
        with open(os.path.join(common, "worktrees", admin, "gitdir"), encoding="utf-8") as fh:
            dot_git = fh.read().strip()
    except OSError:
        return None
    return os.path.dirname(dot_git) if dot_git else None


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def post_note_parts(name: str) -> tuple[str, str | None]:
    """A post-commit note's worktree git dir name (empty: the main checkout) and the
    commit it was made for (None: a note of an older hook script, naming none):
    ``post-commit-<admin>-<hook pid>[-<sha>]``."""
    rest = name[len(POST_PREFIX):]
    parts = rest.rsplit("-", 2)
    if len(parts) == 3 and parts[1].isdigit() and _SHA.fullmatch(parts[2]):
        return parts[0], parts[2]
    return rest.rsplit("-", 1)[0], None


def note_agent(admin: str) -> str:
    """The agent id of the worktree a post-commit note names by its git dir name (empty:
    the main checkout), also once that worktree is gone."""
    return gitfiles.worktree_id(admin) if admin else gitfiles.MAIN_ID


def record_superseded(ctx: Context, sha: str, wt: gitio.WorktreeInfo | None = None
                      ) -> bool:
    """The event of commit ``sha`` of this worktree when newer work took its place before
    anyone recorded it (a service killed with its note untaken): the commit as history
    (its own tree, nothing uncommitted), once; the caller records the present after it,
    so the stream's last event stays the worktree as it is. True when it is recorded
    (now or before) or is the present itself (the caller's record is its event)."""
    if ctx.ledger is None:
        return False
    here = wt if wt is not None else this_worktree(ctx)
    if here.head == sha:
        return True
    try:
        tree = ctx.repo.commit_tree(sha)
    except (FatalError, KeyError, ValueError):  # (libgit2's answer for an unknown object)
        return False  # (not a commit of this repository: nothing to record)
    ctx.ledger.record(ctx.here, "commit", path=here.path, head=sha, branch=here.branch,
                      snapshot=None, tree=tree, files={}, machine=ctx.cfg.machine_id,
                      spool=True, rid=f"commit:{ctx.here}:{sha}")
    return True


def record_overtaken(ctx: Context, sha: str) -> bool:
    """After the present was recorded for the note of commit ``sha``: when HEAD had moved
    on meanwhile (the next commit landed while it was read, so the event recorded is that
    one's), ``sha``'s own event as history, then the present once more, so the stream's
    last event stays the worktree as it is. Whether the note is done with: ``sha`` is
    recorded now, or is no commit of this repository (nothing to record, as before)."""
    if ctx.ledger is None:
        return False
    if ctx.ledger.has_commit(ctx.here, sha):
        return True
    if not record_superseded(ctx, sha):
        return True  # (with a ledger, only a sha that is no commit here says no)
    record_here(ctx, "snapshot")
    return ctx.ledger.has_commit(ctx.here, sha) or this_worktree(ctx).head == sha


def _departed(common: str, item: object) -> int:
    """A commit event whose worktree is gone by the time it is recorded (removed right
    after the commit): the commit as history, from the main checkout's view of the
    ledger. 0 when there is nothing to record it with."""
    if not isinstance(item, dict) or item.get("kind") != "commit":
        return 0
    agent, head = item.get("agent"), item.get("head")
    top = _worktree_of(common, "")
    if not isinstance(agent, str) or not isinstance(head, str) or not _SHA.fullmatch(head) \
            or top is None:
        return 0
    try:
        ctx = workspace.open_context(top, check_git=False)
    except (FatalError, OSError):
        return 0
    try:
        return int(record_departed(ctx, agent, head))
    except (FatalError, OSError):
        return 0
    finally:
        ctx.close()


def record_departed(ctx: Context, agent: str, sha: str) -> bool:
    """Commit ``sha`` of worktree ``agent`` that is no longer there: recorded as history
    (its own tree, nothing uncommitted), once (keyed by the commit)."""
    if ctx.ledger is None:
        return False
    try:
        tree = ctx.repo.commit_tree(sha)
    except FatalError:
        return False
    path = str((ctx.ledger.streams().get(agent) or {}).get("path") or "")
    ctx.ledger.record(agent, "commit", path=path, head=sha, branch=None, snapshot=None,
                      tree=tree, files={}, machine=ctx.cfg.machine_id, spool=True,
                      rid=f"commit:{agent}:{sha}")
    return True
