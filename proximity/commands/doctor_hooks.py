"""`proximity doctor`'s look at the hooks: where git really reads them from, whether
proximity's are there and current (plain, or through pre-commit, prek or lefthook), and
whether their interpreter starts and imports proximity and pygit2."""

from __future__ import annotations

import os
from typing import Any

from proximity import gitio
from proximity.commands.install import HOOKS, interpreter, is_ours, recorded_interpreter, script
from proximity.hooks import hosts


def status_word(ok: bool | None) -> str:
    return {True: "ok", False: "fail", None: "warn"}[ok]


def hook_checks(repo: gitio.Repo) -> list[dict[str, str]]:
    """Where git really reads hooks from, whether ours are there and current, and whether
    their interpreter starts and imports proximity and pygit2."""
    out: list[dict[str, str]] = []

    def add(name: str, ok: bool | None, detail: str) -> None:
        out.append({"check": name, "status": status_word(ok), "detail": detail})

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
