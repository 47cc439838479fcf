"""The nets a change of layout needs: what the thin hook path imports, which way the layers
point, and that every benchmark still starts."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "proximity"
BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py"))

# what the hook's fast path may load of proximity itself: the worktree's facts from files,
# the hook's inputs and host stash, the service's client and wire protocol, and the check
# that a directory is this user's own, the environment's knobs
THIN_ALLOWED = {
    "proximity", "proximity.thin", "proximity.gitfiles", "proximity.owned", "proximity.knobs",
    "proximity.hooks", "proximity.hooks.inputs", "proximity.hooks.stash",
    "proximity.hooks.procs", "proximity.hooks.hosts", "proximity.hooks.pushargs",
    "proximity.errors",
    "proximity.service", "proximity.service.client", "proximity.protocol",
    "proximity.snapshot", "proximity.snapshot.journal", "proximity.service.stamp",
    "proximity.layout", "proximity.jsontext", "proximity.checkargs", "proximity.thincheck",
}
# imports the thin path makes only on a rare branch, each paying for itself there: a host's
# (pre-commit, prek) pre-push whose command line names more refs than the host passed
# asks git which commits they are, through the one module that runs git
THIN_DEFERRED = {("proximity.hooks.pushargs", "proximity.gitio")}

# The floors of the house, from the ground up (docs/development.md draws them). An import
# points to a lower floor, or stays inside its own package; only the ground's leaves and
# the front ends may also use their floor-mates.
FLOORS: list[set[str]] = [
    # ground: plain data, errors, paths under .git/ecm, safe text, the wire protocol, the
    # calibration table, the environment's knobs, a config file's limits, `check`'s
    # arguments; the standard library only
    {"__init__", "errors", "model", "owned", "layout", "jsontext", "safetext", "protocol",
     "calibration", "calibration_table", "gitfiles", "unsaved", "knobs", "configlimits",
     "checkargs"},
    {"gitio", "ledger", "config"},  # git, the shared ledger, settings
    {"analysis"},  # reading source code: hunks, parsers, imports, symbols
    {"policy"},  # the airspace's one policy
    {"snapshot"},  # live state: opening a repository, agents, recording events
    {"remote"},  # other machines' snapshots, as untrusted data
    {"channels"},  # one pair's evidence -> calibrated probabilities
    {"tcas"},  # the scan, risk, right-of-way, actions
    {"views"},  # text, tables, JSON and pictures of a scan or a message
    {"agents"},  # the pre-edit check: one answerer and the harnesses' adapters
    {"hooks"},  # what git hooks judge and print
    {"service"},  # the resident service
    {"thincheck"},  # the check's standard-library client of the service
    {"thin"},  # the hook's standard-library client
    {"commands", "mcp", "lsp", "main", "__main__", "launch"},  # front ends
]
SHARED_FLOORS = (0, len(FLOORS) - 1)


def modules_loaded_by(statement: str, *flags: str) -> list[str]:
    # (what the statement loaded is taken before the probe imports json to print it)
    code = ("import sys\nbefore = set(sys.modules)\n" + statement +
            "\nloaded = sorted(set(sys.modules) - before)\nimport json\n"
            "print(json.dumps(loaded))\n")
    out = subprocess.run([sys.executable, *flags, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    loaded: list[str] = json.loads(out.stdout)
    # the json module printing the answer is the probe's, not the hook's
    return [m for m in loaded if m != "json" and not m.startswith("json.")]


@pytest.mark.parametrize("flags", [(), ("-S",)])  # -S: as the hook script starts it
@pytest.mark.parametrize("statement", ["import proximity.thin",
                                       "from proximity.thin import run_hook"])
def test_the_thin_hook_path_imports_only_the_standard_library(statement, flags):
    loaded = modules_loaded_by(statement, *flags)
    ours = {m for m in loaded if m == "proximity" or m.startswith("proximity.")}
    assert ours <= THIN_ALLOWED, f"the thin path loads {sorted(ours - THIN_ALLOWED)}"
    foreign = {m.split(".")[0] for m in loaded} - {"proximity"}
    not_std = sorted(m for m in foreign if m not in sys.stdlib_module_names)
    assert not_std == [], f"the thin path imports non-standard modules {not_std}"
    # nor the heavy parts of the standard library a hook would pay for on every run
    # (collections: ~2 ms of CPU a hook, for a named tuple)
    assert not foreign & {"json", "socket", "subprocess", "sqlite3", "typing", "re",
                          "collections"}, foreign


def test_the_checks_thin_client_loads_nothing_of_the_hooks_or_the_command_line():
    """The quickest start of a check (launch.py) asks the service through thincheck: it
    pays for none of the hooks' modules and not for the command line's."""
    loaded = modules_loaded_by("import proximity.thincheck")
    ours = {m for m in loaded if m == "proximity" or m.startswith("proximity.")}
    assert ours <= THIN_ALLOWED, sorted(ours - THIN_ALLOWED)
    assert not {m for m in ours if m.startswith(("proximity.hooks", "proximity.thin."))
                or m in ("proximity.thin", "proximity.main", "proximity.errors")}, ours


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every proximity module a file imports, anywhere in it, with the line."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "proximity":
                out += [(f"proximity.{a.name}", node.lineno) for a in node.names]
            elif node.module.startswith("proximity."):
                out.append((node.module, node.lineno))
                # `from proximity.pkg import module` imports that module too
                base = ROOT / Path(*node.module.split("."))
                out += [(f"{node.module}.{a.name}", node.lineno) for a in node.names
                        if (base / f"{a.name}.py").exists() or (base / a.name).is_dir()]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("proximity")]
    return out


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str:
    """The package (or top-level module) a module belongs to: proximity.tcas.engine -> tcas."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_imports() -> dict[str, list[tuple[str, int]]]:
    """Every module of the package -> the proximity modules it imports (anywhere in it,
    type-only imports included), resolved to modules that exist."""
    names = {module_name(p) for p in PKG.rglob("*.py")}

    def resolve(mod: str) -> str:
        while mod not in names and "." in mod:
            mod = mod.rsplit(".", 1)[0]
        return mod

    out: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text())
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] == "proximity":
                found += [(resolve(f"{node.module}.{a.name}"), node.lineno) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(resolve(a.name), node.lineno) for a in node.names
                          if a.name.split(".")[0] == "proximity"]
        out[module_name(path)] = found
    return out


def test_every_package_is_on_a_floor():
    floors = {unit for floor in FLOORS for unit in floor}
    units = {unit_of(m) for m in package_imports()}
    assert units - floors == set(), "put each new package on a floor (FLOORS)"


def test_every_import_points_down_the_floors():
    """Data flows one way and so do imports: from the front ends down to the ground. An
    import from a lower floor up (even a type-only or function-level one) is the start of
    a cycle that makes every layer load every other."""
    floor = {unit: i for i, units in enumerate(FLOORS) for unit in units}
    wrong = []
    for mod, imports in package_imports().items():
        here = unit_of(mod)
        for target, line in imports:
            there = unit_of(target)
            if there == here:
                continue
            ok = floor[there] < floor[here] or (floor[there] == floor[here]
                                                  and floor[here] in SHARED_FLOORS)
            if not ok:
                wrong.append(f"{mod}:{line} ({here}, floor {floor[here]}) imports {target} "
                             f"({there}, floor {floor[there]})")
    assert wrong == []


def test_no_import_cycle_between_packages_or_modules():
    """Neither packages nor modules import each other round in a circle (type-only imports
    included: a type cycle today is a runtime cycle the day someone needs the value)."""
    import networkx as nx

    imports = package_imports()
    modules = nx.DiGraph()
    packages = nx.DiGraph()
    for mod, targets in imports.items():
        modules.add_node(mod)
        for target, _ in targets:
            if target != mod:
                modules.add_edge(mod, target)
            if unit_of(target) != unit_of(mod):
                packages.add_edge(unit_of(mod), unit_of(target))
    # a package's face (its __init__) re-exporting its modules is not a cycle of theirs
    faces = [(m, t) for m, t in modules.edges if t.startswith(m + ".")]
    modules.remove_edges_from(faces)
    cycles = [sorted(c) for c in nx.strongly_connected_components(modules) if len(c) > 1]
    assert cycles == [], cycles
    cycles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    assert cycles == [], cycles


def test_only_the_command_line_imports_the_commands():
    """Commands are the outermost layer: the service, the agents' interfaces and the hooks'
    verdict never reach into a command module (its rules belong in the layer that owns
    them)."""
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        name = module_name(path)
        if name.startswith("proximity.commands") or name == "proximity.main":
            continue
        wrong += [f"{name}:{line} imports {mod}" for mod, line in imports_of(path)
                  if mod == "proximity.commands" or mod.startswith("proximity.commands.")]
    assert wrong == []


def test_the_thin_path_reaches_only_the_client_and_the_protocol():
    """Read from the source, not from one run: every proximity import the thin path's modules
    make (at any depth, in any function) stays inside the thin path."""
    todo = ["proximity.thin"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        rel = Path(*name.split("."))
        path = ROOT / rel.with_suffix(".py")
        if not path.exists():
            path = ROOT / rel / "__init__.py"
        todo += [m for m, _ in imports_of(path)
                 if m not in seen and (name, m) not in THIN_DEFERRED
                 and ((ROOT / Path(*m.split("."))).with_suffix(".py").exists()
                      or (ROOT / Path(*m.split(".")) / "__init__.py").exists())]
    assert seen <= THIN_ALLOWED, sorted(seen - THIN_ALLOWED)


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_every_benchmark_starts(script):
    """Benchmarks are not run by the suite, but each one must still import what it uses and
    parse its arguments after a change of layout (a helper module: import)."""
    if '__name__ == "__main__"' in script.read_text():
        argv = [str(script), "--help"]
    else:
        argv = ["-c", f"import {script.stem}"]
    out = subprocess.run([sys.executable, *argv], cwd=script.parent, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout or argv[0] == "-c"


def test_the_shell_hook_recognises_the_service_as_it_is_started(tmp_path, monkeypatch):
    """The post-commit fast path (no Python) trusts a cookie only to the live service of
    this very repository, recognised by its command line: the pattern in the shell hook and
    the command line the client starts the service with (protocol.SERVICE_MODULE) must
    agree, or the fast path silently turns off. Rename the module and this fails."""
    from conftest import init_repo

    from proximity import protocol
    from proximity.commands import service as service_cmd
    from proximity.service.report import service_state

    hook = (ROOT / "hooks" / "proximity-hook").read_text()
    assert hook == (PKG / "assets" / "proximity-hook").read_text()  # the installed copy
    # the shell hook's own pattern, as written there, names the protocol's module
    patterns = re.findall(r"case \$cmd in (.+?)\) ;;", hook)
    assert patterns == [f'*{protocol.SERVICE_MODULE}"$common"'], patterns
    repo = init_repo(tmp_path / "r", {"f.txt": "x\n"})
    common = os.path.realpath(repo / ".git")
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    assert service_cmd.start(common)  # client.start, then waits until it answers
    try:
        status = service_state(common)["status"]
        assert isinstance(status, dict)

        def seen(pid: int, of: str) -> str:
            """The very test the hook makes, with its pattern, on a real process."""
            probe = ('read -r cmd <"/proc/$1/cmdline"; '
                     f'case $cmd in {patterns[0]}) echo live ;; *) echo other ;; esac')
            out = subprocess.run(["sh", "-c", probe, "sh", str(pid)], capture_output=True,
                                 text=True, env={**os.environ, "common": of}, check=True)
            return out.stdout.strip()

        assert seen(status["pid"], common) == "live"
        # the service of another repository, or another process, is not it
        assert seen(status["pid"], os.path.realpath(tmp_path)) == "other"
        assert seen(os.getpid(), common) == "other"
    finally:
        service_cmd.stop(common, timeout=10.0)


# function-level imports of the package's own modules: each hides a layer's edge from the
# reader, so they stay few, each deferring a measured start-up cost (its comment says which)
DEFERRED_AT_MOST = 12


def function_level_imports() -> list[tuple[str, bool]]:
    """Every import of a proximity module inside a function: ("path:line", whether a
    ``# lazy:`` comment above it -- one serves a block of imports -- says why)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for imp in ast.walk(node):
                if not ((isinstance(imp, ast.ImportFrom) and imp.module
                         and imp.module.split(".")[0] == "proximity")
                        or (isinstance(imp, ast.Import)
                            and any(a.name.split(".")[0] == "proximity" for a in imp.names))):
                    continue
                i = imp.lineno - 2
                while i >= 0 and lines[i].strip().startswith(("from ", "import ")):
                    i -= 1
                said = "# lazy:" in lines[imp.lineno - 1] or \
                    (i >= 0 and lines[i].strip().startswith("# lazy:"))
                found.append((f"{path.relative_to(ROOT)}:{imp.lineno}", said))
    return found


def test_a_function_level_import_says_why_it_is_not_at_the_top():
    """Imports inside functions hide the layering unless they are there for a reason (the
    thin hook path's speed, a heavy part only one path needs): each says so in a
    ``# lazy:`` comment above it (one comment serves a block of imports)."""
    assert [where for where, said in function_level_imports() if not said] == []


def test_at_most_a_dozen_function_level_imports():
    """The package's own modules are imported at the top, where the layering shows, but
    for a dozen at most that defer a measured start-up cost (the fast paths of `check` and
    the hooks, a server's SDK, the scan engine a snapshot hook never needs)."""
    found = [where for where, _ in function_level_imports()]
    assert len(found) <= DEFERRED_AT_MOST, found


def test_every_command_is_dispatched():
    """Every subcommand the parser offers runs: `check` and `hook` by their own fast
    paths, every other by the one table (no name spelled in a string to import)."""
    import argparse

    from proximity.commands import table
    from proximity.commands.table import COMMANDS
    from proximity.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == {*COMMANDS, "check", "hook"}
    # a command that scans runs its own module's ``run``, loaded when it runs
    assert set(table.scanning()) == set(table.SCANNING)
    assert all(COMMANDS[n] is not run for n, run in table.scanning().items())


def test_a_command_that_does_not_scan_never_loads_the_scan_engine():
    """`snapshot`, `install`, `ledger`… start without the engine (every test and every
    user's command pays for a process's imports); the commands that scan load it."""
    probe = ("import sys; from proximity.commands import table; "
             "print(sorted(m for m in ('proximity.tcas.engine', 'proximity.channels') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out
    loads = probe.replace("table; ", "table; table.scanning(); ")
    out = subprocess.run([sys.executable, "-c", loads], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['proximity.channels', 'proximity.tcas.engine']", out


# `Any` per 1,000 lines of code (neither blank nor a comment): each hides a seam's type from
# mypy, so new code types its seams (pygit2, tree-sitter and rich ship types; JSON off the
# wire is narrowed, as protocol.py does)
ANY_PER_KLOC_BELOW = 8.0


def test_any_stays_below_eight_per_thousand_lines():
    uses: dict[str, int] = {}
    lines = 0
    for path in sorted(PKG.rglob("*.py")):
        src = path.read_text()
        lines += sum(1 for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#"))
        named = sum(1 for t in tokenize.generate_tokens(io.StringIO(src).readline)
                    if t.type == tokenize.NAME and t.string == "Any")
        imported = sum(1 for node in ast.walk(ast.parse(src)) if isinstance(node, ast.ImportFrom)
                       for a in node.names if a.name == "Any")
        if named > imported:
            uses[str(path.relative_to(ROOT))] = named - imported
    per_kloc = sum(uses.values()) * 1000 / lines
    worst = sorted(uses.items(), key=lambda kv: -kv[1])[:8]
    assert per_kloc < ANY_PER_KLOC_BELOW, (round(per_kloc, 2), sum(uses.values()), lines, worst)


def test_long_work_shows_a_progress_bar_on_a_terminal_and_nothing_elsewhere(tmp_path):
    """A first scan of a repository of 300 files (two worktrees) on a real pseudo-terminal
    draws the bar (and takes it away); piped, the same scan prints none."""
    import os
    import pty

    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(300):
        (repo / f"m{i}.py").write_text(f"import m{(i + 1) % 300}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"],
                 ["worktree", "add", "-q", "-b", "other", str(tmp_path / "other")]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (tmp_path / "other" / "m1.py").write_text("import m5\n")  # a pair: the graph is read
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PROXIMITY_NO_PROGRESS")}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "proximity", "scan"], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=120) == 0
    os.close(leader)
    assert b"reading every file's imports" in seen, seen[-400:]
    (repo / ".git" / "ecm").rename(tmp_path / "old-ecm")  # a first scan again, piped
    piped = subprocess.run([sys.executable, "-m", "proximity", "scan"], cwd=repo, env=env,
                           capture_output=True, text=True)
    assert piped.returncode == 0 and "reading every file" not in piped.stderr


def test_every_channel_has_a_weight_and_every_weight_a_channel():
    """The policy (a lower floor) names the channels it weighs; the channels' own table is
    the truth: the two lists must be the same set, or a channel runs unweighed."""
    from proximity import channels, config

    assert set(config.CHANNELS) == set(channels.ORDER)
