"""A committed config is data a branch provides: bounded before any parser reads it, its
values checked, and nothing in it can switch the guard off.

Real repositories with plain hooks (`proximity install`), a real bare remote, real commits
and pushes; the policy functions on plain data where a value's fate is the point.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import time
from pathlib import Path

import pytest
from conftest import git
from test_faults import _conflicting_pair, commit, hooked_repo, run

from proximity import config, configlimits
from proximity.policy import load_policy

PY = sys.executable
ORIGIN = "the main checkout's HEAD"


def _commit_config(main: Path, name: str, data: bytes) -> None:
    (main / name).write_bytes(data)
    git(main, "add", name)
    git(main, "commit", "-qm", "a config", "--no-verify")


HOSTILE = {
    # 260 KB of one array inside another: tomllib's recursion took the guard off everywhere
    "nested-arrays": b"a = " + b"[" * 130_000 + b"]" * 130_000 + b"\n",
    "nested-inline-tables": b"a = " + b"{b = " * 20_000 + b"1" + b"}" * 20_000 + b"\n",
    "dotted-key": b"a" + b".a" * 100_000 + b" = 1\n",
    "deep-header": b"[" + b".".join([b"t"] * 50_000) + b"]\nx = 1\n",
    # a number whose message would quote a structure too deep to print
    "deep-value": b"near_lines = " + b"[" * 30 + b"]" * 30 + b"\n",
    # integers past Python's limit on converting them (tomllib raised ValueError), and
    # below it but past any float (math.isfinite raised OverflowError): both took the
    # guard off in every worktree ("internal error"), doctor and status with it
    "huge-integer": b"gamma = " + b"9" * 5000 + b"\n",
    "integer-past-floats": b"[weights]\ntree = " + b"9" * 4000 + b"\n",
    # past the limit in decimal only: parsed, and quoting it in the warning raised
    "hex-integer": b"gamma = 0x" + b"f" * 5000 + b"\n",
    "octal-in-a-list": b"retain_events = [0o" + b"7" * 6000 + b"]\n",
    "binary-integer": b"hub_degree = 0b" + b"1" * 20000 + b"\n",
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_doctor_status_and_the_guard_survive_a_hostile_committed_config(tmp_path, shape):
    main, _ = hooked_repo(tmp_path)
    _commit_config(main, ".proximity.toml", HOSTILE[shape])
    # the same file, uncommitted, in a worktree (doctor reads it for drift)
    (main / ".proximity.toml").write_bytes(HOSTILE[shape])
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("proximity: warning:")]
    assert len(said) == 1 and ".proximity.toml" in said[0], said
    assert len(said[0]) < 400, said  # (the value is never quoted whole)
    d = run(main, PY, "-m", "proximity", "doctor", "--json")
    assert "Traceback" not in d.stderr and d.returncode == 1, d.stderr
    rows = [c for c in json.loads(d.stdout)["checks"] if c["check"].startswith("config")]
    assert any(c["status"] == "fail" and ".proximity.toml" in c["detail"] for c in rows), rows
    s = run(main, PY, "-m", "proximity", "status")
    assert "Traceback" not in s.stderr and "internal error" not in s.stderr, s.stderr
    assert s.returncode == 2 and ".proximity.toml" in s.stderr, s.stderr


def test_a_huge_committed_config_is_refused_unread_and_costs_no_hook_its_time(tmp_path):
    """27 MB of exclude globs made every hook run into its 30 s time limit: a file over
    the size limit is named by its size from the object's header and never read."""
    main, _ = hooked_repo(tmp_path)
    globs = ",".join(f"'src/gen/{i}/**/*.py'" for i in range(1_100_000))
    data = f"exclude = [{globs}]\n".encode()
    assert len(data) > 26_000_000
    _commit_config(main, ".proximity.toml", data)
    t = time.monotonic()
    r = commit(main)
    took = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert said and all(f"{len(data)} bytes, over the 262144-byte limit" in ln
                        for ln in said), said
    assert took < 10.0, took  # (32 s before: not a speed target, a stall that must not be)
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr


def test_the_rest_of_a_committed_policy_stands_when_one_value_is_refused():
    text = "near_lines = 3\nexclude = ['**']\n[weights]\ntree = 0.5\nconflict = 0\n"
    policy = load_policy([(".proximity.toml", text.encode())], [], [], ORIGIN)
    assert policy.config.near_lines == 3 and policy.config.weights["tree"] == 0.5
    assert policy.config.exclude == ()  # matches every path: refused
    assert [f for f in policy.faults if "'exclude' ignored" in f and "line 2" in f]
    zero = "near_lines = 3\n[weights]\n" + "".join(f"{c} = 0\n" for c in config.CHANNELS)
    policy = load_policy([(".proximity.toml", zero.encode())], [], [], ORIGIN)
    assert policy.config.near_lines == 3
    assert policy.config.weights == config.DEFAULT_WEIGHTS
    assert config.disarms(policy.config) is None
    # a file too large to read is named by its size; the defaults stand
    policy = load_policy([("pyproject.toml", 27_000_000)], [], [], ORIGIN)
    assert policy.config == config.Config() and "27000000 bytes" in policy.faults[0]
    # a pyproject.toml that never names proximity is not read for it, even broken
    other = b"[tool.other]\n" + b"k = [" * 10_000 + b"\n"
    policy = load_policy([("pyproject.toml", other)], [], [], ORIGIN)
    assert policy.config == config.Config() and policy.faults == ()


def test_a_bad_git_config_entry_is_said_once():
    # the repository's own git config is read as the shared layer and again among the
    # user's entries (for the trusted keys): one bad entry, one fault
    entry = [("proximity.sync", "origin")]
    policy = load_policy([], entry, entry, ORIGIN)
    assert len(policy.faults) == 1 and "proximity.sync" in policy.faults[0]
    assert policy.warnings == list(policy.faults) and policy.config == config.Config()


def test_only_the_persons_own_git_config_may_turn_the_guard_off_and_it_says_so(tmp_path):
    main, _ = hooked_repo(tmp_path)
    zero = "[weights]\n" + "".join(f"{c} = 0\n" for c in config.CHANNELS)
    _commit_config(main, ".proximity.toml", zero.encode())
    _a, b = _conflicting_pair(main, tmp_path)
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode != 0 and "push blocked" in p.stderr, p.stderr
    for c in config.CHANNELS:
        git(main, "config", f"proximity.weights.{c}", "0")
    p = run(b, "git", "push", "-q", "origin", "feat/b")
    assert p.returncode == 0, p.stderr
    off = [ln for ln in p.stderr.splitlines() if "the push guard is OFF for this push" in ln]
    assert len(off) == 1 and "git config sets weights" in off[0], p.stderr
    d = run(main, PY, "-m", "proximity", "doctor", "--json")
    guard = [c for c in json.loads(d.stdout)["checks"] if c["check"] == "guard"]
    assert guard and guard[0]["status"] == "warn" and "OFF" in guard[0]["detail"], guard


DOCS = [
    "a = 1", "a.b.c = 1", "[x.y]\na = [[1]]", "a = [[[[]]]]", "a = {b = {c = [1]}}",
    "[[t]]\nx = 1", 's = "[[[["\nx = \'\'\'[[[\'\'\'', "a = [1.5, 2.5, {x.y.z = 3}]",
    '[tool.proximity]\nexclude = ["a"]\n[tool.proximity.weights]\ntree = 0.5\n',
    'a = """x""""\nb = [[1]]', "k = [\n [1],\n [2, [3]],\n]\n# [[[[[[\n", "a = {}\nb = []",
    '[ "a.b" . c ]\nx = {}', "a = {}\n[b]\nc = [{d = [1]}]", "[[a.b]]\n[[a.b.c]]\nd.e = [{}]",
]


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("doc", DOCS)
def test_the_nesting_counted_before_parsing_is_never_below_the_parsed_depth(doc):
    import tomllib

    assert configlimits.nesting(doc) >= _depth(tomllib.loads(doc))


def test_a_real_pyproject_is_far_inside_the_limits():
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert configlimits.nesting(text) <= configlimits.MAX_NESTING // 2
    assert len(text) < configlimits.MAX_CONFIG_BYTES // 10


def test_an_exclude_list_matches_as_fnmatch_does_with_one_expression():
    globs = (*(f"gen{i}/*.py" for i in range(200)), "*.lock", "docs/**", "a?c")
    cfg = config.Config(exclude=globs)
    for path in ("gen7/x.py", "gen7/y/x.py", "gen200/x.py", "poetry.lock", "docs/a/b.md",
                 "abc", "abbc", "src/x.py", "-"):
        assert cfg.excluded(path) == any(fnmatch.fnmatch(path, g) for g in globs), path
