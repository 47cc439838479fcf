"""Beyond one machine: share snapshots through the git remote (no server of our own).

Each machine pushes, per live worktree, a commit whose tree is the live working state and
whose parent is the worktree's HEAD to ``refs/ecm/<machine>/<worktree>``; its message carries
the metadata (branch, vector clock, times) as JSON. Everyone fetches ``refs/ecm/*`` into
``refs/ecm-remote/<remote>/…``; other machines' refs become remote agents, on which every
channel runs as on local ones (the exact conflict channel included: the trees are here).
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from typing import Any

from proximity import clocks, gitio
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


def publish(ctx: Context, machine: str) -> dict[str, str]:
    """One sync commit per live worktree: worktree id -> commit id."""
    from proximity.airspace import live_agents

    agents, _ = live_agents(ctx.repo)
    streams = ctx.ledger.streams() if ctx.ledger else {}
    own_clocks = ctx.ledger.clocks() if ctx.ledger else {}
    out = {}
    for a in agents:
        if a.error or not a.tree:
            continue
        meta = {"machine": machine, "worktree": a.id, "branch": a.branch, "head": a.head,
                "clock": own_clocks.get(a.id, {}), "time": time.time(),
                "created": (streams.get(a.id) or {}).get("created") or time.time(),
                "subject": a.subject}
        msg = f"proximity snapshot {machine}/{a.id}\n\n{json.dumps(meta, sort_keys=True)}\n"
        out[a.id] = ctx.repo.snapshot_commit(a.tree, a.head, message=msg)
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
    proc = gitio.git(["fetch", "--quiet", "--no-tags", "--prune", remote,
                      f"+refs/ecm/*:{LOCAL_NS}{remote}/*"], cwd=ctx.repo.workdir,
                     ok=(0, 1, 128))
    if proc.returncode != 0:
        raise FatalError(f"could not fetch refs/ecm/* from {remote!r}: "
                         f"{_first_error(proc.stderr.decode(errors='replace'))}")


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
    return stats


def _meta(ctx: Context, commit: str) -> dict[str, Any] | None:
    out = gitio.git(["cat-file", "commit", commit], cwd=ctx.repo.workdir, ok=(0, 128))
    if out.returncode != 0:
        return None
    body = out.stdout.decode("utf-8", "replace").split("\n\n", 1)
    if len(body) < 2:
        return None
    try:
        meta = json.loads(body[1].split("\n", 2)[-1] if body[1].startswith("proximity")
                          else body[1])
    except ValueError:
        return None
    parents = [line.split()[1] for line in body[0].splitlines() if line.startswith("parent ")]
    tree = next((line.split()[1] for line in body[0].splitlines()
                 if line.startswith("tree ")), None)
    meta["_tree"], meta["_parent"] = tree, parents[0] if parents else None
    return meta if isinstance(meta, dict) else None


def agents(ctx: Context, include_stale: bool = False) -> list[Agent]:
    """Other machines' worktrees, from the fetched refs (fresh ones only, by default)."""
    try:
        mine = machine_id(ctx)
    except OSError:
        mine = ""
    out = gitio.git(["for-each-ref", "--format=%(objectname) %(refname)", LOCAL_NS],
                    cwd=ctx.repo.workdir).stdout.decode().splitlines()
    local_clock = clocks.merge(*ctx.ledger.clocks().values()) if ctx.ledger else {}
    found: list[Agent] = []
    now = time.time()
    for line in out:
        commit, ref = line.split(" ", 1)
        parts = ref[len(LOCAL_NS):].split("/")
        if len(parts) < 3 or parts[1] == mine:
            continue
        meta = _meta(ctx, commit)
        if not meta:
            continue
        clock = {k: int(v) for k, v in (meta.get("clock") or {}).items()}
        stale = now - float(meta.get("time", 0)) > TTL_SECONDS or (
            clock and clocks.hop_count(clock, local_clock) >= STALE_HOPS)
        if stale and not include_stale:
            continue
        found.append(Agent(
            id=f"{meta.get('machine', parts[1])}/{meta.get('worktree', parts[2])}",
            path=f"{parts[0]}:{meta.get('machine')}/{meta.get('worktree')}",
            branch=meta.get("branch"), head=meta.get("_parent"), snapshot=commit,
            tree=meta.get("_tree"), remote=True, machine=str(meta.get("machine", parts[1])),
            clock=clock, started=float(meta.get("created", 0) or 0),
            subject=str(meta.get("subject") or "")))
    return found


def prune_fetched(ctx: Context, remote: str, machine: str) -> int:
    """Drop local copies of this machine's own refs (the remote no longer has retired ones)."""
    out = gitio.git(["for-each-ref", "--format=%(refname)", f"{LOCAL_NS}{remote}/{machine}/"],
                    cwd=ctx.repo.workdir).stdout.decode().split()
    for ref in out:
        gitio.git(["update-ref", "-d", ref], cwd=ctx.repo.workdir)
    return len(out)
