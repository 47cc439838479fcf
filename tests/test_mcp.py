"""`proximity mcp`: a real MCP session over stdio with the official SDK's client."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from conftest import git, lines

APP = lines(30)


async def session(where: str, calls: list[tuple[str, dict[str, Any]]]
                  ) -> tuple[Any, Any, list[Any]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "proximity", "mcp"],
                                   cwd=where, env=dict(os.environ))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as s:
            init = await s.initialize()
            tools = await s.list_tools()
            results = [await s.call_tool(name, args) for name, args in calls]
    return init, tools, results


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


def test_mcp_session_initialize_list_and_call_check(space):
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a, b = sp.wt("a"), sp.wt("b")
    sp.write(b, "app.txt", APP.replace("line 12\n", "line 12 by b\n"))  # uncommitted
    from conftest import git

    git(sp.main, "switch", "-q", "-c", "rel")  # a release branch rewrites line 12
    sp.write(sp.main, "app.txt", APP.replace("line 12\n", "line 12 released\n"))
    sp.commit(sp.main, "release")
    git(sp.main, "switch", "-q", "-")
    init, tools, results = anyio.run(session, str(a), [
        ("check", {"paths": ["app.txt:11-13"]}),
        ("check", {"paths": ["other.txt"]}),
        ("intend", {"paths": ["other.txt:1-2"]}),
        ("status", {}),
        ("inbox", {}),
        ("check_merge", {"ref": "rel"}),  # would bring line 12 in, where b works
    ])
    assert init.server_info.name == "proximity"
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) >= {"check", "status", "intend", "inbox", "check_merge"}
    schema = by_name["check"].input_schema
    assert schema["required"] == ["paths"] and schema["properties"]["paths"]["type"] == "array"
    assert "description" in schema["properties"]["paths"]

    deny = payload(results[0])
    assert deny["decision"] == "deny"
    (c,) = [c for c in deny["conflicts"] if c["evidence"] == "conflict"]
    assert c["agent"] == "b" and c["branch"] == "feat/b" and c["path"] == "app.txt"
    assert "+line 12 by b" in c["hunk"]
    assert payload(results[1])["decision"] == "allow"
    assert payload(results[2]) == {"agent": "a", "intents": {"other.txt": [[1, 2]]}}
    status = payload(results[3])
    assert status["agent"] == "a"
    (p,) = [p for p in status["pairs"] if p["agent"] == "b"]
    assert p["branch"] == "feat/b"
    assert payload(results[4]) == {"agent": "a", "messages": []}
    merged = payload(results[5])
    assert merged["decision"] == "deny" and merged["merge"]["paths"] == ["app.txt"], merged
    assert [c["agent"] for c in merged["conflicts"] if c["evidence"] == "conflict"] == ["b"]


def test_a_tool_called_with_bad_arguments_answers_the_reason_without_a_traceback(space,
                                                                              tmp_path):
    """What the command line says in one line (a path outside the worktree, a range such as
    0-3, a directory that is no repository, a ref that names no commit) is the tool's error
    result; the server's stderr carries no traceback."""
    sp = space({"app.txt": APP})
    a = sp.wt("a")
    err = tmp_path / "stderr.txt"

    async def calls() -> list[Any]:
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=["-m", "proximity", "mcp"],
                                       cwd=str(a), env=dict(os.environ))
        with open(err, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as s:
                await s.initialize()
                return [await s.call_tool(n, args) for n, args in (
                    ("check", {"paths": ["../outside.txt:1-2"]}),
                    ("check", {"paths": ["app.txt:0-3"]}),
                    ("status", {"repo": str(tmp_path / "nowhere")}),
                    ("check_merge", {"ref": "no-such-branch"}),
                )]

    outside, zero, nowhere, unknown = anyio.run(calls)
    for result in (outside, zero, nowhere, unknown):
        assert result.is_error, result
    assert "'no-such-branch' names no commit" in unknown.content[0].text
    assert "outside" in outside.content[0].text, outside.content[0].text
    assert "0-3" in zero.content[0].text, zero.content[0].text
    assert "nowhere" in nowhere.content[0].text, nowhere.content[0].text
    assert "Traceback" not in err.read_text()


def test_intend_and_check_confine_every_path_to_the_worktree(space):
    """Whatever an agent sends as a path is a name inside its worktree, relative to the
    root and normalised, or refused with the reason (the ledger keeps nothing of it): no
    `..` escape, no absolute path elsewhere, no NUL, no 5 MB name, no thousands at once."""
    sp = space({"app.txt": APP, "other.txt": lines(5)})
    a = sp.wt("a")
    refused = {
        "escape": ("intend", {"paths": ["../../etc/passwd"]}),
        "absolute": ("intend", {"paths": ["/etc/passwd:1-2"]}),
        "huge": ("intend", {"paths": ["x" * 5_000_000]}),
        "nul": ("intend", {"paths": ["app.txt\x00../../etc/passwd"]}),
        "many": ("intend", {"paths": [f"f{i}.txt" for i in range(5000)]}),
        "git's": ("intend", {"paths": [".git/config"]}),
        "check nul": ("check", {"paths": ["app.txt\x00"]}),
        "check huge": ("check", {"paths": ["y" * 5_000_000]}),
        "repo nul": ("status", {"repo": str(a) + "\x00"}),
    }
    _init, _tools, results = anyio.run(session, str(a), [
        *refused.values(),
        ("intend", {"paths": [str(a / "sub" / ".." / "other.txt") + ":1-2",
                              "./app.txt/"]}),
    ])
    for what, result in zip(refused, results, strict=False):
        assert result.is_error, (what, result)
        text = result.content[0].text
        assert len(text) < 2000 and "Traceback" not in text, (what, text[:300])
    why = {w: r.content[0].text for w, r in zip(refused, results, strict=False)}
    assert "outside this worktree" in why["escape"] and "outside" in why["absolute"]
    assert "at most 4096" in why["huge"] or "at most 8192" in why["huge"], why["huge"]
    assert "NUL" in why["nul"] and "NUL" in why["check nul"] and "NUL" in why["repo nul"]
    assert "at most 1000" in why["many"] and "git's own" in why["git's"]
    assert payload(results[-1]) == {"agent": "a", "intents": {"other.txt": [[1, 2]],
                                                               "app.txt": None}}


def test_a_tools_repo_in_another_repository_is_refused_and_runs_nothing(space, tmp_path):
    """An agent (or what it read) names, as the tool's `repo`, a repository nested in the
    worktree whose config runs a command when git reads its index (core.fsmonitor): the
    tool refuses, and nothing ran. A sibling worktree of this repository is acted for."""
    sp = space({"app.txt": APP})
    a, b = sp.wt("a"), sp.wt("b")
    nested = a / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "x").write_text("x\n")
    git(nested, "add", "x")
    git(nested, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    marker = tmp_path / "ran"
    git(nested, "config", "core.fsmonitor", f"touch {marker}; false")
    _init, _tools, results = anyio.run(session, str(a), [
        ("status", {"repo": str(nested)}),
        ("check", {"paths": ["x:1"], "repo": "vendor/lib"}),
        ("status", {"repo": str(b)}),
    ])
    for result in results[:2]:
        assert result.is_error, result
        assert "not in a checkout of this repository" in result.content[0].text
    assert not marker.exists()
    assert payload(results[2])["agent"] == "b"
