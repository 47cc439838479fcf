"""A watcher out of inotify watches says so and stops being trusted: a real service in a
user namespace whose watch limit is lowered (the limit is per user namespace), worktrees
that make new directories past it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = os.environ.get("PROXIMITY_TEST_PYTHON") or sys.executable


def _userns() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-U", "-r", "sh", "-c",
                        "echo 100 > /proc/sys/user/max_inotify_watches"], capture_output=True)
    return r.returncode == 0


SCENARIO = r"""
import json, os, subprocess, sys, time
from proximity.service import client
from proximity.commands import service as service_cmd

def git(cwd, *a):
    subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True)

root = sys.argv[1]
main = os.path.join(root, "main")
os.makedirs(main)
git(main, "init", "-q", "-b", "main")
with open(os.path.join(main, "f.txt"), "w") as fh:
    fh.write("".join(f"line {i}\n" for i in range(20)))
git(main, "add", "-A")
git(main, "commit", "-qm", "base")
subprocess.run([sys.executable, "-m", "proximity", "install"], cwd=main, check=True,
               capture_output=True)
for name in ("a", "b"):
    git(main, "worktree", "add", "-q", "-b", name, os.path.join(root, name))
dirs = sum(len(d) for _, d, _ in os.walk(root)) + 1
with open("/proc/sys/user/max_inotify_watches", "w") as fh:
    fh.write(str(dirs + 12))  # room for the tree and a few more, not for what comes
common = os.path.realpath(os.path.join(main, ".git"))
assert service_cmd.start(common)
end = time.monotonic() + 30
while time.monotonic() < end:
    got = client.request(common, {"op": "ping"}, budget=1.0)
    if got and got.get("ready"):
        break
    time.sleep(0.1)
for name, text in (("a", "def f():\n    return 'a'\n"), ("b", "def f():\n    return 'b'\n")):
    deep = os.path.join(root, name, "pkg", *[f"d{i}" for i in range(20)])
    os.makedirs(deep)
    with open(os.path.join(deep, "mod.py"), "w") as fh:
        fh.write(text)
time.sleep(1.0)
status = client.request(common, {"op": "status"}, budget=5.0)["status"]
b = os.path.join(root, "b")
git(b, "add", "-A")
r = subprocess.run(["git", "commit", "-qm", "b"], cwd=b, capture_output=True, text=True)
service_cmd.stop(common)
print(json.dumps({"error": status["error"], "commit_rc": r.returncode,
                  "stderr": r.stderr}))
"""


@pytest.mark.skipif(not _userns(), reason="needs a user namespace (unshare -U -r) to lower "
                    "the inotify watch limit for this test alone")
def test_a_watcher_past_the_watch_limit_says_so_and_is_not_trusted(tmp_path):
    env = {**os.environ, "PROXIMITY_SERVICE": "1", "PROXIMITY_SERVICE_IDLE": "60",
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["unshare", "-U", "-r", PY, "-c", SCENARIO, str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    out = __import__("json").loads(r.stdout.strip().splitlines()[-1])
    assert "watch limit" in str(out["error"]), out
    # b's commit is judged on what a re-read finds: a's file at the same new path
    assert out["commit_rc"] == 0
    assert "pkg/d0" in out["stderr"] and " a" in out["stderr"], out["stderr"]
