"""The calibration fit, the generated table, and the replay instruments on a real
repository (the benchmarks' own code paths, on small inputs)."""

from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

from conftest import git, init_repo, lines

from proximity import calibration, calibration_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import calibrate
import replay
import steps


def synthetic(n: int = 400, seed: int = 3) -> list[calibrate.Obs]:
    """touch collides 80 %, near 30 %, b4 (same file) alone 4 %; b4 rides along with touch."""
    rnd = random.Random(seed)
    obs = []
    for _ in range(n):
        obs.append(calibrate.Obs({"overlap": ("touch",), "tree": ("b4",)},
                                 rnd.random() < 0.8, "steps", "x"))
        obs.append(calibrate.Obs({"overlap": ("near",), "tree": ("b3",)},
                                 rnd.random() < 0.3, "steps", "x"))
        obs.append(calibrate.Obs({"tree": ("b4",)}, rnd.random() < 0.04, "steps", "x"))
        obs.append(calibrate.Obs({"tree": ("b2",)}, rnd.random() < 0.08, "steps", "x"))
    return obs


def test_fit_recovers_rates_and_does_not_pay_twice():
    p, stats = calibrate.fit(synthetic())
    assert abs(p[("overlap", "touch")] - 0.8) < 0.06
    assert abs(p[("overlap", "near")] - 0.3) < 0.06
    # b4 is seen with touch 400 times, but the collisions are touch's: b4 stays small
    assert p[("tree", "b4")] < 0.1
    assert stats[("tree", "b4")]["n"] == 800
    # monotone along the tree chain although b2's raw rate exceeds b4's and b3's
    assert p[("tree", "b4")] >= p[("tree", "b3")] >= p[("tree", "b2")]
    assert all(0.0 <= v <= 1.0 for v in p.values())


def test_final_merges_fit_only_what_git_decided_when_steps_exist():
    obs = [*synthetic(100),
           *[calibrate.Obs({"conflict": ("conflict",), "overlap": ("rename-rename",)}, True,
                           "replay", "x")] * 30,
           *[calibrate.Obs({"tree": ("b4",)}, False, "replay", "x")] * 300]
    p, stats = calibrate.fit(obs)
    assert p[("conflict", "conflict")] > 0.9 and p[("overlap", "rename-rename")] > 0.9
    # 300 clean final merges with b4 do not move b4: a final merge has no "later"
    assert stats[("tree", "b4")]["n"] == 200


def test_pav_and_smoothing():
    assert calibrate.pav([0.1, 0.5, 0.2], [1, 1, 1]) == [0.3, 0.3, 0.2]
    # one observation cannot make a certainty: Beta smoothing toward the pooled rate
    p, _ = calibrate.fit([calibrate.Obs({"dependency": ("import-1",)}, True, "replay", "x"),
                          *[calibrate.Obs({"tree": ("b3",)}, False, "replay", "x")] * 20])
    assert 0.1 < p[("dependency", "import-1")] < 0.5


def test_reliability_bands_count_every_pair():
    rows = calibrate.reliability([(0.01, False), (0.02, True), (0.8, True), (0.99, True)])
    assert sum(r["n"] for r in rows) == 4
    assert rows[0]["observed"] == 0.5 and rows[-1]["band"][1] == 1.0


def test_written_table_loads_and_gives_probabilities(tmp_path):
    p, stats = calibrate.fit(synthetic(100))
    src = calibrate.table_source(p, stats)
    ns: dict[str, object] = {}
    exec(compile(src, "calibration_table.py", "exec"), ns)
    table = ns["TABLE"]
    assert isinstance(table, dict) and table["overlap"]["touch"] > table["overlap"]["near"]
    ast.parse(Path(calibration_table.__file__).read_text())
    for kinds in calibration_table.TABLE.values():
        assert all(0.0 <= v <= 1.0 for v in kinds.values())
    assert calibration.probability("no-such-channel", "x", 0.25) == 0.25


def test_replay_and_steps_on_a_real_repository(tmp_path):
    main = init_repo(tmp_path / "src", {"a.py": lines(40), "b.py": lines(40)})
    base = git(main, "rev-parse", "HEAD").stdout.strip()
    tips = {}
    for br, rel, old, new in (("one", "a.py", "line 10\n", "ONE\n"),
                              ("two", "a.py", "line 10\n", "TWO\n"),
                              ("far", "b.py", "line 30\n", "FAR\n")):
        git(main, "checkout", "-q", "-b", br, base)
        (main / rel).write_text(lines(40).replace(old, new))
        git(main, "commit", "-qam", br)
        tips[br] = git(main, "rev-parse", "HEAD").stdout.strip()
    src = replay.Source("t", str(main / ".git"), root=str(tmp_path / "scratch"))

    def case(x: str, y: str, conflict: bool) -> dict[str, object]:
        return {"id": f"t:{x}-{y}", "repo": "t", "base": base, "conflict": conflict,
                "a": {"commit": tips[x], "files": {"a.py": [[10, 10]]}},
                "b": {"commit": tips[y], "files": {"b.py": [[30, 30]]}}}

    hit = replay.replay_case(src, case("one", "two", True))
    assert hit["advisory"] == "resolution" and hit["channels"]["conflict"] >= 0.9
    assert hit["kinds"]["conflict"]
    miss = replay.replay_case(src, case("one", "far", False))
    assert miss["channels"]["conflict"] == 0.0 and miss["advisory"] != "resolution"
    rows = steps.replay_pair(src, case("one", "two", True), cap=15)
    assert [r["conflict_now"] for r in rows] == [True] and rows[0]["conflict_later"]
    # the source repository is never written: new objects live in the scratch repository
    assert not (main / ".git" / "objects" / "info" / "alternates").exists()


def test_only_rewrites_the_named_channel_and_keeps_the_rest_verbatim():
    old = Path(calibration_table.__file__).read_text()
    p = {("approach", "cover"): 0.2, ("overlap", "touch"): 0.5}
    stats = {k: {"n": 10.0, "k": 2.0} for k in p}
    got = calibrate.splice(old, calibrate.table_source(p, stats), ["approach"])
    table = ast.literal_eval(got.split("TABLE: dict[str, dict[str, float]] = ", 1)[1])
    assert table["approach"] == {"cover": 0.2}
    assert table["overlap"] == calibration_table.TABLE["overlap"]  # not refitted
    assert {k for k in table if k != "approach"} == set(calibration_table.TABLE) - {"approach"}
    for line in old.splitlines():
        if line.startswith('        "') and '"touch"' in line:
            assert line in got  # comments of untouched classes kept as they were
