"""What the swarm measures of proximity itself while it runs: the resident service's peak
memory, the pre-edit check's latency and each git hook's wall time.

The service's peak is the kernel's own high-water mark of its resident set (``VmHWM`` in
``/proc/PID/status``), read at every step from the pid the service writes beside its
socket: a service that exits (idle) and starts again is a new pid, each one's peak kept.
Hook times come from a timing shim: ``core.hooksPath`` points at a directory of tiny shell
scripts, one per installed hook, each running the real hook (same name, same arguments,
same standard input) between two clock readings; the shim's own cost is two ``date`` runs.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

SHIM = """#!/bin/sh
s=$(date +%s%N)
{real} "$@"
rc=$?
e=$(date +%s%N)
echo "{name} $(( (e - s) / 1000 ))" >> {log}
exit $rc
"""


def shim_hooks(hooks_dir: str, shim_dir: str, log: str) -> list[str]:
    """A timing shim for every installed hook of ``hooks_dir``; the hooks' names."""
    os.makedirs(shim_dir, exist_ok=True)
    names = []
    for name in sorted(os.listdir(hooks_dir)):
        real = os.path.join(hooks_dir, name)
        if "." in name or not os.access(real, os.X_OK) or not os.path.isfile(real):
            continue  # samples, chained originals (*.pre-proximity), helpers
        path = os.path.join(shim_dir, name)
        with open(path, "w") as f:
            f.write(SHIM.format(real=_quote(real), name=name, log=_quote(log)))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        names.append(name)
    return names


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def hook_times(log: str) -> dict[str, list[float]]:
    """Milliseconds of each hook's runs, by hook name."""
    found: dict[str, list[float]] = {}
    try:
        with open(log) as f:
            for line in f:
                name, _, micros = line.strip().partition(" ")
                if micros.isdigit():
                    found.setdefault(name, []).append(int(micros) / 1000)
    except OSError:
        pass
    return found


def percentile(xs: Sequence[float], q: float) -> float | None:
    """The q-th percentile (nearest rank) of xs, None for none."""
    if not xs:
        return None
    s = sorted(xs)
    k = max(0, min(len(s) - 1, -(-len(s) * q // 100) - 1))
    return round(s[int(k)], 1)


def summary(xs: Sequence[float]) -> dict[str, float | int | None]:
    return {"n": len(xs), "median": percentile(xs, 50), "p95": percentile(xs, 95),
            "max": round(max(xs), 1) if xs else None}


@dataclass
class ServiceMemory:
    """The resident service's peak RSS, sampled from /proc."""
    common: str  # the repository's common git dir
    peaks_kb: dict[int, int] = field(default_factory=dict)  # pid -> VmHWM

    def pid(self) -> int | None:
        try:
            with open(os.path.join(self.common, "ecm", "service.json")) as f:
                pid = json.load(f).get("pid")
        except (OSError, ValueError, AttributeError):
            return None
        return pid if isinstance(pid, int) and not isinstance(pid, bool) else None

    def sample(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        kb = int(line.split()[1])
                        self.peaks_kb[pid] = max(kb, self.peaks_kb.get(pid, 0))
        except (OSError, ValueError, IndexError):
            pass

    @property
    def peak_mb(self) -> float | None:
        return round(max(self.peaks_kb.values()) / 1024, 1) if self.peaks_kb else None
