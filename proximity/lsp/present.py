"""Findings as the editor shows them: diagnostics, the hover, code actions and the lens.
Every text that comes from another worktree (names, hunks) is printable: ``shown``."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from proximity.lsp.judge import ERROR, INFO, WARNING, Finding, who
from proximity.safetext import text as shown

SEVERITY = {ERROR: types.DiagnosticSeverity.Error, WARNING: types.DiagnosticSeverity.Warning,
            INFO: types.DiagnosticSeverity.Information}
INTEND, INBOX = "proximity.intend", "proximity.inbox"


def span(f: Finding, lines: Sequence[str]) -> types.Range:
    """The finding's lines as an LSP range (0-based; an empty range marks the line after
    which the change goes)."""
    s, e = f.lines
    if e < s:
        s = e = max(1, e)
    end = (types.Position(e, 0) if e < len(lines) else
           types.Position(e - 1, len(lines[e - 1].encode("utf-16-le")) // 2
                          if 0 < e <= len(lines) else 0))
    return types.Range(types.Position(s - 1, 0), end)


def diagnostics(found: Sequence[Finding], lines: Sequence[str]) -> list[types.Diagnostic]:
    return [types.Diagnostic(range=span(f, lines), message=shown(f.message, 2000),
                             severity=SEVERITY[f.severity], source="proximity",
                             code=f.evidence, data={"agent": f.agent, "branch": f.branch})
            for f in found]


def fence(body: str) -> str:
    """A code fence longer than any run of backticks in ``body`` (no text of theirs can
    close it and turn into markup)."""
    run = longest = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def hover(found: Sequence[Finding], yields: dict[str, str]) -> str:
    """Markdown for the findings on one line: who, their hunk, who yields, what to do."""
    parts = []
    for f in sorted(found, key=lambda f: (ERROR, WARNING, INFO).index(f.severity)):
        body = "\n".join(shown(ln, 300) for ln in f.hunk.split("\n")) if f.hunk else ""
        tick = fence(body)
        text = [f"**proximity** — {shown(f.message, 2000)}"]
        if body:
            text.append(f"Their change ({who(f)}):\n\n{tick}diff\n{body}\n{tick}")
        text.append(f"**Who yields:** {yields.get(f.agent) or no_order(f)}")
        text.append(f"**What to do:** {todo(f)}")
        parts.append("\n\n".join(text))
    return "\n\n---\n\n".join(parts)


def no_order(f: Finding) -> str:
    return (f"no one has been told to yield on this pair yet: if it comes to a Resolution "
            f"Advisory, right-of-way goes to the side with committed work on the contested "
            f"files, then to whoever reached them first ({shown(f.agent)} or you)")


def todo(f: Finding) -> str:
    if f.severity == ERROR:
        return ("edit elsewhere for now, or coordinate first: the code action \"Tell them I "
                "am taking these lines\" (`proximity intend`), and read the inbox")
    if f.severity == WARNING:
        return ("you may go on, but tell them first (\"Tell them I am taking these lines\") "
                "or keep clear of their lines")
    return "nothing yet: these are their lines; an edit here would be checked as you type"


def actions(uri: str, rng: types.Range, found: Sequence[Finding]) -> list[types.CodeAction]:
    first, last = rng.start.line + 1, max(rng.start.line, rng.end.line - (
        1 if rng.end.character == 0 and rng.end.line > rng.start.line else 0)) + 1
    out = [types.CodeAction(
        title=f"proximity: tell them I am taking these lines ({first}-{last})",
        kind=types.CodeActionKind.QuickFix if found else types.CodeActionKind.Empty,
        command=types.Command("Tell them I am taking these lines", INTEND,
                              arguments=[uri, first, last]))]
    out.append(types.CodeAction(title="proximity: show inbox", kind=types.CodeActionKind.Empty,
                                command=types.Command("Show inbox", INBOX, arguments=[uri])))
    return out


def lens(uri: str, found: Sequence[Finding]) -> list[types.CodeLens]:
    """One lens at the top: who is near in this file."""
    near: dict[str, Finding] = {}
    for f in found:
        near.setdefault(f.agent, f)
    if not near:
        return []
    worst = min(found, key=lambda f: (ERROR, WARNING, INFO).index(f.severity))
    names = ", ".join(who(f) for f in list(near.values())[:3]) + (
        f" and {len(near) - 3} more" if len(near) > 3 else "")
    title = (f"proximity: {names} "
             + ("— your edit would conflict" if worst.severity == ERROR else
                "— traffic near your edit" if worst.severity == WARNING else
                "— working in this file"))
    return [types.CodeLens(range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                           command=types.Command(title, INBOX, arguments=[uri]))]
