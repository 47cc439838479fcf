"""Every agent harness's hook, fed the event shapes its documentation gives
(tests/fixtures/harnesses, sources in docs/agents.md), run as the harness runs it: a
process, the event on stdin, its answer on stdout. One decision behind all of them: the
command line's, MCP's and the service's for the same request."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import git, lines

from proximity import checkargs
from proximity.agents import patches
from proximity.agents.answer import parse_event
from proximity.agents.harnesses import HARNESSES
from proximity.agents.harnesses.base import Other, Said
from proximity.commands import service as service_cmd

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "harnesses"
APP = lines(40)
B_12 = APP.replace("line 12\n", "line 12 b\n")


@pytest.fixture
def pair(space):  # type: ignore[no-untyped-def]
    """a and b on one file; b's uncommitted work is on line 12; ``release`` (a branch in
    the main checkout) rewrites line 12 too, so merging it in a meets b's work."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    git(sp.main, "switch", "-q", "-c", "release")
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released\n"))
    sp.commit(sp.main, "release rewrites line 12")
    git(sp.main, "switch", "-q", "-")
    sp.write(b, "app.txt", B_12)
    return sp, a, b


def fixture(name: str, where: Path, **values: str) -> str:
    """A documented event, for the worktree ``where`` (``$WT``), merging ``release``."""
    raw = (FIXTURES / name).read_text().replace("$WT", str(where)).replace("$REF", "release")
    doc = json.loads(raw)
    for key, value in values.items():  # whole-file texts: put in after parsing
        doc = json.loads(json.dumps(doc).replace(json.dumps(f"${key}"), json.dumps(value)))
    return json.dumps(doc)


def run_hook(where: Path, name: str, stdin: str, env: dict[str, str] | None = None
             ) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--hook", name],
                          input=stdin, capture_output=True, text=True, cwd=where,
                          check=False, timeout=120, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


DECIDING = ("permissionDecision", "permission", "decision", "behavior")
"""The fields in which the harnesses' hooks decide (Claude Code, Codex and Copilot's
permissionDecision, Cursor's permission, Gemini CLI's decision, a permission request's
behavior)."""
NO_OPINION: dict[str, dict[str, Any]] = {name: {} for name in checkargs.HARNESSES}
"""What each harness documents as a hook with no opinion, so that its own permission flow
decides: exit 0 and no decision field. Claude Code: JSON without permissionDecision;
Gemini CLI: ``{}`` (its hooks guide's example); Codex: every output field optional;
Cursor: no ``permission``; Copilot: "empty output uses default behavior" (CLI), no fields
(SDK). ``{}`` is all of these, and still JSON for a caller that parses it."""


def decisions_in(reply: object) -> list[str]:
    """Every decision a reply makes, nested ones included, as ``field=value``."""
    if isinstance(reply, dict):
        return [f"{k}={v}" for k, v in reply.items() if k in DECIDING] + [
            d for v in reply.values() for d in decisions_in(v)]
    return [d for v in reply for d in decisions_in(v)] if isinstance(reply, list) else []


def said(name: str, out: dict[str, Any]) -> tuple[str, str, str | None]:
    """(decision, reason, what the person sees) from a harness's own answer: a missing
    decision is an allow (proximity never grants), an ask where the harness has none is
    its summary."""
    hso = out.get("hookSpecificOutput") or {}
    asks = str(out.get("systemMessage") or out.get("user_message")).startswith(
        "proximity: ASK:")
    if name == "claude":
        return hso.get("permissionDecision", "allow"), hso.get(
            "permissionDecisionReason", out.get("systemMessage", "")), out.get("systemMessage")
    if name == "gemini":  # deny only; an ask is a message to the person
        return (out.get("decision") or ("ask" if asks else "allow"),
                out.get("reason", out.get("systemMessage", "")), out.get("systemMessage"))
    if name == "codex":  # deny only; an ask is context and a message; allow is quiet
        if hso.get("permissionDecision") == "deny":
            return "deny", hso["permissionDecisionReason"], out.get("systemMessage")
        if "additionalContext" in hso:
            return "ask", hso["additionalContext"], out.get("systemMessage")
        return "allow", out.get("systemMessage", ""), out.get("systemMessage")
    if name == "cursor":  # preToolUse: deny only; an ask is the two messages
        return (out.get("permission") or ("ask" if asks else "allow"),
                out.get("agent_message", ""), out.get("user_message"))
    assert name == "copilot"
    return out.get("permissionDecision", "allow"), out.get(
        "permissionDecisionReason", out.get("additionalContext", "")), \
        out.get("permissionDecisionReason")


EDITS = {  # an edit of line 12, where b works, in each harness's documented shape
    "claude-edit.json": "claude", "gemini-replace.json": "gemini",
    "codex-apply-patch.json": "codex", "cursor-write.json": "cursor",
    "cursor-strreplace.json": "cursor", "copilot-edit.json": "copilot",
    "copilot-vscode-edit.json": "copilot",
}
SHELL_MERGES = {"claude-bash-merge.json": "claude", "gemini-shell-merge.json": "gemini",
                "codex-bash-merge.json": "codex", "cursor-shell-merge.json": "cursor",
                "copilot-bash-merge.json": "copilot"}


@pytest.mark.parametrize("fixture_name", sorted(EDITS))
def test_every_harness_denies_an_edit_of_a_siblings_line_in_its_own_format(pair,
                                                                           fixture_name):
    _sp, a, _b = pair
    name = EDITS[fixture_name]
    out = run_hook(a, name, fixture(fixture_name, a,
                                    APP_12=APP.replace("line 12\n", "twelve\n")))
    decision, reason, seen = said(name, out)
    assert decision == "deny", out
    assert "worktree 'b'" in reason and "+line 12 b" in reason, reason
    # the person sees the one-line summary where the harness shows anything
    assert seen is not None and "worktree 'b'" in seen.split("\n")[0], out


def test_codex_patches_are_judged_by_the_lines_they_change(pair):
    """An apply_patch far from b's line is allowed (quietly: Codex acts on a deny only);
    moving the file b works on is an edit of all of it; a new file is nobody's; a hunk
    that is nowhere in the file is one Codex refuses itself: allowed, saying so."""
    _sp, a, _b = pair
    assert run_hook(a, "codex", fixture("codex-apply-patch-elsewhere.json", a)) == {}
    decision, reason, _ = said("codex", run_hook(a, "codex",
                                                 fixture("codex-apply-patch-move.json", a)))
    assert decision == "deny" and "worktree 'b'" in reason
    assert run_hook(a, "codex", fixture("codex-apply-patch-add.json", a)) == {}
    nowhere = json.loads(fixture("codex-apply-patch-elsewhere.json", a))
    nowhere["tool_input"]["command"] = nowhere["tool_input"]["command"].replace(
        "-line 31", "-no such line")
    out = run_hook(a, "codex", json.dumps(nowhere))
    assert said("codex", out)[0] == "allow" and "not in the file" in out["systemMessage"]
    # beside an edit it judged (no objection), the part it did not judge is still said
    both = json.loads(fixture("codex-apply-patch-elsewhere.json", a))
    both["tool_input"]["command"] = both["tool_input"]["command"].replace(
        "*** End Patch", "*** Update File: other.txt\n@@\n-no such line\n+x\n*** End Patch")
    out = run_hook(a, "codex", json.dumps(both))
    assert set(out) == {"systemMessage"}, out
    assert "other.txt" in out["systemMessage"] and "not in the file" in out["systemMessage"]
    # the same patch sent through the shell (apply_patch <<'EOF') reads the same
    shelled = json.loads(fixture("codex-apply-patch.json", a))
    shelled["tool_name"], shelled["tool_input"]["command"] = "Bash", (
        "apply_patch <<'EOF'\n" + shelled["tool_input"]["command"] + "EOF\n")
    assert said("codex", run_hook(a, "codex", json.dumps(shelled)))[0] == "deny"


def test_a_new_file_and_an_edit_elsewhere_are_allowed_everywhere(pair):
    _sp, a, _b = pair
    assert run_hook(a, "copilot", fixture("copilot-create.json", a)) == NO_OPINION["copilot"]
    far = json.loads(fixture("cursor-strreplace.json", a))
    far["tool_input"].update(old_string="line 30\n", new_string="thirty\n")
    assert run_hook(a, "cursor", json.dumps(far)) == NO_OPINION["cursor"]


def moved(fixture_name: str, where: Path, by: int) -> str:
    """The documented event with its edit ``by`` lines further down (line 12 and its
    context; a Write's whole text changes that line alone), and a shell command that
    brings nothing in."""
    to = f"line {12 + by}\n"
    text = fixture(fixture_name, where, APP_12=APP.replace(to, "changed\n"))
    if fixture_name != "cursor-write.json":  # (its whole text is APP_12 already)
        text = re.sub(r"line (1[123])\b", lambda m: f"line {int(m[1]) + by}", text)
    return text.replace("git merge --no-ff release", "git status").replace(
        "git merge release", "git status")


@pytest.mark.parametrize("fixture_name", sorted({**EDITS, **SHELL_MERGES}))
def test_no_objection_is_no_decision_in_every_harness(pair, fixture_name):
    """Where proximity has no objection its hook grants nothing: each harness gets the
    answer its documentation gives for a hook with no opinion (no decision field, exit 0),
    so its own permission flow — the person's prompt included — decides."""
    _sp, a, _b = pair
    name = {**EDITS, **SHELL_MERGES}[fixture_name]
    out = run_hook(a, name, moved(fixture_name, a, 18))  # line 30: b works on 12
    assert out == NO_OPINION[name], out
    assert said(name, out)[0] == "allow"


@pytest.mark.parametrize("fixture_name", sorted(EDITS))
def test_an_ask_is_an_ask_or_a_message_never_an_allow(pair, fixture_name):
    """An edit near b's line (14, b works on 12) asks: where the harness can ask it asks,
    where it cannot it says so to the person; no harness hears an allow."""
    _sp, a, _b = pair
    name = EDITS[fixture_name]
    out = run_hook(a, name, moved(fixture_name, a, 2))
    decision, reason, seen = said(name, out)
    assert decision == "ask" and "worktree 'b'" in reason, out
    assert seen is not None and "worktree 'b'" in seen.split("\n")[0], out
    assert set(decisions_in(out)) <= {f"{f}=ask" for f in DECIDING}, out


def test_an_allow_never_carries_a_decision_for_any_harness():
    """The rule itself, for every harness, every answer and every event shape it reads
    (each documented fixture, an empty event): an allow, judged or not, decides nothing;
    an ask or a deny decides only that. Where a call was not judged, the reason still goes
    somewhere (a message or a context field), never into a decision."""
    events = [{}] + [dict(parse_event(f.read_text())) for f in FIXTURES.glob("*.json")]
    for name, h in HARNESSES.items():
        for event in events:
            for verdict in ("allow", "ask", "deny"):
                for judged in (True, False):
                    reply = h.reply(Said(verdict, "proximity: why", "proximity: WHY", judged),
                                    event)
                    made = decisions_in(reply)
                    if verdict == "allow":
                        assert made == [], (name, event, reply)
                        assert (reply == NO_OPINION[name]) == judged, (name, reply)
                        assert judged or "why" in json.dumps(reply).lower(), (name, reply)
                    else:
                        assert set(made) <= {f"{f}={verdict}" for f in DECIDING}, reply
                    assert not any(m.endswith(("=allow", "=approve")) for m in made)


@pytest.mark.parametrize("fixture_name", sorted(SHELL_MERGES))
def test_a_shell_merge_is_judged_as_the_merge_it_is_in_every_harness(pair, fixture_name):
    """`git merge release` would bring line 12 in where b works: denied before it runs,
    in each harness's shell event, as `check --merge release` denies it."""
    _sp, a, _b = pair
    name = SHELL_MERGES[fixture_name]
    decision, reason, _ = said(name, run_hook(a, name, fixture(fixture_name, a)))
    assert decision == "deny" and "merging 'release'" in reason, reason


HOSTILE = {  # events no harness sends, that a hook must answer all the same
    "deep list": "[" * 100_000 + "]" * 100_000,
    "deep object": '{"tool_name": "Edit", "tool_input": ' + '{"a": ' * 10_000 + "1"
                   + "}" * 10_000 + "}",
    "not an object": "[1, 2]",
    "not json": "{'tool_name': 'Edit'",
    "wrong types": '{"tool_name": "Edit", "toolName": "edit", "tool_input": [1, 2], '
                   '"toolArgs": "[1]", "hook_event_name": 5, "command": 7}',
    "NUL in a path": '{"tool_name": "Write", "toolName": "create", '
                     '"tool_input": {"file_path": "a\\u0000b"}, '
                     '"toolArgs": "{\\"path\\": \\"a\\\\u0000b\\"}"}',
    "not a patch": '{"tool_name": "apply_patch", "tool_input": {"command": "rm -rf /"}}',
}
CODEX_NUL = ('{"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\\n'
             '*** Add File: a\\u0000b\\n+x\\n*** End Patch"}}')


@pytest.mark.parametrize("name", sorted(checkargs.HARNESSES))
def test_a_malformed_event_is_allowed_with_the_reason_by_every_harness(pair, name,
                                                                        monkeypatch, capsys):
    """Each hostile event through the command's own entry point (`main`, the event on
    stdin): allowed, exit 0, saying why, in the harness's format, and granting nothing:
    no decision field, the reason only where the harness shows text."""
    from proximity.main import main

    _sp, a, _b = pair
    monkeypatch.chdir(a)
    for what, event in HOSTILE.items():
        if (name, what) == ("codex", "NUL in a path"):
            event = CODEX_NUL
        monkeypatch.setattr(sys, "stdin", io.StringIO(event))
        assert main(["check", "--hook", name]) == 0, what
        out = json.loads(capsys.readouterr().out)
        decision, reason, _seen = said(name, out)
        assert decision == "allow" and decisions_in(out) == [], (what, out)
        if out == NO_OPINION[name]:  # a tool this harness does not edit files with
            got = HARNESSES[name].read(parse_event(event), str(a))
            assert isinstance(got, Other), (what, got)
            continue
        assert reason.startswith("proximity"), (what, reason, out)
        if what.startswith("deep"):
            assert "nested too deeply" in reason, reason


POSTS = {"claude-post-edit.json": "claude", "codex-post-apply-patch.json": "codex",
         "cursor-after-file-edit.json": "cursor", "copilot-post-edit.json": "copilot"}


@pytest.mark.parametrize("fixture_name", sorted(POSTS))
def test_every_after_edit_event_records_the_worktree_in_the_shared_ledger(pair,
                                                                         fixture_name):
    sp, a, _b = pair
    sp.write(a, "app.txt", APP.replace("line 7\n", "line 7 a\n"))  # what the edit wrote
    name = POSTS[fixture_name] + checkargs.POST
    assert run_hook(a, name, fixture(fixture_name, a)) == {}
    got = subprocess.run([sys.executable, "-m", "proximity", "ledger", "--json", "-n", "1"],
                         cwd=a, capture_output=True, text=True, check=True).stdout
    assert '"snapshot"' in got and '"app.txt"' in got, got


def test_every_harness_and_front_end_gives_one_decision(pair, monkeypatch):
    """The same request — a's edit of line 12 — asked of the command line, every harness's
    hook, the MCP server, and all of them again through the resident service: one
    decision."""
    sp, a, _b = pair
    env_off = {"PROXIMITY_SERVICE": "0"}

    def cli(env: dict[str, str]) -> str:
        proc = subprocess.run([sys.executable, "-m", "proximity", "check", "--json",
                               "app.txt:12"], cwd=a, capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=120, check=False)
        return str(json.loads(proc.stdout)["decision"])

    def hooks(env: dict[str, str]) -> set[str]:
        return {said(name, run_hook(a, name, fixture(f, a, APP_12=APP.replace(
            "line 12\n", "twelve\n")), env))[0] for f, name in EDITS.items()}

    async def mcp() -> str:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=["-m", "proximity", "mcp"],
                                       cwd=str(a), env=dict(os.environ))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as s:
                await s.initialize()
                got = await s.call_tool("check", {"paths": ["app.txt:12"]})
        return str(json.loads(got.content[0].text)["decision"])

    assert cli(env_off) == "deny" and hooks(env_off) == {"deny"}
    assert anyio.run(mcp) == "deny"
    common = os.path.realpath(sp.main / ".git")
    env_on = {"PROXIMITY_SERVICE": "1", "PROXIMITY_SERVICE_IDLE": "60"}
    monkeypatch.setenv("PROXIMITY_SERVICE", "1")
    assert service_cmd.start(common)
    try:
        assert cli(env_on) == "deny" and hooks(env_on) == {"deny"}
        status = subprocess.run([sys.executable, "-m", "proximity", "service", "status",
                                 "--json"], cwd=a, capture_output=True, text=True,
                                env={**os.environ, **env_on}, check=True).stdout
        answered = json.loads(status)["status"]["answered"]
        assert answered.get("check") == 1 + len(EDITS), answered  # the service answered
    finally:
        service_cmd.stop(common, timeout=10.0)


def test_the_registry_and_the_declared_names_agree():
    """--hook's choices, the thin parser and the adapters come from one list of names."""
    assert set(HARNESSES) == set(checkargs.HARNESSES) == set(checkargs.AFTER)
    for name, h in HARNESSES.items():
        assert h.name == name
    assert checkargs.hook_names() == (*checkargs.HARNESSES,
                                      *(n + "-post" for n in checkargs.AFTER))


@pytest.mark.parametrize("argv", [
    ["app.txt:1-3"], ["--json", "a", "b:4"], ["--hook", "codex"], ["--hook=cursor-post"],
    ["--deny-on", "ta", "x"], ["-C", "/tmp", "--merge", "main"], ["--merge=HEAD~1", "--json"],
    ["--", "-odd-name.txt"], ["--repo", "d", "f"],
])
def test_the_fast_parser_reads_check_as_argparse_does(argv):
    from proximity.main import build_parser

    ns = build_parser().parse_args(["check", *argv])
    assert checkargs.parse(argv) == checkargs.CheckArgs(
        ns.paths, ns.json, ns.deny_on, ns.repo, ns.hook, ns.merge)


@pytest.mark.parametrize("argv", [
    ["--help"], ["--hook", "nobody"], ["--deny-on", "sometimes"], ["--deny"], ["-Cdir", "f"],
    ["--hook"], ["--json", "--merge"],
])
def test_what_the_fast_parser_does_not_take_is_left_to_argparse(argv):
    assert checkargs.parse(argv) is None


def test_a_patch_names_its_lines_in_the_current_file():
    text = "a\nb\nc\nd\ne\nf\n"
    patch = ("*** Begin Patch\n*** Update File: x\n@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n"
             "@@\n f\n+g\n*** End of File\n*** End Patch")
    (op,) = patches.parse(patch)
    placed = patches.place(text, op.chunks)
    assert placed is not None
    assert placed.result == "a\nB\nc\nd\nE\nf\ng\n"
    assert placed.ranges == ((2, 2), (5, 5), (7, 6))  # 7-6: an insertion after line 6
    # whitespace-tolerant as Codex is (which then writes the patch's own context lines);
    # a hunk that is nowhere is not placed
    loose = patches.parse("*** Begin Patch\n*** Update File: x\n@@\n  b  \n-c\n*** End Patch")
    assert patches.place(text, loose[0].chunks) == patches.Placed(((3, 3),),
                                                                  "a\n b  \nd\ne\nf\n")
    gone = patches.parse("*** Begin Patch\n*** Update File: x\n@@\n-zzz\n*** End Patch")
    assert patches.place(text, gone[0].chunks) is None
    with pytest.raises(patches.BadPatch):
        patches.parse("not a patch")


def test_docs_set_up_every_harness_with_its_own_hook(tmp_path):
    """docs/agents.md has a section per harness whose configuration runs that harness's
    `proximity check --hook NAME` (and NAME-post), each command line one the fast parser
    and argparse both take."""
    from proximity.main import build_parser

    docs = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text()
    for name in checkargs.HARNESSES:
        for hook in (name, name + checkargs.POST):
            command = f"proximity check --hook {hook}"
            assert command in docs, command
            argv = command.split()[1:]
            assert checkargs.parse(argv[1:]) == checkargs.CheckArgs(hook=hook)
            assert build_parser().parse_args(argv).hook == hook
    for fixture_file in FIXTURES.glob("*.json"):
        assert fixture_file.name in docs, f"docs/agents.md names no source for {fixture_file}"
    # every configuration block is what its harness parses: JSON, TOML
    import re

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    blocks = re.findall(r"```(json|toml)\n(.*?)```", docs, re.S)
    assert len(blocks) >= 6, blocks
    for kind, block in blocks:
        json.loads(block) if kind == "json" else tomllib.loads(block)
    codex = tomllib.loads(next(b for k, b in blocks if k == "toml"))["hooks"]
    assert codex["PreToolUse"][0]["hooks"][0]["command"] == "proximity check --hook codex"



def test_a_huge_file_an_edit_names_is_never_read_whole(pair, tmp_path):
    """An Edit naming a file of gigabytes (a sparse 3 GiB log, in the worktree or
    anywhere else): answered without reading it (the hook read it whole: 4-6 GB resident
    and 20-37 s, past the harness's own time limit). In the worktree it is judged as the
    whole file, unread; outside every repository it is not judged. The peak is read by a
    process of its own around the hook's (its children's largest resident set)."""
    _sp, a, _b = pair
    inside, outside = a / "huge.log", tmp_path / "elsewhere" / "huge.log"
    outside.parent.mkdir()
    for f in (inside, outside):
        with open(f, "wb") as out:
            out.truncate(3 << 30)
    measure = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], stdin=sys.stdin, capture_output=True)\n"
               "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
               " + '\\n' + p.stdout.decode())\n"
               "sys.exit(p.returncode)\n")
    try:
        for f in (inside, outside):
            event = {"session_id": "s", "cwd": str(a), "hook_event_name": "PreToolUse",
                     "tool_name": "Edit", "tool_input": {"file_path": str(f),
                                                         "old_string": "a",
                                                         "new_string": "b"}}
            proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m",
                                   "proximity", "check", "--hook", "claude"],
                                  input=json.dumps(event), capture_output=True, text=True,
                                  cwd=a, timeout=120, check=False)
            assert proc.returncode == 0, proc.stderr
            rss, reply = proc.stdout.split("\n", 1)
            assert int(rss) < 1 << 20, rss  # KiB: under 1 GiB, never the file's 3 GiB
            assert "permissionDecision" not in reply, reply  # no sibling works there
    finally:
        inside.unlink()
        outside.unlink()
