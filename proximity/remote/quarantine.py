"""Others' snapshots pass a quarantine before they reach this clone: size, then signature.

`sync` fetches ``refs/ecm/*`` into a throwaway bare repository under ``<common-dir>/ecm/``
whose object store borrows this clone's (``objects/info/alternates``), so only objects this
clone lacks cross the network, and whose config includes this clone's, so the remote's URL,
credentials and transport settings are the user's own. There each new snapshot is judged:

- **size**: an object over ``sync_fetch_max_bytes`` that this clone lacks (anywhere in the
  snapshot or the HEAD commits under it) rejects the snapshot. The fetch asks the server to
  withhold such blobs (``--filter=blob:limit``): GitHub, GitLab and any git with
  ``uploadpack.allowFilter`` then never send them. A server without filters (a plain bare
  repository) ignores the request and sends everything — into the quarantine only, which is
  deleted; the rejected commit is remembered, so the next sync leaves that ref out of the
  fetch (a negative refspec) until it changes. The filter never touches this clone: a
  partial clone's promisor remote would make later commands fetch missing blobs on demand,
  and `gc` of a repository with missing objects fails; the quarantine is the one partial
  repository, and it lives for one fetch.
- **signature**: ``signing.judge`` (trust on first use of a machine id's key); a verified
  snapshot older (by its own signed time) than the one of that ref already held is a
  replay, rejected.

Accepted snapshots are fetched from the quarantine into ``refs/ecm-remote/<remote>/…`` (the
objects stay packed); a rejected one leaves the last snapshot of that ref this clone
accepted in place (so a forged "I reverted" cannot lift a real block) and is named in one
warning line. Refs the remote no longer has are dropped. What was decided is kept in
``<common-dir>/ecm/remote-trust.json`` for `proximity doctor`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from proximity import gitio, owned, safetext
from proximity.errors import FatalError
from proximity.remote import commits, signing
from proximity.remote.inbound import LOCAL_NS, TTL_SECONDS
from proximity.remote.signing import Signature
from proximity.snapshot.workspace import Context

Q_NS = "refs/q/"
ECM_NS = "refs/ecm/"
STATE = "remote-trust.json"
# ref names are bytes (any but a few ASCII ones): carried through exactly, shown cleaned
_RAW = ("utf-8", "surrogateescape")


def fetch(ctx: Context, remote: str, mine: str) -> dict[str, Any]:
    """Fetch, judge and keep others' snapshots; returns what was decided (``rejected``:
    remote ref -> why, ``verified``: machine -> key)."""
    repo = ctx.repo
    limit = ctx.cfg.sync_fetch_max_bytes
    state = load_state(ctx).get(remote, {})
    known_big = state.get("oversized", {}) if isinstance(state.get("oversized"), dict) else {}
    skip = _known_oversized(ctx, remote, known_big) if known_big else {}
    local = _refs(repo.here, f"{LOCAL_NS}{remote}/")
    try:
        return _through(ctx, remote, mine, limit, skip, local)
    except OSError as e:  # the quarantine could not be made: nothing was fetched
        raise FatalError(f"could not fetch refs/ecm/* from {remote!r}: no room for the "
                         f"quarantine in {repo.ecm_dir} ({e})") from e


def _through(ctx: Context, remote: str, mine: str, limit: int,
             skip: dict[str, tuple[str, str]], local: dict[str, str]) -> dict[str, Any]:
    """The fetch through one quarantine, the refs updated, the decisions told and kept."""
    repo = ctx.repo
    with _quarantine(ctx) as q:
        _fetch_into(q, _source(ctx, remote), remote, limit, skip)
        fetched = _refs(q, Q_NS)
        new = {n: oid for n, oid in fetched.items()
               if local.get(n) != oid and n.split("/", 1)[0] != mine}
        rejected = _oversized(q, repo.here, new, limit)
        oversized = {new[n]: why for n, why in rejected.items()}
        sigs = commits.signatures(q, sorted({o for n, o in new.items() if n not in rejected}))
        judged, pins = _judge_signatures(ctx, sigs, {n: o for n, o in new.items()
                                                     if n not in rejected})
        rejected.update({n: v.why or "rejected" for n, v in judged.items()
                         if v.state == "rejected"})
        rejected.update(_replays(q, {n: new[n] for n, v in judged.items()
                                     if v.state == "verified"}, local))
        if rejected:
            gitio.git(["update-ref", "--stdin"], cwd=q, input="".join(
                f"delete {Q_NS}{n}\n" for n in sorted(rejected)).encode(*_RAW))
        gitio.git(["-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1", "fetch",
                   "--quiet", "--no-tags", "--no-write-fetch-head", q,
                   f"+{Q_NS}*:{LOCAL_NS}{remote}/*"], cwd=repo.here, timeout=600)
    signing.save_pins(ctx, pins)
    gone = [n for n in local if n not in fetched and n not in skip]
    held = vanished(ctx, {n: local[n] for n in gone}, mine)
    drop = [n for n in gone if n not in held]
    if drop:
        gitio.git(["update-ref", "--stdin"], cwd=repo.here, input="".join(
            f"delete {LOCAL_NS}{remote}/{n}\n" for n in drop).encode(*_RAW))
    for n, (_oid, why) in skip.items():
        rejected[n] = why
        oversized[_oid] = why
    for n in sorted(rejected):
        print(warning(n, rejected[n], kept=n in local), file=sys.stderr)
    for n in sorted(held):
        print(vanished_warning(n, remote), file=sys.stderr)
    save_state(ctx, remote, {"time": time.time(), "machine": mine,
                             "rejected": {f"{ECM_NS}{n}": w for n, w in rejected.items()},
                             "oversized": oversized,
                             "vanished": {f"{ECM_NS}{n}": oid for n, oid in held.items()}})
    return {"rejected": {f"{ECM_NS}{n}": w for n, w in rejected.items()},
            "vanished": sorted(f"{ECM_NS}{n}" for n in held),
            "verified": {n.split("/", 1)[0]: sigs[new[n]].key
                         for n, v in judged.items()
                         if v.state == "verified" and n not in rejected}}


def warning(name: str, why: str, *, kept: bool) -> str:
    """The one line naming a rejected snapshot (``name``: <machine>/<worktree>), its
    machine and why; ``kept``: this clone still holds an earlier snapshot of that ref."""
    machine = name.split("/", 1)[0]
    return (f"proximity: warning: remote snapshot {ECM_NS}{safetext.text(name, 300)} of "
            f"machine {safetext.text(machine, 64)} rejected: {safetext.text(why, 300)}"
            + (" (the last one accepted stays)" if kept else ""))


def vanished(ctx: Context, gone: dict[str, str], mine: str) -> dict[str, str]:
    """The snapshots the remote no longer has (``gone``: name -> the commit held here)
    that stay: those of a machine whose key is pinned, until they turn stale as any
    remote snapshot does (inbound.TTL_SECONDS after this clone first saw them). Anyone with
    push access can delete a teammate's refs; a pinned machine's last verified snapshot is
    a fact that deletion does not undo, only that machine's newer snapshot does. An
    unsigned machine's refs go with the remote's: anyone could have written them."""
    pins = signing.load_pins(ctx)
    cache: dict[str, Any] = ctx.ledger.cache("remote") if ctx.ledger else {}
    now = time.time()
    held = {}
    for n, oid in gone.items():
        machine = n.split("/", 1)[0]
        if machine == mine or machine not in pins:
            continue
        entry = cache.get(oid)
        seen = entry.get("seen") if isinstance(entry, dict) else None
        if isinstance(seen, (int, float)) and now - seen > TTL_SECONDS:
            continue
        held[n] = oid
    return held


def vanished_warning(name: str, remote: str) -> str:
    """The one line naming a pinned machine's snapshot that vanished from the remote."""
    machine = name.split("/", 1)[0]
    return (f"proximity: warning: remote snapshot {ECM_NS}{safetext.text(name, 300)} of "
            f"machine {safetext.text(machine, 64)} vanished from {safetext.text(remote, 64)} "
            "though its key is pinned (someone with push access deleted it, or that machine "
            "pruned it): its last verified snapshot keeps judging until that machine "
            "publishes a newer one or it turns stale")


@contextlib.contextmanager
def _quarantine(ctx: Context) -> Iterator[str]:
    """A bare repository for one fetch: this clone's objects borrowed, its config included
    (first, so the quarantine's own settings below win), removed afterwards whatever
    happens."""
    repo = ctx.repo
    owned.private_dir(repo.ecm_dir)
    q = tempfile.mkdtemp(prefix="inbound.", dir=repo.ecm_dir)
    try:
        fmt = gitio.git(["rev-parse", "--show-object-format"], cwd=repo.here
                        ).stdout.decode().strip() or "sha1"
        gitio.git(["init", "-q", "--bare", f"--object-format={fmt}", q], cwd=repo.ecm_dir)
        with open(os.path.join(q, "objects", "info", "alternates"), "w") as f:
            objects = os.path.join(repo.common, "objects")
            # git reads a line that starts with a quote as a C-quoted path (a newline in it)
            f.write((_quote(objects) if "\n" in objects or objects.startswith('"')
                     else objects) + "\n")
        extension = f"[extensions]\n\tobjectFormat = {fmt}\n" if fmt != "sha1" else ""
        with open(os.path.join(q, "config"), "w") as f:
            f.write(f"[include]\n\tpath = {_quote(os.path.join(repo.common, 'config'))}\n"
                    f"[core]\n\trepositoryformatversion = {1 if extension else 0}\n"
                    # no hook of the user's runs for the quarantine's own ref updates
                    f"\tbare = true\n\thooksPath = {_quote(os.devnull)}\n{extension}"
                    "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n"
                    "[fetch]\n\tunpackLimit = 1\n[transfer]\n\tunpackLimit = 1\n")
        yield q
    finally:
        shutil.rmtree(q, ignore_errors=True)


def _quote(path: str) -> str:
    """``path`` as a git config value."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def relative_url(ctx: Context, remote: str) -> tuple[str, str] | None:
    """(its URL, the path git reads it as in this worktree: from the worktree's top) when
    ``remote``'s URL is a relative path (``../shared.git``); None for a URL, an absolute
    path, host:path, or a remote with no URL of its own."""
    proc = gitio.git(["config", "--get", f"remote.{remote}.url"], cwd=ctx.repo.here,
                     ok=(0, 1))
    url = proc.stdout.decode(*_RAW).rstrip("\n")
    head = url.split("/", 1)[0]
    if not url or os.path.isabs(url) or "://" in url or ":" in head:
        return None
    return url, os.path.normpath(os.path.join(ctx.repo.workdir, url))


def _source(ctx: Context, remote: str) -> str:
    """What the quarantine fetches from for ``remote``: the remote itself, or, when its URL
    is a relative path, that path as git reads it in this worktree, made absolute (the
    quarantine is elsewhere: the name would find another directory)."""
    rel = relative_url(ctx, remote)
    return rel[1] if rel is not None else remote


def _fetch_into(q: str, source: str, remote: str, limit: int,
                skip: dict[str, tuple[str, str]]) -> None:
    """Everyone's refs/ecm/* from ``source`` (the remote ``remote``) into the quarantine's
    refs/q/*, the server asked to withhold blobs over ``limit``; refs in ``skip`` (known
    oversized commits) left out."""
    refspecs = [f"+{ECM_NS}*:{Q_NS}*", *(f"^{ECM_NS}{n}" for n in sorted(skip))]
    proc = gitio.git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                      f"--filter=blob:limit={limit + 1}", "--stdin", "--", source], cwd=q,
                     input="".join(r + "\n" for r in refspecs).encode(*_RAW), ok=(0, 1, 128))
    if proc.returncode != 0:
        raise FatalError(f"could not fetch refs/ecm/* from {remote!r}: "
                         f"{first_error(proc.stderr.decode(errors='replace'))}")


def _known_oversized(ctx: Context, remote: str, known: dict[str, Any]
                     ) -> dict[str, tuple[str, str]]:
    """Refs whose commit on the remote was rejected as oversized before: name -> (commit,
    why). One `git ls-remote`, only when such a commit is remembered."""
    proc = gitio.git(["ls-remote", remote, f"{ECM_NS}*"], cwd=ctx.repo.here,
                     ok=(0, 2, 128))
    out = {}
    for line in proc.stdout.decode(*_RAW).splitlines():
        oid, _, ref = line.partition("\t")
        if ref.startswith(ECM_NS) and isinstance(known.get(oid), str):
            out[ref[len(ECM_NS):]] = (oid, str(known[oid]))
    return out


def _refs(cwd: gitio.Where, prefix: str) -> dict[str, str]:
    """Refs under ``prefix``: name after the prefix -> object id."""
    out = gitio.git(["for-each-ref", "--format=%(objectname) %(refname)", prefix],
                    cwd=cwd).stdout.decode(*_RAW)
    refs = {}
    for line in out.splitlines():
        oid, _, ref = line.partition(" ")
        if ref.startswith(prefix):
            refs[ref[len(prefix):]] = oid
    return refs


def _oversized(q: str, workdir: gitio.Where, new: dict[str, str], limit: int) -> dict[str, str]:
    """Snapshots in ``new`` (name -> commit) that would bring an object over ``limit`` this
    clone lacks: name -> why. One `git rev-list` over all of them; only when it finds
    something, one per snapshot to say which."""
    if not new:
        return {}
    out = {}
    commits = _sizes(q, sorted(set(new.values())))
    for n, oid in new.items():
        if commits.get(oid, 0) > limit:
            out[n] = f"its commit is {commits[oid]} bytes (limit {limit}, sync_fetch_max_bytes)"
    rest = {n: oid for n, oid in new.items() if n not in out}
    if not rest or not _big_objects(q, workdir, sorted(set(rest.values())), limit):
        return out
    for n, oid in rest.items():
        big = _big_objects(q, workdir, [oid], limit)
        if big:
            oid_big, size = next(iter(sorted(big.items())))
            what = (f"a {size}-byte object {oid_big[:12]}" if size is not None
                    else f"object {oid_big[:12]}, which the server withheld as too large")
            more = f" and {len(big) - 1} more" if len(big) > 1 else ""
            out[n] = f"holds {what}{more} (limit {limit} bytes, sync_fetch_max_bytes)"
    return out


def _big_objects(q: str, workdir: gitio.Where, tips: list[str], limit: int
                 ) -> dict[str, int | None]:
    """Blobs over ``limit`` reachable from ``tips`` and not from this clone's refs, that
    this clone does not have either: oid -> size (None: withheld by the server)."""
    # --missing=print also keeps rev-list from fetching a withheld blob on demand
    out = gitio.git(["rev-list", "--objects", "--missing=print",
                     f"--filter=blob:limit={limit + 1}", "--filter-print-omitted", *tips,
                     "--not", "--alternate-refs"], cwd=q, timeout=600).stdout.decode()
    flagged = {line[1:].strip(): line[0] for line in out.splitlines() if line[:1] in "~?"}
    if not flagged:
        return {}
    have = _sizes(workdir, sorted(flagged))
    sizes = _sizes(q, sorted(o for o, mark in flagged.items() if mark == "~"))
    return {o: sizes.get(o) for o in flagged if o not in have}


def _sizes(cwd: gitio.Where, oids: list[str]) -> dict[str, int]:
    """Sizes of the objects present in the repository at ``cwd`` (one `cat-file`)."""
    return {oid: size for oid, (_kind, size) in commits.kinds(cwd, oids).items()}


def _judge_signatures(ctx: Context, sigs: dict[str, Signature], new: dict[str, str]
                      ) -> tuple[dict[str, signing.Verdict], dict[str, tuple[str, str]]]:
    """(verdict per snapshot name, (key, signer) to pin per machine) for the new
    snapshots."""
    pins = signing.load_pins(ctx)
    # a machine id seen signed for the first time is pinned to its key, unless two keys
    # claim it at once: then neither is trusted until a person decides
    first: dict[str, set[str]] = {}
    for n, oid in new.items():
        s = sigs.get(oid)
        machine = n.split("/", 1)[0]
        if s and s.signed and s.status == "G" and s.key and machine not in pins:
            first.setdefault(machine, set()).add(s.key)
    add = {m: next(iter(keys)) for m, keys in first.items() if len(keys) == 1}
    signers = {sigs[o].key: sigs[o].signer for o in new.values() if o in sigs}
    verdicts = {}
    for n, oid in new.items():
        machine = n.split("/", 1)[0]
        s = sigs.get(oid, Signature(False, "N", ""))
        if machine in first and machine not in add:
            verdicts[n] = signing.Verdict("rejected", "machine id claimed by two signing "
                                          f"keys at once ({', '.join(sorted(first[machine]))})")
            continue
        verdicts[n] = signing.judge(s, pins.get(machine) or add.get(machine))
    return verdicts, {m: (key, signers.get(key, "")) for m, key in add.items()}


def _replays(q: str, new: dict[str, str], local: dict[str, str]) -> dict[str, str]:
    """Verified snapshots (name -> commit) older than the snapshot of the same ref this
    clone already holds: name -> why. The times are the signer's own, inside the signed
    commit, so a replay of an earlier signed snapshot (one without the work that blocks
    you now) cannot pass for the latest."""
    olds = {n: local[n] for n in new if n in local}
    raw = commits.read_commits(q, sorted(set(olds.values()) | {new[n] for n in olds}))
    out = {}
    for n, old in olds.items():
        was = commits.claimed_time(raw.get(old, b""))
        now = commits.claimed_time(raw.get(new[n], b""))
        if was is not None and now is not None and now < was:
            out[n] = ("older than the snapshot of it already accepted (a replay of an "
                      "earlier signed snapshot)")
    return out


def state_path(ctx: Context) -> str:
    return os.path.join(ctx.repo.ecm_dir, STATE)


def load_state(ctx: Context) -> dict[str, Any]:
    """remote -> what its last sync decided (time, this machine's id, rejected refs,
    oversized commits)."""
    try:
        with open(state_path(ctx), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) \
        else {}


def save_state(ctx: Context, remote: str, entry: dict[str, Any]) -> None:
    data = load_state(ctx)
    data[remote] = entry
    signing.write_json(ctx, state_path(ctx), data)


def first_error(text: str) -> str:
    """The line of git's stderr that says what went wrong (else its last line)."""
    for line in text.splitlines():
        if any(w in line.lower() for w in ("error", "rejected", "fatal", "denied")):
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else "no answer"
