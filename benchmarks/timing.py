"""Timing helpers the hook benchmarks share (hook_cost.py, service_cost.py, host_cost.py,
check_latency.py).

A variant is one way of running a git command: git's extra arguments (``-c core.hooksPath=…``)
and the environment. :func:`interleaved` lets the variants take turns round by round, so that
a machine getting busier or quieter during a run shifts them all alike, and reports medians.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from genrepo import ENV

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]

Variant = tuple[list[str], dict[str, str]]  # git's extra arguments, environment
One = Callable[[str, list[str], dict[str, str], int], float]  # name, extra, env, round


CAPTURED = " captured"  # a variant's name ending so runs git with its output captured


def captured(name: str) -> bool:
    """Whether the variant ``name`` captures git's output (see timed)."""
    return name.endswith(CAPTURED)


def timed(cmd: list[str], cwd: str, env: dict[str, str] | None = None,
          capture: bool = False) -> float:
    """Wall seconds of one command (a failure raises): its output to /dev/null, or
    (``capture``) read from pipes to their end, as every agent, IDE and CI runs git --
    a hook that leaves a process holding git's stdout or stderr costs only the latter."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env or ENV, check=True, stdout=out, stderr=out)
    return time.perf_counter() - t0


def interleaved(runs: int, variants: Mapping[str, Variant], one: One,
                before: Sequence[Callable[[], None]] = ()) -> dict[str, float]:
    """Median seconds per variant, the variants taking turns (one warm-up round first, not
    counted); each ``before`` runs ahead of every timed command."""
    got: dict[str, list[float]] = {n: [] for n in variants}
    for i in range(runs + 1):
        for name, (extra, env) in variants.items():
            for wait in before:
                wait()
            s = one(name, extra, env, i)
            if i:
                got[name].append(s)
    return {n: round(statistics.median(v), 4) for n, v in got.items()}


def fresh_install(where: str) -> str:
    """A throwaway venv with a normal (non-editable) `pip install .`: what users run.
    Installed from a copy of the checkout's tracked files as they are: setuptools builds
    in the source tree, and a ``build/`` left there by an earlier install would put
    modules since deleted into this one (another code stamp than the checkout's)."""
    src = os.path.join(where, "src")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(src, rel))
    venv = os.path.join(where, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", src],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return py


@contextlib.contextmanager
def interpreter(fresh: bool, default: str = sys.executable) -> Iterator[str]:
    """The Python to measure: ``default``, or (``fresh``) a throwaway venv holding a normal
    `pip install .`, removed afterwards."""
    if not fresh:
        yield default
        return
    with tempfile.TemporaryDirectory(prefix="proximity-venv-",
                                     ignore_cleanup_errors=True) as tmp:
        py = fresh_install(tmp)
        print(f"measuring a fresh install: {py}", file=sys.stderr, flush=True)
        yield py


def save_json(path: str | None, doc: Any) -> None:
    """Write the figures to ``path`` (``--json``), when one is given."""
    if path:
        with open(path, "w") as fh:
            json.dump(doc, fh, indent=2)


def load() -> str:
    """The machine's load averages, as `uptime` prints them."""
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    return out.strip().split("load average:")[-1].strip()
