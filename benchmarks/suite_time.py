"""The test suite's time, the way CI runs it: ``CI=true bash .ci/run`` in a fresh clone of
each revision (its own virtualenv, ruff, mypy, then pytest on every core, at most four).

    python benchmarks/suite_time.py --rev HEAD~3 --rev HEAD --json suite.json
    python benchmarks/suite_time.py --report a.xml --report b.xml   # runs already made

For each run: the wall time of the whole command and of pytest alone (pytest's own
"passed in" line), the CPU seconds of every process it waited for (user + system: a busy
machine stretches the wall clock far more than the CPU), the load average before and after
(other work on the machine), and from pytest's JUnit XML the number of tests, the sum of
their own durations (set-up, call and tear-down of each) and the files that take longest.
With two runs or more, the tests all of them share are summed again, so that a revision
that adds tests is compared on the same tests too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def durations(xml_path: str) -> dict[str, float]:
    """Test id -> seconds (set-up + call + tear-down), from pytest's JUnit XML; a skipped
    test is left out (it did not run: a shared test is one every run ran)."""
    out: dict[str, float] = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        out[name] = out.get(name, 0.0) + float(case.get("time") or 0.0)
    return out


def failed(xml_path: str) -> list[str]:
    return [f"{c.get('classname')}::{c.get('name')}"
            for c in ET.parse(xml_path).getroot().iter("testcase")
            if c.find("failure") is not None or c.find("error") is not None]


def summary(times: dict[str, float], top: int) -> dict[str, Any]:
    by_file: dict[str, float] = defaultdict(float)
    for name, t in times.items():
        by_file[name.split("::")[0]] += t
    slow = sorted(times.items(), key=lambda kv: -kv[1])[:top]
    return {"tests": len(times), "summed_s": round(sum(times.values()), 1),
            "files": [[f, round(t, 1)] for f, t in
                      sorted(by_file.items(), key=lambda kv: -kv[1])[:top]],
            "slowest": [[n, round(t, 2)] for n, t in slow]}


def run_rev(repo: str, rev: str, workdir: str) -> dict[str, Any]:
    """Clone ``repo`` at ``rev`` into ``workdir`` and run CI there: the figures."""
    clone = os.path.join(workdir, "clone")
    subprocess.run(["git", "clone", "-q", repo, clone], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "-q", rev], check=True)
    xml_path = os.path.join(workdir, "junit.xml")
    log_path = os.path.join(workdir, "ci.log")
    env = {**os.environ, "CI": "true", "PYTEST_ADDOPTS": f"--junitxml={xml_path}"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        rc = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, stdout=log,
                            stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log_path) as log:
        text = log.read()
    m = re.search(r"in ([0-9.]+)s \(", text) or re.search(r" in ([0-9.]+)s =+\s*$", text,
                                                         re.M)
    return {"rev": rev, "commit": subprocess.run(
                ["git", "-C", clone, "rev-parse", "--short", "HEAD"], capture_output=True,
                text=True, check=True).stdout.strip(),
            "rc": rc, "wall_s": round(wall, 1),
            "pytest_s": float(m.group(1)) if m else None,
            "cpu_s": round(after.ru_utime - before.ru_utime
                           + after.ru_stime - before.ru_stime, 1),
            "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "xml": xml_path, "log": log_path}


def report(runs: list[dict[str, Any]], top: int) -> dict[str, Any]:
    """Each run's summary, and the tests every run has summed in each."""
    times = [durations(r["xml"]) for r in runs]
    for r, t in zip(runs, times, strict=True):
        r.update(summary(t, top))
        r["failed"] = failed(r["xml"])
    common = set.intersection(*(set(t) for t in times)) if times else set()
    return {"runs": runs, "shared_tests": len(common),
            "shared_summed_s": [round(sum(t[n] for n in common), 1) for t in times]}


def print_report(rep: dict[str, Any]) -> None:
    for r in rep["runs"]:
        head = r.get("commit") or r["xml"]
        print(f"{head}: {r['tests']} tests, summed {r['summed_s']} s", end="")
        if "wall_s" in r:
            print(f", wall {r['wall_s']} s (pytest {r['pytest_s']} s), CPU {r['cpu_s']} s, "
                  f"load {r['load_before'][0]} -> {r['load_after'][0]}", end="")
        print(f"; failed: {len(r['failed'])}")
        for name in r["failed"]:
            print(f"    FAILED {name}")
        for f, t in r["files"]:
            print(f"    {t:8.1f} s  {f}")
        for n, t in r["slowest"]:
            print(f"    {t:8.2f} s  {n}")
    if len(rep["runs"]) > 1:
        print(f"{rep['shared_tests']} tests in every run, summed: {rep['shared_summed_s']}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=ROOT, help="the repository to clone")
    ap.add_argument("--rev", action="append", default=[],
                    help="a revision to run CI on (repeatable; in the order given)")
    ap.add_argument("--report", action="append", default=[],
                    help="a JUnit XML of a run already made (instead of --rev)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    # started in the background (``cmd &`` without job control) SIGINT is ignored, and an
    # ignored signal stays ignored in every child: the tests that stop `watch` with Ctrl-C
    # would time out. Handled here, it is the default again in the children, as in CI.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not a.rev and not a.report:
        a.rev = ["HEAD"]
    runs: list[dict[str, Any]] = [{"xml": x} for x in a.report]
    keep = tempfile.mkdtemp(prefix="suite-time-") if a.rev else ""
    if keep:
        os.chmod(keep, 0o755)  # the tests that act as another user read the clone
    for i, rev in enumerate(a.rev):
        work = os.path.join(keep, str(i))
        os.makedirs(work)
        runs.append(run_rev(os.path.abspath(a.repo), rev, work))
    rep = report(runs, a.top)
    print_report(rep)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)
    if a.rev:
        print(f"clones, logs and XML kept under {keep}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
