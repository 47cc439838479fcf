"""What a config file may be before any parser reads it: its size and how deeply it nests.

A committed config is data a branch provides, read by every hook of every worktree. The
TOML parser recurses once per nested array or inline table (a 400 KB ``a = [[[…]]]``
exhausts Python's stack) and costs time in proportion to the text (a 27 MB list took each
hook past its time limit), so both are bounded here, on the raw text, first. Standard
library only, no parsing: strings and comments are skipped, brackets and dotted keys
counted.
"""

from __future__ import annotations

import re

# every hook of every worktree parses the file: tomllib reads a key-dense 1 MB in ~0.6 s (two
# hooks a commit), 256 KiB in ~0.15 s; real pyproject.toml files are tens of KB at most
MAX_CONFIG_BYTES = 256 * 1024
# nesting of tables, dotted keys, arrays and inline tables: real files stay under ten;
# tomllib needs about three stack frames per level and Python allows a thousand
MAX_NESTING = 32


def too_large(size: int) -> str | None:
    """Why a config file of ``size`` bytes is refused unread (None: it may be read)."""
    if size > MAX_CONFIG_BYTES:
        return (f"{size} bytes, over the {MAX_CONFIG_BYTES}-byte limit of a config file; "
                "not read")
    return None


def too_deep(text: str) -> str | None:
    """Why ``text`` is refused unparsed for its nesting (None: it may be parsed)."""
    depth = nesting(text, MAX_NESTING)
    if depth > MAX_NESTING:
        return (f"nested more than {MAX_NESTING} levels deep (tables, dotted keys, arrays "
                "or inline tables); not parsed")
    return None


# What the count looks at: strings and comments (skipped whole) and the characters that
# open, close or separate levels; the regex passes over every other run of text at once.
_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # a multi-line basic string
    r"|'''.*?'''"  # a multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*"'  # a basic string
    r"|'[^'\n]*'"  # a literal string
    r"|#[^\n]*"  # a comment
    r"|[\[\]{}.=,\n]", re.S)


def nesting(text: str, stop: int | None = None) -> int:
    """An upper bound of how deeply the document ``text`` nests once parsed (the document
    itself counts one): the dotted parts of the current table header and of each key on
    the way, and the open arrays and inline tables, with strings and comments skipped.
    Stops counting once past ``stop``. A document that does not parse may count anything;
    the parser then says why."""
    deepest = header = 1  # the document, and the levels its current [table] header opens
    opened: list[tuple[str, int]] = []  # open brackets, each with the key levels before it
    keys = 0  # dots of the key being read (its levels beyond the first)
    in_key = True  # reading a key (a line at the top level, or inside an inline table)
    line_start = True
    for m in _TOKEN.finditer(text):
        c = m.group()
        if c == "\n":
            if not opened:
                in_key, keys, line_start = True, 0, True
            continue
        if len(c) > 1 or c in "\"'#":  # a string or a comment
            line_start = line_start and c[0] == "#"
            continue
        at_start, line_start = line_start, False
        if at_start and not opened and c == "[":
            header = 1 + _header_levels(text, m.start())
            deepest = max(deepest, header)
            in_key = False
            continue
        if in_key:
            if c == ".":
                keys += 1
            elif c == "=":
                in_key = False
                deepest = max(deepest, header + sum(k for _, k in opened) + keys + 1)
            elif c == "}" and opened:  # an empty inline table
                opened.pop()
                in_key = False
            continue
        if c in "[{":
            opened.append((c, keys + 1))
            keys = 0
            in_key = c == "{"
            deepest = max(deepest, header + sum(k for _, k in opened))
        elif c in "]}" and opened:
            opened.pop()
        elif c == "," and opened and opened[-1][0] == "{":
            in_key, keys = True, 0
        if stop is not None and deepest > stop:
            break
    return deepest


def _header_levels(text: str, i: int) -> int:
    """The levels the table header that starts at ``i`` may open: two per dotted part (a
    table, which an earlier ``[[array]]`` of that name makes a list of tables), one more
    for an array of tables (``[[x]]``)."""
    end = text.find("\n", i)
    line = text[i:] if end < 0 else text[i:end]
    parts = 1
    for m in _TOKEN.finditer(line):
        c = m.group()
        if c == "]":
            break
        parts += c == "."
    return 2 * parts + line.startswith("[[")
