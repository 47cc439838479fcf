"""The README and docs/ document every hook id and command truly (as --help has them), and
CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_hook_id_is_documented():
    ids = re.findall(r"^- id: (\S+)", (ROOT / ".pre-commit-hooks.yaml").read_text(), re.M)
    assert ids == ["proximity-snapshot", "proximity-warn", "proximity-guard"]
    for hook_id in ids:
        assert f"`{hook_id}`" in README


def test_first_lines_give_the_two_commands_and_ci_runs_the_test_one():
    head = README.splitlines()[:6]
    assert any("proximity demo" in line for line in head)
    test_cmd = next(line.split("#")[0].strip() for line in head if "tests/run.sh" in line)
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"exec {test_cmd}" in ci


def test_plain_hook_scripts_match_the_packaged_one():
    for name in ("post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-commit",
                 "pre-push"):
        target = (ROOT / "hooks" / name).resolve()
        assert target == (ROOT / "proximity" / "assets" / "proximity-hook").resolve()


DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]


def _code(text: str) -> list[str]:
    """The code spans and blocks of a Markdown page."""
    return re.findall(r"```.*?```|`[^`\n]+`", text, re.S)


def _commands_in(text: str) -> list[tuple[str, list[str], str]]:
    """Every ``proximity SUBCOMMAND [OPTION ...]`` written in code (spans and blocks): the
    subcommand, its options (``--long`` and ``-x``) and the first word after it. A table's
    escaped ``\\|`` belongs to the command; a bare ``|``, ``#``, ``;`` or ``&`` ends it."""
    out = []
    for chunk in _code(text):
        for line in chunk.splitlines():
            for m in re.finditer(r"(?<![\w./-])proximity ([a-z][a-z-]*)((?:\\\||[^`|#;&\n])*)",
                                 line):
                rest = m.group(2)
                options = re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[A-Za-z](?![\w-]))", rest)
                first = rest.split()[0] if rest.split() else ""
                out.append((m.group(1), options, first))
    return out


def _help(sub: str) -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "proximity", sub, "--help"],
                          capture_output=True, text=True, check=False).stdout


def test_every_command_and_option_in_the_readme_and_docs_is_real():
    """A newcomer copies these lines: each subcommand exists and each option it is shown
    with is in that subcommand's --help."""
    from proximity.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    helps: dict[str, str] = {}
    wrong = []
    seen = 0
    for page in PAGES:
        for name, options, first in _commands_in(page.read_text()):
            seen += 1
            if name not in sub.choices:  # type: ignore[operator]
                wrong.append(f"{page.name}: proximity {name} (no such command)")
                continue
            text = helps.setdefault(name, _help(name))
            assert text.startswith(f"usage: proximity {name}"), (name, text)
            wrong += [f"{page.name}: proximity {name} {o}" for o in options
                      if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)]
            # a bare word where --help offers choices ({start,stop,status}) is one of them
            choices = [set(c.split(",")) for c in re.findall(r"\{([a-z,-]+)\}", text)]
            if choices and re.fullmatch(r"[a-z][a-z-]*", first) and not any(
                    first in c for c in choices):
                wrong.append(f"{page.name}: proximity {name} {first} (not one of its choices)")
    assert seen > 50  # the extraction finds the commands the pages show
    assert wrong == []


def test_the_mcp_tools_are_the_ones_help_and_the_pages_name():
    """`proximity mcp --help`, the README and the agents page list the tools the server
    really offers."""
    import asyncio

    from proximity.mcp import server as mcp_server

    tools = [t.name for t in asyncio.run(mcp_server.build(str(ROOT)).list_tools())]
    assert tools == ["check", "check_merge", "status", "intend", "inbox"]
    assert f"(tools: {', '.join(tools)})" in " ".join(_help("mcp").split())
    for page in (README, (ROOT / "docs" / "agents.md").read_text(),
                 (ROOT / "docs" / "commands.md").read_text()):
        assert all(f"`{name}`" in page for name in tools)


def test_every_command_is_in_the_command_reference():
    from proximity.main import build_parser

    ref = (ROOT / "docs" / "commands.md").read_text()
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        assert f"`proximity {name}" in ref, name


def test_the_readme_is_short_and_every_page_stands_in_the_repository():
    assert len(README.splitlines()) <= 200
    for page in PAGES:
        text = page.read_text()
        assert "../shared" not in text and "/work/" not in text, page.name
        assert not re.search(r"\b[Ii]ssue #?\d+|(?<![\w&])#\d{1,4}\b", text), page.name
        assert not re.search(r"\b(?:re)?trial\d+|\bgen\d\d\b|\bsession \d+", text), page.name
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_paths_the_pages_name_exist_and_no_module_file_is_named():
    """Every repository path a page shows in code exists, and no page points into the
    package's files (they move; the pages describe commands and behaviour instead)."""
    missing = []
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"proximity/[\w/]+\.py", text), page.name
        for chunk in _code(text):
            for path in re.findall(r"(?<![\w./-])((?:benchmarks|tests|docs|hooks)/[\w./-]*\w)",
                                   chunk):
                if not (ROOT / path).exists():
                    missing.append(f"{page.name}: {path}")
    assert missing == []


def test_the_development_page_maps_every_package_folder():
    """The code table in docs/development.md names each subpackage, and what it names
    exists."""
    page = (ROOT / "docs" / "development.md").read_text()
    rows = re.findall(r"^\| (`[^|]+`) \|", page, re.M)
    named = {n for row in rows for n in re.findall(r"`([\w./]+)`", row)}
    pkg = ROOT / "proximity"
    folders = {f"{d.name}/" for d in pkg.iterdir() if (d / "__init__.py").exists()}
    assert folders <= named, folders - named
    assert all((pkg / n).exists() for n in named), [n for n in named if not (pkg / n).exists()]


def test_the_demo_is_what_how_it_works_describes_and_scan_json_is_as_documented(tmp_path):
    """The demo's files are the ones the walkthrough names, and `scan --json` has exactly
    the keys docs/commands.md documents."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "proximity", "demo", "--json", "--dir",
                          str(tmp_path / "demo")], capture_output=True, text=True, check=True)
    scan = json.loads(out.stdout)
    page = (ROOT / "docs" / "how-it-works.md").read_text()
    intro = page.split("\n## From git state", 1)[0]
    for path in set(re.findall(r"`((?:app|lib)/\w+\.py)`", intro)):
        assert (tmp_path / "demo" / "shop" / path).is_file(), path
    ac = next(p for p in scan["pairs"] if {p["a"], p["b"]} == {"alice", "carol"})
    assert any("app/views.py" in f["detail"] for f in ac["findings"] if f["channel"] == "symbol")

    ref = (ROOT / "docs" / "commands.md").read_text()
    schema = ref.split("## `scan --json` schema", 1)[1].split("```")[1]
    documented = set(re.findall(r'"([a-z_]+)"', re.sub(r"#.*", "", schema)))
    pair = scan["pairs"][0]
    emitted = (set(scan) | set(scan["agents"][0]) | set(pair) | set(pair["channels"])
               | {k for v in pair["priority"].values() for k in v}
               | {k for p in scan["pairs"] for f in p["findings"] for k in f}
               | {k for y in scan["yields"] for k in y})
    assert emitted <= documented, emitted - documented
    values = {"clear", "traffic", "resolution"}  # advisory values, not keys
    assert documented - values <= emitted, documented - values - emitted


def test_the_service_protocol_lists_its_ops():
    """docs/service.md names exactly the ops the service answers."""
    from proximity import protocol as p

    page = (ROOT / "docs" / "service.md").read_text()
    line = " ".join(page.split("Protocol (", 1)[1].split("...}", 1)[0].split())
    listed = set(re.findall(r'"([a-z]+)"', line.split('"op":', 1)[1]))
    assert listed == {p.PING, p.STATUS, p.SHUTDOWN, p.TOUCHED, p.CHECK, *p.WORKER_OPS}


def test_code_and_tests_name_what_they_do_not_which_issue_or_trial():
    """Comments and docstrings say why, in words an outsider reads: no tracker numbers,
    work sessions or trial names (those belong to the history, not the code)."""
    files = [*sorted((ROOT / "proximity").rglob("*.py")), *sorted((ROOT / "tests").glob("*.py")),
             *sorted((ROOT / "benchmarks").glob("*.py")), ROOT / "benchmarks" / "RESULTS.md"]
    found = []
    for f in files:
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if f.name == "test_docs.py" and "re.search" in line:
                continue  # (the patterns themselves)
            if re.search(r"\b[Ii]ssue #?\d+|\b(?:re|merge)?trial\d+|\b[Ss]ession \d+", line):
                found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()[:80]}")
    assert found == [], "\n".join(found)
