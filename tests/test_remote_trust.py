"""Remote data is bounded and attributable: `sync` never brings an object over the fetch
limit, and a machine that signs its snapshots cannot be impersonated by a teammate with push
access. Real clones of a real bare remote, real `git push`/`fetch`, real ssh-keygen keys."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import git, lines
from test_sync import agent_ids, cli, machines, scan

from proximity.remote import signing
from proximity.remote.signing import Signature


def git_size(repo: Path) -> int:
    """Bytes under the clone's .git."""
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(repo / ".git") for f in files
               if not os.path.islink(os.path.join(d, f)))


def machine(clone: Path) -> str:
    return (clone / ".git" / "ecm" / "machine-id").read_text().strip()


@pytest.mark.parametrize("server_filters", [False, True])
def test_sync_never_fetches_an_object_over_the_limit(tmp_path: Path, server_filters: bool):
    # the teammate may publish 30 MB files; this team fetches nothing over 1 MB
    bare, m1, m2 = machines(tmp_path, toml="sync_max_bytes = 30000000\n"
                            "sync_fetch_max_bytes = 1000000\n")
    # a plain bare remote ignores --filter; one with uploadpack.allowFilter withholds
    git(bare, "config", "uploadpack.allowFilter", str(server_filters).lower())
    big = tmp_path / "m2-big"
    git(m2, "worktree", "add", "-q", "-b", "feat/big", str(big))
    # committed on the teammate's branch: the snapshot's tree and its parent both hold it
    (big / "huge.bin").write_bytes(os.urandom(20 * 1024 * 1024))
    git(big, "add", "huge.bin")
    git(big, "commit", "-qm", "a large file")
    (m2 / "f.txt").write_text(lines(30).replace("line 5\n", "small change\n"))
    r = cli("sync", "-C", str(m2))
    assert r.returncode == 0, r.stderr
    id2 = machine(m2)
    assert "huge.bin" in git(bare, "ls-tree", "--name-only", f"refs/ecm/{id2}/m2-big").stdout
    before = git_size(m1)
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    after = git_size(m1)
    assert after - before < 1_000_000, (before, after)  # the 20 MB blob never arrived
    warnings = [x for x in r.stderr.splitlines() if f"refs/ecm/{id2}/m2-big" in x]
    assert len(warnings) == 1, r.stderr
    assert f"machine {id2}" in warnings[0] and "sync_fetch_max_bytes" in warnings[0]
    assert ("withheld" in warnings[0]) == server_filters
    assert f"refs/ecm-remote/origin/{id2}/m2-big" not in git(m1, "for-each-ref").stdout
    # the teammate's small snapshot is a remote agent all the same
    assert f"{id2}/main" in agent_ids(scan(m1))
    assert not [d for d in os.listdir(m1 / ".git" / "ecm") if d.startswith("inbound.")]
    # the next sync does not bring it either (nor fetch it again), and still names it
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(f"refs/ecm/{id2}/m2-big") == 1
    assert git_size(m1) - before < 1_000_000
    git(m1, "fsck", "--connectivity-only", "--no-progress")  # nothing half-fetched
    # the clone itself never became a partial clone: nothing is fetched on demand later
    assert git(m1, "config", "--get-regexp", "promisor|partialclone", check=False).stdout == ""
    doctor = cli("doctor", "-C", str(m1))
    assert f"refs/ecm/{id2}/m2-big" in doctor.stdout and "remote rejected" in doctor.stdout


PIN = "SHA256:pinned"


@pytest.mark.parametrize(("sig", "pinned", "state"), [
    (Signature(False, "N", ""), None, "unsigned"),
    (Signature(True, "G", "SHA256:k"), None, "verified"),  # first sight pins it
    (Signature(True, "G", PIN), PIN, "verified"),
    (Signature(True, "G", "SHA256:other"), PIN, "rejected"),
    (Signature(False, "N", ""), PIN, "rejected"),
    (Signature(True, "U", "SHA256:k"), PIN, "rejected"),
    (Signature(True, "U", "SHA256:k"), None, "unsigned"),  # unknown key: proves nothing
    (Signature(True, "E", ""), None, "unsigned"),
    (Signature(True, "B", PIN), None, "rejected"),  # altered after signing: never
])
def test_signature_rule(sig: Signature, pinned: str | None, state: str):
    verdict = signing.judge(sig, pinned)
    assert verdict.state == state
    assert (verdict.why is not None) == (state == "rejected" or sig.status not in "GN")
