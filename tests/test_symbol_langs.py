"""Name resolution and compatibility in the symbol channel for JS/TS, Go and Rust."""

from __future__ import annotations

import pytest
from conftest import git, sym, two

JS_LIB = '''export function area(w, h) {
  return w * h;
}

export function legacy() {
  return "old";
}
'''


@pytest.mark.parametrize(("new_sig", "body", "expect"), [
    # a required parameter the call does not pass, which the body dereferences: it throws
    ("area(w, h, depth)", "return w * h * depth.scale;", "ra"),
    # ... which the body only compares: JavaScript passes undefined, nothing throws, but
    # the behaviour may change: a traffic advisory, never a block (seen on real code, where
    # the merge was clean)
    ("area(w, h, depth)", "return depth > 0 ? w * h * depth : w * h;", "ta"),
    ("area(w, h, depth = 1)", "return w * h;", "clear"),  # a default: the call still fits
    ("area(w, h, ...more)", "return w * h;", "clear"),  # a rest parameter
])
def test_js_parameter_added(space, scan_json, capsys, new_sig, body, expect):
    sp, a, b = two(space, {"src/lib.js": JS_LIB, "src/ui/page.js": "export const x = 1;\n"})
    sp.write(a, "src/lib.js", JS_LIB.replace("area(w, h)", new_sig)
             .replace("return w * h;", body))
    sp.write(b, "src/ui/page.js", "import { area as size } from '../lib.js';\n"
                                  "export const x = size(2, 3);\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    if expect == "ra":
        assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
        assert "missing required 'depth'" in f[0]["detail"] and "src/ui/page.js:2" in \
            f[0]["detail"]
    elif expect == "ta":
        assert p["advisory"] == "traffic" and f[0]["kind"] == "missing-arg", (p, f)
        assert "'depth' is not passed" in f[0]["detail"]
    else:
        assert p["channels"]["symbol"] == 0.0 and f == []


def test_js_namespace_import_and_require(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.js": JS_LIB, "a.js": "module.exports = {};\n",
                           "b.js": "module.exports = {};\n"})
    # (a new parameter the body dereferences: a call without it throws)
    sp.write(a, "lib.js", JS_LIB.replace("area(w, h)", "area(w, h, d)")
             .replace("return w * h;", "return w * h * d.k;"))
    sp.write(b, "a.js", "import * as L from './lib';\nexport const y = L.area(1, 2);\n")
    sp.write(b, "b.js", "const { legacy } = require('./lib');\nconst z = legacy();\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert [x["path_b"] for x in f if x["kind"] == "incompatible-call"] == ["a.js"]


def test_js_export_alias_keeps_a_rename_resolving(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.js": JS_LIB, "page.js": "export const x = 1;\n"})
    sp.write(a, "lib.js", JS_LIB.replace("function legacy()", "function older()")
             + "export { older as legacy };\n")
    sp.write(b, "page.js", "import { legacy } from './lib.js';\nexport const x = legacy();\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_js_bare_name_in_unrelated_file_is_no_risk(space, scan_json, capsys):
    sp, a, b = two(space, {"lib.js": JS_LIB, "other.js": "export const x = 1;\n"})
    sp.write(a, "lib.js", JS_LIB.replace("area(w, h)", "area(w, h, d)"))
    sp.write(b, "other.js", "function area(r) { return r * r; }\nexport const x = area(2);\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_ts_optional_parameter_is_compatible_and_import_type_is_type_only(
        space, scan_json, capsys):
    lib = "export interface Shape { w: number }\n\nexport function fmt(n: number): string {\n" \
          "  return String(n);\n}\n"
    sp, a, b = two(space, {"lib.ts": lib, "main.ts": "export {};\n"})
    sp.write(a, "lib.ts", lib.replace("fmt(n: number)", "fmt(n: number, digits?: number)")
             .replace("w: number", "w: number; h: number"))
    sp.write(b, "main.ts", "import { fmt } from './lib';\nimport type { Shape } from './lib';\n"
                           "export const s: Shape | null = null;\nconsole.log(fmt(3));\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_ts_conflict_markers_are_unknown(space, scan_json, capsys):
    lib = "export function fmt(n: number): string {\n  return String(n);\n}\n"
    sp, a, b = two(space, {"lib.ts": lib, "main.ts": "export {};\n"})
    sp.write(a, "lib.ts", "<<<<<<< HEAD\n" + lib + "=======\n" + lib + ">>>>>>> x\n")
    sp.write(b, "main.ts", "import { fmt } from './lib';\nconsole.log(fmt(3));\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] is None and f == []
    assert p["advisory"] != "resolution"


def test_js_module_rename_vs_new_import(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.js": JS_LIB, "src/page.js": "export const x = 1;\n"})
    git(a, "mv", "src/lib.js", "src/geometry.js")
    sp.write(b, "src/page.js", "import { area } from './lib.js';\nexport const x = area(1, 2);\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert f[0]["kind"] == "module-moved" and "src/geometry.js" in f[0]["detail"]


GO_MOD = "module example.com/app\n\ngo 1.21\n"
GO_LIB = "package shop\n\nfunc Price(n int) int {\n\treturn n * 2\n}\n"
GO_MAIN = 'package main\n\nimport "example.com/app/shop"\n\nfunc main() {}\n'


def test_go_exported_param_change_vs_call_from_another_package(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB, "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int)", "Price(n int, tax int)"))
    sp.write(b, "cmd/main.go", GO_MAIN.replace("func main() {}",
                                               "func main() {\n\t_ = shop.Price(2)\n}"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
    assert "Price" in f[0]["detail"] and "cmd/main.go:6" in f[0]["detail"]


@pytest.mark.parametrize(("new_sig", "risky"), [
    ("Price(count int) int", False),  # a parameter renamed: every call still compiles
    ("Price(n int, extra ...string) int", False),  # a variadic one added after it
    ("Price(n string) int", True),  # its type changed: the constant 2 is no string
    ("Price(n *int) int", True),  # nor a pointer
    # an untyped constant takes any numeric type (seen on real code)
    ("Price(n uint) int", False),
    ("Price(n int) int64", True),  # the result's type changed
])
def test_go_parameter_changes_that_do_and_do_not_break_calls(space, scan_json, capsys,
                                                             new_sig, risky):
    """Found on cobra (checked with go vet): renaming a parameter and adding a variadic
    one were blocked as if the call no longer compiled."""
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB, "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int) int", new_sig))
    sp.write(b, "cmd/main.go", GO_MAIN.replace("func main() {}",
                                               "func main() {\n\t_ = shop.Price(2)\n}"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    if risky:
        assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call", (p, f)
    else:
        assert f == [] and p["advisory"] != "resolution", (p, f)


def test_go_a_typed_argument_does_not_convert(space, scan_json, capsys):
    """``n := 2; shop.Price(n)``: n is an int, and Go converts no typed value: int -> uint
    breaks this call where it does not break ``shop.Price(2)``."""
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB, "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int) int", "Price(n uint) int"))
    sp.write(b, "cmd/main.go", GO_MAIN.replace(
        "func main() {}", "func main() {\n\tn := 2\n\t_ = shop.Price(n)\n}"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call", (p, f)
    assert "parameter types changed" in f[0]["detail"]


def test_go_same_name_in_another_package_is_no_risk(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB,
                           "bank/fee.go": "package bank\n\nfunc Price(n int) int {\n"
                                          "\treturn n\n}\n",
                           "cmd/main.go": 'package main\n\nimport "example.com/app/bank"\n\n'
                                          "func main() {}\n"})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int)", "Price(n int, tax int)"))
    sp.write(b, "cmd/main.go", 'package main\n\nimport "example.com/app/bank"\n\n'
                               "func main() {\n\t_ = bank.Price(2)\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_go_blank_identifier_is_not_a_definition(space, scan_json, capsys):
    """`var _ I = (*T)(nil)` asserts an interface; removing it removes no name (gin)."""
    lib = GO_LIB + "\ntype Pricer interface{ Price(int) int }\n\nvar _ = Price\n"
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": lib, "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", lib.replace("\nvar _ = Price\n", ""))
    sp.write(b, "shop/extra.go", "package shop\n\nfunc Extra() int {\n\t_ = Price(1)\n"
                                 "\treturn 0\n}\n")  # same package: `_` is in scope
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert not any(x["kind"] == "removed-used" for x in f)
    assert p["advisory"] != "resolution"


RS_LIB = "pub fn parse(s: &str) -> i32 {\n    s.len() as i32\n}\n"


def test_rust_use_crate_path_vs_param_change(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.rs": "mod util;\nmod app;\n", "src/util.rs": RS_LIB,
                           "src/app.rs": "pub fn run() {}\n"})
    sp.write(a, "src/util.rs", RS_LIB.replace("parse(s: &str)", "parse(s: &str, base: u32)"))
    sp.write(b, "src/app.rs", "use crate::util::parse;\n\npub fn run() {\n"
                              "    let _ = parse(\"1\");\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
    assert "src/app.rs:4" in f[0]["detail"]


def test_js_default_import_resolves_to_the_default_export(space, scan_json, capsys):
    lib = "export default function area(w, h) {\n  return w * h;\n}\n"
    sp, a, b = two(space, {"lib.mjs": lib, "page.mjs": "export const x = 1;\n"})
    sp.write(a, "lib.mjs", lib.replace("area(w, h)", "area(w, h, d)")
             .replace("return w * h;", "return w * h * d.k;"))
    sp.write(b, "page.mjs", "import size from './lib.mjs';\nexport const x = size(1, 2);\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"


def test_js_constructor_gains_a_required_parameter(space, scan_json, capsys):
    lib = "export class Cart {\n  constructor(owner) {\n    this.owner = owner;\n  }\n}\n"
    sp, a, b = two(space, {"cart.js": lib, "shop.js": "export const x = 1;\n"})
    sp.write(a, "cart.js", lib.replace("constructor(owner)", "constructor(owner, currency)")
             .replace("this.owner = owner;", "this.owner = owner + currency.code;"))
    sp.write(b, "shop.js", "import { Cart } from './cart.js';\nexport const c = new Cart('me');\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
    assert "missing required 'currency'" in f[0]["detail"]


def test_go_method_on_a_value_of_an_imported_package(space, scan_json, capsys):
    lib = "package shop\n\ntype Cart struct{}\n\nfunc (c *Cart) Add(n int) int {\n\treturn n\n}\n"
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/cart.go": lib, "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/cart.go", lib.replace("Add(n int)", "Add(n int, qty int)"))
    sp.write(b, "cmd/main.go", GO_MAIN.replace(
        "func main() {}", "func main() {\n\tc := &shop.Cart{}\n\t_ = c.Add(1)\n}"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert f[0]["kind"] == "incompatible-method-call" and "Cart.Add" in f[0]["detail"]
    assert p["channels"]["symbol"] == pytest.approx(0.6)


def _go_call(sp, b):
    sp.write(b, "cmd/main.go", GO_MAIN.replace("func main() {}",
                                               "func main() {\n\t_ = shop.Price(2)\n}"))


def test_go_file_deleted_removes_its_definitions_from_the_package(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB,
                           "shop/doc.go": "package shop\n", "cmd/main.go": GO_MAIN})
    (a / "shop/price.go").unlink()
    _go_call(sp, b)
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "removed-used"
    assert f[0]["path_a"] == "shop/price.go" and "cmd/main.go:6" in f[0]["detail"]


def test_go_function_moved_to_another_file_of_the_package_is_compatible(
        space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB + "\nfunc Tax() int {"
                           "\n\treturn 1\n}\n", "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", "package shop\n\nfunc Tax() int {\n\treturn 1\n}\n")
    sp.write(a, "shop/money.go", GO_LIB)  # Price now lives here, unchanged
    _go_call(sp, b)
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert f == [] and p["advisory"] != "resolution"


def test_go_moved_and_changed_is_judged_on_its_new_signature(space, scan_json, capsys):
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB, "shop/doc.go":
                           "package shop\n", "cmd/main.go": GO_MAIN})
    (a / "shop/price.go").unlink()
    sp.write(a, "shop/money.go", GO_LIB.replace("Price(n int)", "Price(n int, tax int)"))
    _go_call(sp, b)
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
    assert f[0]["path_a"] == "shop/money.go"


@pytest.mark.parametrize("other_first", [True, False])
def test_go_every_changed_file_of_a_package_is_read(space, scan_json, capsys, other_first):
    """Two changed files in one package: the signature change is found whichever file
    the working set lists first (one file used to hide the other)."""
    other = "shop/a_util.go" if other_first else "shop/z_util.go"
    util = "package shop\n\nfunc Util() int {\n\treturn 1\n}\n"
    sp, a, b = two(space, {"go.mod": GO_MOD, "shop/price.go": GO_LIB, other: util,
                           "cmd/main.go": GO_MAIN})
    sp.write(a, "shop/price.go", GO_LIB.replace("Price(n int)", "Price(n int, tax int)"))
    sp.write(a, other, util.replace("return 1", "return 2"))
    _go_call(sp, b)
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"


def test_rust_module_file_deleted_vs_new_use_of_it(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.rs": "mod util;\nmod app;\n", "src/util.rs": RS_LIB,
                           "src/app.rs": "pub fn run() {}\n"})
    (a / "src/util.rs").unlink()
    sp.write(a, "src/lib.rs", "mod app;\n")
    sp.write(b, "src/app.rs", "use crate::util::parse;\n\npub fn run() {\n"
                              "    let _ = parse(\"1\");\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert f[0]["kind"] in ("module-moved", "removed-used") and "util" in f[0]["detail"]


def test_rust_module_file_to_mod_rs_is_the_same_module(space, scan_json, capsys):
    sp, a, b = two(space, {"src/lib.rs": "mod util;\nmod app;\n", "src/util.rs": RS_LIB,
                           "src/app.rs": "pub fn run() {}\n"})
    git(a, "mv", "src/util.rs", "src/util_mod.rs")
    (a / "src/util").mkdir()
    (a / "src/util_mod.rs").rename(a / "src/util/mod.rs")
    sp.write(b, "src/app.rs", "use crate::util::parse;\n\npub fn run() {\n"
                              "    let _ = parse(\"1\");\n}\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert not any(x["kind"] == "module-moved" for x in f) and p["advisory"] != "resolution"


@pytest.mark.parametrize(("new_sig", "call", "risky"), [
    ("area(h, w)", "area(2, 3)", True),  # the arguments land in other parameters
    ("area(width, h)", "area(2, 3)", False),  # renamed in place
])
def test_js_parameters_reordered(space, scan_json, capsys, new_sig, call, risky):
    sp, a, b = two(space, {"lib.js": JS_LIB, "app.js": "import { area } from './lib.js';\n"})
    sp.write(a, "lib.js", JS_LIB.replace("area(w, h)", new_sig))
    sp.write(b, "app.js", f"import {{ area }} from './lib.js';\n\nconsole.log({call});\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert (p["advisory"] == "resolution") == risky, f
    if risky:
        assert "now goes to 'h'" in f[0]["detail"]


FETCH_TS = '''const isJson = (h: string) => h.startsWith('application/json')

export function fetchBase({ baseUrl }: { baseUrl: string }) {
  const body = baseUrl
  const size = body.length
  const more = size + 1
  if (more && isJson(body)) {
    return JSON.stringify(body)
  }
  return body
}
'''


@pytest.mark.parametrize("param", [True, False])
def test_ts_a_parameter_standing_in_for_a_removed_name(space, scan_json, capsys, param):
    """rtk:2397379bfac7 (held-out replay): one side renames the module-level ``isJson`` to
    ``defaultIsJson`` and adds a parameter ``isJson = defaultIsJson`` to the function that
    uses it; the other adds a line to that function calling ``isJson``. Merged (cleanly),
    the call binds to the parameter: no collision. Without the parameter (a plain rename,
    its own call updated), the other side's new call is left dangling: a collision."""
    sp, a, b = two(space, {"src/fetch.ts": FETCH_TS})
    renamed = FETCH_TS.replace("const isJson =", "const defaultIsJson =")
    if param:
        renamed = renamed.replace("{ baseUrl }: { baseUrl: string }",
                                  "{ baseUrl, isJson = defaultIsJson }: "
                                  "{ baseUrl: string, isJson?: (h: string) => boolean }")
    else:
        renamed = renamed.replace("if (more && isJson(body))", "if (more && defaultIsJson(body))")
    sp.write(a, "src/fetch.ts", renamed)
    sp.write(b, "src/fetch.ts", FETCH_TS.replace("  const size = body.length\n",
                                                 "  const size = body.length\n"
                                                 "  console.log(isJson(body))\n"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert not p["channels"].get("conflict"), p  # git merges the two cleanly
    if param:
        assert f == [] and p["advisory"] != "resolution", (p, f)
    else:
        assert p["advisory"] == "resolution" and f[0]["kind"] == "removed-used", (p, f)
        assert "isJson was removed" in f[0]["detail"]


def _through_util(space, scan_json, capsys, util_mod):  # type: ignore[no-untyped-def]
    """a gives ``util::text::parse`` a required parameter; b calls ``crate::util::parse``
    (``util_mod``: src/util/mod.rs). The symbol pair and its findings."""
    text = RS_LIB + "pub fn other() {}\n"
    sp, a, b = two(space, {"src/lib.rs": "pub mod util;\nmod app;\n",
                           "src/util/mod.rs": util_mod, "src/util/text.rs": text,
                           "src/app.rs": "pub fn run() {}\n"})
    sp.write(a, "src/util/text.rs", text.replace("parse(s: &str)", "parse(s: &str, base: u32)"))
    sp.write(b, "src/app.rs", "use crate::util::parse;\n\npub fn run() {\n"
                              "    let _ = parse(\"1\");\n}\n")
    return sym(scan_json(sp.main, capsys=capsys))


@pytest.mark.parametrize("offer", [
    "pub use self::text::parse;\n",  # a name re-exported by its parent module
    "pub use text::{parse, other};\n",  # in a list
    "pub use text::parse as parse;\n",  # under an alias
    "pub use self::text::*;\n",  # every public name
])
def test_rust_pub_use_re_export_vs_param_change(space, scan_json, capsys, offer):
    """``util`` re-exports ``parse`` of its submodule ``util::text``; b calls it as
    ``crate::util::parse``; a gives ``parse`` a required parameter: the call no longer
    compiles."""
    p, f = _through_util(space, scan_json, capsys, "pub mod text;\n" + offer)
    assert p["advisory"] == "resolution", f
    assert f[0]["kind"] == "incompatible-call" and "src/app.rs:4" in f[0]["detail"]


def test_rust_a_name_the_parent_module_does_not_re_export_is_no_risk(space, scan_json,
                                                                      capsys):
    """The parent module re-exports ``other`` only: b's ``crate::util::parse`` is its own
    (a name defined in util/mod.rs), a's change of ``util::text::parse`` is not it."""
    p, f = _through_util(space, scan_json, capsys,
                         "pub mod text;\npub use self::text::other;\n" + RS_LIB)
    assert p["advisory"] != "resolution", f
