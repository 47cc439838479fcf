"""Whose snapshot is it: git's own commit signing, and trust on first use per machine id.

Anyone with push access can write any ``refs/ecm/<machine>/*``, so a ref's name proves
nothing about who wrote it. A machine whose user has ``user.signingKey`` set signs the
snapshot commits it publishes (``git commit-tree -S``: ssh or gpg, as ``gpg.format`` says).
On fetch, each new snapshot's signature is checked by git (``%G?``; for ssh against
``gpg.ssh.allowedSignersFile``). The first good signature seen under a machine id pins that
key's fingerprint to the id in this clone (``<common-dir>/ecm/signers.json``); from then on
a snapshot under that id that is unsigned, badly signed or signed by another key is
rejected. ``judge`` is the rule, a pure function; the rest reads and writes the pins.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, NamedTuple

from proximity import gitio, owned, safetext
from proximity.errors import FatalError
from proximity.gitio.run import SNAPSHOT_IDENT
from proximity.snapshot.workspace import Context

PINS = "signers.json"

# git's %G? letters: what each says about a present signature, in words
_STATUS = {"B": "bad signature (the commit was changed after signing)",
           "U": "signed by a key the allowed signers do not list",
           "X": "signature has expired", "Y": "signed by an expired key",
           "R": "signed by a revoked key",
           "E": "signature cannot be checked here (is gpg.ssh.allowedSignersFile set?)"}


class Signature(NamedTuple):
    """What git says about one snapshot commit's signature."""

    signed: bool  # the commit carries a signature header at all
    status: str  # git's %G? letter: G good, N none, B/U/X/Y/R/E otherwise
    key: str  # the signing key's fingerprint ("" when git names none)
    signer: str = ""  # who the allowed signers (or gpg) say holds the key


class Verdict(NamedTuple):
    state: str  # "verified", "unsigned" (accepted, proves nothing) or "rejected"
    why: str | None  # for "rejected" and for a signature that could not be checked


def judge(sig: Signature, pinned: str | None) -> Verdict:
    """The rule for one new snapshot under a machine id whose pinned key is ``pinned``.

    A good signature by the pinned key (or by any good key when none is pinned yet: trust
    on first use) is verified. Once a key is pinned, nothing else is accepted. Before that,
    an unsigned snapshot is accepted as unsigned (it proves nothing, as every snapshot did
    before signing), and so is one whose signature cannot be checked here; a bad signature
    is always rejected: the commit was altered after it was signed."""
    if sig.signed and sig.status == "G" and sig.key:
        if pinned and sig.key != pinned:
            return Verdict("rejected", f"signed by key {sig.key}, not by {pinned} which "
                           "signed this machine's earlier snapshots")
        return Verdict("verified", None)
    if sig.signed and sig.status == "B":
        return Verdict("rejected", _STATUS["B"])
    if pinned:
        why = (_STATUS.get(sig.status, f"signature status {sig.status}") if sig.signed
               else "unsigned")
        return Verdict("rejected", f"{why}, but this machine's snapshots are signed by "
                       f"{pinned}")
    if sig.signed:
        return Verdict("unsigned", _STATUS.get(sig.status, f"signature status {sig.status}"))
    return Verdict("unsigned", None)


def signing_key(ctx: Context) -> str | None:
    """The user's ``user.signingKey`` (any git config scope), when set."""
    out = gitio.git(["config", "--get", "user.signingkey"], cwd=ctx.repo.here,
                    ok=(0, 1)).stdout.decode().strip()
    return out or None


def signed_commit(ctx: Context, tree: str, head: str | None, message: str) -> str:
    """A snapshot commit signed with the user's key (fixed identity and dates, as unsigned
    snapshots have). A key that cannot sign stops the sync: an unsigned snapshot from a
    machine that signs would be rejected by every teammate that pinned its key."""
    args = ["commit-tree", "-S", tree, "-m", message]
    if head:
        args[3:3] = ["-p", head]
    proc = gitio.git(args, cwd=ctx.repo.here, env={**ctx.repo.objects_env(), **SNAPSHOT_IDENT},
                     ok=(0, 1, 128))
    if proc.returncode != 0:
        raise FatalError("could not sign the snapshot with user.signingKey: "
                         + safetext.text(proc.stderr.decode(errors="replace").strip()
                                          or f"exit {proc.returncode}", 300))
    return proc.stdout.decode().strip()


def pins_path(ctx: Context) -> str:
    return os.path.join(ctx.repo.ecm_dir, PINS)


def load_pins(ctx: Context) -> dict[str, str]:
    """machine id -> fingerprint of the key that signed its first verified snapshot."""
    try:
        with open(pins_path(ctx), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for machine, entry in data.items():
        key = entry.get("key") if isinstance(entry, dict) else None
        if isinstance(machine, str) and isinstance(key, str) and key:
            out[machine] = key
    return out


def save_pins(ctx: Context, new: dict[str, tuple[str, str]]) -> None:
    """Add pins, machine -> (key, signer); never replaces one: a key changes only by
    deleting its entry by hand."""
    if not new:
        return
    path = pins_path(ctx)
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    for machine, (key, signer) in new.items():
        data.setdefault(machine, {"key": key, "signer": signer, "since": time.time()})
    write_json(ctx, path, data)


def write_json(ctx: Context, path: str, data: object) -> None:
    owned.private_dir(ctx.repo.ecm_dir)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
