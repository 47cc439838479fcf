"""Merging or rebasing a branch into this worktree, checked before it happens: what the
merge would change here (git's own merge, in the object store only), judged as edits of
those lines, and then exactly, by git's merge of the result with each sibling's live work.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from proximity import gitio
from proximity.agents import verdict
from proximity.agents.precheck import check, deny_policy, edits_of, open_ledger, recorded_tree
from proximity.analysis import hunks
from proximity.errors import FatalError, UsageError
from proximity.gitio import SNAPSHOT_IDENT
from proximity.model import Range
from proximity.safetext import text


class MergePlan(NamedTuple):
    ref: str  # as given
    commit: str
    tree: str  # the merge's result
    targets: list[tuple[str, tuple[Range, ...] | None]]  # what the merge changes here
    conflicts: list[str]  # paths the merge itself leaves conflicted with HEAD


def merge_plan(start: str, ref: str) -> MergePlan:
    """What merging ``ref`` into this worktree's HEAD would change here, worked out by
    git's own merge in the object store (nothing in the worktree or index is touched):
    the paths and HEAD's lines it replaces, to be checked like edits."""
    repo = gitio.Repo(start, fast=True)
    commit = gitio.commit_of(ref, repo.workdir)
    head = gitio.commit_of("HEAD", repo.workdir)
    if commit is None:
        raise UsageError(f"--merge: {ref!r} names no commit here")
    if not head:
        raise UsageError("--merge: this worktree has no commit to merge into")
    merged = repo.merge_result(head, commit)
    if merged is None:
        raise UsageError(f"--merge: git cannot merge {ref!r} into HEAD")
    tree, conflicts = merged
    diff = gitio.git(["diff", "--no-color", "--no-ext-diff", "-M", "-U0", head, tree],
                     cwd=repo.workdir).stdout.decode("utf-8", "surrogateescape")
    change = {p: d for p, d in hunks.parse(diff).items()
              if d.hunks or d.new_file or d.binary}  # a pure rename changes no line
    return MergePlan(ref, commit, tree, edits_of(change), conflicts)


def check_merge(start: str, ref: str, deny_on: str | None = None
                ) -> tuple[MergePlan, verdict.Decision | None]:
    """`check --merge REF` for the worktree that contains ``start``: the merge's plan and
    the decision on the lines it would change (None: it changes none). UsageError when
    ``ref`` cannot be merged here."""
    plan = merge_plan(start, ref)
    if not plan.targets:
        return plan, None
    repo = gitio.Repo(start, fast=True)
    root = repo.workdir
    d = check(root, plan.targets, deny_on, cwd=root, merging=plan.commit, merged=plan.tree)
    if d.decision == verdict.DENY:
        return plan, d
    found = exact_conflicts(repo, plan)
    if not found:
        return plan, d
    policy = deny_policy(deny_on) if deny_on else verdict.RA
    if policy == "never":
        return plan, d
    first = found[0]
    reason = (f"{first.detail}. Merge later (after they land), or coordinate with them "
              "first (`proximity inbox`)")
    return plan, verdict.Decision(verdict.DENY, reason, (*found, *d.conflicts))


def exact_conflicts(repo: gitio.Repo, plan: MergePlan) -> list[verdict.Conflict]:
    """git's own merge of the merge's result with each sibling's live work (a snapshot of
    its worktree now, on its HEAD): the siblings it would really conflict with, and
    where. Line evidence alone says "near" where git's merge of the whole result (a branch
    that brings another's edits of the same lines) conflicts."""
    me = repo.current()
    head = me.head
    if not head:
        return []
    merged = gitio.git(["commit-tree", plan.tree, "-p", head, "-p", plan.commit, "-m",
                        "proximity merge check"], cwd=repo.workdir,
                       env=SNAPSHOT_IDENT).stdout.decode().strip()
    led = open_ledger(repo)
    out: list[verdict.Conflict] = []
    try:
        for w in repo.worktrees():
            if w.id == me.id or w.prunable or not w.head or not os.path.isdir(w.path):
                continue
            try:  # its live state now (a merge is rare: worth reading every sibling)
                tree = repo.snapshot_tree(w)
            except FatalError:
                tree = recorded_tree(led, repo, w)
            theirs = w.head if tree == w.head else repo.snapshot_commit(tree, w.head)
            got = repo.merge_result(merged, theirs)
            if got is None or not got[1]:
                continue
            who = f"worktree {text(w.id)!r}" + (f" (branch {text(w.branch)})"
                                                 if w.branch else "")
            files = ", ".join(text(p, 200) for p in got[1][:4])
            out.append(verdict.Conflict(
                w.id, w.branch, got[1][0], (), "", verdict.RA, "conflict",
                f"merging {text(plan.ref)} here would conflict with {who}'s live work in "
                f"{files}{' and more' if len(got[1]) > 4 else ''} (git's merge of the "
                "result with their work)"))
    finally:
        if led is not None:
            led.close()
    return out


def merge_json(plan: MergePlan, d: verdict.Decision | None) -> dict[str, Any]:
    """`check --merge --json` (and the MCP tool): the decision and what the merge brings."""
    doc: dict[str, Any] = verdict.decision_json(d) if d is not None \
        else {"decision": verdict.ALLOW}
    doc["merge"] = {"ref": plan.ref, "commit": plan.commit,
                    "paths": [p for p, _ in plan.targets], "own_conflicts": plan.conflicts}
    return doc


