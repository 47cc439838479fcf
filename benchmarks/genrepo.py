"""Generate a synthetic repository with worktrees for the benchmarks.

    python benchmarks/genrepo.py DIR --files 5000 --worktrees 4 --changes 5

Files are small Python modules in nested packages (plus some JavaScript), each importing two
others chosen by a fixed seed, so the import graph is realistic and the result repeatable.
Each worktree gets ``--changes`` uncommitted edits; neighbouring worktrees share some files.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
from collections.abc import Sequence

# Benchmarks measure what a user sees: a normal Python that caches bytecode (pip compiles it
# at install time). Some sandboxes set PYTHONDONTWRITEBYTECODE, which would make every hook
# process recompile proximity from source; it is dropped here.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(cwd: str, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True).stdout


def du(path: str) -> int:
    """Bytes of the files under ``path`` (what a directory grew by, for growth benchmarks)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size
    return total


def module_paths(n: int) -> list[str]:
    per_pkg = 40
    out = []
    for i in range(n):
        pkg = i // per_pkg
        top, sub = pkg // 25, pkg % 25
        ext = "js" if i % 10 == 9 else "py"
        out.append(f"src/pkg{top}/sub{sub}/mod{i}.{ext}")
    return out


def source(path: str, imports: list[str], version: int = 0) -> str:
    body = []
    if path.endswith(".py"):
        for imp in imports:
            if imp.endswith(".py"):
                body.append(f"from {imp[4:-3].replace('/', '.').rsplit('.', 1)[0]} import "
                            f"{imp.rsplit('/', 1)[1][:-3]}")
        for k in range(6):
            body += ["", "", f"def func{k}(x, y={version}):", f"    z = x * {k} + y",
                     "    return z"]
    else:
        for imp in imports:
            if imp.endswith(".js"):
                rel = os.path.relpath(imp, os.path.dirname(path))
                body.append(f"import * as m from '{rel if rel.startswith('.') else './' + rel}';")
        for k in range(6):
            body += [f"export function func{k}(x) {{", f"  return x * {k} + {version};", "}"]
    return "\n".join(body) + "\n"


def generate(root: str, files: int, worktrees: int, changes: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    root = os.path.abspath(root)  # worktrees are added from inside main
    main = os.path.join(root, "main")
    os.makedirs(main)
    git(main, "init", "-q", "-b", "main")
    paths = module_paths(files)
    for p in paths:
        imports = [paths[rnd.randrange(files)] for _ in range(2)]
        full = os.path.join(main, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(source(p, imports))
    for d in {os.path.dirname(p) for p in paths if p.endswith(".py")}:
        for part in range(2, d.count("/") + 2):
            init = os.path.join(main, *d.split("/")[:part], "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "base")
    for w in range(worktrees):
        wt = os.path.join(root, f"wt{w:02}")
        git(main, "worktree", "add", "-q", "-b", f"agent{w}", wt)
        for c in range(changes):
            # worktree w edits files w*(changes-1) .. ; neighbours overlap on one file
            p = paths[(w * max(1, changes - 1) + c) % files]
            with open(os.path.join(wt, p), "a") as f:
                f.write(f"\n# edit by agent {w}\nVALUE_{w}_{c} = {c}\n" if p.endswith(".py")
                        else f"\n// edit by agent {w}\nexport const v{w}_{c} = {c};\n")
    return main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--worktrees", type=int, default=4)
    ap.add_argument("--changes", type=int, default=5)
    a = ap.parse_args(argv)
    print(generate(a.dir, a.files, a.worktrees, a.changes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
