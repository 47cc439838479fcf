"""`proximity doctor`: git version, ledger integrity, hook installation, stale worktrees."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from typing import Any

from proximity import config, gitio
from proximity.commands.doctor_hooks import hook_checks, status_word
from proximity.errors import FatalError, LedgerError
from proximity.ledger import FILENAME, Ledger, diagnose, integrity_says, recovery_hint
from proximity.policy import load_policy
from proximity.remote import quarantine, signing
from proximity.remote.inbound import LOCAL_NS
from proximity.safetext import text
from proximity.service.report import service_state


def checks(repo_path: str | None) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        out.append({"check": name, "status": {True: "ok", False: "fail", None: "warn"}[ok],
                    "detail": detail})

    try:
        gitio.require_git()
        add("git", True, ".".join(map(str, gitio.git_version())))
    except FatalError as e:
        add("git", False, str(e))
        return out
    try:
        repo = gitio.Repo(repo_path or os.getcwd())
    except FatalError as e:
        add("repository", False, str(e))
        return out
    add("repository", True, repo.common)
    out.extend(policy_checks(repo))
    path = os.path.join(repo.ecm_dir, FILENAME)
    if not os.path.exists(path):
        add("ledger", None, f"no ledger yet at {path}; the first hook or "
            "`proximity snapshot` creates it")
    else:
        try:
            led = Ledger(repo.ecm_dir, create=False)
            try:
                said = integrity_says(path)
                result = said if said is not None else led.integrity()
                n = led.event_count()
                streams = led.streams()
                queued = led.spooled()
            finally:
                led.close()
            if result == "ok":
                add("ledger", True, f"{path}: integrity ok, {n} events, {len(streams)} streams"
                    + (f", {queued} queued while it was busy (the next hook records them)"
                       if queued else ""))
            else:
                add("ledger", False, f"{path}: corrupt (integrity check: {result}); "
                    f"{recovery_hint(path)}")
        except (LedgerError, sqlite3.Error) as e:
            add("ledger", False, str(diagnose(e, path)))
    out.extend(disk_checks(repo))
    out.extend(hook_checks(repo))
    out.extend(service_checks(repo.common))
    out.extend(remote_checks(repo))
    for wt in repo.worktrees():
        if wt.prunable:
            add(f"worktree {wt.id}", None, f"{wt.path} is gone: retired, never blocks "
                "(`git worktree prune` and `proximity gc` clean it up)")
        elif wt.admin and not gitio.of_repository(wt.path, repo.common):
            # (its files are still read, through the git dir listed here: gitio.At)
            found = gitio.found_by_git(wt.path)
            add(f"worktree {wt.id}", None,
                f"{wt.path}: its .git names {found or 'no git dir'}, not the git dir this "
                f"repository lists for it ({wt.admin}); git run there works in another "
                "repository. proximity reads its files through the listed one (its index, "
                "this repository's config), never the other's ('git worktree repair' "
                "points it back)")
    return out


def disk_checks(repo: gitio.Repo) -> list[dict[str, str]]:
    """Room for the ledger and the object store of live work (both under the common
    dir's ecm/): a full or read-only disk stops recording, never judging, and is said
    whether or not the service runs (the service's open ledger may still take writes).
    First, a damaged loose object of the repository's, which stops judging."""
    import tempfile

    try:  # (an object libgit2 would wedge on: every hook says so and judges nothing;
        # every loose file read again: one cut short in place since its audit too)
        repo.check_loose(distrust=True)
    except FatalError as e:
        return [{"check": "objects", "status": "fail", "detail": str(e)}]
    why = repo.store.full_reason()
    if why is not None:
        return [{"check": "disk", "status": "fail",
                 "detail": f"{why}: nothing is recorded, and each hook writes the objects it "
                           f"judges to a scratch store in {tempfile.gettempdir()} (the guard "
                           "still judges); free some space"}]
    free = repo.store.free()
    return [{"check": "disk", "status": "ok",
             "detail": f"{repo.ecm_dir}: " + (f"{free // (1 << 20)} MiB free"
                                              if free is not None else "free space unknown")}]


def remote_checks(repo: gitio.Repo) -> list[dict[str, str]]:
    """Whose snapshots this clone holds: machines verified (signed by their pinned key),
    unsigned ones (anyone with push access could have written them), and the snapshots the
    last sync rejected. Nothing before the first `proximity sync`."""
    state = _json(os.path.join(repo.ecm_dir, quarantine.STATE))
    pins = _json(os.path.join(repo.ecm_dir, signing.PINS))
    refs = gitio.git(["for-each-ref", "--format=%(refname)", LOCAL_NS], cwd=repo.here
                     ).stdout.decode("utf-8", "replace").split()
    if not state and not refs:
        return []
    mine = {e.get("machine") for e in state.values() if isinstance(e, dict)}
    machines = sorted({r[len(LOCAL_NS):].split("/")[1] for r in refs
                       if r[len(LOCAL_NS):].count("/") == 2} - mine)
    verified = [m for m in machines if m in pins]
    unsigned = [m for m in machines if m not in pins]
    rejected = {ref: why for e in state.values() if isinstance(e, dict)
                for ref, why in (e.get("rejected") or {}).items()}
    gone = sorted({ref for e in state.values() if isinstance(e, dict)
                   and isinstance(e.get("vanished"), dict) for ref in e["vanished"]})
    out: list[dict[str, str]] = []

    def who(m: str) -> str:
        entry = pins.get(m)
        if not isinstance(entry, dict):
            return "?"
        signer = f"{text(entry.get('signer'), 128)}, " if entry.get("signer") else ""
        return f"{signer}key {text(entry.get('key'), 80)}"

    out.append({"check": "remote verified", "status": "ok", "detail": ", ".join(
        f"{text(m, 64)} ({who(m)})" for m in verified)
        or "no remote machine signs its snapshots"})
    if unsigned:
        out.append({"check": "remote unsigned", "status": "warn", "detail": ", ".join(
            text(m, 64) for m in unsigned) + ": not signed, so anyone with push access to "
            "the remote could have written them (docs/trust.md)"})
    if rejected:
        out.append({"check": "remote rejected", "status": "warn", "detail": "; ".join(
            f"{text(ref, 200)}: {text(why, 300)}" for ref, why in sorted(rejected.items()))})
    if gone:
        out.append({"check": "remote vanished", "status": "warn", "detail": ", ".join(
            text(ref, 200) for ref in gone) + ": gone from the remote though their "
            "machine's key is pinned (deleted by someone with push access, or pruned by "
            "that machine: ask them); the last verified snapshot keeps judging until that "
            "machine publishes a newer one or it turns stale"})
    return out


def _json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def service_checks(common: str) -> list[dict[str, str]]:
    """The resident service: running, off, or a stale socket (the next hook replaces it)."""
    st = service_state(common)
    if not st["enabled"]:
        return [{"check": "service", "status": "ok",
                 "detail": "off (PROXIMITY_SERVICE=0): hooks judge in process"}]
    if st["refused"]:
        return [{"check": "service", "status": "warn",
                 "detail": f"not used: {st['refused']}; hooks judge in process (the guard "
                           "stays on, without the warm service); remove that path or set "
                           "XDG_RUNTIME_DIR to a private directory"}]
    status = st.get("status")
    if st["running"] and isinstance(status, dict) and status.get("error"):
        return [{"check": "service", "status": "warn",
                 "detail": f"running at {st['socket']}, but: {status['error']}"}]
    if st["running"] and status is None:
        # it holds the lock but did not answer (stopped, wedged, or swamped): the next
        # hook waits its budget once and replaces a stopped one; meanwhile hooks judge in
        # process. `service stop` ends any of them (by signal, when asking fails)
        return [{"check": "service", "status": "warn",
                 "detail": f"running at {st['socket']}, but it did not answer a status "
                           "question within 1 s (stopped, wedged or swamped); hooks wait "
                           "their budget for it (the next one replaces a stopped one); "
                           "`proximity service stop` ends it now"}]
    if st["running"]:
        return [{"check": "service", "status": "ok", "detail": f"running at {st['socket']}"}]
    if st["stale_socket"]:
        return [{"check": "service", "status": "warn",
                 "detail": f"stale socket {st['socket']} (a killed service); the next hook "
                           "replaces it"}]
    return [{"check": "service", "status": "ok",
             "detail": "not running: the next hook starts it (hooks judge in process "
                       "meanwhile)"}]


def policy_checks(repo: gitio.Repo) -> list[dict[str, str]]:
    """Where the airspace's policy comes from, keys it ignored, and drift: this worktree's
    own config file differing from the policy (it takes effect only once committed on the
    main checkout)."""
    out: list[dict[str, str]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        out.append({"check": name, "status": status_word(ok), "detail": detail})

    try:
        policy = load_policy(*gitio.policy_inputs(repo))
    except FatalError as e:
        add("config", False, f"{e} (hooks and commands stop at this error)")
        return out
    add("config", True, "policy from " + "; ".join(policy.sources))
    for w in policy.warnings:
        # a dropped key is an error to fix (hooks judge without it), not a note
        add("config", False if w in policy.faults else None, w)
    off = config.disarms(policy.config)
    if off is not None:  # (only git config can: a committed file that would is refused)
        add("guard", None, f"OFF: git config sets {off}. That is yours to choose (a "
            "committed file cannot); unset those proximity.* keys to turn it on again")
    try:
        here = config.load(repo.workdir)
    except FatalError as e:
        add("config drift", None, f"this worktree's config file does not parse: {e} (the "
            "policy above is in force)")
        return out
    trusted = set(config.TRUSTED_ONLY)
    differ = sorted(k for k in config.Config._fields
                    if k not in trusted and getattr(here, k) != getattr(config.Config(), k)
                    and getattr(here, k) != getattr(policy.config, k))
    if differ:
        add("config drift", None, f"this worktree's config file sets {', '.join(differ)} "
            "differently from the policy in force; it takes effect only once committed on "
            "the main checkout")
    return out


def run(args: argparse.Namespace) -> int:
    result = checks(args.repo)
    if args.json:
        print(json.dumps({"checks": result}, indent=2))
    else:
        for c in result:
            print(f"[{c['status']:>4}] {c['check']}: {c['detail']}")
    return 1 if any(c["status"] == "fail" for c in result) else 0
