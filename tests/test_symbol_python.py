"""The symbol channel resolves names and checks that calls still bind (Python)."""

from __future__ import annotations

import pytest
from conftest import git, sym

from proximity import calibration
from proximity.analysis.symbols import pycalls, pylang

LIB = '''def area(w, h):
    return w * h


def scale(x, k):
    return x * k


def legacy():
    return "old"


class Store:
    def save(self, item):
        return item
'''


def run(space, scan_json, capsys, lib_a, b_files, base=None):
    sp = space({"lib.py": LIB, "app.py": "import lib\n", **(base or {})})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", lib_a)
    for rel, text in b_files.items():
        sp.write(b, rel, text)
    return sym(scan_json(sp.main, capsys=capsys))


def test_parse_failure_is_unknown_not_removed(space, scan_json, capsys):
    half = LIB.replace("def scale(x, k):", "def scale(x, k")  # half-typed line
    p, f = run(space, scan_json, capsys, half,
               {"app.py": "import lib\n\nX = lib.scale(2, 3) + lib.legacy()\n"})
    assert p["channels"]["symbol"] is None and f == []
    assert p["advisory"] != "resolution"


def test_conflict_markers_are_unknown_not_removed(space, scan_json, capsys):
    marked = LIB.replace("    return x * k\n", "<<<<<<< HEAD\n    return x * k\n=======\n"
                                              "    return k * x\n>>>>>>> other\n")
    p, f = run(space, scan_json, capsys, marked,
               {"app.py": "from lib import scale, legacy\n\nX = scale(2, 3), legacy()\n"})
    assert p["channels"]["symbol"] is None and f == []
    assert p["advisory"] != "resolution"


@pytest.mark.parametrize("new_def", [
    "def area(w, h, unit='m'):",  # a new optional parameter
    "def area(w, h, *, unit='m'):",  # a new keyword-only parameter with a default
    "def area(w, h, *extra):",  # *args added
    "def area(w, h=1, **options):",  # a default and **kwargs added
])
def test_compatible_signature_changes_are_no_risk(space, scan_json, capsys, new_def):
    """(Also: parameters reordered or renamed in place, which these calls still fit.)"""
    p, f = run(space, scan_json, capsys, LIB.replace("def area(w, h):", new_def),
               {"app.py": "import lib\nfrom lib import area\n\nX = lib.area(1, 2)\n"
                          "Y = area(1, h=2)\nZ = list(map(area, [1], [2]))\n"})
    assert p["channels"]["symbol"] == 0.0 and f == []
    assert p["advisory"] != "resolution"


@pytest.mark.parametrize(("new_def", "call"), [
    ("def area(h, w):", "area(w=1, h=2)"),  # reordered, called by keyword
    ("def area(width, h):", "area(1, 2)"),  # renamed in place, called by position
])
def test_reorder_or_rename_with_a_fitting_call_is_no_risk(space, scan_json, capsys, new_def,
                                                         call):
    p, f = run(space, scan_json, capsys, LIB.replace("def area(w, h):", new_def),
               {"app.py": f"import lib\nfrom lib import area\n\nX = {call}\n"})
    assert p["advisory"] != "resolution" and f == [], f


@pytest.mark.parametrize(("new_def", "call", "why"), [
    ("def area(w, h, depth):", "area(1, 2)", "missing required 'depth'"),
    ("def area(w, height):", "area(1, h=2)", "unexpected keyword 'h'"),
    ("def area(w, h, /):", "area(1, h=2)", "unexpected keyword 'h'"),
    ("def area(w, *, h):", "area(1, 2)", "2 positional arguments, at most 1 accepted"),
    # binds, but the values land in other parameters: parameters reordered
    ("def area(h, w):", "area(1, 2)", "positional argument 1 now goes to 'h', not 'w'"),
])
def test_incompatible_signature_changes_are_resolution(space, scan_json, capsys, new_def,
                                                       call, why):
    p, f = run(space, scan_json, capsys, LIB.replace("def area(w, h):", new_def),
               {"app.py": f"import lib\nfrom lib import area\n\nX = {call}\n"})
    # the fitted value of incompatible-call (prior 0.9), an RA on its own
    fitted = calibration.probability("symbol", "incompatible-call", 0.9)
    assert p["channels"]["symbol"] == pytest.approx(fitted)
    assert p["advisory"] == "resolution"
    assert f[0]["kind"] == "incompatible-call" and why in f[0]["detail"]
    assert f[0]["path_a"] == "lib.py" and f[0]["ranges_b"] == [[4, 4]]
    assert "app.py:4" in f[0]["detail"] and "area(" in f[0]["detail"]


def test_keyword_only_made_required(space, scan_json, capsys):
    base = LIB.replace("def area(w, h):", "def area(w, h, *, unit='m'):")
    sp = space({"lib.py": base, "app.py": "import lib\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", base.replace("unit='m'", "unit"))
    sp.write(b, "app.py", "import lib\n\nX = lib.area(1, 2)\nY = lib.area(1, 2, unit='cm')\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution"
    assert [x["ranges_b"] for x in f] == [[[3, 3]]]  # only the call that no longer binds
    assert "missing required 'unit'" in f[0]["detail"]


def test_star_args_call_is_unknown_binding_low_evidence(space, scan_json, capsys):
    p, f = run(space, scan_json, capsys, LIB.replace("def area(w, h):", "def area(w, h, d):"),
               {"app.py": "import lib\n\nARGS = (1, 2)\nX = lib.area(*ARGS)\n"})
    assert 0 < p["channels"]["symbol"] < 0.35
    assert f[0]["kind"] == "body-used" and "*args" in f[0]["detail"]


@pytest.mark.parametrize("decorators", [
    "@click.command()\n@click.option('--unit')\n",  # click passes the options itself
    "@cli.command()\n",  # a group's command: a Command object, called with argv
    "@mock.patch('os.getcwd')\n",  # the patch passes its mock as an extra argument
    "@given(st.integers())\n",  # hypothesis draws the arguments
])
def test_a_decorator_that_supplies_the_arguments_breaks_no_call(space, scan_json, capsys,
                                                                 decorators):
    # the decorator stands between the call and the definition: the call binds to what
    # it returns, so a changed parameter list is a changed body, never a broken contract
    base = LIB.replace("def area(w, h):", decorators + "def area():")
    sp = space({"lib.py": base, "app.py": "import lib\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", base.replace("def area():", "def area(unit):"))
    sp.write(b, "app.py", "import lib\n\nX = lib.area()\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] != "resolution"
    assert [x["kind"] for x in f] == ["body-used"]
    assert "decorat" in f[0]["detail"] and "app.py:3" in f[0]["detail"]


@pytest.mark.parametrize("decorator", ["@functools.lru_cache(maxsize=None)\n",
                                       "@contextlib.contextmanager\n", "@deprecated\n"])
def test_a_decorator_that_keeps_the_signature_still_breaks_the_call(space, scan_json, capsys,
                                                                    decorator):
    base = LIB.replace("def area(w, h):", decorator + "def area(w, h):")
    p, f = run(space, scan_json, capsys, base.replace("def area(w, h):", "def area(w, h, d):"),
               {"app.py": "import lib\n\nX = lib.area(1, 2)\n"}, base={"lib.py": base})
    assert p["advisory"] == "resolution"
    assert f[0]["kind"] == "incompatible-call" and "missing required 'd'" in f[0]["detail"]


def test_alias_keeps_a_rename_resolving(space, scan_json, capsys):
    renamed = LIB.replace("def scale(x, k):", "def resize(x, k):") + "\n\nscale = resize\n"
    p, f = run(space, scan_json, capsys, renamed,
               {"app.py": "from lib import scale\n\nX = scale(2, 3)\n"})
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_reexport_keeps_a_moved_function_resolving(space, scan_json, capsys):
    sp = space({"lib.py": LIB, "app.py": "import lib\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "oldstuff.py", 'def legacy():\n    return "old"\n')
    sp.write(a, "lib.py", "from oldstuff import legacy\n\n" + LIB.replace(
        'def legacy():\n    return "old"\n\n\n', ""))
    sp.write(b, "app.py", "import lib\n\nX = lib.legacy()\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_module_getattr_keeps_names_resolving(space, scan_json, capsys):
    gone = LIB.replace('def legacy():\n    return "old"\n',
                       'def __getattr__(name):\n    return lambda: "old"\n')
    p, f = run(space, scan_json, capsys, gone,
               {"app.py": "from lib import legacy\n\nX = legacy()\n"})
    assert p["channels"]["symbol"] == 0.0 and f == []


SHIM = ('_DEPRECATED = {"old_scale": "scale"}\n\n\n'
        "def __getattr__(name):\n    if name in _DEPRECATED:\n"
        "        return globals()[_DEPRECATED[name]]\n"
        "    raise AttributeError(name)\n\n\n")
SHIMMED = SHIM + LIB.replace('def legacy():\n    return "old"\n', "")


def test_a_deprecation_getattr_resolves_only_the_names_it_knows(space, scan_json, capsys):
    """A module __getattr__ that raises AttributeError for unknown names (click's deprecation
    shims) keeps its own names resolving, not every removed one."""
    p, f = run(space, scan_json, capsys, SHIMMED,
               {"app.py": "from lib import legacy\n\nX = legacy()\n"})
    assert p["advisory"] == "resolution" and f[0]["kind"] == "removed-used"


def test_a_name_the_deprecation_getattr_knows_still_resolves(space, scan_json, capsys):
    p, f = run(space, scan_json, capsys, SHIMMED,
               {"app.py": "from lib import old_scale\n\nX = old_scale(2, 3)\n"})
    assert not any(x["kind"] == "removed-used" for x in f) and p["advisory"] != "resolution"


def test_removed_without_alias_is_resolution(space, scan_json, capsys):
    p, f = run(space, scan_json, capsys, LIB.replace("def scale(", "def resize("),
               {"app.py": "import lib as L\n\nX = L.scale(2, 3)\n"})
    assert p["advisory"] == "resolution" and f[0]["kind"] == "removed-used"
    assert "scale" in f[0]["detail"] and "app.py:3" in f[0]["detail"]


APP = """from lib import scale


def resize(values, scale=None):
    out = list(values)
    n = len(out)
    m = n + 1
    return out, m
"""


@pytest.mark.parametrize("shadow", [True, False])
def test_a_parameter_of_the_same_name_is_not_the_removed_definition(space, scan_json, capsys,
                                                                     shadow):
    """A removes ``lib.scale``; B's new line inside ``resize`` calls ``scale``. When
    ``resize`` takes a parameter ``scale``, that is what the call reaches: no finding.
    Without the parameter, the call reaches the removed function: removed-used."""
    app = APP if shadow else APP.replace("scale=None", "factor=None")
    p, f = run(space, scan_json, capsys, LIB.replace("def scale(", "def resize_by("),
               {"app.py": app.replace("    m = n + 1\n", "    m = n + 1\n    scale(m, 2)\n")},
               base={"app.py": app})
    if shadow:
        assert not any(x["kind"] == "removed-used" for x in f), f
    else:
        assert p["advisory"] == "resolution" and f[0]["kind"] == "removed-used", (p, f)
        assert "app.py:8" in f[0]["detail"]


def test_a_module_used_in_the_writers_function_is_no_stand_in_for_the_removed_name(
        space, scan_json, capsys):
    """marshmallow:98b46e1a39f6: A renames ``utils.from_iso`` (and edits the test function
    that calls it); B adds ``utils.from_iso(...)`` in that same function. A's version still
    uses ``utils`` there -- the module, not the removed name: still removed-used."""
    app = ("import lib\n\n\ndef test_it():\n    x = lib.scale(1, 2)\n    y = 3\n"
           "    z = y + 1\n    return x, z\n")
    sp = space({"lib.py": LIB, "app.py": app})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "lib.py", LIB.replace("def scale(", "def resize_by("))
    sp.write(a, "app.py", app.replace("lib.scale(1, 2)", "lib.resize_by(1, 2)"))
    sp.write(b, "app.py", app.replace("    z = y + 1\n",
                                      "    z = y + 1\n    w = lib.scale(3, 4)\n"))
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert any(x["kind"] == "removed-used" and "app.py:8" in x["detail"] for x in f), (p, f)


MOVED = {"pkg/__init__.py": "", "pkg/logging.py": "def x():\n    return 1\n",
         "pkg/core.py": "from pkg.logging import x\n"}


def test_module_move_vs_new_import_of_old_path(space, scan_json, capsys):
    sp = space(MOVED)
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "pkg/logging.py", "pkg/log.py")
    sp.write(a, "pkg/core.py", "from pkg.log import x\n")
    sp.write(b, "tools/report.py", "from pkg.logging import x\n\nprint(x())\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["conflict"] == 0.0  # git merges it; the import breaks at run time
    assert p["advisory"] == "resolution"
    moved = [x for x in f if x["kind"] == "module-moved"]
    assert moved and "pkg/logging.py" in moved[0]["detail"] and "pkg/log.py" in moved[0]["detail"]
    assert moved[0]["path_b"] == "tools/report.py"


def test_module_move_with_shim_is_no_risk(space, scan_json, capsys):
    sp = space(MOVED)
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "pkg/logging.py", "pkg/log.py")
    sp.write(a, "pkg/logging.py", "from pkg.log import *  # noqa: F403\n")
    sp.write(b, "tools/report.py", "from pkg.logging import x\n\nprint(x())\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert not [x for x in f if x["kind"] == "module-moved"]
    assert p["advisory"] != "resolution"


def test_stdlib_import_is_not_a_moved_package_module(space, scan_json, capsys):
    sp = space(MOVED)
    a, b = sp.wt("a"), sp.wt("b")
    git(a, "mv", "pkg/logging.py", "pkg/log.py")
    sp.write(b, "tools/report.py", "import logging\n\nlogging.info('x')\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_type_only_use_of_changed_class_is_no_risk(space, scan_json, capsys):
    changed = LIB.replace("class Store:", "class Store(dict):").replace(
        "        return item", "        return [item]")
    p, f = run(space, scan_json, capsys, changed, {
        "app.py": "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
                  "if TYPE_CHECKING:\n    from lib import Store\n\n\n"
                  "def keep(s: Store) -> Store:\n    return s\n"})
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_bare_name_coincidence_is_no_risk(space, scan_json, capsys):
    tools = "def apply(fn):\n    return fn()\n\n\ndef keys(d):\n    return list(d)\n"
    sp = space({"tools/fx.py": tools, "web/views.py": "X = 1\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "tools/fx.py", tools.replace("apply(fn)", "apply(fn, retries)").replace(
        "keys(d)", "keys(d, sort)"))
    sp.write(b, "web/views.py", "X = 1\n\n\ndef apply(req):\n    return req\n\n\n"
                                "Y = apply(1)\nZ = {}.keys()\nW = sorted({'a': 1}.keys())\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_method_call_on_a_receiver_of_unknown_type_is_lower_confidence(space, scan_json,
                                                                         capsys):
    p, f = run(space, scan_json, capsys, LIB.replace("def save(self, item):",
                                                     "def save(self, item, db):"),
               {"app.py": "from lib import Store\n\n\ndef keep(s):\n    s.save(1)\n"})
    assert f[0]["kind"] == "incompatible-method-call"
    assert p["channels"]["symbol"] == pytest.approx(0.6)
    assert "missing required 'db'" in f[0]["detail"]


def test_method_call_on_an_instance_of_an_imported_class_is_exact(space, scan_json, capsys):
    p, f = run(space, scan_json, capsys, LIB.replace("def save(self, item):",
                                                     "def save(self, item, db):"),
               {"app.py": "from lib import Store\n\ns = Store()\ns.save(1)\n"})
    assert f[0]["kind"] == "incompatible-call"
    assert p["channels"]["symbol"] > 0.6 and p["advisory"] == "resolution"
    assert "missing required 'db'" in f[0]["detail"]


@pytest.mark.parametrize(("params", "call", "explicit_self", "ok"), [
    ("a, b", "f(1, 2)", False, ""),
    ("a, b", "f(1)", False, "missing required 'b'"),
    ("a, /, b", "f(a=1, b=2)", False, "unexpected keyword 'a'"),
    ("a, /, b, **kw", "f(1, a=1, b=2)", False, ""),
    ("a, *, b=1", "f(1, b=2)", False, ""),
    ("a, *, b", "f(1)", False, "missing required 'b'"),
    ("a, *args", "f(1, 2, 3)", False, ""),
    ("a", "f(1, a=2)", False, "'a' given twice"),
    ("a", "f(*x)", False, None),
    ("a", "f(**x)", False, None),
    ("self, a", "o.f(1)", False, ""),
    ("self, a", "C.f(o, 1)", True, ""),
])
def test_binding_rules(params, call, explicit_self, ok):
    import ast

    mod = pylang.analyse(f"class C:\n    def f({params}):\n        pass\n".encode())
    assert mod is not None
    shape = mod["defs"]["C.f"][5]
    node = ast.parse(call).body[0].value  # type: ignore[attr-defined]
    if not params.startswith("self"):
        shape = {**shape, "method": ""}
    assert pycalls.binds(shape, pylang._call(node), explicit_self) == ok


@pytest.mark.parametrize("use", [
    "from . import geo\n\nX = geo.area(1, 2)\n",  # from pkg import mod; mod.name
    "from .geo import area as size\n\nX = size(1, 2)\n",  # relative import with alias
    "import pkg.geo\n\nX = pkg.geo.area(1, 2)\n",  # dotted module attribute
    "from pkg.geo import Shape\n\nX = Shape.area(1, 2)\n",  # Class.method
])
def test_references_resolve_through_imports(space, scan_json, capsys, use):
    geo = "def area(w, h):\n    return w * h\n\n\nclass Shape:\n    @staticmethod\n" \
          "    def area(w, h):\n        return w * h\n"
    sp = space({"pkg/__init__.py": "", "pkg/geo.py": geo, "pkg/app.py": "X = 0\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "pkg/geo.py", geo.replace("area(w, h)", "area(w, h, d)"))
    sp.write(b, "pkg/app.py", use)
    p, f = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution" and f[0]["kind"] == "incompatible-call"
    assert "pkg/app.py:3" in f[0]["detail"]


def test_class_alias_keeps_methods_resolving(space, scan_json, capsys):
    renamed = LIB.replace("class Store:", "class Shelf:") + "\n\nStore = Shelf\n"
    p, f = run(space, scan_json, capsys, renamed,
               {"app.py": "from lib import Store\n\nX = Store().save(1)\n"})
    assert p["channels"]["symbol"] == 0.0 and f == []


def test_compatible_change_does_not_spread_to_callers_in_its_file(space, scan_json, capsys):
    lib = LIB + "\n\ndef room():\n    return area(3, 4)\n"
    p, f = run(space, scan_json, capsys, lib.replace("def area(w, h):", "def area(w, h, u=1):"),
               {"app.py": "import lib\n\nX = lib.room()\n"}, base={"lib.py": lib})
    assert p["channels"]["symbol"] == 0.0 and f == []


DATACLASS_MODEL = ("from dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n"
                   "    x: int\n    y: int = 0\n")
ATTRS_MODEL = ("import attr\n\n\n@attr.s\nclass Point:\n    x = attr.ib()\n"
               "    _y = attr.ib(default=None)\n")


@pytest.mark.parametrize(("model", "field", "risky"), [
    (DATACLASS_MODEL, "    z: int\n", True),
    (DATACLASS_MODEL, "    z: int = 0\n", False),
    # found on attrs (its own _InstanceOfValidator): `strict = attrib()` was "body changed
    # (callers still fit)"; `_y` is the `y` parameter, as attrs names it
    (ATTRS_MODEL, "    z = attr.ib()\n", True),  # no default: a required argument
    (ATTRS_MODEL, "    z = attr.ib(default=False)\n", False),
    (ATTRS_MODEL, "    z = attr.ib(factory=list)\n", False),
    (ATTRS_MODEL, "    z = attr.ib(init=False)\n", False),  # not an __init__ parameter
])
def test_generated_init_fields_are_constructor_parameters(space, scan_json, capsys, model,
                                                          field, risky):
    sp = space({"model.py": model, "app.py": "X = 0\n"})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(a, "model.py", model + field)
    sp.write(b, "app.py", "from model import Point\n\nX = Point(1, y=2)\n")
    p, f = sym(scan_json(sp.main, capsys=capsys))
    kinds = [x["kind"] for x in f]
    if risky:
        assert p["advisory"] == "resolution" and kinds[0] == "incompatible-call", (p, f)
        assert "missing required 'z'" in f[0]["detail"]
    else:
        assert "incompatible-call" not in kinds and p["advisory"] != "resolution", (p, f)
