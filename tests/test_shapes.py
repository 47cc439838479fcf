"""Everyday code shapes judged on the merged program: a module one side moves while the
other removes a name it imports (git's merge carries the edit through the move), a name
still used after the merge, a use git's merge removes.

Real repositories and worktrees; the verdicts are checked against what git's merge and
running the merged code really do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, sym, two

ENUMS = "class Protocol:\n    HTTP = 1\n\n\nclass Mode:\n    FAST = 1\n"
BACKEND = ("from .enums import (\n    Mode,\n    Protocol,\n)\n\n\n"
           "def connect(mode=Mode.FAST):\n"
           "    return (mode, Protocol.HTTP)\n\n\n"
           + "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(12)))
FILES = {"pkg/__init__.py": "", "pkg/enums.py": ENUMS, "pkg/backend.py": BACKEND,
         "tests/test_backend.py": "from pkg.backend import connect\n\n\n"
                                  "def test_connect():\n    assert connect()[0] == 1\n"}


def moved(a: Path) -> None:
    """a: `git mv pkg/backend.py pkg/backend/aio.py`, its relative imports one level
    deeper, the package re-exports it."""
    (a / "pkg" / "backend").mkdir()
    git(a, "mv", "pkg/backend.py", "pkg/backend/aio.py")
    text = (a / "pkg" / "backend" / "aio.py").read_text()
    (a / "pkg" / "backend" / "aio.py").write_text(text.replace("from .enums", "from ..enums"))
    (a / "pkg" / "backend" / "__init__.py").write_text("from .aio import connect\n")
    (a / "tests" / "test_backend.py").write_text(
        (a / "tests" / "test_backend.py").read_text())
    git(a, "add", "-A")
    git(a, "commit", "-qm", "move the backend into a package")


def test_a_name_removed_beside_a_move_that_git_carries_it_through_is_no_ra(
        space, scan_json, capsys):
    sp, a, b = two(space, FILES)
    moved(a)
    # b removes Protocol and its one use, at the old path
    sp.write(b, "pkg/enums.py", "class Mode:\n    FAST = 1\n")
    sp.write(b, "pkg/backend.py", BACKEND.replace("    Protocol,\n", "")
             .replace("(mode, Protocol.HTTP)", "(mode, 1)"))
    sp.commit(b, "drop Protocol")
    assert run_merged_test(sp, "test_backend", "test_connect")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] != "resolution", p["findings"]
    assert not [f for f in found if "Protocol" in f["detail"]], found


def test_a_name_removed_that_the_merged_code_still_uses_is_an_ra(space, scan_json, capsys):
    sp, a, b = two(space, FILES)
    moved(a)
    # b removes Protocol but leaves the use in backend.py: the merged aio.py still uses it
    sp.write(b, "pkg/enums.py", "class Mode:\n    FAST = 1\n")
    sp.commit(b, "drop Protocol only")
    assert not run_merged_test(sp, "test_backend", "test_connect")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", p["findings"]
    assert any("Protocol" in f["detail"] for f in found), found


CONFIG = ("class Settings:\n"
          "    def __init__(self, verify=True):\n"
          "        self.verify = verify\n\n"
          "    def load_context(self):\n"
          "        return {'verify': self.verify}\n")
REEXPORT = {"pkg/__init__.py": "from .config import Settings\n", "pkg/config.py": CONFIG,
            "tests/__init__.py": "", "tests/test_old.py": "def test_nothing():\n    pass\n"}
USES = {
    "package": "from pkg import Settings\n\n\ndef test_it():\n"
               "    Settings(verify=False).load_context()\n",
    "module": "from pkg.config import Settings\n\n\ndef test_it():\n"
              "    Settings(verify=False).load_context()\n",
    "attribute": "import pkg\n\n\ndef test_it():\n    pkg.Settings(verify=False).load_context()\n",
    "instance": "from pkg import Settings\n\n\ndef test_it():\n    s = Settings()\n"
                "    s.load_context()\n",
    "self-attribute": "from pkg import Settings\n\n\nclass TestIt:\n"
                      "    def setup_method(self):\n        self.s = Settings()\n\n"
                      "    def test_it(self):\n        self.s.load_context()\n",
}


def run_merged_test(sp, name: str, func: str = "test_it") -> bool:  # type: ignore[no-untyped-def]
    """Merge feat/a and feat/b in a scratch worktree (git's merge must be clean) and run
    the merged ``tests/<name>.py``'s ``func`` (or its TestIt class): whether it passes."""
    scratch = sp.root / "scratch"
    git(sp.main, "worktree", "add", "-q", "--detach", str(scratch), "feat/a")
    r = subprocess.run(["git", "merge", "-q", "--no-edit", "feat/b"], cwd=scratch,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    t = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, '.');"
                        f"import tests.{name} as m; t = m.TestIt() if hasattr(m, 'TestIt') "
                        f"else None; (t.setup_method(), t.test_it()) if t else m.{func}()"],
                       cwd=scratch, capture_output=True, text=True)
    return t.returncode == 0


@pytest.mark.parametrize("form", sorted(USES))
def test_a_changed_method_reached_through_a_package_or_an_instance_is_an_ra(
        space, scan_json, capsys, form):
    sp, a, b = two(space, REEXPORT)
    # a: load_context now needs an argument
    sp.write(a, "pkg/config.py", CONFIG.replace("def load_context(self):",
                                                "def load_context(self, context):"))
    sp.commit(a, "load_context takes a context")
    sp.write(b, "tests/test_new.py", USES[form])
    sp.commit(b, "a test")
    assert not run_merged_test(sp, "test_new")  # the merged tests really break
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", (form, p["findings"])
    assert any("load_context" in f["detail"] for f in found), found


def test_a_compatible_change_of_a_reexported_method_is_no_ra(space, scan_json, capsys):
    sp, a, b = two(space, REEXPORT)
    sp.write(a, "pkg/config.py", CONFIG.replace("def load_context(self):",
                                                "def load_context(self, context=None):"))
    sp.commit(a, "load_context takes an optional context")
    sp.write(b, "tests/test_new.py", USES["package"])
    sp.commit(b, "a test")
    assert run_merged_test(sp, "test_new")
    p, _found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] != "resolution", p["findings"]


TS_CONFIG = ("export class Settings {\n"
             "  constructor(public verify: boolean = true) {}\n\n"
             "  loadContext(): object {\n"
             "    return { verify: this.verify };\n"
             "  }\n"
             "}\n")
TS_INDEX = {"named": "export { Settings } from './config';\n",
            "star": "export * from './config';\n"}
TS_USES = {
    "new": "import { Settings } from './pkg';\n\n"
           "export function t() {\n  return new Settings(false).loadContext();\n}\n",
    "instance": "import { Settings } from './pkg';\n\n"
                "export function t() {\n  const s = new Settings();\n"
                "  return s.loadContext();\n}\n",
    "this": "import { Settings } from './pkg';\n\n"
            "export class T {\n  s: Settings;\n  constructor() {\n"
            "    this.s = new Settings();\n  }\n  run() {\n"
            "    return this.s.loadContext();\n  }\n}\n",
}


@pytest.mark.parametrize("index", sorted(TS_INDEX))
@pytest.mark.parametrize("form", sorted(TS_USES))
def test_typescript_reexports_and_instances_reach_the_changed_method(
        space, scan_json, capsys, index, form):
    sp, a, b = two(space, {"pkg/config.ts": TS_CONFIG, "pkg/index.ts": TS_INDEX[index],
                           "main.ts": "export const x = 1;\n"})
    sp.write(a, "pkg/config.ts", TS_CONFIG.replace("loadContext(): object",
                                                   "loadContext(context: string): object"))
    sp.commit(a, "loadContext takes a context")
    sp.write(b, "use.ts", TS_USES[form])
    sp.commit(b, "a use")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", (index, form, p["findings"])
    assert any("loadContext" in f["detail"] for f in found), found


STAR_INITS = {
    "star": "from .config import *\n",
    "star-all": "from .config import *\n\n__all__ = ['Settings']\n",
    "star-of-all": "from .config import *  # config's __all__ says what it offers\n",
}


def star_pair(space, init: str, config: str):  # type: ignore[no-untyped-def]
    """pkg/__init__.py is ``init``; a adds a required parameter to load_context in
    ``config``; b's new test calls it on an instance taken from the package."""
    sp, a, b = two(space, {**REEXPORT, "pkg/__init__.py": init, "pkg/config.py": config})
    sp.write(a, "pkg/config.py", config.replace("def load_context(self):",
                                                "def load_context(self, context):"))
    sp.commit(a, "load_context takes a context")
    sp.write(b, "tests/test_new.py", USES["instance"])
    sp.commit(b, "a test")
    return sp


@pytest.mark.parametrize("init", sorted(STAR_INITS))
def test_a_changed_method_of_a_class_a_package_star_imports_is_an_ra(
        space, scan_json, capsys, init):
    config = CONFIG + ("\n\n__all__ = ['Settings']\n" if init == "star-of-all" else "")
    sp = star_pair(space, STAR_INITS[init], config)
    assert not run_merged_test(sp, "test_new")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", (init, p["findings"])
    assert any("load_context" in f["detail"] for f in found), found


def test_a_name_a_star_import_leaves_out_is_not_reached_through_the_package(
        space, scan_json, capsys):
    # config's __all__ leaves Settings out: pkg offers only Other, so b's `from pkg import
    # Settings` never reached config's Settings (it fails on its own: not a's doing)
    config = CONFIG + "\n\nclass Other:\n    pass\n\n\n__all__ = ['Other']\n"
    sp = star_pair(space, "from .config import *\n", config)
    _p, found = sym(scan_json(sp.main, capsys=capsys))
    assert not any("load_context" in f["detail"] for f in found), found


MOVE_USE = "from pkg import config\n\n\ndef test_it():\n    config.Settings().load_context()\n"


@pytest.mark.parametrize("keeps", [True, False])
def test_a_moved_module_the_package_still_offers_by_its_old_name_is_no_ra(
        space, scan_json, capsys, keeps):
    # pkg/__init__.py imports the submodule; a moves it and (keeps) binds the old name to
    # the new module, so b's `from pkg import config` still finds it as the package's
    # attribute (not keeps: it is gone, the merged code breaks)
    sp, a, b = two(space, {**REEXPORT, "pkg/__init__.py": "from . import config\n"})
    git(a, "mv", "pkg/config.py", "pkg/settings.py")
    sp.write(a, "pkg/__init__.py", "from . import settings as config\n" if keeps
             else "from . import settings\n")
    sp.commit(a, "config is now settings")
    sp.write(b, "tests/test_new.py", MOVE_USE)
    sp.commit(b, "a test")
    assert run_merged_test(sp, "test_new") == keeps
    p, _found = sym(scan_json(sp.main, capsys=capsys))
    assert (p["advisory"] == "resolution") == (not keeps), (keeps, p["findings"])


def config_moved(space, edit: tuple[str, str]):  # type: ignore[no-untyped-def]
    """a moves pkg/config.py to pkg/settings.py with ``edit`` made there (the package
    re-exports Settings from its new home); b adds a helper to pkg/config.py that calls
    Settings().load_context(). Committed on both sides."""
    config = CONFIG + "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(12))
    sp, a, b = two(space, {**REEXPORT, "pkg/config.py": config})
    git(a, "mv", "pkg/config.py", "pkg/settings.py")
    sp.write(a, "pkg/settings.py", config.replace(*edit))
    sp.write(a, "pkg/__init__.py", "from .settings import Settings\n")
    sp.commit(a, "config is now settings")
    sp.write(b, "pkg/config.py", config + "\n\ndef default_context():\n"
             "    return Settings().load_context()\n")
    return sp, a, b


def test_an_edit_to_a_module_the_other_side_moves_is_no_ra(space, scan_json, capsys):
    # git carries b's edit through a's rename (a also edits load_context's body): the new
    # helper's use of the module's own class moves with it, it imports nothing from the
    # old path
    sp, _a, b = config_moved(space, ("return {'verify'", "return {'v': 1, 'verify'"))
    sp.write(b, "tests/test_new.py", "import pkg\n\n\ndef test_it():\n"
             "    pkg.Settings().load_context()\n")
    sp.commit(b, "a helper next to Settings")
    assert run_merged_test(sp, "test_new")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] != "resolution", p["findings"]
    assert not [f for f in found if f["kind"] == "module-moved"], found


def test_an_edit_to_a_moved_module_that_calls_its_changed_method_the_old_way_is_an_ra(
        space, scan_json, capsys):
    sp, _a, b = config_moved(space, ("def load_context(self):",
                                    "def load_context(self, context):"))
    # the helper's module wherever it is: pkg.config for b, pkg.settings once merged
    sp.write(b, "tests/test_new.py", "import sys\n\nfrom pkg import Settings\n\n\n"
             "def test_it():\n    sys.modules[Settings.__module__].default_context()\n")
    sp.commit(b, "a helper next to Settings")
    assert not run_merged_test(sp, "test_new")
    p, found = sym(scan_json(sp.main, capsys=capsys))
    assert p["advisory"] == "resolution", [(f["kind"], f["detail"]) for f in found]
    assert any("load_context" in f["detail"] for f in found), found
