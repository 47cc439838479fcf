"""`proximity doctor`: git version, ledger integrity, hook installation, stale worktrees."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3

from proximity import gitio
from proximity.commands.install import HOOKS, is_ours
from proximity.errors import FatalError, LedgerError
from proximity.ledger import FILENAME, Ledger, recovery_hint


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
    path = os.path.join(repo.ecm_dir, FILENAME)
    if not os.path.exists(path):
        add("ledger", None, f"no ledger yet at {path}; the first hook or "
            "`proximity snapshot` creates it")
    else:
        try:
            led = Ledger(repo.ecm_dir, create=False)
            try:
                result = led.integrity()
                n = led.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
                streams = led.streams()
            finally:
                led.close()
            if result == "ok":
                add("ledger", True, f"{path}: integrity ok, {n} events, {len(streams)} streams")
            else:
                add("ledger", False, f"{path}: integrity check says {result}; "
                    f"{recovery_hint(path)}")
        except (LedgerError, sqlite3.DatabaseError) as e:
            add("ledger", False, str(e) if isinstance(e, LedgerError) else
                f"{path}: {e}; {recovery_hint(path)}")
    hooks_dir = os.path.join(repo.common, "hooks")
    plain = [h for h in HOOKS if is_ours(os.path.join(hooks_dir, h))]
    precommit = [h for h in HOOKS if _is_precommit(os.path.join(hooks_dir, h))]
    cfg = os.path.join(repo.workdir, ".pre-commit-config.yaml")
    uses_pc = "proximity-" in _read(cfg)
    if plain:
        add("hooks", len(plain) == len(HOOKS) or None,
            f"plain hooks: {', '.join(plain)}" + ("" if len(plain) == len(HOOKS) else
                                                  " (run `proximity install` for all)"))
    elif precommit and uses_pc:
        missing = sorted(set(HOOKS) - set(precommit))
        add("hooks", not missing or None, "pre-commit hooks: " + ", ".join(precommit) + (
            f"; not installed: {', '.join(missing)} (pre-commit install -t <type>)"
            if missing else ""))
    else:
        add("hooks", None, "no proximity hooks installed: `proximity install` or add the "
            "proximity ids to .pre-commit-config.yaml")
    for wt in repo.worktrees():
        if wt.prunable:
            add(f"worktree {wt.id}", None, f"{wt.path} is gone: retired, never blocks "
                "(`git worktree prune` and `proximity gc` clean it up)")
    return out


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _is_precommit(path: str) -> bool:
    try:
        with open(path, errors="replace") as f:
            return "pre-commit" in f.read(2000) and not is_ours(path)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    result = checks(args.repo)
    if args.json:
        print(json.dumps({"checks": result}, indent=2))
    else:
        for c in result:
            print(f"[{c['status']:>4}] {c['check']}: {c['detail']}")
    return 1 if any(c["status"] == "fail" for c in result) else 0
