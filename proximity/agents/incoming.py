"""Which commands of a shell command line bring foreign work into a worktree, read from its
text alone (only split, never run): ``git merge``, ``git pull`` (merge and rebase forms,
with or without a remote; the upstream when no ref is named), ``git rebase``,
``git cherry-pick``, ``git am``, ``git stash pop/apply``, ``git checkout REF -- PATH`` and
``git restore --source REF PATH``, wherever they stand in the line (after ``&&``, ``;``,
``cd DIR &&``, in a subshell or a ``bash -c`` string, with ``git -C DIR``). Each is an
``Incoming`` to judge as the merge it is, or an ``Unread`` saying why it cannot be read (a
ref that is a shell expansion, a ``cd`` that cannot be followed, another repository named):
allowed with that reason."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from proximity.agents.shell import Simple, opaque, simple_commands

UPSTREAM = "@{upstream}"
# a quick look for the commands this module reads, for a line that cannot be split
_GIT_WORK = re.compile(r"\bgit\b.*\b(merge|pull|rebase|cherry-pick|am|stash|checkout|"
                       r"restore)\b", re.S)


class Incoming(NamedTuple):
    """One command that brings work in, as written: what the merging module resolves."""

    how: str  # merge, rebase, pull, pull --rebase, cherry-pick, am, stash, checkout, restore
    cwd: str  # the directory it runs in
    refs: tuple[str, ...]  # the ref, commits, patch files or stash entry it brings
    paths: tuple[str, ...] = ()  # checkout / restore: the paths taken from the ref
    remote: str | None = None  # pull: the remote named (None: the upstream's)
    mainline: int | None = None  # cherry-pick -m N: the parent its change is taken against
    overlay: bool = True  # checkout / restore: files the ref lacks stay
    text: str = ""  # the command, for the answer


class Unread(NamedTuple):
    text: str  # the command
    why: str


Found = Incoming | Unread


def read(cmd: str, cwd: str, depth: int = 0) -> list[Found]:
    """Every command of the line that brings work in (in order), or says why it cannot be
    read; [] when none does. A shell's ``-c`` string is read as a line of its own."""
    simple = simple_commands(cmd, cwd) if depth <= MAX_DEPTH else None
    if simple is None:
        if _GIT_WORK.search(cmd[:MAX_SCAN]):
            return [Unread(cmd[:80], "the command line cannot be split into commands")]
        return []
    out: list[Found] = []
    for s in simple:
        inner = _shell_string(s.words)
        if inner is not None:
            out += read(inner, s.cwd, depth + 1) if s.cwd is not None else (
                [Unread(inner[:80], "it runs in a directory the command line changes to in "
                        "a way that cannot be followed")] if _GIT_WORK.search(inner) else [])
            continue
        got = _git(s)
        if got is not None:
            out.append(got)
    return out


MAX_DEPTH = 3  # shells inside shells read, at most
SHELLS = frozenset(("sh", "bash", "zsh", "dash", "ksh"))


def _shell_string(words: tuple[str, ...]) -> str | None:
    """The command string of ``sh -c 'STRING'`` (its options before ``-c`` allowed)."""
    if not words or os.path.basename(words[0]) not in SHELLS:
        return None
    for i, w in enumerate(words[1:], 1):
        if w == "-c" or (w.startswith("-") and not w.startswith("--") and w.endswith("c")):
            return words[i + 1] if i + 1 < len(words) else None
        if not w.startswith("-"):
            return None  # a script file: not read
    return None


MAX_SCAN = 4096
# git's own options before the subcommand that take the next word as their value
_GLOBAL_VALUE = frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                           "--config-env", "--super-prefix", "--exec-path"))
_ELSEWHERE = ("--git-dir", "--work-tree", "--namespace")  # another repository or view of it


def _git(s: Simple) -> Found | None:
    words = s.words
    if not words or os.path.basename(words[0]) != "git":
        return None
    cwd, i = s.cwd, 1
    text = " ".join(words)[:200]
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if w.split("=", 1)[0] in _ELSEWHERE:
            return _only_if_work(words, i, text, f"{w.split('=', 1)[0]} names another "
                                 "repository or worktree")
        if w == "-C" and i + 1 < len(words):
            d = words[i + 1]
            cwd = None if cwd is None or opaque(d) else os.path.normpath(os.path.join(cwd, d))
        i += 2 if w in _GLOBAL_VALUE and "=" not in w else 1
    if i >= len(words):
        return None
    sub, rest = words[i], words[i + 1:]
    reader = READERS.get(sub)
    if reader is None:
        return None
    if cwd is None:
        return Unread(text, "it runs in a directory the command line changes to in a way "
                      "that cannot be followed")
    got = reader(list(rest), cwd, text)
    if isinstance(got, Incoming) and any(opaque(x) for x in (*got.refs, *got.paths,
                                                                got.remote or "")):
        return Unread(text, "what it brings is a shell expansion")
    return got


def _only_if_work(words: tuple[str, ...], i: int, text: str, why: str) -> Unread | None:
    rest = [w for w in words[i:] if not w.startswith("-")]
    return Unread(text, why) if any(w in READERS for w in rest) else None


class Args(NamedTuple):
    flags: list[str]  # options, with their value when it is joined (--x=y)
    values: dict[str, str]  # options that took the next word
    positional: list[str]
    after: list[str] | None  # the words after `--` (None: no `--`)


def split(words: list[str], takes_value: frozenset[str]) -> Args:
    flags: list[str] = []
    values: dict[str, str] = {}
    pos: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            return Args(flags, values, pos, words[i + 1:])
        if w.startswith("-") and w != "-":
            if w in takes_value and i + 1 < len(words):
                values[w] = words[i + 1]
                i += 1
            else:
                flags.append(w)
        else:
            pos.append(w)
        i += 1
    return Args(flags, values, pos, None)


def _merge(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("-m", "-F", "--file", "-s", "--strategy", "-X",
                                "--strategy-option", "--cleanup", "--into-name")))
    if {"--abort", "--continue", "--quit"} & set(a.flags):
        return None  # ends a merge under way: brings nothing new
    refs = a.positional + (a.after or [])
    if len(refs) > 1:
        return Unread(text, f"an octopus merge of {len(refs)} branches is not read")
    return Incoming("merge", cwd, (refs[0] if refs else UPSTREAM,), text=text)


def _rebase(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("-s", "--strategy", "-X", "--strategy-option", "-x",
                                "--exec", "--onto")))
    if {"--abort", "--continue", "--skip", "--quit", "--edit-todo", "--root",
            "--show-current-patch"} & set(a.flags):
        return None
    onto = a.values.get("--onto") or next(
        (f.split("=", 1)[1] for f in a.flags if f.startswith("--onto=")), None)
    refs = a.positional + (a.after or [])
    if len(refs) > 1:
        return Unread(text, "a rebase of another branch than the one checked out here")
    return Incoming("rebase", cwd, (onto or (refs[0] if refs else UPSTREAM),), text=text)


_PULL_VALUE = frozenset(("-s", "--strategy", "-X", "--strategy-option", "--depth",
                         "--deepen", "--shallow-since", "--shallow-exclude", "--upload-pack",
                         "-o", "--server-option", "-j", "--jobs", "--negotiation-tip"))


def _pull(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, _PULL_VALUE)
    how = "pull"
    for f in a.flags:
        if f in ("-r", "--rebase") or (f.startswith("--rebase=")
                                       and f.split("=", 1)[1] != "false"):
            how = "pull --rebase"
        elif f in ("--no-rebase", "--rebase=false"):
            how = "pull"
    pos = a.positional + (a.after or [])
    if not pos:
        return Incoming(how, cwd, (UPSTREAM,), text=text)
    remote, specs = pos[0], pos[1:]
    if len(specs) > 1:
        return Unread(text, f"a pull of {len(specs)} branches at once is not read")
    src = specs[0].lstrip("+").split(":", 1)[0] if specs else ""
    return Incoming(how, cwd, (src,) if src else (), remote=remote, text=text)


def _cherry_pick(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("-m", "--mainline", "--strategy", "-X",
                                "--strategy-option", "--cleanup")))
    if {"--abort", "--continue", "--skip", "--quit"} & set(a.flags):
        return None
    commits = a.positional + (a.after or [])
    if not commits:
        return None
    m = a.values.get("-m") or a.values.get("--mainline")
    if m is not None and not m.isdigit():
        return Unread(text, f"the mainline {m!r} is not a parent number")
    return Incoming("cherry-pick", cwd, tuple(commits), mainline=int(m) if m else None,
                    text=text)


def _am(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("--patch-format",)))
    if {"--abort", "--continue", "--skip", "--quit", "--resolved", "-r",
            "--show-current-patch", "--retry"} & set(a.flags) \
            or any(f.startswith("--show-current-patch") for f in a.flags):
        return None
    files = a.positional + (a.after or [])
    if not files:
        return Unread(text, "git am reads its patches from standard input")
    return Incoming("am", cwd, tuple(files), text=text)


def _stash(words: list[str], cwd: str, text: str) -> Found | None:
    if not words or words[0] not in ("pop", "apply"):
        return None
    a = split(words[1:], frozenset())
    pos = a.positional + (a.after or [])
    entry = pos[0] if pos else "stash@{0}"
    if entry.isdigit():
        entry = f"stash@{{{entry}}}"
    return Incoming(f"stash {words[0]}", cwd, (entry,), text=text)


def _checkout(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("-b", "-B", "--orphan", "--conflict")))
    if {"-b", "-B", "--orphan"} & set(a.values) or any(
            f.startswith("--pathspec-from-file") for f in a.flags):
        return _paths_from_file(a, text)
    if a.after is not None:
        if len(a.positional) != 1 or not a.after:
            return None  # from the index (no ref), or not a file checkout
        ref, paths = a.positional[0], a.after
    elif len(a.positional) >= 2:
        ref, paths = a.positional[0], a.positional[1:]  # git: REF PATH…, if REF is a commit
    else:
        return None  # a switch of branches, not work taken in
    return Incoming("checkout", cwd, (ref,), tuple(paths),
                    overlay="--no-overlay" not in a.flags, text=text)


def _restore(words: list[str], cwd: str, text: str) -> Found | None:
    a = split(words, frozenset(("-s", "--source")))
    if any(f.startswith("--pathspec-from-file") for f in a.flags):
        return _paths_from_file(a, text)
    src = a.values.get("-s") or a.values.get("--source") or next(
        (f.split("=", 1)[1] for f in a.flags if f.startswith("--source=")), None) or next(
        (f[2:] for f in a.flags if f.startswith("-s") and len(f) > 2 and f[1] != "-"), None)
    paths = a.positional + (a.after or [])
    if not src or not paths:
        return None  # from the index or HEAD: this worktree's own work
    return Incoming("restore", cwd, (src,), tuple(paths), overlay="--overlay" in a.flags,
                    text=text)


def _paths_from_file(a: Args, text: str) -> Found | None:
    if any(f.startswith("--pathspec-from-file") for f in a.flags):
        return Unread(text, "its paths are read from a file")
    return None  # a new branch


READERS = {"merge": _merge, "rebase": _rebase, "pull": _pull, "cherry-pick": _cherry_pick,
           "am": _am, "stash": _stash, "checkout": _checkout, "restore": _restore}
