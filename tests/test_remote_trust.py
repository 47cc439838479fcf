"""Remote data is bounded and attributable: `sync` never brings an object over the fetch
limit, and a machine that signs its snapshots cannot be impersonated by a teammate with push
access. Real clones of a real bare remote, real `git push`/`fetch`, real ssh-keygen keys."""

from __future__ import annotations

import json
import os
import subprocess
import time
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
    # the same snapshot again under a ref name that is not UTF-8 (git allows any byte)
    commit = git(bare, "rev-parse", f"refs/ecm/{id2}/m2-big").stdout.strip()
    subprocess.run(["git", "update-ref", f"refs/ecm/{id2}/".encode() + b"w\xff", commit],
                   cwd=bare, check=True)
    before = git_size(m1)
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 0, r.stderr
    after = git_size(m1)
    assert after - before < 1_000_000, (before, after)  # the 20 MB blob never arrived
    warnings = [x for x in r.stderr.splitlines() if f"refs/ecm/{id2}/m2-big" in x]
    assert len(warnings) == 1, r.stderr
    assert f"machine {id2}" in warnings[0] and "sync_fetch_max_bytes" in warnings[0]
    assert ("withheld" in warnings[0]) == server_filters
    assert f"refs/ecm/{id2}/w? of machine {id2} rejected" in r.stderr
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


def keygen(path: Path, who: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f",
                    str(path)], check=True, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()


def forge(clone: Path, victim: str, wt: str, base: str, key: Path | str | None) -> str:
    """The forger's "they reverted their work" snapshot, pushed over the victim's ref: the
    victim's metadata, the base tree, signed with ``key`` when given."""
    meta = {"schema": 1, "machine": victim, "worktree": wt, "branch": "feat/a", "head": base,
            "clock": {}, "time": time.time(), "created": time.time() - 3600,
            "subject": "revert"}
    msg = f"proximity snapshot {victim}/{wt}\n\n{json.dumps(meta, sort_keys=True)}\n"
    tree = git(clone, "rev-parse", f"{base}^{{tree}}").stdout.strip()
    sign = (["-c", "gpg.format=ssh", "-c", f"user.signingKey={key}"] if key else [])
    commit = git(clone, *sign, "commit-tree", *(["-S"] if key else []), tree, "-p", base,
                 "-m", msg).stdout.strip()
    git(clone, "push", "-q", "--no-verify", "-f", "origin",
        f"{commit}:refs/ecm/{victim}/{wt}")
    return commit


def blocked(worktree: Path, branch: str) -> bool:
    p = subprocess.run(["git", "push", "-q", "origin", branch], cwd=worktree,
                       capture_output=True, text=True)
    return p.returncode != 0 and "push blocked" in p.stderr


def test_forged_snapshot_of_a_signing_machine_is_rejected(tmp_path: Path):
    bare, m1, m2 = machines(tmp_path)
    m3 = tmp_path / "m3"  # the forger: a teammate with push access and a key of their own
    git(tmp_path, "clone", "-q", "-b", "main", str(bare), str(m3))
    alice, mallory = tmp_path / "alice", tmp_path / "mallory"
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"alice@example {keygen(alice, 'alice')}\n"
                       f"mallory@example {keygen(mallory, 'mallory')}\n")
    git(m1, "config", "gpg.format", "ssh")
    git(m1, "config", "user.signingKey", str(alice))
    git(m2, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    base = git(m1, "rev-parse", "HEAD").stdout.strip()
    a, b = tmp_path / "m1-a", tmp_path / "m2-b"
    git(m1, "worktree", "add", "-q", "-b", "feat/a", str(a))  # first: right of way
    git(m2, "worktree", "add", "-q", "-b", "feat/b", str(b))
    # alice's first signed snapshot, before her work: the forger keeps a copy to replay
    assert cli("sync", "-C", str(m1)).returncode == 0
    id1 = machine(m1)
    ref = f"refs/ecm/{id1}/m1-a"
    git(m3, "fetch", "-q", "origin", f"+{ref}:refs/kept/before")
    (a / "f.txt").write_text(lines(30).replace("line 10\n", "alice\n"))
    git(a, "commit", "-qam", "a")
    (b / "f.txt").write_text(lines(30).replace("line 10\n", "bob\n"))
    git(b, "commit", "-qam", "b")
    for where in (m1, m2):
        r = cli("sync", "-C", str(where))
        assert r.returncode == 0, r.stderr
    published = git(bare, "rev-parse", ref).stdout.strip()
    assert "gpgsig" in git(bare, "cat-file", "commit", published).stdout  # signed by alice
    assert f"{id1}/m1-a" in agent_ids(scan(b))
    assert blocked(b, "feat/b")  # the real block
    doctor = cli("doctor", "-C", str(m2))
    verified = next(x for x in doctor.stdout.splitlines() if "remote verified" in x)
    assert id1 in verified and "alice@example" in verified
    replay = git(m3, "rev-parse", "refs/kept/before").stdout.strip()
    # unsigned, signed by another (listed) key, then alice's own earlier signed snapshot
    for key in (None, mallory, "replay"):
        if key == "replay":
            git(m3, "push", "-q", "--no-verify", "-f", "origin", f"{replay}:{ref}")
            forged = replay
        else:
            forged = forge(m3, id1, "m1-a", base, key)
        r = cli("sync", "-C", str(m2))
        assert r.returncode == 0, r.stderr
        warnings = [x for x in r.stderr.splitlines() if ref in x]
        assert len(warnings) == 1 and "rejected" in warnings[0], r.stderr
        assert ("unsigned" in warnings[0]) == (key is None), warnings[0]
        assert ("replay" in warnings[0]) == (key == "replay"), warnings[0]
        assert git(m2, "rev-parse", f"refs/ecm-remote/origin/{id1}/m1-a"
                   ).stdout.strip() == published  # alice's real snapshot stays
        if key != "replay":
            assert git(m2, "cat-file", "-e", forged, check=False).returncode != 0
        assert blocked(b, "feat/b")  # the real block stays
        doctor = cli("doctor", "-C", str(m2))
        assert "remote rejected" in doctor.stdout and ref in doctor.stdout
    # alice syncs again: her signed snapshot is accepted, nothing is rejected any more
    assert cli("sync", "-C", str(m1)).returncode == 0
    r = cli("sync", "-C", str(m2))
    assert r.returncode == 0 and ref not in r.stderr, r.stderr
    doctor = cli("doctor", "-C", str(m2))
    assert "remote rejected" not in doctor.stdout
    assert "remote verified" in doctor.stdout and id1 in doctor.stdout
    assert not any(id1 in x for x in doctor.stdout.splitlines() if "remote unsigned" in x)


def test_a_key_that_cannot_sign_stops_the_sync_and_publishes_nothing(tmp_path: Path):
    bare, m1, _m2 = machines(tmp_path)
    git(m1, "config", "gpg.format", "ssh")
    git(m1, "config", "user.signingKey", str(tmp_path / "no-such-key"))
    r = cli("sync", "-C", str(m1))
    assert r.returncode == 1 and "could not sign" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert git(bare, "for-each-ref", "refs/ecm/").stdout == ""


def test_unsigned_machines_stay_unsigned_and_are_listed(tmp_path: Path):
    _bare, m1, m2 = machines(tmp_path)
    (m1 / "f.txt").write_text(lines(30).replace("line 3\n", "x\n"))
    for where in (m1, m2):
        assert cli("sync", "-C", str(where)).returncode == 0
    doctor = cli("doctor", "-C", str(m2))
    unsigned = next(x for x in doctor.stdout.splitlines() if "remote unsigned" in x)
    assert machine(m1) in unsigned and machine(m2) not in unsigned
    assert f"{machine(m1)}/main" in agent_ids(scan(m2))


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
