"""Beyond one machine: share snapshots through the git remote (no server of our own).

Each machine pushes, per live worktree, a commit whose tree is the live working state and
whose parent is the worktree's HEAD to ``refs/ecm/<machine>/<worktree>``; its message carries
the metadata (branch, vector clock, times) as JSON. Everyone fetches ``refs/ecm/*`` into
``refs/ecm-remote/<remote>/…``; other machines' refs become remote agents, on which every
channel runs as on local ones (the exact conflict channel included: the trees are here).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import time
from typing import Any, NamedTuple

from proximity import clocks, gitio, untrusted
from proximity import outgoing as outgoing_rules
from proximity.context import Context
from proximity.errors import FatalError
from proximity.model import Agent

LOCAL_NS = "refs/ecm-remote/"
TTL_SECONDS = 3 * 86400  # a remote snapshot older than this is stale: it never blocks
STALE_HOPS = 20  # … and so is one the airspace has moved this many hops past


def machine_id(ctx: Context) -> str:
    """Stable per clone: PROXIMITY_MACHINE_ID, [tool.proximity] machine_id, or generated once
    into <common-dir>/ecm/machine-id (a config file is shared by every clone, so it is only
    right where one machine owns the repository)."""
    env = os.environ.get("PROXIMITY_MACHINE_ID")
    if env:
        return _clean(env)
    if ctx.cfg.machine_id:
        return _clean(ctx.cfg.machine_id)
    path = os.path.join(ctx.repo.ecm_dir, "machine-id")
    try:
        with open(path) as f:
            found = _clean(f.read().strip())
        if found:
            return found
    except OSError:
        pass
    mid = _clean(f"{socket.gethostname()}-{os.urandom(3).hex()}")
    os.makedirs(ctx.repo.ecm_dir, exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(mid + "\n")
    os.replace(tmp, path)
    return mid


def _clean(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-.")[:64]


def default_remote(ctx: Context) -> str:
    repo = ctx.repo
    out = gitio.git(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
                    cwd=repo.workdir, ok=(0, 128)).stdout.decode().strip()
    if out and "/" in out:
        return out.split("/", 1)[0]
    remotes = gitio.git(["remote"], cwd=repo.workdir).stdout.decode().split()
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise FatalError("no remote to sync with: name one (`proximity sync REMOTE`)")


class Outgoing(NamedTuple):
    """One worktree's snapshot as it would leave the machine."""

    worktree: str
    ref: str
    branch: str | None
    head: str | None
    subject: str
    tree: str  # the filtered tree (the live tree when nothing is withheld)
    changes: list[dict[str, Any]]  # what differs from HEAD: path, size, status
    withheld: list[dict[str, Any]]  # path, size, reason (never leaves)


def outgoing(ctx: Context, machine: str, *, write: bool = True) -> list[Outgoing]:
    """Every live worktree's snapshot, filtered (secrets, excludes, size limit).
    ``write=False`` (a dry run) plans without writing the filtered trees."""
    from proximity.airspace import live_agents

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
                  ) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(tree to publish, published changes, withheld paths) for one live tree: its
    differences from HEAD, minus what outgoing.reason withholds (built in a temporary
    index, never the user's)."""
    repo, cfg = ctx.repo, ctx.cfg
    base = repo.commit_tree(head) if head else gitio.EMPTY_TREE
    raw = gitio.git(["diff-tree", "-r", "-z", "--no-renames", base, tree],
                    cwd=repo.workdir).stdout.split(b"\0")
    entries: list[tuple[str, str, str, str, str, str]] = []
    for info, name in zip(raw[0::2], raw[1::2], strict=False):
        f = info.decode().lstrip(":").split()
        if len(f) >= 5:
            entries.append((f[0], f[1], f[2], f[3], f[4][:1],
                            name.decode("utf-8", "surrogateescape")))
    sizes = _sizes(ctx, [e[3] for e in entries if e[4] != "D"])
    changes: list[dict[str, Any]] = []
    withheld: list[dict[str, Any]] = []
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

    os.makedirs(repo.ecm_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".sync-index.", dir=repo.ecm_dir)
    os.close(fd)
    os.unlink(tmp)  # git wants to create the index itself
    try:
        env = {"GIT_INDEX_FILE": tmp}
        gitio.git(["read-tree", tree], cwd=repo.workdir, env=env)
        gitio.git(["update-index", "-z", "--index-info"], cwd=repo.workdir, env=env,
                  input="".join(e + "\0" for e in edits).encode("utf-8", "surrogateescape"))
        tree = gitio.git(["write-tree"], cwd=repo.workdir, env=env).stdout.decode().strip()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return tree, changes, withheld


def _sizes(ctx: Context, oids: list[str]) -> dict[str, int]:
    """Object sizes, from one `git cat-file --batch-check` (0 for a missing object)."""
    if not oids:
        return {}
    out = gitio.git(["cat-file", "--batch-check"], cwd=ctx.repo.workdir,
                    input="\n".join(oids).encode() + b"\n").stdout.decode()
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
    out = {}
    for o in outgoing(ctx, machine):
        meta = {"schema": untrusted.SCHEMA, "machine": machine, "worktree": o.worktree,
                "branch": o.branch, "head": o.head, "clock": own_clocks.get(o.worktree, {}),
                "time": time.time(),
                "created": (streams.get(o.worktree) or {}).get("created") or time.time(),
                "subject": o.subject[:untrusted.MAX_SUBJECT]}
        msg = f"proximity snapshot {machine}/{o.worktree}\n\n{json.dumps(meta, sort_keys=True)}\n"
        out[o.worktree] = ctx.repo.snapshot_commit(o.tree, o.head, message=msg)
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
    proc = gitio.git(["push", "--no-verify", "--porcelain", remote, *refspecs],
                     cwd=ctx.repo.workdir, ok=(0, 1, 128))
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    if proc.returncode != 0:
        raise FatalError(
            f"the remote {remote!r} did not take refs/ecm/* ({_first_error(text)}); "
            "proximity needs a remote that accepts refs outside refs/heads (a bare repository "
            "or a forge that allows custom refs); your own pushes are not affected")
    return {"pushed": len(commits), "pruned": sum(1 for r in refspecs if r.startswith(":"))}


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if any(w in line.lower() for w in ("error", "rejected", "fatal", "denied")):
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else "no answer"


def list_remote(ctx: Context, remote: str, prefix: str) -> list[str]:
    proc = gitio.git(["ls-remote", remote, prefix + "*"], cwd=ctx.repo.workdir, ok=(0, 2, 128))
    if proc.returncode == 128:
        raise FatalError(f"cannot reach the remote {remote!r}: "
                         f"{_first_error(proc.stderr.decode(errors='replace'))}")
    return [line.split("\t")[1] for line in proc.stdout.decode().splitlines() if "\t" in line]


def fetch(ctx: Context, remote: str) -> None:
    """Fetch everyone's refs/ecm/* into refs/ecm-remote/<remote>/ (pruning retired ones).
    The objects stay in the fetched pack (never exploded into loose objects), the refs are
    packed; `git gc --auto` consolidates packs and drops what pruned refs left unreachable."""
    proc = gitio.git(["-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1",
                      "fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head",
                      remote, f"+refs/ecm/*:{LOCAL_NS}{remote}/*"], cwd=ctx.repo.workdir,
                     ok=(0, 1, 128))
    if proc.returncode != 0:
        raise FatalError(f"could not fetch refs/ecm/* from {remote!r}: "
                         f"{_first_error(proc.stderr.decode(errors='replace'))}")
    # thousands of loose ref files would slow every git command that reads refs
    gitio.git(["pack-refs", "--all"], cwd=ctx.repo.workdir, ok=(0, 1, 128))
    gitio.git(["gc", "--auto", "--quiet"], cwd=ctx.repo.workdir, ok=(0, 1, 128))


def sync(ctx: Context, remote: str | None, prune: bool = False) -> dict[str, Any]:
    gitio.require_git()
    remote = remote or ctx.cfg.sync_remote or default_remote(ctx)
    machine = machine_id(ctx)
    t0 = time.perf_counter()
    commits = publish(ctx, machine)
    stats = push(ctx, remote, machine, commits, prune)
    fetch(ctx, remote)
    stats.update({"remote": remote, "machine": machine, "seconds": time.perf_counter() - t0,
                  "remote_agents": len(agents(ctx, include_stale=True))})
    forget_unreferenced(ctx)
    return stats


def forget_unreferenced(ctx: Context) -> int:
    """Drop cached verdicts on snapshots no fetched ref points at any more (and the path
    sets, which the next guard recomputes in one process) once they outnumber the live
    ones; returns how many were dropped."""
    if ctx.ledger is None:
        return 0
    from proximity.errors import LedgerError
    from proximity.ledger import TrackedDict

    live = set(gitio.git(["for-each-ref", "--format=%(objectname)", LOCAL_NS],
                         cwd=ctx.repo.workdir).stdout.decode().split())
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


def dry_run(ctx: Context, remote: str | None, prune: bool = False) -> dict[str, Any]:
    """What `sync` would send, without sending or writing anything."""
    gitio.require_git()
    remote = remote or ctx.cfg.sync_remote or default_remote(ctx)
    machine = machine_id(ctx)
    plans = outgoing(ctx, machine, write=False)
    refs = []
    for o in plans:
        unpushed = None
        if o.head:
            out = gitio.git(["rev-list", "--count", o.head, "--not", f"--remotes={remote}"],
                            cwd=ctx.repo.workdir, ok=(0, 128)).stdout.decode().strip()
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


# -- reading others' snapshots (untrusted) ---------------------------------------------

_WARNED: set[str] = set()  # one warning per bad ref per process


def _warn(key: str, msg: str) -> None:
    if key in _WARNED:
        return
    _WARNED.add(key)
    print(f"proximity: warning: {untrusted.text(msg, 300)}", file=sys.stderr)


def _read_commits(ctx: Context, oids: list[str]) -> dict[str, bytes | str]:
    """Raw commit objects (or why not) for ``oids``: two `git cat-file` runs in all, and
    nothing larger than a snapshot commit may be is ever read."""
    if not oids:
        return {}
    cwd = ctx.repo.workdir
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


def _refs(ctx: Context, mine: str) -> list[tuple[str, str, str, str, str]]:
    """(oid, ref, remote, machine, worktree) of fetched refs within the limits."""
    out = gitio.git(["for-each-ref", "--format=%(objectname) %(refname)", LOCAL_NS],
                    cwd=ctx.repo.workdir).stdout.decode("utf-8", "replace").splitlines()
    per_machine: dict[str, int] = {}
    kept: list[tuple[str, str, str, str, str]] = []
    over: list[str] = []
    for line in out:
        oid, _, ref = line.partition(" ")
        parts = ref[len(LOCAL_NS):].split("/")
        if len(parts) != 3:
            _warn(ref, f"remote snapshot {ref} skipped: not <remote>/<machine>/<worktree>")
            continue
        if parts[1] == mine:
            continue
        per_machine[parts[1]] = per_machine.get(parts[1], 0) + 1
        if per_machine[parts[1]] > untrusted.MAX_REFS_PER_MACHINE or \
                len(kept) >= untrusted.MAX_REFS:
            over.append(ref)
            continue
        kept.append((oid, ref, parts[0], parts[1], parts[2]))
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
    refs = _refs(ctx, mine)
    if not refs:
        return []
    cache: dict[str, Any] = ctx.ledger.cache("remote") if ctx.ledger else {}
    now = time.time() if now is None else now
    todo = sorted({oid for oid, *_ in refs if cache.get(oid) is None})
    for oid, raw in _read_commits(ctx, todo).items():
        cache[oid] = _entry(raw, now)
    if ctx.ledger is not None and todo:
        from proximity.errors import LedgerError
        from proximity.ledger import TrackedDict

        if isinstance(cache, TrackedDict):
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
        id=who, path=f"{untrusted.text(remote, 64)}:{who}", branch=meta.branch,
        head=entry.get("parent"), snapshot=oid, tree=entry.get("tree"), remote=True,
        machine=meta.machine, clock=clock,
        # a claimed creation later than we first saw the snapshot cannot be true
        started=min(meta.created, seen), subject=meta.subject), stale


def prune_fetched(ctx: Context, remote: str, machine: str) -> int:
    """Drop local copies of this machine's own refs (the remote no longer has retired ones)."""
    out = gitio.git(["for-each-ref", "--format=%(refname)", f"{LOCAL_NS}{remote}/{machine}/"],
                    cwd=ctx.repo.workdir).stdout.decode().split()
    if out:
        gitio.git(["update-ref", "--stdin"], cwd=ctx.repo.workdir,
                  input="".join(f"delete {ref}\n" for ref in out).encode())
    return len(out)


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
    if ctx.ledger is not None and todo:
        from proximity.errors import LedgerError
        from proximity.ledger import TrackedDict

        if isinstance(cache, TrackedDict):
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
    data = gitio.git(["diff-tree", "--stdin", "-r", "--name-only", "-z"], cwd=ctx.repo.workdir,
                     input=b"".join(heads)).stdout
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
