"""`proximity doctor`: git version, ledger integrity, hook installation, stale worktrees."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from typing import Any

from proximity import config, gitio
from proximity.commands.install import HOOKS, interpreter, is_ours, recorded_interpreter, script
from proximity.errors import FatalError, LedgerError
from proximity.hooks import hosts
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
    whether or not the service runs (the service's open ledger may still take writes)."""
    import tempfile

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
        # hook waits its budget once and replaces it; meanwhile hooks judge in process
        return [{"check": "service", "status": "warn",
                 "detail": f"running at {st['socket']}, but it did not answer a status "
                           "question within 1 s (stopped, wedged or swamped); the next hook "
                           "replaces it after waiting its budget once (`proximity service "
                           "stop` now avoids that wait)"}]
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
        out.append({"check": name, "status": _status(ok), "detail": detail})

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


def _status(ok: bool | None) -> str:
    return {True: "ok", False: "fail", None: "warn"}[ok]


def hook_checks(repo: gitio.Repo) -> list[dict[str, str]]:
    """Where git really reads hooks from, whether ours are there and current, and whether
    their interpreter starts and imports proximity and pygit2."""
    out: list[dict[str, str]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        out.append({"check": name, "status": _status(ok), "detail": detail})

    proc = gitio.git(["rev-parse", "--git-path", "hooks"], cwd=repo.here, ok=(0, 128))
    real = proc.stdout.decode("utf-8", "surrogateescape").strip()
    hooks_dir = os.path.realpath(os.path.join(repo.workdir, real)) if real else \
        os.path.join(repo.common, "hooks")
    default = os.path.realpath(os.path.join(repo.common, "hooks"))
    plain = [h for h in HOOKS if is_ours(os.path.join(hooks_dir, h))]
    host, hosted = _host_hooks(repo.workdir, hooks_dir)
    stranded = [h for h in HOOKS if is_ours(os.path.join(default, h))]
    if hooks_dir != default and stranded and not plain:
        add("hooks", False, f"git reads hooks from {hooks_dir} (core.hooksPath), but "
            f"proximity's are in {default}: they never run. Add `proximity hook <stage>` "
            "to the hooks there, or `proximity install --force`")
        return out
    if plain:
        foreign = [h for h in HOOKS if h not in plain
                   and os.path.lexists(os.path.join(hooks_dir, h))]
        missing = [h for h in HOOKS if h not in plain and h not in foreign]
        ok: bool | None = len(plain) == len(HOOKS)
        detail = f"plain hooks in {hooks_dir}: {', '.join(plain)}"
        if foreign:
            detail += f"; not ours: {', '.join(foreign)}"
        if missing:
            detail += f"; missing: {', '.join(missing)}"
        if not ok:
            detail += " (run `proximity install`)"
            ok = None
        add("hooks", ok, detail)
        add_interpreter(add, os.path.join(hooks_dir, plain[0]))
    elif host:
        missing = [h for h in HOOKS if h not in hosted]
        fix = "lefthook install" if host == "lefthook" else f"{host} install -t <type>"
        add("hooks", not missing or None, f"{host} hooks: " + ", ".join(hosted) + (
            f"; not installed: {', '.join(missing)} ({fix})" if missing else ""))
        add_host_config(add, repo, host)
        if host == "lefthook":
            import shutil

            found = shutil.which("proximity")
            add("hook command", True if found else None,
                f"lefthook runs `proximity` from PATH: {found}" if found else
                "lefthook runs `proximity` from PATH, and there is none: its hooks warn and "
                "skip (install proximity where your shell finds it)")
    else:
        add("hooks", None, f"no proximity hooks in {hooks_dir}: `proximity install`, or "
            "the proximity ids in .pre-commit-config.yaml (pre-commit, prek), or "
            "`proximity install --lefthook` (lefthook)")
    return out


FRAMEWORK_CONFIGS = (".pre-commit-config.yaml", ".pre-commit-config.yml", "prek.toml")


def add_host_config(add: Any, repo: gitio.Repo, host: str) -> None:
    """Under pre-commit, prek and lefthook the hooks that run are read from this worktree's
    own config file, which any branch can edit: say whether it still runs the guard, and
    whether it differs from the main checkout's committed one."""

    names = ((os.path.basename(hosts.lefthook_config(repo.workdir) or "lefthook.yml"),)
             if host == "lefthook" else FRAMEWORK_CONFIGS)
    name = next((n for n in names if os.path.exists(os.path.join(repo.workdir, n))), names[0])
    text = _read(os.path.join(repo.workdir, name))
    guard = _runs_guard(text, host)
    if not guard:
        add("host config", False, f"this worktree's {name} does not run proximity's pre-push "
            "guard: its pushes are never judged. Under " + host + " a branch's own hook "
            "config decides what runs; plain hooks (`proximity install`) are not read from "
            "the branch")
        return
    main = next((w for w in repo.worktrees() if not w.prunable), None)
    committed = gitio.git(["show", f"{main.head}:{name}"], cwd=repo.here, ok=(0, 128)) \
        if main is not None and main.head else None
    if committed is not None and committed.returncode == 0 and \
            committed.stdout.decode("utf-8", "replace") != text:
        add("host config", None, f"this worktree's {name} differs from the one committed on "
            f"the main checkout: under {host} a branch's hook config decides what runs at "
            "commit and push (it can drop the guard or add commands); review the difference")
        return
    add("host config", True, f"{name} runs proximity's guard")


def _runs_guard(text: str, host: str) -> bool:
    """Whether a host's config (not a commented-out line of it) runs the pre-push guard."""
    import re

    if host == "lefthook":
        m = re.search(r"^pre-push:[ \t]*\n((?:[ \t].*\n?|[ \t]*\n)*)", text, re.M)
        return bool(m and re.search(r"^[ \t]+[^#\n]*proximity hook", m.group(1), re.M))
    return bool(re.search(r"^[ \t]*-?[ \t]*id:[ \t]*['\"]?proximity-guard\b", text, re.M))


def _host_hooks(workdir: str, hooks_dir: str) -> tuple[str | None, list[str]]:
    """The hook manager that runs proximity here (pre-commit, prek or lefthook: its scripts
    in the hooks directory, proximity in its config) and the hooks it has installed."""

    by_host: dict[str, list[str]] = {}
    for h in HOOKS:
        who = hosts.script_host(_read(os.path.join(hooks_dir, h)))
        if who not in (None, "plain"):
            by_host.setdefault(who, []).append(h)
    framework = any("proximity-" in _read(os.path.join(workdir, name))
                    for name in (".pre-commit-config.yaml", ".pre-commit-config.yml",
                                 "prek.toml"))
    config = hosts.lefthook_config(workdir)
    lefthook = config is not None and "proximity hook" in _read(config)
    for host, uses in (("prek", framework), ("pre-commit", framework),
                       ("lefthook", lefthook)):
        if uses and by_host.get(host):
            return host, by_host[host]
    return None, []


def add_interpreter(add: Any, hook_path: str) -> None:
    """The interpreter an installed hook starts: present, and importing proximity and
    pygit2; and whether the hook script is the current one."""
    import subprocess

    python = recorded_interpreter(hook_path) or "python3"
    python = os.environ.get("PROXIMITY_PYTHON") or python
    try:
        proc = subprocess.run([python, "-c", "import proximity, pygit2; "
                               "print(proximity.__version__)"], capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        add("hook interpreter", False, f"{python} cannot start ({e}); the hooks warn and "
            "skip. Rerun `proximity install` with a working Python")
        return
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit " + str(proc.returncode)])[-1]
        add("hook interpreter", False, f"{python} cannot import proximity and pygit2 "
            f"({last}); the hooks warn and skip. Install them there, or rerun "
            "`proximity install` from a Python that has them")
        return
    version = proc.stdout.strip()
    if not version:  # (exit 0 and not a word: /bin/true, a wrapper that ran nothing)
        add("hook interpreter", False, f"{python} exited 0 without importing proximity (it "
            "printed no version: no Python that has it); the hooks warn and skip. Set "
            "PROXIMITY_PYTHON to a Python that has proximity, or unset it")
        return
    add("hook interpreter", True, f"{python}: proximity {version}, pygit2 ok")
    recorded = recorded_interpreter(hook_path) or interpreter()
    if _read(hook_path) != script(recorded):
        add("hook script", None, f"{hook_path} is an older proximity hook; rerun "
            "`proximity install`")


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def run(args: argparse.Namespace) -> int:
    result = checks(args.repo)
    if args.json:
        print(json.dumps({"checks": result}, indent=2))
    else:
        for c in result:
            print(f"[{c['status']:>4}] {c['check']}: {c['detail']}")
    return 1 if any(c["status"] == "fail" for c in result) else 0
