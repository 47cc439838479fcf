"""`proximity install`: plain git hooks for users without pre-commit (chains existing ones)."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources

import proximity
from proximity import gitio
from proximity.errors import FatalError
from proximity.hooks import hosts

HOOKS = ("post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-commit",
         "pre-push")
MARK = "# proximity git hook"
CHAINED = ".pre-proximity"


def interpreter() -> str:
    """The interpreter the hooks start: the absolute one running this install (so a later
    PATH change cannot pick a stale one), else python3 from PATH."""
    exe = sys.executable
    if exe and os.path.isabs(exe) and os.access(exe, os.X_OK):
        return exe
    return "python3"


def script(python: str | None = None) -> str:
    import shlex

    text = resources.files("proximity").joinpath("assets/proximity-hook").read_text()
    default = 'PROXIMITY_PYTHON=${PROXIMITY_PYTHON:-python3}'
    if default not in text:  # pragma: no cover - the asset and this line change together
        raise FatalError("the packaged hook script is damaged; reinstall proximity")
    text = text.replace(default, 'PROXIMITY_PYTHON=${PROXIMITY_PYTHON:-'
                        f'{shlex.quote(python or interpreter())}}}')
    # where this package lives: the hook's fast start (python -S) imports it from there
    root = os.path.dirname(os.path.dirname(os.path.abspath(proximity.__file__)))
    return text.replace("\nPROXIMITY_ROOT=\n", f"\nPROXIMITY_ROOT={shlex.quote(root)}\n", 1)


def recorded_interpreter(path: str) -> str | None:
    """The interpreter an installed hook script starts (None: not one of ours)."""
    import shlex

    try:
        with open(path, errors="replace") as f:
            text = f.read(8000)
    except OSError:
        return None
    if MARK not in text:
        return None
    for line in text.splitlines():
        if line.startswith("PROXIMITY_PYTHON=${PROXIMITY_PYTHON:-") and line.endswith("}"):
            word = line[len("PROXIMITY_PYTHON=${PROXIMITY_PYTHON:-"):-1]
            try:
                parts = shlex.split(word)
            except ValueError:
                return None
            return parts[0] if parts else None
    return None


def hooks_dir(repo: gitio.Repo, force: bool) -> str:
    out = gitio.git(["config", "--get", "core.hooksPath"], cwd=repo.here, ok=(0, 1))
    custom = out.stdout.decode().strip()
    if custom and not force:
        raise FatalError(
            f"core.hooksPath is set to {custom!r}, so git does not read .git/hooks; proximity "
            "leaves your hook manager alone. Add `proximity hook <stage>` to the hooks there "
            "(or use the pre-commit ids in .pre-commit-hooks.yaml), or rerun with --force to "
            "install into that directory.")
    if custom:
        return os.path.join(repo.workdir, custom) if not os.path.isabs(custom) else custom
    return os.path.join(repo.common, "hooks")


def is_ours(path: str) -> bool:
    try:
        with open(path, errors="replace") as f:
            return MARK in f.read(400)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    gitio.require_git()
    repo = gitio.Repo(args.repo or os.getcwd())
    if args.command == "uninstall":
        return uninstall(repo)
    if getattr(args, "lefthook", False):
        return lefthook(repo)
    for line in install_hooks(repo, args.force):
        print(line)
    return 0


def install_hooks(repo: gitio.Repo, force: bool = False) -> list[str]:
    """Install the plain hooks (a hook already there is kept and chained first); what was
    done, one line each."""
    d = hooks_dir(repo, force)
    os.makedirs(d, exist_ok=True)
    python = interpreter()
    body = script(python)
    said = []
    for name in HOOKS:
        path = os.path.join(d, name)
        if os.path.lexists(path) and not is_ours(path):
            chained = path + CHAINED
            if os.path.lexists(chained):
                raise FatalError(f"{chained} already exists; move one of the two hooks aside")
            os.replace(path, chained)
            said.append(f"kept your {name} hook: it now runs first, as "
                        f"{os.path.basename(chained)}")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(body)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    said.append(f"installed proximity hooks in {d}: {', '.join(HOOKS)} (they start {python}; "
                "PROXIMITY_PYTHON overrides it)")
    return said


def uninstall(repo: gitio.Repo) -> int:
    d = hooks_dir(repo, force=True)
    for name in HOOKS:
        path = os.path.join(d, name)
        if is_ours(path):
            os.unlink(path)
            if os.path.lexists(path + CHAINED):
                os.replace(path + CHAINED, path)
    print(f"removed proximity hooks from {d}")
    return 0


def lefthook(repo: gitio.Repo) -> int:
    """Write proximity's block into lefthook.yml: a new file, or appended to one that
    configures none of its hooks; otherwise print it to merge by hand (a YAML file is
    never rewritten)."""

    block = hosts.lefthook_block()
    path = hosts.lefthook_config(repo.workdir)
    if path is None:
        path = os.path.join(repo.workdir, "lefthook.yml")
        with open(path, "w") as f:
            f.write(block)
        print(f"wrote {path}; now run `lefthook install` (and commit lefthook.yml)")
        return 0
    with open(path, errors="replace") as f:
        text = f.read()
    if hosts.LEFTHOOK_MARK in text or "proximity hook" in text:
        print(f"{path} already runs proximity; nothing to do (`lefthook install` installs "
              "the hooks)")
        return 0
    clash = sorted(set(hosts.LEFTHOOK_STAGES) & hosts.top_level_keys(text))
    if path.endswith((".yml", ".yaml")) and not clash:
        with open(path, "a") as f:
            f.write(("" if text.endswith("\n") or not text else "\n") + "\n" + block)
        print(f"added proximity's hooks to {path}; now run `lefthook install`")
        return 0
    why = (f"it already configures {', '.join(clash)}" if clash
           else "it is not YAML")
    print(f"proximity: {path} left as it is ({why}): merge this block into it, putting each "
          "`proximity` command under the hook of the same name, then run `lefthook install`:",
          file=sys.stderr)
    sys.stdout.write(block)
    return 0
