"""The README documents every hook id and command; CI runs the README's test command."""

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


def test_every_command_is_documented():
    from proximity.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        assert f"`proximity {name}" in README, name


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
