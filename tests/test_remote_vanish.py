"""A teammate's snapshots deleted from the shared remote are a fact to report, not a pardon.

Anyone with push access can delete `refs/ecm/<machine>/*`. For a machine whose key this
clone has pinned, `sync` names each vanished snapshot and keeps the last verified one
judging (the block it causes stands) until that machine publishes a newer one or it turns
stale; `doctor` names it too. Real clones of a real bare remote, real ssh-keygen keys, real
`git push` deleting refs, real hooks judging the push.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import git, lines
from test_remote_trust import blocked, keygen, machine
from test_sync import agent_ids, cli, machines, scan

from proximity.remote.inbound import TTL_SECONDS


def _signing_pair(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """alice (m1, signing, worktree m1-a) and bob (m2, worktree m2-b) edit line 10 of f.txt
    and sync; bob's push must yield. Returns (bare, m1, m2, bob's worktree)."""
    bare, m1, m2 = machines(tmp_path)
    alice = tmp_path / "alice"
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"alice@example {keygen(alice, 'alice')}\n")
    git(m1, "config", "gpg.format", "ssh")
    git(m1, "config", "user.signingKey", str(alice))
    git(m2, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    a, b = tmp_path / "m1-a", tmp_path / "m2-b"
    git(m1, "worktree", "add", "-q", "-b", "feat/a", str(a))  # first: right of way
    git(m2, "worktree", "add", "-q", "-b", "feat/b", str(b))
    (a / "f.txt").write_text(lines(30).replace("line 10\n", "alice\n"))
    git(a, "commit", "-qam", "a")
    (b / "f.txt").write_text(lines(30).replace("line 10\n", "bob\n"))
    git(b, "commit", "-qam", "b")
    for where in (m1, m2):
        r = cli("sync", "-C", str(where))
        assert r.returncode == 0, r.stderr
    assert blocked(b, "feat/b")
    return bare, m1, m2, b


def _delete_on_remote(tmp_path: Path, bare: Path, victim: str) -> list[str]:
    """Mallory, with push access, deletes every ref of the victim's machine."""
    m3 = tmp_path / "m3"
    if not m3.exists():
        git(tmp_path, "clone", "-q", "-b", "main", str(bare), str(m3))
    refs = [ln.split("\t")[1] for ln in git(m3, "ls-remote", "origin",
                                            f"refs/ecm/{victim}/*").stdout.splitlines()]
    assert refs
    git(m3, "push", "-q", "--no-verify", "origin", *(f":{r}" for r in refs))
    assert git(bare, "for-each-ref", f"refs/ecm/{victim}/").stdout == ""
    return refs


def test_a_pinned_machines_deleted_snapshots_are_named_and_keep_judging(tmp_path: Path):
    bare, m1, m2, b = _signing_pair(tmp_path)
    id1 = machine(m1)
    refs = _delete_on_remote(tmp_path, bare, id1)
    r = cli("sync", "--json", "-C", str(m2))
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "vanished" in ln]
    assert len(said) == len(refs) and all(f"machine {id1}" in ln and "key is pinned" in ln
                                          for ln in said), r.stderr
    assert sorted(json.loads(r.stdout)["vanished"]) == sorted(refs)
    assert f"{id1}/m1-a" in agent_ids(scan(b))
    assert blocked(b, "feat/b")  # the block alice's work causes stands
    doctor = cli("doctor", "-C", str(m2))
    row = next(x for x in doctor.stdout.splitlines() if "remote vanished" in x)
    assert f"refs/ecm/{id1}/m1-a" in row and "[warn]" in row, doctor.stdout
    # a second sync says it again: the remote still lacks them
    r = cli("sync", "-C", str(m2))
    assert r.returncode == 0 and f"refs/ecm/{id1}/m1-a" in r.stderr, r.stderr
    # alice publishes again: her newer snapshot replaces the kept one, nothing vanished
    assert cli("sync", "-C", str(m1)).returncode == 0
    r = cli("sync", "-C", str(m2))
    assert r.returncode == 0 and "vanished" not in r.stderr, r.stderr
    assert "remote vanished" not in cli("doctor", "-C", str(m2)).stdout
    assert blocked(b, "feat/b")


def test_a_kept_snapshot_goes_once_stale_and_an_unsigned_machines_go_at_once(tmp_path):
    from proximity.snapshot import workspace

    bare, m1, m2, b = _signing_pair(tmp_path)
    id1, id2 = machine(m1), machine(m2)
    _delete_on_remote(tmp_path, bare, id1)
    assert cli("sync", "-C", str(m2)).returncode == 0
    held = git(m2, "for-each-ref", "--format=%(objectname)", f"refs/ecm-remote/origin/{id1}/"
               ).stdout.split()
    assert len(held) == 2  # alice's main checkout and m1-a
    # this clone first saw them longer ago than a remote snapshot stays fresh
    ctx = workspace.open_context(str(m2))
    try:
        assert ctx.ledger is not None
        cache = ctx.ledger.cache("remote", lazy=False)
        for oid in held:
            cache[oid] = {**cache[oid], "seen": time.time() - TTL_SECONDS - 60}
        ctx.ledger.save_cache("remote", cache)
    finally:
        ctx.close()
    r = cli("sync", "-C", str(m2))
    assert r.returncode == 0 and "vanished" not in r.stderr, r.stderr
    assert f"refs/ecm-remote/origin/{id1}/" not in git(m2, "for-each-ref").stdout
    assert not blocked(b, "feat/b")
    # bob's machine does not sign: its refs, deleted, go from alice's clone without a word
    assert cli("sync", "-C", str(m1)).returncode == 0
    assert f"refs/ecm-remote/origin/{id2}/" in git(m1, "for-each-ref").stdout
    _delete_on_remote(tmp_path, bare, id2)
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 0 and "vanished" not in r.stderr, r.stderr
    assert f"refs/ecm-remote/origin/{id2}/" not in git(m1, "for-each-ref").stdout
