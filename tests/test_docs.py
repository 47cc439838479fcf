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


def _commands_in(text: str) -> list[tuple[str, list[str]]]:
    """Every ``proximity SUBCOMMAND [--option ...]`` written in code (spans and blocks)."""
    code = re.findall(r"```.*?```|`[^`\n]+`", text, re.S)
    out = []
    for chunk in code:
        for line in chunk.splitlines():
            for m in re.finditer(r"(?<![\w./-])proximity ([a-z][a-z-]*)((?:[^`|#;&\n])*)", line):
                out.append((m.group(1), re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(2))))
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
    for page in PAGES:
        for name, options in _commands_in(page.read_text()):
            if name not in sub.choices:  # type: ignore[operator]
                wrong.append(f"{page.name}: proximity {name} (no such command)")
                continue
            text = helps.setdefault(name, _help(name))
            wrong += [f"{page.name}: proximity {name} {o}" for o in options if o not in text]
    assert wrong == []


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
