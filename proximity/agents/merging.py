"""Work brought into this worktree, checked before it is: what a merge, a pull, a rebase,
a cherry-pick, ``git am``, a stash applied or paths checked out of another commit would
change here (git's own merge and plumbing, in the object store only), judged as edits of
those lines, and then exactly, by git's merge of the result with each sibling's live work.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import NamedTuple

from proximity import gitio
from proximity.agents import calls, decision
from proximity.agents.checkpolicy import deny_policy
from proximity.agents.incoming import UPSTREAM, Incoming
from proximity.agents.precheck import check, edits_of
from proximity.agents.standing import open_ledger
from proximity.agents.theirs import recorded_trees
from proximity.analysis import hunks
from proximity.errors import FatalError, UsageError
from proximity.gitio import SNAPSHOT_IDENT
from proximity.model import Agent, Range
from proximity.safetext import text
from proximity.snapshot import workspace
from proximity.snapshot.agents import live_agents
from proximity.tcas import pipeline

MAX_PICKS = 50  # commits of a cherry-picked range worked out, at most


class MergePlan(NamedTuple):
    ref: str  # as given
    commit: str  # the commit it brings (the last one of a range; "" for patches)
    tree: str  # the result
    targets: list[tuple[str, tuple[Range, ...] | None]]  # what the merge changes here
    conflicts: list[str]  # paths the merge itself leaves conflicted with HEAD
    joins: bool = True  # its history joins this worktree's (a merge), or only its content
    what: str = ""  # how the answer names it ("merging 'x'")


def merge_plan(start: str, ref: str) -> MergePlan:
    """What merging ``ref`` into this worktree's HEAD would change here, worked out by
    git's own merge in the object store (nothing in the worktree or index is touched):
    the paths and HEAD's lines it replaces, to be checked like edits."""
    repo = gitio.Repo(start, fast=True)
    commit = gitio.commit_of(ref, repo.here)
    if commit is None:
        raise UsageError(f"--merge: {ref!r} names no commit here")
    head = _head(repo, "--merge: ")
    merged = repo.merge_result(head, commit)
    if merged is None:
        raise UsageError(f"--merge: git cannot merge {ref!r} into HEAD")
    return _plan(repo, head, ref, commit, merged, True, f"merging {text(ref)!r}")


def _head(repo: gitio.Repo, prefix: str = "") -> str:
    head = gitio.commit_of("HEAD", repo.here)
    if not head:
        raise UsageError(f"{prefix}this worktree has no commit to bring work into")
    return head


def _plan(repo: gitio.Repo, head: str, ref: str, commit: str, result: tuple[str, list[str]],
          joins: bool, what: str) -> MergePlan:
    tree, conflicts = result
    diff = gitio.git([*gitio.MOVED_DIFF_ARGS, head, tree],
                     cwd=repo.here, env=repo.objects_env()
                     ).stdout.decode("utf-8", "surrogateescape")
    change = {p: d for p, d in hunks.parse(diff).items()
              if d.hunks or d.new_file or d.binary}  # a pure rename changes no line
    return MergePlan(ref, commit, tree, edits_of(change), conflicts, joins, what)


def incoming_plan(inc: Incoming) -> MergePlan | None:
    """What ``inc`` would change in the worktree it runs in (None: it brings no foreign
    work after all: ``checkout X Y`` where X is no commit takes Y from the index).
    UsageError, with the reason, when it cannot be worked out."""
    repo = gitio.Repo(inc.cwd, fast=True)
    head = _head(repo)
    if inc.how in ("merge", "rebase", "pull", "pull --rebase"):
        ref = _pulled(repo, inc) if inc.how.startswith("pull") else inc.refs[0]
        commit = _commit(repo, ref)
        merged = repo.merge_result(head, commit)
        if merged is None:
            raise UsageError(f"git cannot merge {text(ref)!r} into HEAD")
        verb = {"merge": "merging", "rebase": "rebasing onto"}.get(inc.how, "pulling")
        shown = ref.removeprefix("refs/remotes/")
        return _plan(repo, head, ref, commit, merged, True, f"{verb} {text(shown)!r}")
    if inc.how == "cherry-pick":
        return _picks(repo, head, inc)
    if inc.how == "am":
        got = repo.with_patches(head, inc.refs, inc.cwd)
        if got is None:
            raise UsageError("the patches do not apply to HEAD (git am would stop)")
        names = ", ".join(text(os.path.basename(p), 100) for p in inc.refs[:3])
        return _plan(repo, head, names, "", got, False, f"applying {names}")
    if inc.how.startswith("stash"):
        stash = _commit(repo, inc.refs[0])
        got = repo.merge3(f"{stash}^1", head, stash)
        if got is None:
            raise UsageError(f"git cannot apply {text(inc.refs[0])!r} here")
        return _plan(repo, head, inc.refs[0], stash, got, False,
                     f"applying {text(inc.refs[0])!r}")
    source = gitio.commit_of(inc.refs[0], repo.here.inside(inc.cwd))
    if source is None:
        if inc.how == "checkout" and "--" not in inc.text.split():
            return None  # `checkout X Y` with no commit X: paths from the index
        raise UsageError(f"{text(inc.refs[0])!r} names no commit here")
    got = repo.with_paths(head, source, inc.paths, inc.cwd, inc.overlay)
    if got is None:
        raise UsageError(f"git cannot read {text(inc.refs[0])!r}'s paths")
    paths = ", ".join(text(p, 100) for p in inc.paths[:3])
    return _plan(repo, head, inc.refs[0], source, got, False,
                 f"taking {paths} from {text(inc.refs[0])!r}")


def _commit(repo: gitio.Repo, ref: str) -> str:
    commit = gitio.commit_of(ref, repo.here)
    if commit is None:
        if ref == UPSTREAM:
            raise UsageError("this branch has no upstream to bring in")
        raise UsageError(f"{text(ref)!r} names no commit here")
    return commit


def _pulled(repo: gitio.Repo, inc: Incoming) -> str:
    """The ref a pull merges, as this repository last fetched it: the upstream, or the
    remote-tracking ref of the branch named (a sibling's push updates it in the shared
    repository at once); a pull from a URL or path is not read."""
    if inc.remote is None:
        return UPSTREAM
    remote = inc.remote
    if remote == ".":
        return inc.refs[0] if inc.refs else UPSTREAM
    known = gitio.git(["remote"], cwd=repo.here).stdout.decode("utf-8", "replace").split()
    if remote not in known:
        raise UsageError(f"pulls from {text(remote)!r}, which is no remote configured here")
    if not inc.refs:
        up = gitio.git(["rev-parse", "--symbolic-full-name", UPSTREAM], cwd=repo.here,
                       ok=(0, 128)).stdout.decode("utf-8", "replace").strip()
        if up.startswith(f"refs/remotes/{remote}/"):
            return UPSTREAM
        raise UsageError(f"pulls from {text(remote)!r} without a branch, and the upstream is "
                         "not there")
    branch = inc.refs[0].removeprefix("refs/heads/")
    for ref in (f"refs/remotes/{remote}/{branch}", f"refs/tags/{branch}"):
        if gitio.commit_of(ref, repo.here):
            return ref
    raise UsageError(f"{text(remote)}/{text(branch)} is not fetched here yet (fetch it, then "
                     "merge it, to have it checked)")


def _picks(repo: gitio.Repo, head: str, inc: Incoming) -> MergePlan:
    commits: list[str] = []
    for arg in inc.refs:
        if ".." in arg or arg.startswith("^"):
            out = gitio.git(["rev-list", "--reverse", "--end-of-options", arg],
                            cwd=repo.here, ok=(0, 128))
            if out.returncode:
                raise UsageError(f"{text(arg)!r} names no commits here")
            commits += out.stdout.decode().split()
        else:
            commits.append(_commit(repo, arg))
    if not commits or len(commits) > MAX_PICKS:
        raise UsageError(f"{len(commits)} commits to pick: not worked out")
    tree, conflicts = head, list[str]()
    for c in commits:
        parent = f"{c}^{inc.mainline or 1}"
        base = parent if gitio.commit_of(parent, repo.here) else gitio.EMPTY_TREE
        got = repo.merge3(base, tree, c)
        if got is None:
            raise UsageError(f"git cannot pick {c[:12]} here")
        tree, conflicts = got[0], sorted({*conflicts, *got[1]})
    names = ", ".join(text(r, 60) for r in inc.refs[:3])
    return _plan(repo, head, names, commits[-1], (tree, conflicts), False,
                 f"cherry-picking {names}")


def check_merge(start: str, ref: str, deny_on: str | None = None
                ) -> tuple[MergePlan, decision.Decision | None]:
    """`check --merge REF` for the worktree that contains ``start``: the merge's plan and
    the decision on the lines it would change (None: it changes none). UsageError when
    ``ref`` cannot be merged here."""
    plan = merge_plan(start, ref)
    return plan, check_plan(start, plan, deny_on)


def check_plan(start: str, plan: MergePlan, deny_on: str | None = None
               ) -> decision.Decision | None:
    """The decision on the lines work brought in would change in the worktree that
    contains ``start`` (None: it changes none), and on the calls it would leave unbound."""
    if not plan.targets:
        return None
    repo = gitio.Repo(start, fast=True)
    policy = deny_policy(deny_on) if deny_on else decision.RA
    d = _on_lines(repo, plan, deny_on, policy)
    return with_own_conflicts(with_broken_calls(d, broken_calls(repo, plan), policy), plan,
                              policy)


def with_own_conflicts(d: decision.Decision, plan: MergePlan, policy: str
                       ) -> decision.Decision:
    """The paths git's merge itself would leave conflicted with this checkout's HEAD are
    evidence too: known before anything is touched, never answered "allow" (the main
    checkout merging a lane that did not rebase onto work landed since, a worktree merging
    a sibling's branch that meets its own commits). Asked: the lane's author rebases, or
    the one merging resolves."""
    if not plan.conflicts:
        return d
    ref = text(plan.ref)
    own = tuple(decision.Conflict(
        ref, None, path, (), "", decision.TA, "conflict",
        f"git's merge of {ref!r} into HEAD conflicts in {text(path, 300)}")
        for path in plan.conflicts)
    files = ", ".join(text(p, 200) for p in plan.conflicts[:4]) + (
        f" (+{len(plan.conflicts) - 4})" if len(plan.conflicts) > 4 else "")
    if d.decision != decision.ALLOW:
        # (said too, not only listed: whoever merges learns git will stop before it does)
        return d._replace(reason=f"{d.reason}; and git's merge itself stops in {files} "
                          "against what this checkout holds: have its author rebase first",
                          conflicts=(*d.conflicts, *own))
    said = decision.DENY if policy == "ta" else decision.ASK
    return decision.Decision(
        said, f"{plan.what} conflicts with what this checkout holds in {files}: git's merge "
        "stops there. Have its author rebase it onto this first, or resolve it here",
        (*own, *d.conflicts))


def _on_lines(repo: gitio.Repo, plan: MergePlan, deny_on: str | None, policy: str
              ) -> decision.Decision:
    """The lines it changes, checked like edits; then git's merge of the result with
    each sibling's live work."""
    root = repo.workdir
    lines = landing(repo, plan) if plan.joins else set()
    steer = steered(root, lines) if lines else set()
    d = check(root, plan.targets, deny_on, cwd=root,
              merging=plan.commit if plan.joins else None, merged=plan.tree, steer=steer)
    if d.decision == decision.DENY:
        return d
    found = exact_conflicts(repo, plan, steer)
    if not found or policy == "never":
        return d
    first = found[0]
    if first.level != decision.RA:  # only siblings that must yield to the work brought in
        if d.decision != decision.ALLOW:
            return d._replace(conflicts=(*d.conflicts, *found))
        return decision.Decision(decision.ASK, first.detail, (*found, *d.conflicts))
    reason = (f"{first.detail}. Bring it in later (after they land), or coordinate with "
              "them first (`proximity inbox`)")
    return decision.Decision(decision.DENY, reason, (*found, *d.conflicts))


def broken_calls(repo: gitio.Repo, plan: MergePlan) -> list[decision.Conflict]:
    """The calls the merge would leave in the resulting tree that no longer bind, the call
    on either side and the changed definition on the other: the scan's symbol evidence
    for this worktree's HEAD and the commit merged, against their merge base (a pick, a
    patch or a stash joins no history: not judged here)."""
    head = gitio.commit_of("HEAD", repo.here)
    if not plan.joins or not plan.commit or not head:
        return []
    me = repo.current()
    ours = Agent(me.id, me.path, me.branch, head, head, repo.commit_tree(head))
    return calls.unbound_between(repo, ours, plan.ref, plan.commit,
                                 plan.what or f"merging {text(plan.ref)!r}", plan.conflicts)


def with_broken_calls(d: decision.Decision, broken: list[decision.Conflict], policy: str
                      ) -> decision.Decision:
    """The decision with the calls a merge breaks: the merged tree would fail to run
    there, whoever holds right-of-way, so the policy alone decides (ra: deny on a call
    the scan makes an RA of, ask on the rest; ta: deny; never: ask)."""
    if not broken:
        return d
    broken.sort(key=lambda c: c.level != decision.RA)
    top = broken[0]
    said = decision.DENY if policy == "ta" or (policy == decision.RA
                                               and top.level == decision.RA) else decision.ASK
    order = {decision.DENY: 0, decision.ASK: 1, decision.ALLOW: 2}
    if order[said] >= order[d.decision]:
        return d._replace(conflicts=(*d.conflicts, *broken))
    reason = top.detail + (". Make the call fit the new definition first (on either side), "
                           "then merge" if said == decision.DENY else "")
    return decision.Decision(said, reason, (*broken, *d.conflicts))


def landing(repo: gitio.Repo, plan: MergePlan) -> set[str]:
    """The sibling worktrees whose work the merge brings here: each one's HEAD is in the
    merged history and not yet in this worktree's. Right-of-way is the work's: their
    standing advice comes with it (the main checkout landing a finished lane holds what
    that lane holds)."""
    me = repo.current()
    if not me.head or not plan.commit:
        return set()
    brought = gitio.git(["rev-list", plan.commit, "--not", me.head], cwd=repo.here,
                        ok=(0, 128)).stdout.decode().split()
    if not brought:
        return set()
    heads = set(brought)
    return {w.id for w in repo.worktrees()
            if w.id != me.id and not w.prunable and w.head in heads}


def steered(start: str, holders: Collection[str]) -> set[str]:
    """The siblings that yield to the work a merge brings in, as the push guard judges
    it: every live worktree but the ones a holder of that work must yield to (its pairs
    scanned as the guard scans them, the standing advice included). So the main
    checkout's merge check agrees with the push that lands it. Empty when the scan
    cannot be made (the advice told so far then decides alone)."""
    try:
        ctx = workspace.open_context(start, strict=False)
    except (FatalError, OSError):
        return set()
    try:
        agents, retired = live_agents(ctx.repo, known=None)
        must: set[str] = set()
        for h in sorted(holders):
            if not any(a.id == h for a in agents):
                continue
            result = pipeline.run_scan(ctx, focus=h, agents=agents, retired=retired,
                                       record=False, remote=False)
            must |= {p.b if p.a == h else p.a for p in result.involving(h)
                     if p.advisory == "resolution" and p.yielding == h}
        return {a.id for a in agents} - must - set(holders) - {ctx.here}
    except (FatalError, OSError):
        return set()
    finally:
        if ctx.ledger is not None:
            ctx.ledger.close()


def exact_conflicts(repo: gitio.Repo, plan: MergePlan, behind: Collection[str] = ()
                    ) -> list[decision.Conflict]:
    """git's own merge of the merge's result with each sibling's live work (a snapshot of
    its worktree now, on its HEAD): the siblings it would really conflict with, and
    where. Line evidence alone says "near" where git's merge of the whole result (a branch
    that brings another's edits of the same lines) conflicts. ``behind``: the siblings
    told to yield to the work brought in: their conflict is theirs to steer (asked, RA
    for the rest)."""
    me = repo.current()
    head = me.head
    if not head:
        return []
    parents = ["-p", head, "-p", plan.commit] if plan.joins else ["-p", head]
    merged = gitio.git(["commit-tree", plan.tree, *parents, "-m", "proximity merge check"],
                       cwd=repo.here, env={**repo.objects_env(), **SNAPSHOT_IDENT}
                       ).stdout.decode().strip()
    led = open_ledger(repo)
    out: list[decision.Conflict] = []
    try:
        for w in repo.worktrees():
            if (w.id == me.id or w.prunable or w.populating or not w.head
                    or not os.path.isdir(w.path)):
                continue
            try:  # its live state now (a merge is rare: worth reading every sibling)
                tree = repo.snapshot_tree(w)
            except FatalError:
                tree = recorded_trees(led, repo, [w])[w.id]
            theirs = w.head if tree == w.head else repo.snapshot_commit(tree, w.head)
            got = repo.merge_result(merged, theirs)
            if got is None or not got[1]:
                continue
            who = f"worktree {text(w.id)!r}" + (f" (branch {text(w.branch)})"
                                                 if w.branch else "")
            files = ", ".join(text(p, 200) for p in got[1][:4])
            steer = w.id in behind
            out.append(decision.Conflict(
                w.id, w.branch, got[1][0], (), "", decision.TA if steer else decision.RA,
                "conflict",
                f"{plan.what or 'merging ' + text(plan.ref)} here would conflict with "
                f"{who}'s live work in "
                f"{files}{' and more' if len(got[1]) > 4 else ''} (git's merge of the "
                "result with their work)" + (f"; {text(w.id)} was told to yield to the work "
                                              "brought in: they rebase onto it" if steer
                                              else "")))
    finally:
        if led is not None:
            led.close()
    return out
