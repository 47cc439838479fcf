"""Is the trunk broken after a landing? The repository's own tests (``--verify CMD``) on a
checkout of the trunk, or, without CMD, each changed file compiled (``py_compile``,
``node --check``).

CMD runs through ``sh -c`` in a worktree of the scratch repository (never one of the swarm's
worktrees, which proximity watches): on T once, on each lane's own tip alone (a lane that
fails there is left out of the assignment, so that a break at landing is the swarm's doing),
and on the remote's ``main`` after every landing. A landing after which CMD fails where it
passed before is broken; the failing output's last lines are kept.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from swarm_plan import Plan, env_for, git, out

TAIL = 12  # lines of a failing run kept in the report


@dataclass
class Outcome:
    ok: bool
    tail: str
    seconds: float


@dataclass
class Verifier:
    scratch: str
    where: str  # the checkout CMD runs in
    cmd: str
    timeout: float = 600.0
    runs: list[float] = field(default_factory=list)  # seconds of each run of CMD
    _trunks: dict[str, bool] = field(default_factory=dict)

    def checkout(self, rev: str, remote: str | None = None) -> None:
        """``rev`` (of the scratch repository, or the branch ``rev`` of ``remote``) checked
        out clean, ignored files (a virtualenv, node_modules, caches) kept."""
        if not os.path.isdir(self.where):
            start = "HEAD" if remote is not None else rev  # (a fresh scratch has no HEAD)
            git(["worktree", "add", "-q", "--detach", self.where, start], self.scratch)
        if remote is not None:
            git(["fetch", "-q", remote, rev], self.where)
            rev = "FETCH_HEAD"
        git(["checkout", "-q", "-f", "--detach", rev], self.where)
        git(["clean", "-q", "-f", "-d"], self.where)

    def run(self, rev: str, remote: str | None = None) -> Outcome:
        self.checkout(rev, remote)
        start = time.monotonic()
        env = env_for({"PYTHONDONTWRITEBYTECODE": "1"})
        try:
            p = subprocess.run(["sh", "-c", self.cmd], cwd=self.where, capture_output=True,
                               text=True, errors="replace", env=env, timeout=self.timeout)
            ok, text = p.returncode == 0, (p.stdout + p.stderr)
        except subprocess.TimeoutExpired:
            ok, text = False, f"timed out after {self.timeout:.0f} s"
        seconds = time.monotonic() - start
        self.runs.append(seconds)
        tail = "\n".join(text.rstrip().split("\n")[-TAIL:])
        return Outcome(ok, tail, round(seconds, 2))

    def passes_at(self, trunk: str) -> bool:
        if trunk not in self._trunks:
            o = self.run(trunk)
            self._trunks[trunk] = o.ok
            if not o.ok:
                print(f"--verify fails on T {trunk[:10]} itself; landings cannot be judged "
                      f"by it:\n{o.tail}", file=sys.stderr)
        return self._trunks[trunk]

    def lane_ok(self, trunk: str, plan: Plan) -> bool:
        """False when CMD fails on the lane's own tip while it passes on T."""
        if not self.passes_at(trunk):
            return True
        o = self.run(plan.tip)
        if not o.ok:
            print(f"lane {plan.branch.merge[:10]} fails --verify alone:\n{o.tail}",
                  file=sys.stderr)
        return o.ok


def uncompiled(checkout: str, onto: str, head: str, known: set[str]) -> list[str]:
    """The fallback: the .py and .js files ``onto..head`` added or changed that no longer
    compile (``known``: already counted)."""
    changed = out(["diff", "--name-only", "--diff-filter=AM", onto, head],
                  checkout).split("\n")
    bad = []
    for f in changed:
        if f.endswith(".py"):
            cmd = [sys.executable, "-m", "py_compile", f]
        elif f.endswith((".js", ".mjs", ".cjs")) and shutil.which("node"):
            cmd = ["node", "--check", f]
        else:
            continue
        if f not in known and subprocess.run(cmd, cwd=checkout, capture_output=True,
                                             env=env_for()).returncode:
            bad.append(f)
    return bad
