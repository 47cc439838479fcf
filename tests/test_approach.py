"""Early warning: two sides working the same function, before git conflicts."""

from __future__ import annotations

from conftest import pair, two

from proximity.channels import approach

BODY = "".join(f"    v{i} = x + {i}\n" for i in range(1, 13))
LIB = ("import os\n\n\n"
       f"def parse(x):\n{BODY}    return v1\n\n\n"
       f"def render(x):\n{BODY}    return v2\n")
# parse() spans lines 4-17, render() lines 20-33 (1-based)


def _findings(p: dict, channel: str) -> list[dict]:  # type: ignore[type-arg]
    return [f for f in p["findings"] if f["channel"] == channel]


def test_same_function_different_lines_names_it_and_never_ra(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB})
    sp.write(a, "lib.py", LIB.replace("    v2 = x + 2\n", "    v2 = x * 2\n", 1))
    sp.write(b, "lib.py", LIB.replace("    v9 = x + 9\n", "    v9 = x - 9\n", 1))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0  # git merges the two live states cleanly
    f = _findings(p, "approach")
    assert f and f[0]["kind"] == "fn-near"
    assert "parse()" in f[0]["detail"] and "6 unchanged line(s) apart" in f[0]["detail"]
    assert f[0]["ranges_a"] == [[6, 6]] and f[0]["ranges_b"] == [[13, 13]]
    assert p["channels"]["approach"] == approach.prob("fn-near")
    assert p["channels"]["approach"] < 0.70 - approach.CAP_MARGIN + 1e-9
    # calibrated, the same function is worth a few percent (benchmarks/RESULTS.md, session
    # 10): the pair is told which function the other side works in, and is never blocked
    assert p["advisory"] == ("traffic" if p["risk"] >= 0.35 else "clear")
    assert p["advisory"] != "resolution"


def test_same_distance_in_different_functions_is_no_approach(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB})
    # line 14 (in parse) and line 21 (in render): 6 unchanged lines apart, as above
    sp.write(a, "lib.py", LIB.replace("    v10 = x + 10\n", "    v10 = x * 10\n", 1))
    sp.write(b, "lib.py", LIB.replace("def render(x):\n    v1 = x + 1\n",
                                      "def render(x):\n    v1 = x - 1\n"))
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    assert p["channels"]["conflict"] == 0.0
    f = _findings(p, "approach")
    assert all(x["kind"] not in ("fn-near", "fn-far") for x in f)
    assert p["advisory"] == "clear"


def test_features_on_plain_ranges():
    defs = {"C": ["class", "", "", 1, 30, None], "C.m": ["method", "", "", 2, 10, None],
            "C.n": ["method", "", "", 12, 30, None], "f": ["function", "", "", 32, 40, None]}
    f = approach.features([(3, 3)], [(9, 9)], defs)
    assert f is not None and (f.level, f.shared, f.gap) == ("fn", "C.m", 5)
    f = approach.features([(3, 3)], [(14, 14)], defs)
    assert f is not None and (f.level, f.shared) == ("cls", "C")
    f = approach.features([(3, 3)], [(35, 35)], defs)
    assert f is not None and f.level == "file" and approach.kinds(f, 0.0) == []
    assert approach.kinds(f, approach.COVER) == ["cover"]
    # an insertion after line 10 (the method's last line) is not inside C.m
    f = approach.features([(5, 5)], [(11, 10)], defs)
    assert f is not None and f.level == "cls"
    assert approach.features([(5, 5)], [], defs) is None


def test_approach_alone_never_reaches_tau_ra():
    from proximity.model import FileChange, WorkingSet

    base = "".join(f"x{i} = {i}\n" for i in range(1, 21))
    fa = FileChange("m.py", "M", ranges=((1, 12),), old_oid="", new_oid="1" * 40, old_lines=20)
    fb = FileChange("m.py", "M", ranges=((14, 20),), old_oid="", new_oid="2" * 40, old_lines=20)
    wa, wb = WorkingSet({"m.py": fa}), WorkingSet({"m.py": fb})
    res = approach.value(wa, wb, lambda oid: base.encode(), {}, tau_ra=0.1)
    assert [f.kind for f in res.findings] == ["cover"]  # both changed >= 20 % of the file
    assert res.value is not None and res.value <= 0.1 - approach.CAP_MARGIN + 1e-9
    assert "35%" in res.findings[0].detail  # 7 of 20 lines on the smaller side
    # git's merge conflicts on the path: the conflict channel speaks, not this one
    assert approach.value(wa, wb, lambda oid: b"", {}, 0.7, frozenset({"m.py"})).findings == []


def test_javascript_same_function_through_the_tree_sitter_parser():
    from proximity.model import FileChange, WorkingSet

    body = "".join(f"  const v{i} = x + {i};\n" for i in range(1, 13))
    src = f"function parse(x) {{\n{body}  return v1;\n}}\n\nfunction render(x) {{\n{body}}}\n"
    fa = FileChange("lib.js", "M", ranges=((3, 3),), old_oid="b" * 40, new_oid="1" * 40,
                    old_lines=30)
    fb = FileChange("lib.js", "M", ranges=((9, 9),), old_oid="b" * 40, new_oid="2" * 40,
                    old_lines=30)
    res = approach.value(WorkingSet({"lib.js": fa}), WorkingSet({"lib.js": fb}),
                         lambda oid: src.encode(), {}, tau_ra=0.7)
    assert [f.kind for f in res.findings] == ["fn-near"]
    assert "parse()" in res.findings[0].detail
    fb2 = FileChange("lib.js", "M", ranges=((20, 20),), old_oid="b" * 40, new_oid="2" * 40,
                     old_lines=30)
    res = approach.value(WorkingSet({"lib.js": fa}), WorkingSet({"lib.js": fb2}),
                         lambda oid: src.encode(), {}, tau_ra=0.7)
    assert res.findings == []  # parse() and render(): no shared definition
