"""Calls that stop binding, for the pre-edit check: the scan's own symbol channel
(channels/symbol.py over analysis/symbols/hazard.py) asked about two states of the code and
their merge base, as the scan asks it about two worktrees. A merge that would leave a call
in the resulting tree that no longer binds (the call on either side, the changed
definition on the other), and an edit that adds a call to a function a live sibling
changed, are judged by the very evidence the scan shows, in its words."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from proximity import config, gitio
from proximity.agents import decision, definitions, edits
from proximity.agents.standing import open_ledger
from proximity.analysis import hunks
from proximity.analysis.languages import registry
from proximity.analysis.symbols import hazard
from proximity.channels import symbol
from proximity.channels.evidence import Evidence, Result
from proximity.errors import ConfigError, LedgerError
from proximity.ledger import Ledger
from proximity.ledger.cache import TrackedDict
from proximity.model import TEXT, Agent, Facts, FileChange, Finding, Range, WorkingSet
from proximity.safetext import text
from proximity.tcas.pairwise import Pairwise

# what breaks a call (a changed behaviour is approach evidence, never a broken contract;
# a missing argument that arrives undefined still runs: channels/symbol.py)
CONTRACT = frozenset(("incompatible-call", "incompatible-method-call", "removed-used",
                      "module-moved"))


class Broken(NamedTuple):
    """One call that stops binding: where the call is, the scan's words, and whether the
    scan would make it a Resolution Advisory on its own (its calibrated probability)."""

    path: str
    line: int
    detail: str
    ra: bool


class Pair(NamedTuple):
    """One other side to judge against ours: its state, the pair's merge base, and our
    side's working set when it is no tree of the repository (an edit about to be made;
    None: our tree against that base)."""

    theirs: Agent
    base: str | None
    mine: WorkingSet | None = None


def unbound(repo: gitio.Repo, ledger: Ledger | None, ours: Agent, pairs: Sequence[Pair],
            conflicted: Sequence[str] = ()) -> list[list[Broken]]:
    """Per pair: the calls that stop binding between ``ours`` and ``theirs`` (their
    states against the pair's base), both ways, judged as the scan judges a pair, with
    one memo (import graph, resolver, parsed files) for all of them. ``conflicted``: the
    paths git's merge of the two leaves conflicted (the merged program is judged only
    when there are none and both sides are commits)."""
    try:
        cfg = config.load(repo.workdir)
    except ConfigError:
        cfg = config.Config()
    # the scan's caches: a file's facts are parsed once, anywhere; the import graph only
    # when a scan left it for this tree (a check never parses a whole repository: without
    # it, the files' paths alone resolve imports, as a hook's first scan does)
    facts = Facts(defer_cold_graph=True, graph_ever_built=False)
    if ledger is not None:
        with contextlib.suppress(LedgerError):
            facts.imports_cache = ledger.cache("imports")
            facts.symbols_cache = ledger.cache("symbols")
            facts.graph_cache = ledger.cache("graph")
    pw = Pairwise(repo, cfg, facts)
    pw.cold_files = 0
    exact = Result(1.0 if conflicted else 0.0,
                   [Finding("conflict", 1.0, p, p) for p in conflicted])
    out: list[list[Broken]] = []
    for theirs, base, mine in pairs:
        base_tree = repo.commit_tree(base) if base else gitio.EMPTY_TREE
        wa = mine if mine is not None else pw.working_set(ours, base_tree)
        wb = pw.working_set(theirs, base_tree)
        if not wa.files or not wb.files:
            out.append([])
            continue
        ev = Evidence(ours, theirs, wa, wb, base, base_tree, cfg, pw, agents=[ours, theirs],
                      prior={"conflict": exact})
        out.append([Broken(*_call_site(f), f.detail, f.score >= cfg.tau_ra)
                    for f in symbol.run(ev).findings if f.kind in CONTRACT])
    # the files' facts parsed here kept for the next question (keyed by blob: a landing
    # asked again, a push retried, parses nothing twice); a ledger that cannot be written
    # keeps none, as the scan's own caches
    if ledger is not None and isinstance(facts.symbols_cache, TrackedDict):
        with contextlib.suppress(LedgerError):
            ledger.save_cache("symbols", facts.symbols_cache)
    return out


def _call_site(f: Finding) -> tuple[str, int]:
    """The side of a finding that holds the call (the scan's words name it: "the call at
    PATH:LINE", "new code at PATH:LINE"); the other side holds the changed definition."""
    for path, ranges in (f.side(False), f.side(True)):
        if ranges and f" at {path}:{ranges[0][0]}" in f.detail:
            return path, ranges[0][0]
    path, ranges = f.side(False)
    return path, ranges[0][0] if ranges else 1



# a call as an edit's new lines write it: the name before the parenthesis and the root
# of its chain (``mod.f(``: a moved module's name); the symbol channel decides what it
# binds to
CALL = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*)((?:\s*\.\s*[A-Za-z_$][\w$]*)*)\s*\(")
WORD = re.compile(r"[A-Za-z_$][\w$]*")
# what a diff's changed line defines: a header's name before its parenthesis, after
# nothing but words (``def f(``, ``pub fn f<``, ``async fetch(``: a method in any language;
# not ``return f(``), or after a type's definer (``class Cache:``)
HEADER = re.compile(r"^\s*(?:(?!(?:return|await|yield|throw|raise|if|elif|while|for|else|new"
                    r"|not|and|or|in|assert|del|case|go|defer)\b)[\w$]+\s+)*"
                    r"([A-Za-z_$][\w$]*)\s*[(<]")
TYPE = re.compile(r"\b(?:class|struct|interface|type|trait|enum)\s+([A-Za-z_$][\w$]*)")


def added(old: str | None, new: str) -> tuple[Range, ...]:
    """The lines of ``new`` that ``old`` does not have (an edit's added and rewritten
    lines, as a line diff pairs them; all of them for a new file). The lines both share
    at the start and the end are left out before any diff runs: an edit is small."""
    b = new.split("\n")
    if old is None:
        return ((1, len(b)),)
    a = old.split("\n")
    head, tail = edits.common_ends(a, b)
    ops = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail],
                                  autojunk=False).get_opcodes()
    return tuple((head + j1 + 1, head + j2) for tag, _i1, _i2, j1, j2 in ops
                 if tag in ("replace", "insert"))


def called(text: str, ranges: Sequence[Range]) -> set[str]:
    """The names called in those lines of ``text``, with their chains' roots (a
    definition's own line calls nothing)."""
    rows = text.split("\n")
    out: set[str] = set()
    for s, e in ranges:
        for row in rows[max(0, s - 1):e]:
            if "(" in row and not definitions.DEF_NAME.match(row):
                for name, rest in CALL.findall(row):
                    out.add(rest.rsplit(".", 1)[-1].strip() if rest else name)
                    out.add(name)
    return out


# what ``defined`` found, by the diff's digest: a process that answers many checks (the
# resident service) reads each sibling's state once, not its text kept
DEFINED: dict[bytes, frozenset[str]] = {}
DEFINED_ENTRIES = 1024


def defined(diff_text: str) -> frozenset[str]:
    """The names a diff may have changed the definition of: what its changed lines
    define, the enclosing definitions git names in its hunk headers (a constructor's
    class), and the words of the paths it renames or deletes (a moved module)."""
    key = hashlib.sha1(diff_text.encode("utf-8", "surrogateescape")).digest()
    if key not in DEFINED:
        if len(DEFINED) >= DEFINED_ENTRIES:
            DEFINED.clear()
        DEFINED[key] = _defined(diff_text)
    return DEFINED[key]


def _defined(diff_text: str) -> frozenset[str]:
    out: set[str] = set()
    for row in diff_text.split("\n"):
        if row.startswith("@@"):
            out.update(WORD.findall(row.split("@@", 2)[-1]))
        elif row.startswith(("rename from ", "deleted file", "diff --git ")):
            out.update(WORD.findall(row))
        elif row[:1] in ("+", "-") and not row.startswith(("+++", "---")):
            m = definitions.DEF_NAME.match(row[1:]) or HEADER.match(row[1:])
            if m:
                out.add(m.group(1))
            out.update(TYPE.findall(row))
    return frozenset(out)


MAX_CALLERS = 200  # files of a tree read for calls of what a merge redefines, at most
# a caller file past this size is not read for calls (the symbol channel's cost grows with
# its calls times its definitions: a 40,000-line test file took a push past its hook's
# time limit), nor are callers past CALLERS_BYTES in all
CALLER_BYTES = 256 * 1024
CALLERS_BYTES = 2 * 1024 * 1024


def redefined(diff_text: str) -> set[str]:
    """The names whose definition a diff changes: those its changed lines define, and the
    definitions git names as its hunks' context (``defined`` without the other words of
    hunk headers and paths: names worth looking for in a whole tree)."""
    out: set[str] = set()
    context: str | None = None  # the definition git names as the hunk's context
    for row in diff_text.split("\n"):
        if row.startswith("@@"):
            m = definitions.DEF_NAME.match(row.split("@@", 2)[-1].strip())
            context = m.group(1) if m else None
        elif row[:1] in ("+", "-") and not row.startswith(("+++", "---")):
            m = definitions.DEF_NAME.match(row[1:]) or HEADER.match(row[1:])
            out.update([m.group(1)] if m else [])
            out.update(TYPE.findall(row))
            if context and PARAMETER.match(row[1:]):
                # a parameter on a line of its own, in the definition git names (a
                # signature one parameter a line changes no line that holds its name)
                out.add(context)
    return {n for n in out if len(n) > 2 and n not in hazard.AMBIENT}


# a line of a signature written one parameter a line: a name, its type, its default and
# the comma that follows (black writes it after the last one too); or the closing
# parenthesis (a body's line is none of these, as a rule)
PARAMETER = re.compile(r"^\s*(?:\*{0,2}[A-Za-z_$][\w$]*\s*\??(?::[^=,]+)?(?:=[^,]+)?,"
                       r"|\)\s*(?:->[^:]+)?:?)\s*$")


def callers(repo: gitio.Repo, tree: str, diff_text: str, changed: set[str]) -> WorkingSet:
    """The files of ``tree`` that name what the diff redefines and that it leaves as they
    are, each as a whole new file (all its code is read as the reader's): a call already
    in this tree that the change breaks (a fast-forward brings only the change). Files
    past CALLER_BYTES, and past CALLERS_BYTES in all, are not read."""
    names = sorted(redefined(diff_text))
    if not names:
        return WorkingSet()
    args = ["grep", "-l", "-w", "-F", *(x for n in names for x in ("-e", n)), tree]
    found = gitio.git(args, repo.here, ok=(0, 1), env=repo.objects_env()  # (the store)
                      ).stdout.decode("utf-8", "replace")
    paths = [ln.split(":", 1)[1] for ln in found.splitlines() if ":" in ln]
    paths = [p for p in paths if p not in changed and registry.dialect_of(p)][:MAX_CALLERS]
    if not paths:
        return WorkingSet()
    listed = gitio.git(["ls-tree", "-z", "-l", tree, "--", *paths], repo.here,
                       env=repo.objects_env()).stdout.decode("utf-8", "surrogateescape")
    files = {}
    total = 0
    for entry in listed.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 4 or parts[1] != "blob" or not parts[3].isdigit():
            continue
        size = int(parts[3])
        if size > CALLER_BYTES or total + size > CALLERS_BYTES:
            continue
        total += size
        files[path] = FileChange(path, "A", TEXT, (), (), new_oid=parts[2])
    return WorkingSet(files)


class Edited(NamedTuple):
    """A file an edit is about to write: its text after the edit, and the lines the edit
    writes there."""

    path: str
    result: bytes
    lines: tuple[Range, ...]


def new_calls(repo: gitio.Repo, ledger: Ledger | None, me: Agent,
              others: Sequence[tuple[Agent, str | None]], edited: Sequence[Edited],
              base_blob: Mapping[tuple[str | None, str], bytes | None],
              oids: Mapping[bytes, str]) -> list[list[Broken]]:
    """Per other side (its state, the pair's base): the calls an edit writes that no
    longer bind to a definition it changed: the scan's symbol evidence with this side's
    new code the edit's lines alone. ``base_blob``: (base, path) -> the file there (None:
    no such file); ``oids``: each result's blob, written already."""
    files: dict[str | None, dict[str, FileChange]] = {}
    for _, base in others:
        for e in edited:
            was = base_blob.get((base, e.path))
            old = blob_id(was) if was is not None else ""
            files.setdefault(base, {})[e.path] = FileChange(
                e.path, "M" if old else "A", TEXT, (), e.lines, old_oid=old,
                new_oid=oids[e.result])
    found = unbound(repo, ledger, me, [Pair(theirs, base, WorkingSet(dict(files[base])))
                                       for theirs, base in others])
    spans = {e.path: e.lines for e in edited}
    return [[b for b in got if any(s <= b.line <= t for s, t in spans.get(b.path, ()))]
            for got in found]


def blob_id(data: bytes) -> str:
    """git's id of a blob of ``data`` (the base's blob is in the object store already)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def unbound_between(repo: gitio.Repo, ours: Agent, ref: str, commit: str, what: str,
                    conflicted: Collection[str] = ()) -> list[decision.Conflict]:
    """The calls git's merge of ``commit`` (``ref``, as named) into ``ours`` would leave
    unbound: symbol evidence of each side against their merge base, and the calls
    ``ours`` has already that the other side's change breaks (``what``: how the words
    name the merge). Each a Conflict, an RA where the symbol evidence alone is one."""
    assert ours.head is not None
    theirs = Agent(f"merge:{ref}", "", None, commit, commit, repo.commit_tree(commit))
    base = repo.merge_base(ours.head, commit)
    # theirs against the base; and the calls this tree has already (a fast-forward
    # brings only their change: a caller that came here before it, which their branch
    # now holds too after a rebase, is none of either side's new code)
    diff = gitio.git([*gitio.DIFF_ARGS, base or gitio.EMPTY_TREE, commit],
                     cwd=repo.here
                     ).stdout.decode("utf-8", "surrogateescape")
    here = callers(repo, ours.head, diff, set(hunks.parse(diff)))
    pairs = [Pair(theirs, base)] + ([Pair(theirs, base, here)] if here.files
                                          else [])
    led = open_ledger(repo)
    try:
        got = unbound(repo, led, ours, pairs, conflicted=list(conflicted))
    finally:
        if led is not None:
            led.close()
    found = list({(b.path, b.line): b for one in got for b in one}.values())
    return [decision.Conflict(text(ref), None, b.path, ((b.line, b.line),), "",
                              decision.RA if b.ra else decision.TA, "symbol",
                              f"{what} would leave a call that no longer binds: "
                              f"{text(b.detail, 600)}", ((b.line, b.line),))
            for b in found]


MAX_REFLOG = 50  # entries of a branch's reflog read for its last rebase, at most


def rebased_from(repo: gitio.Repo, branch: str, sha: str, trunk: str) -> str | None:
    """The tip the pushed ``branch`` (a full ref) had before the rebase that made the
    history ``sha`` holds, when it had work the ``trunk`` commit lacks: read from the
    branch's reflog, where git writes "rebase (finish): refs/heads/B onto X" (`git pull
    --rebase` alike). None: no such rebase."""
    try:
        entries = repo.pg.references[branch].log()
        for i, e in enumerate(entries):
            if i >= MAX_REFLOG:
                return None
            message = str(e.message or "")
            if "rebase" not in message or "(finish)" not in message:
                continue
            new, before = str(e.oid_new), str(e.oid_old)
            if set(before) == {"0"} or not (new == sha or repo.is_ancestor(new, sha)):
                return None  # (the newest rebase made another history: not this push's)
            return None if repo.is_ancestor(before, trunk) else before
    except (KeyError, ValueError):
        return None
    return None


def still_unbound(repo: gitio.Repo, ours: Agent, ref: str, before: str, sha: str, what: str
                  ) -> list[decision.Conflict]:
    """The calls the branch wrote before its rebase (its tip then: ``before``) that the
    trunk (``ours``) changed the definition of since, and that the pushed commit ``sha``
    still makes, line for line: after the rebase the trunk's change is history the push
    has, so the pair the scan judged before it is gone, and git merged cleanly."""
    tree, old_tree = repo.commit_tree(sha), repo.commit_tree(before)
    read: dict[tuple[str, str], list[bytes]] = {}

    def lines(at: str, path: str) -> list[bytes]:  # (each file read once, stripped)
        if (at, path) not in read:
            oid = repo.blob_id_at(at, path)
            read[at, path] = [ln.strip() for ln in repo.blob(oid).splitlines()] if oid else []
        return read[at, path]

    kept: list[decision.Conflict] = []
    for c in unbound_between(repo, ours, ref, before, what):
        if c.evidence != "symbol" or not c.ranges:
            continue
        had = lines(old_tree, c.path)
        n = c.ranges[0][0]
        if 0 < n <= len(had) and had[n - 1] and had[n - 1] in lines(tree, c.path):
            kept.append(c._replace(detail=f"{c.detail} (written before the rebase onto it, "
                                          "and pushed as written)"))
    return kept
