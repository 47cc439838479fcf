"""Beyond one machine: share snapshots through the git remote (no server of our own).

Each machine pushes, per live worktree, a commit whose tree is the live working state and
whose parent is the worktree's HEAD to ``refs/ecm/<machine>/<worktree>``; its message carries
the metadata (branch, vector clock, times) as JSON. Everyone fetches ``refs/ecm/*`` into
``refs/ecm-remote/<remote>/…``; other machines' refs become remote agents, on which every
channel runs as on local ones (the exact conflict channel included: the trees are here).
This module publishes (what may leave: outgoing.py) and fetches; inbound.py reads what others
published, as untrusted data.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypedDict

from proximity import gitio, owned
from proximity.errors import FatalError, UsageError
from proximity.remote import inbound, quarantine, signing, untrusted
from proximity.remote import outgoing as outgoing_rules
from proximity.remote.inbound import LOCAL_NS
from proximity.remote.machine import machine_id
from proximity.safetext import text
from proximity.snapshot.agents import live_agents
from proximity.snapshot.workspace import Context


def default_remote(ctx: Context) -> str:
    repo = ctx.repo
    out = gitio.git(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
                    cwd=repo.here, ok=(0, 128)).stdout.decode().strip()
    if out and "/" in out:
        return out.split("/", 1)[0]
    remotes = gitio.git(["remote"], cwd=repo.here).stdout.decode().split()
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise FatalError("no remote to sync with: name one (`proximity sync REMOTE`)")


def chosen_remote(ctx: Context, remote: str | None) -> str:
    """The remote to sync with: the one named (a configured remote), else the configured
    or default one. Anything else is an error said at once (a dry run said it "would
    push to" a remote that does not exist; a URL failed at git's refspec)."""
    if not remote:
        return ctx.cfg.sync_remote or default_remote(ctx)
    remotes = gitio.git(["remote"], cwd=ctx.repo.here).stdout.decode().split()
    if remote not in remotes:
        # (other machines' snapshots are kept under the remote's name: a URL, a path or
        # an option is no name to keep them under, nor to hand git)
        known = ", ".join(remotes) or "none"
        raise UsageError(f"no remote named {text(remote, 300)!r} (the remotes: "
                         f"{text(known, 300)}); name one (`git remote add NAME URL` first "
                         "for a URL)")
    return remote


class Change(TypedDict):
    """A path whose snapshot differs from HEAD, as it leaves the machine."""
    path: str
    size: int  # bytes
    status: str  # git's letter: A, M, D or T


class Held(TypedDict):
    """A path that never leaves the machine, and why (outgoing.reason)."""
    path: str
    size: int
    reason: str


class Outgoing(NamedTuple):
    """One worktree's snapshot as it would leave the machine."""
    worktree: str
    ref: str
    branch: str | None
    head: str | None
    subject: str
    tree: str  # the filtered tree (the live tree when nothing is withheld)
    changes: list[Change]  # what differs from HEAD
    withheld: list[Held]  # what never leaves


def outgoing(ctx: Context, machine: str, *, write: bool = True) -> list[Outgoing]:
    """Every live worktree's snapshot, filtered (secrets, excludes, size limit).
    ``write=False`` (a dry run) plans without writing the filtered trees."""

    agents, _ = live_agents(ctx.repo)
    out = []
    for a in agents:
        if a.error or not a.tree:
            continue
        tree, changes, withheld = filtered_tree(ctx, a.tree, a.head, write=write)
        out.append(Outgoing(a.id, f"refs/ecm/{machine}/{gitio.safe_name(a.id)}", a.branch,
                            a.head, a.subject, tree, changes, withheld))
    return out


def filtered_tree(ctx: Context, tree: str, head: str | None, *, write: bool = True
                  ) -> tuple[str, list[Change], list[Held]]:
    """(tree to publish, published changes, withheld paths) for one live tree: its
    differences from HEAD, minus what outgoing.reason withholds (built in a temporary
    index, never the user's)."""
    repo, cfg = ctx.repo, ctx.cfg
    base = repo.commit_tree(head) if head else gitio.EMPTY_TREE
    raw = gitio.git(["diff-tree", "-r", "-z", "--no-renames", base, tree],
                    cwd=repo.here, env=repo.objects_env()).stdout.split(b"\0")
    entries: list[tuple[str, str, str, str, str, str]] = []
    for info, name in zip(raw[0::2], raw[1::2], strict=False):
        f = info.decode().lstrip(":").split()
        if len(f) >= 5:
            entries.append((f[0], f[1], f[2], f[3], f[4][:1],
                            name.decode("utf-8", "surrogateescape")))
    sizes = _sizes(ctx, [e[3] for e in entries if e[4] != "D"])
    changes: list[Change] = []
    withheld: list[Held] = []
    edits: list[str] = []
    for old_mode, _new_mode, old_oid, new_oid, status, path in entries:
        size = sizes.get(new_oid, 0)
        tracked = old_mode != "000000"
        why = None if status == "D" else outgoing_rules.reason(
            path, size, tracked, cfg.sync_exclude, cfg.sync_max_bytes)
        if why is None:
            changes.append({"path": path, "size": size, "status": status})
            continue
        withheld.append({"path": path, "size": size, "reason": why})
        edits.append(f"{old_mode} {old_oid}\t{path}" if tracked
                     else f"0 {'0' * 40}\t{path}")
    if not edits or not write:
        return tree, changes, withheld
    import tempfile

    owned.private_dir(repo.ecm_dir)
    fd, tmp = tempfile.mkstemp(prefix=".sync-index.", dir=repo.ecm_dir)
    os.close(fd)
    os.unlink(tmp)  # git wants to create the index itself
    try:
        env = {**repo.objects_env(), "GIT_INDEX_FILE": tmp}
        gitio.git(["read-tree", tree], cwd=repo.here, env=env)
        gitio.git(["update-index", "-z", "--index-info"], cwd=repo.here, env=env,
                  input="".join(e + "\0" for e in edits).encode("utf-8", "surrogateescape"))
        tree = gitio.git(["write-tree"], cwd=repo.here, env=env).stdout.decode().strip()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return tree, changes, withheld


def _sizes(ctx: Context, oids: list[str]) -> dict[str, int]:
    """Object sizes, from one `git cat-file --batch-check` (0 for a missing object)."""
    if not oids:
        return {}
    out = gitio.git(["cat-file", "--batch-check"], cwd=ctx.repo.here,
                    input="\n".join(oids).encode() + b"\n", env=ctx.repo.objects_env()
                    ).stdout.decode()
    sizes = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2].isdigit():
            sizes[f[0]] = int(f[2])
    return sizes


def publish(ctx: Context, machine: str) -> dict[str, str]:
    """One sync commit per live worktree: worktree id -> commit id."""
    streams = ctx.ledger.streams() if ctx.ledger else {}
    own_clocks = ctx.ledger.clocks() if ctx.ledger else {}
    signed = signing.signing_key(ctx) is not None
    out = {}
    for o in outgoing(ctx, machine):
        meta = {"schema": untrusted.SCHEMA, "machine": machine, "worktree": o.worktree,
                "branch": o.branch, "head": o.head, "clock": own_clocks.get(o.worktree, {}),
                "time": time.time(),
                "created": (streams.get(o.worktree) or {}).get("created") or time.time(),
                "subject": o.subject[:untrusted.MAX_SUBJECT]}
        msg = f"proximity snapshot {machine}/{o.worktree}\n\n{json.dumps(meta, sort_keys=True)}\n"
        out[o.worktree] = (signing.signed_commit(ctx, o.tree, o.head, msg) if signed
                           else ctx.repo.snapshot_commit(o.tree, o.head, message=msg))
    return out


def push(ctx: Context, remote: str, machine: str, commits: dict[str, str],
         prune: bool = False) -> dict[str, Any]:
    refspecs = [f"+{c}:refs/ecm/{machine}/{gitio.safe_name(w)}" for w, c in commits.items()]
    if prune:
        theirs = list_remote(ctx, remote, f"refs/ecm/{machine}/")
        live = {f"refs/ecm/{machine}/{gitio.safe_name(w)}" for w in commits}
        refspecs += [f":{ref}" for ref in theirs if ref not in live]
    if not refspecs:
        return {"pushed": 0, "pruned": 0}
    # (the snapshots' objects are in the private store: this push, and only it, sends them)
    proc = gitio.git(["push", "--no-verify", "--porcelain", remote, *refspecs],
                     cwd=ctx.repo.here, ok=(0, 1, 128),
                     env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": ":".join(
                         gitio.quote_path(d) for d in ctx.repo.store.read_dirs())})
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    if proc.returncode != 0:
        raise FatalError(
            f"the remote {remote!r} did not take refs/ecm/* ({quarantine.first_error(text)}); "
            "proximity needs a remote that accepts refs outside refs/heads (a bare repository "
            "or a forge that allows custom refs); your own pushes are not affected")
    return {"pushed": len(commits), "pruned": sum(1 for r in refspecs if r.startswith(":"))}


def list_remote(ctx: Context, remote: str, prefix: str) -> list[str]:
    proc = gitio.git(["ls-remote", remote, prefix + "*"], cwd=ctx.repo.here, ok=(0, 2, 128))
    if proc.returncode == 128:
        raise FatalError(f"cannot reach the remote {remote!r}: "
                         f"{quarantine.first_error(proc.stderr.decode(errors='replace'))}")
    return [line.split("\t")[1] for line in proc.stdout.decode().splitlines() if "\t" in line]


def fetch(ctx: Context, remote: str, machine: str) -> dict[str, Any]:
    """Fetch everyone's refs/ecm/* into refs/ecm-remote/<remote>/ (pruning retired ones)
    through the quarantine (quarantine.py: size limit, signatures); returns what it
    rejected and which machines it verified. The objects stay in the fetched pack (never
    exploded into loose objects), the refs are packed; `git gc --auto` consolidates packs
    and drops what pruned refs left unreachable."""
    decided = quarantine.fetch(ctx, remote, machine)
    # thousands of loose ref files would slow every git command that reads refs
    gitio.git(["pack-refs", "--all"], cwd=ctx.repo.here, ok=(0, 1, 128))
    gitio.git(["gc", "--auto", "--quiet"], cwd=ctx.repo.here, ok=(0, 1, 128))
    return decided


def sync(ctx: Context, remote: str | None, prune: bool = False,
         say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Publish this machine's worktrees, push them, fetch everyone else's (``say``: told
    each step as it begins, for a terminal's spinner)."""
    gitio.require_git()
    step = say or (lambda _s: None)
    remote = chosen_remote(ctx, remote)
    rel = quarantine.relative_url(ctx, remote)
    if rel is not None and not os.path.exists(rel[1]):
        raise FatalError(
            f"the remote {remote!r} is the relative path {rel[0]!r}, which git reads from "
            f"this worktree's top as {rel[1]}: nothing is there (a worktree elsewhere than "
            f"the one it was written for); give it an absolute URL (`git remote set-url "
            f"{remote} …`)")
    machine = machine_id(ctx)
    t0 = time.perf_counter()
    step("snapshotting the worktrees")
    commits = publish(ctx, machine)
    step(f"pushing to {remote}")
    stats = push(ctx, remote, machine, commits, prune)
    step(f"fetching from {remote}")
    stats.update(fetch(ctx, remote, machine))
    stats.update({"remote": remote, "machine": machine, "seconds": time.perf_counter() - t0,
                  "remote_agents": len(inbound.agents(ctx, include_stale=True))})
    inbound.forget_unreferenced(ctx)
    return stats

def dry_run(ctx: Context, remote: str | None, prune: bool = False) -> dict[str, Any]:
    """What `sync` would send, without sending or writing anything."""
    gitio.require_git()
    remote = chosen_remote(ctx, remote)
    machine = machine_id(ctx)
    plans = outgoing(ctx, machine, write=False)
    refs = []
    for o in plans:
        unpushed = None
        if o.head:
            out = gitio.git(["rev-list", "--count", o.head, "--not", f"--remotes={remote}"],
                            cwd=ctx.repo.here, ok=(0, 128)).stdout.decode().strip()
            unpushed = int(out) if out.isdigit() else None
        refs.append({"ref": o.ref, "worktree": o.worktree, "branch": o.branch,
                     "head": o.head, "head_commits_not_on_remote": unpushed,
                     "paths": o.changes, "bytes": sum(c["size"] for c in o.changes),
                     "withheld": o.withheld})
    deleted: list[str] = []
    if prune:
        live = {o.ref for o in plans}
        deleted = [r for r in list_remote(ctx, remote, f"refs/ecm/{machine}/") if r not in live]
    return {"remote": remote, "machine": machine, "dry_run": True, "refs": refs,
            "would_delete": deleted}


def prune_fetched(ctx: Context, remote: str, machine: str) -> int:
    """Drop local copies of this machine's own refs (the remote no longer has retired ones)."""
    out = gitio.git(["for-each-ref", "--format=%(refname)", f"{LOCAL_NS}{remote}/{machine}/"],
                    cwd=ctx.repo.here).stdout.decode().split()
    if out:
        gitio.git(["update-ref", "--stdin"], cwd=ctx.repo.here,
                  input="".join(f"delete {ref}\n" for ref in out).encode())
    return len(out)

