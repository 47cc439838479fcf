"""Others' snapshots as agents: fetched refs/ecm-remote/* read as untrusted data.

One `git for-each-ref` lists the refs; commits not seen before are read in two `git cat-file`
batches (never one larger than a snapshot commit may be) and validated by untrusted.py; the
verdict is cached in the ledger by commit id with the time *this* machine first saw it, which
alone decides staleness. A bad ref is skipped with one warning per process. ``near`` keeps,
for a hook, only the remote agents whose changes come near this worktree's.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from proximity import gitio, safetext
from proximity.errors import LedgerError
from proximity.ledger import TrackedDict, clocks
from proximity.model import Agent
from proximity.remote import untrusted
from proximity.remote.machine import machine_id
from proximity.snapshot.workspace import Context

LOCAL_NS = "refs/ecm-remote/"
TTL_SECONDS = 3 * 86400  # a remote snapshot older than this is stale: it never blocks
STALE_HOPS = 20  # … and so is one the airspace has moved this many hops past

_WARNED: set[str] = set()  # one warning per bad ref per process


def _warn(key: str, msg: str) -> None:
    if key in _WARNED:
        return
    _WARNED.add(key)
    print(f"proximity: warning: {safetext.text(msg, 300)}", file=sys.stderr)


def _read_commits(ctx: Context, oids: list[str]) -> dict[str, bytes | str]:
    """Raw commit objects (or why not) for ``oids``: two `git cat-file` runs in all, and
    nothing larger than a snapshot commit may be is ever read."""
    if not oids:
        return {}
    cwd = ctx.repo.here
    out: dict[str, bytes | str] = {}
    checked = gitio.git(["cat-file", "--batch-check"], cwd=cwd,
                        input="\n".join(oids).encode() + b"\n").stdout.decode()
    small = []
    for line in checked.splitlines():
        f = line.split()
        if len(f) != 3:
            if f:
                out[f[0]] = "object is missing"
            continue
        if f[1] != "commit":
            out[f[0]] = f"points at a {f[1]}, not a commit"
        elif int(f[2]) > untrusted.MAX_COMMIT_BYTES:
            out[f[0]] = f"commit is {f[2]} bytes (limit {untrusted.MAX_COMMIT_BYTES})"
        else:
            small.append(f[0])
    if small:
        data = gitio.git(["cat-file", "--batch"], cwd=cwd,
                         input="\n".join(small).encode() + b"\n").stdout
        pos = 0
        while pos < len(data):
            nl = data.index(b"\n", pos)
            f = data[pos:nl].decode().split()
            if len(f) != 3:  # "<oid> missing": gone since the check
                pos = nl + 1
                continue
            size = int(f[2])
            out[f[0]] = data[nl + 1: nl + 1 + size]
            pos = nl + 1 + size + 1
    return out


def _entry(raw: bytes | str, now: float) -> dict[str, Any]:
    """The cached verdict on one snapshot commit: validated fields or the reason not."""
    try:
        if isinstance(raw, str):
            raise untrusted.Invalid(raw)
        tree, parents, body = untrusted.commit_message(raw)
        meta = untrusted.parse_meta(body)
    except untrusted.Invalid as e:
        return {"seen": now, "error": str(e)}
    return {"seen": now, "meta": meta._asdict(), "tree": tree,
            "parent": parents[0] if parents else None}


def _refs(ctx: Context, mine: str, cache: dict[str, Any]
          ) -> list[tuple[str, str, str, str, str]]:
    """(oid, ref, remote, machine, worktree) of fetched refs within the limits. Over the
    limits, machines this one has known longest (by first sight of their snapshots) come
    first, so a flood of new machine ids cannot crowd out established teammates."""
    out = gitio.git(["for-each-ref", "--format=%(objectname) %(refname)", LOCAL_NS],
                    cwd=ctx.repo.here).stdout.decode("utf-8", "replace").splitlines()
    by_machine: dict[str, list[tuple[str, str, str, str, str]]] = {}
    known: dict[str, float] = {}
    for line in out:
        oid, _, ref = line.partition(" ")
        parts = ref[len(LOCAL_NS):].split("/")
        if len(parts) != 3:
            _warn(ref, f"remote snapshot {ref} skipped: not <remote>/<machine>/<worktree>")
            continue
        if parts[1] == mine:
            continue
        by_machine.setdefault(parts[1], []).append((oid, ref, parts[0], parts[1], parts[2]))
        entry = cache.get(oid)
        seen = entry.get("seen") if isinstance(entry, dict) else None
        if isinstance(seen, (int, float)):
            known[parts[1]] = min(known.get(parts[1], float("inf")), float(seen))
    kept: list[tuple[str, str, str, str, str]] = []
    over: list[str] = []
    for machine in sorted(by_machine, key=lambda m: (known.get(m, float("inf")), m)):
        for i, item in enumerate(by_machine[machine]):
            if i >= untrusted.MAX_REFS_PER_MACHINE or len(kept) >= untrusted.MAX_REFS:
                over.append(item[1])
            else:
                kept.append(item)
    if over:
        _warn("limit", f"{len(over)} remote snapshot ref(s) skipped over the limits "
              f"({untrusted.MAX_REFS_PER_MACHINE} per machine, {untrusted.MAX_REFS} in all), "
              f"e.g. {over[0]}")
    return kept


def agents(ctx: Context, include_stale: bool = False, now: float | None = None
           ) -> list[Agent]:
    """Other machines' worktrees from the fetched refs (fresh ones only, by default).

    Each ref's commit is validated once and the verdict cached by commit id, with the time
    this machine first saw it: a snapshot is stale TTL_SECONDS after *we* first saw it
    unchanged, whatever time it claims. A bad ref is skipped with one warning."""

    try:
        mine = machine_id(ctx)
    except OSError:
        mine = ""
    cache: dict[str, Any] = ctx.ledger.cache("remote", lazy=False) if ctx.ledger else {}
    refs = _refs(ctx, mine, cache)
    if not refs:
        return []
    now = time.time() if now is None else now
    todo = sorted({oid for oid, *_ in refs if cache.get(oid) is None})
    for oid, raw in _read_commits(ctx, todo).items():
        cache[oid] = _entry(raw, now)
    if ctx.ledger is not None and todo and isinstance(cache, TrackedDict):
        with contextlib.suppress(LedgerError):
            ctx.ledger.save_cache("remote", cache)
    local_clock = clocks.merge(*ctx.ledger.clocks().values()) if ctx.ledger else {}
    found: dict[str, Agent] = {}
    for oid, ref, remote, machine, wt in refs:
        try:
            agent, stale = _agent(cache.get(oid), oid, remote, machine, wt, now, local_clock)
        except untrusted.Invalid as e:
            _warn(ref, f"remote snapshot {ref} skipped: {e}")
            continue
        if include_stale or not stale:
            found.setdefault(agent.id, agent)  # the same agent through a second remote
    return list(found.values())


def _agent(entry: dict[str, Any] | None, oid: str, remote: str, machine: str, wt: str,
           now: float, local_clock: dict[str, int]) -> tuple[Agent, bool]:
    """(agent, stale) from one cached verdict; ``Invalid`` names what is wrong."""
    if not isinstance(entry, dict):
        raise untrusted.Invalid("object is missing")
    try:
        if entry.get("error") is not None:
            raise untrusted.Invalid(str(entry["error"]))
        meta = untrusted.Meta(**entry["meta"])
        if meta.machine != machine or gitio.safe_name(meta.worktree) != wt:
            raise untrusted.Invalid("its metadata names another machine or worktree than "
                                    "its ref")
        seen = float(entry["seen"])
        clock = {str(k): int(v) for k, v in meta.clock.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        if isinstance(e, untrusted.Invalid):
            raise
        raise untrusted.Invalid("unreadable cached verdict") from e
    stale = now - seen > TTL_SECONDS or bool(
        clock and clocks.hop_count(clock, local_clock) >= STALE_HOPS)
    who = f"{meta.machine}/{meta.worktree}"
    return Agent(
        id=who, path=f"{safetext.text(remote, 64)}:{who}", branch=meta.branch,
        head=entry.get("parent"), snapshot=oid, tree=entry.get("tree"), remote=True,
        machine=meta.machine, clock=clock,
        # a claimed creation later than we first saw the snapshot cannot be true
        started=min(meta.created, seen), subject=meta.subject), stale


def near(ctx: Context, remote: list[Agent], me: Agent | None) -> list[Agent]:
    """The remote agents a hook judges: those whose changes (against the merge base with
    ``me``) share a file or a directory with ``me``'s. Thousands of published refs then
    cost a hook one `git diff-tree --stdin` for snapshots it has not seen, and a cache
    lookup for the others; `proximity status` and `scan` judge every remote agent."""
    if not remote or me is None or not me.tree:
        return []
    repo = ctx.repo
    cache: dict[str, Any] = ctx.ledger.cache("remote") if ctx.ledger else {}
    base_of: dict[str | None, str] = {}
    wanted: dict[tuple[str, str], list[str] | None] = {}
    for x in [me, *remote]:
        if x.head not in base_of:
            base = repo.merge_base(me.head, x.head)
            base_of[x.head] = repo.commit_tree(base) if base else gitio.EMPTY_TREE
    for x in remote:
        for key in ((base_of[x.head], me.tree), (base_of[x.head], x.tree or gitio.EMPTY_TREE)):
            if key not in wanted:
                hit = cache.get(f"paths:{key[0]}:{key[1]}") if key[1] != me.tree else None
                wanted[key] = hit if isinstance(hit, list) else None
    todo = [k for k, v in wanted.items() if v is None]
    wanted.update(_changed_paths(ctx, todo))
    for (old, new), paths in wanted.items():
        if (old, new) in todo and new != me.tree and paths is not None:
            cache[f"paths:{old}:{new}"] = paths
    if ctx.ledger is not None and todo and isinstance(cache, TrackedDict):
        with contextlib.suppress(LedgerError):
            ctx.ledger.save_cache("remote", cache)
    out = []
    for x in remote:
        base = base_of[x.head]
        mine = set(wanted.get((base, me.tree)) or ())
        theirs = set(wanted.get((base, x.tree or gitio.EMPTY_TREE)) or ())
        dirs = {p.rpartition("/")[0] for p in mine}
        if mine & theirs or any(p.rpartition("/")[0] in dirs for p in theirs):
            out.append(x)
    return out


def _changed_paths(ctx: Context, pairs: list[tuple[str, str]]
                   ) -> dict[tuple[str, str], list[str]]:
    """Paths that differ between each (old, new) tree pair: one `git diff-tree --stdin`."""
    if not pairs:
        return {}
    heads = [f"{a} {b}\n".encode() for a, b in pairs]
    data = gitio.git(["diff-tree", "--stdin", "-r", "--name-only", "-z"], cwd=ctx.repo.here,
                     input=b"".join(heads), env=ctx.repo.objects_env()).stdout
    out: dict[tuple[str, str], list[str]] = {p: [] for p in pairs}
    pos, i = 0, -1
    while pos < len(data):
        if i + 1 < len(heads) and data.startswith(heads[i + 1], pos):
            i += 1
            pos += len(heads[i])
            continue
        end = data.find(b"\0", pos)
        end = len(data) if end < 0 else end
        if i >= 0:
            out[pairs[i]].append(data[pos:end].decode("utf-8", "surrogateescape"))
        pos = end + 1
    return out


def forget_unreferenced(ctx: Context) -> int:
    """Drop cached verdicts on snapshots no fetched ref points at any more (and the path
    sets, which the next guard recomputes in one process) once they outnumber the live
    ones; returns how many were dropped."""
    if ctx.ledger is None:
        return 0

    live = set(gitio.git(["for-each-ref", "--format=%(objectname)", LOCAL_NS],
                         cwd=ctx.repo.here).stdout.decode().split())
    try:
        full = ctx.ledger.cache("remote", lazy=False)
        if len(full) <= 2 * len(live) + 64:
            return 0
        kept = TrackedDict({})
        for k, v in full.items():
            if k in live:
                kept[k] = v
        kept["_"] = {}  # never empty: an empty dict would leave the old rows in place
        ctx.ledger.save_cache("remote", kept, replace=True)
    except LedgerError:
        return 0
    return len(full) - len(kept) + 1


