"""Snapshot commits as the quarantine reads them from a fetch: the objects' kinds and
sizes, the raw commits (those within the snapshot commit limit), the time a commit's
metadata claims, and what git says of their signatures."""

from __future__ import annotations

from proximity import gitio, safetext
from proximity.remote import untrusted
from proximity.remote.signing import Signature


def kinds(cwd: gitio.Where, oids: list[str]) -> dict[str, tuple[str, int]]:
    """(type, size) of the objects present in the repository at ``cwd`` (one `cat-file`)."""
    if not oids:
        return {}
    out = gitio.git(["cat-file", "--batch-check"], cwd=cwd,
                    input="\n".join(oids).encode() + b"\n").stdout.decode()
    kinds = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2].isdigit():
            kinds[f[0]] = (f[1], int(f[2]))
    return kinds


def signatures(cwd: gitio.Where, commits: list[str]) -> dict[str, Signature]:
    """What git says about each commit's signature: the raw headers say whether there is
    one (git says "N" for a signature it cannot read too), `git log %G?` checks the signed
    ones (with this clone's gpg/ssh settings, which the quarantine includes)."""
    out = {c: Signature(False, "N", "") for c in commits}
    signed = {c for c, raw in read_commits(cwd, commits).items()
              if any(line.startswith((b"gpgsig ", b"gpgsig-sha256 "))
                     for line in raw.partition(b"\n\n")[0].split(b"\n"))}
    if signed:
        log = gitio.git(["-c", "log.showSignature=false", "log", "--no-walk=unsorted",
                         "--format=%H %G? %GF %GS", *sorted(signed)], cwd=cwd, ok=(0, 128),
                        timeout=120).stdout.decode(errors="replace")
        for line in log.splitlines():
            f = line.split(" ", 3)
            if len(f) >= 2 and f[0] in signed:
                out[f[0]] = Signature(True, f[1], f[2] if len(f) > 2 else "",
                                      safetext.text(f[3], 128) if len(f) > 3 else "")
        for c in signed:
            if not out[c].signed:
                out[c] = Signature(True, "E", "")
    return out


def read_commits(cwd: gitio.Where, oids: list[str]) -> dict[str, bytes]:
    """Raw objects of those ``oids`` that may be snapshot commits (commits within the
    snapshot commit limit; inbound.py rejects anything else): two `git cat-file` runs."""
    small = [c for c, (kind, size) in kinds(cwd, oids).items()
             if kind == "commit" and size <= untrusted.MAX_COMMIT_BYTES]
    if not small:
        return {}
    data = gitio.git(["cat-file", "--batch"], cwd=cwd,
                     input="\n".join(small).encode() + b"\n").stdout
    out = {}
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        f = data[pos:nl].decode().split()
        if len(f) != 3:
            pos = nl + 1
            continue
        out[f[0]] = data[nl + 1: nl + 1 + int(f[2])]
        pos = nl + 1 + int(f[2]) + 1
    return out


def claimed_time(raw: bytes) -> float | None:
    """The time a snapshot commit's metadata claims, or None when it has none valid."""
    try:
        return untrusted.parse_meta(untrusted.commit_message(raw)[2]).time
    except untrusted.Invalid:
        return None
