"""Collisions at a distance through the symbol channel, end to end via scan."""

from __future__ import annotations

import pytest
from conftest import pair, sym, two

from proximity import calibration

LIB = '''RATE = 2


def area(w, h):
    return w * h


def scale(x, k):
    return x * k


def legacy():
    return "old"


def total(n):
    return n * RATE
'''
APP = '''from lib import area


def room():
    return area(3, 4)
'''


def test_python_signature_change_vs_new_call(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "app.py": APP, "report.py": "import lib\n"})
    sp.write(a, "lib.py", LIB.replace("def area(w, h):\n    return w * h",
                                      "def area(w, h, unit):\n    return f'{w * h}{unit}'"))
    sp.write(a, "app.py", APP.replace("area(3, 4)", "area(3, 4, 'm2')"))
    sp.write(b, "report.py", "import lib\n\n\ndef summary():\n    return lib.area(1, 2)\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["conflict"] == 0.0  # git merges this cleanly
    # a call that no longer binds: the calibrated value of incompatible-call (default 0.9)
    fitted = calibration.probability("symbol", "incompatible-call", 0.9)
    assert p["channels"]["symbol"] == pytest.approx(fitted) and p["advisory"] == "resolution"
    assert f[0]["kind"] == "incompatible-call" and "missing required 'unit'" in f[0]["detail"]
    assert "area" in f[0]["detail"] and "signature" in f[0]["detail"]
    assert f[0]["path_a"] == "lib.py" and f[0]["path_b"] == "report.py"
    assert f[0]["ranges_b"] == [[5, 5]]  # the using line


def test_python_rename_vs_new_use(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "tools/calc.py": "from lib import area\n"})
    sp.write(a, "lib.py", LIB.replace("def scale(", "def resize("))
    sp.write(b, "tools/calc.py", "from lib import area, scale\n\nX = scale(area(1, 2), 3)\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert any("scale" in x["detail"] and "removed" in x["detail"] for x in f)


def test_python_removed_function_vs_new_import(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "cli.py": "print(1)\n"})
    sp.write(a, "lib.py", LIB.replace('def legacy():\n    return "old"\n\n\n', ""))
    sp.write(b, "cli.py", "from lib import legacy\n\nprint(legacy())\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and "legacy" in f[0]["detail"]


def test_python_changed_constant_vs_dependent_assert(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "tests/test_lib.py": "from lib import total\n"})
    sp.write(a, "lib.py", LIB.replace("RATE = 2", "RATE = 3"))
    sp.write(b, "tests/test_lib.py", "from lib import total\n\n\ndef test_total():\n"
                                     "    assert total(5) == 10\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    # a changed behaviour, not a broken contract: traffic, never an RA (as calibrated on real
    # merges)
    assert p["advisory"] == "traffic" and p["channels"]["symbol"] < 0.7
    assert any("total" in x["detail"] and "indirect" in x["detail"] for x in f)


def test_two_agents_only_reading_a_symbol_score_zero(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "x.py": "import lib\n", "y.py": "import lib\n"})
    sp.write(a, "x.py", "import lib\n\nA = lib.area(1, 2)\n")
    sp.write(b, "y.py", "import lib\n\nB = lib.area(3, 4)\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []
    assert p["advisory"] != "resolution"


def test_body_only_change_is_traffic_not_resolution(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.py": LIB, "use.py": "import lib\n"})
    sp.write(a, "lib.py", LIB.replace("    return x * k", "    return k * x"))
    sp.write(b, "use.py", "import lib\n\nY = lib.scale(2, 3)\n")
    p, _f = sym(scan_json(sp.main, capsys=capsys))
    assert 0 < p["channels"]["symbol"] < 0.5
    assert p["advisory"] != "resolution"


JS_LIB = '''export function area(w, h) {
  return w * h;
}

export function legacy() {
  return "old";
}

export const RATE = 2;
'''


def test_js_removed_export_vs_new_import(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.js": JS_LIB, "src/ui/page.js": "export const x = 1;\n"})
    sp.write(a, "src/lib.js", JS_LIB.replace(
        'export function legacy() {\n  return "old";\n}\n\n', ""))
    sp.write(b, "src/ui/page.js", "import { legacy } from '../lib.js';\n"
                                  "export const x = legacy();\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert "legacy" in f[0]["detail"] and f[0]["path_b"] == "src/ui/page.js"
    dep = [x for x in p["findings"] if x["channel"] == "dependency"]
    assert dep and "src/ui/page.js imports src/lib.js" in dep[0]["detail"]


def test_ts_signature_change_vs_new_call(space, scan_json, capsys):
    lib = "export function fmt(n: number): string {\n  return String(n);\n}\n"
    sp, a, b = two(space, {"lib.ts": lib, "main.ts": "import { fmt } from './lib';\n"})
    sp.write(a, "lib.ts", lib.replace("fmt(n: number)", "fmt(n: number, digits: number)"))
    sp.write(b, "main.ts", "import { fmt } from './lib';\nconsole.log(fmt(3));\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and "fmt" in f[0]["detail"]


GO_LIB = "package shop\n\nfunc Price(n int) int {\n\treturn n * 2\n}\n"


def test_go_signature_change_vs_new_call_same_package(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": "module example.com/shop\n\ngo 1.21\n",
                           "shop/price.go": GO_LIB, "shop/cart.go": "package shop\n"})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int) int", "Price(n int, tax int) int"))
    sp.write(b, "shop/cart.go", "package shop\n\nfunc Cart() int {\n\treturn Price(3)\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] >= 0.7 and "Price" in f[0]["detail"]  # an RA on its own


def test_go_import_resolves_through_go_mod(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": "module example.com/app\n\ngo 1.21\n",
                           "shop/price.go": GO_LIB,
                           "cmd/main.go": 'package main\n\nimport "example.com/app/shop"\n\n'
                                          "func main() { _ = shop.Price(1) }\n"})
    sp.write(a, "shop/price.go", GO_LIB.replace("n * 2", "n * 3"))
    sp.write(b, "cmd/main.go", 'package main\n\nimport "example.com/app/shop"\n\n'
                               "func main() { _ = shop.Price(2) }\n")
    p = pair(scan_json(sp.main, capsys=capsys), "a", "b")
    dep = next(f for f in p["findings"] if f["channel"] == "dependency")
    assert dep["kind"] == "import-1"  # a direct import, resolved through go.mod
    assert {dep["path_a"], dep["path_b"]} == {"shop/price.go", "cmd/main.go"}
    assert 0 < p["channels"]["dependency"] < 0.1  # an import alone is a few percent


RS_LIB = "pub fn parse(s: &str) -> i32 {\n    s.len() as i32\n}\n"


def test_rust_signature_change_vs_new_use(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.rs": "mod util;\n", "src/util.rs": RS_LIB,
                           "src/main.rs": "mod util;\n"})
    sp.write(a, "src/util.rs", RS_LIB.replace("parse(s: &str)", "parse(s: &str, base: u32)"))
    sp.write(b, "src/main.rs", "mod util;\n\nfn main() {\n    let _ = util::parse(\"1\");\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] >= 0.7 and "parse" in f[0]["detail"]  # an RA on its own
    assert p["channels"]["dependency"] > 0
