"""The pre-edit check's facts: may this worktree edit these lines now?

In process, without a scan or a snapshot: for each sibling worktree, only its change of the
requested paths (its files on disk against the blobs of the pair's merge base, with git's own
diff; committed, staged, unstaged and untracked work alike), its declared intents from the
ledger, and — only when the requested lines hold a definition's header — the identifiers its
new code uses (its last recorded state: a tree-to-tree diff).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from proximity import gitfiles, gitio, unsaved
from proximity.agents import calls, cycles, decision, definitions, scratch
from proximity.analysis import hunks
from proximity.analysis.intervals import MAX_PATH_BYTES
from proximity.analysis.languages import registry
from proximity.checkargs import DENY_ON
from proximity.errors import ConfigError, LedgerError, UsageError
from proximity.ledger import Ledger, clocks
from proximity.model import Agent, Range
from proximity.safetext import text

if TYPE_CHECKING:
    from proximity.ledger import Ledger

class Target(NamedTuple):
    path: str  # relative to the worktree root, '/'-separated
    ranges: tuple[Range, ...] | None  # lines of the current file; None: the whole file
    result: bytes | None = None  # the whole file after the edit, when the harness says


def relative(repo: gitio.Repo, path: str, cwd: str) -> str:
    """``path`` as the worktree's file it names ('/'-separated from the root); UsageError
    for a directory, a path outside the worktree or in git's own directory, or a name
    longer than any file's (MAX_PATH_BYTES, as docs/agents.md says)."""
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise UsageError(f"a path of {len(os.fsencode(path))} bytes ({path[:60]!r}…): at "
                         f"most {MAX_PATH_BYTES}")
    full = os.path.realpath(os.path.join(cwd, path))
    if os.path.isdir(full):
        raise UsageError(f"{path} is a directory: check the files you will edit "
                         "(PATH[:START-END]); `proximity status` shows who works where")
    rel = os.path.relpath(full, repo.workdir)
    if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
        raise UsageError(f"{path} is outside this worktree ({repo.workdir})")
    if rel.split(os.sep, 1)[0] == ".git":
        raise UsageError(f"{path} is git's own, not a file of the worktree")
    return rel.replace(os.sep, "/")


def deny_policy(given: str | None) -> str:
    """``--deny-on`` or git config ``proximity.checkPolicy`` (given), else ``ra``."""
    value = given or "ra"
    if value not in DENY_ON:
        raise ConfigError(f"proximity.checkPolicy = {value!r}: want one of "
                          f"{', '.join(DENY_ON)}")
    return value


# -- facts ----------------------------------------------------------------------------
def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _ignored_new(worktree: str, path: str, base_blob: bytes | None) -> bool:
    """A file the base does not have and git would not add (ignored): not their work."""
    return base_blob is None and path not in gitio.untracked(worktree, [path]) and \
        not _tracked(worktree, path)


def _tracked(worktree: str, path: str) -> bool:
    return bool(gitio.git_many([(["ls-files", "--", path], worktree)], ok=(0,))[0])


def _intents(ledger: Ledger | None) -> dict[str, dict[str, tuple[Range, ...] | None]]:
    """Live intents per stream (forward decay above zero)."""
    if ledger is None:
        return {}

    try:
        items = ledger.intents()
        now = ledger.clocks()
    except LedgerError:
        return {}
    out: dict[str, dict[str, tuple[Range, ...] | None]] = {}
    for stream, paths in items.items():
        for path, (ranges, clock) in paths.items():
            if clocks.forward_decay(clocks.hop_count(clock, now.get(stream, clock))) > 0:
                out.setdefault(stream, {})[path] = tuple(ranges) if ranges else None
    return out


# What a process that answers many checks (the resident service) learns once: parsed
# diffs of a worktree's file against a base blob, by the file's content (a sibling's file
# is diffed once per state); base blobs and merge bases, by commit (they never change); a
# sibling's recorded work against its base, by the two trees, and the uses it makes of
# names, by the trees and the names (each worktree's staged moves are kept by its index
# file: renames). Each table is cleared past ENTRIES.
DIFFS: dict[tuple[str, str | None, str, bytes | None], hunks.FileDiff | None] = {}
DIFF_ENTRIES = 4096
BLOBS: dict[tuple[str | None, str], bytes | None] = {}
BASES: dict[tuple[str | None, str], str | None] = {}
TREE_DIFFS: dict[tuple[str | None, str], bytes] = {}
USES: dict[tuple[tuple[str | None, str], tuple[str, ...], str], tuple[decision.Use, ...]] = {}
ENTRIES = 2048
K = TypeVar("K")
V = TypeVar("V")
BLOB_BYTES = 1 << 20  # a larger blob is read again each time, not kept


def remember(table: dict[K, V], items: Mapping[K, V]) -> None:
    """Keep ``items`` in one of the tables above (a blob past BLOB_BYTES is not kept)."""
    if len(table) + len(items) > ENTRIES:
        table.clear()
    table.update({k: v for k, v in items.items()
                  if not isinstance(v, bytes) or len(v) <= BLOB_BYTES})


def _diff_key(wpath: str, base: str | None, path: str, data: bytes | None
              ) -> tuple[str, str | None, str, bytes | None]:
    import hashlib

    return (wpath, base, path, None if data is None else hashlib.sha1(data).digest())


def recorded_tree(ledger: Ledger | None, repo: gitio.Repo, w: gitio.WorktreeInfo) -> str:
    """The sibling's last recorded working tree, else its HEAD."""
    ev = None
    if ledger is not None:
        try:
            ev = ledger.last_event(w.id)
        except LedgerError:
            ev = None
    if ev is not None and ev.tree and ev.head == w.head:
        return ev.tree
    return w.head or gitio.EMPTY_TREE


def gather(repo: gitio.Repo, targets: Sequence[Target], ledger: Ledger | None,
           merging: str | None = None, merged: str | None = None) -> list[decision.Side]:
    """Every sibling's evidence about the targets. Git's work runs as concurrent
    processes, in three rounds: merge bases, diffs of the requested paths, and (only when
    the requested lines define symbols) the siblings' whole diffs. ``merging``: a commit
    this worktree is about to merge; a pair's base is then what it will be after the merge
    (a sibling on that branch shares its commits with this worktree then: only its own
    work beyond them is its change; ``merged``, the merge's tree, then says which lines
    this worktree will change against that base: only those can meet its work)."""
    me = repo.current()
    paths = sorted({t.path for t in targets})
    # most pairs share this worktree's HEAD as their base: read its blobs while the
    # worktrees are listed
    early: dict[tuple[str | None, str], subprocess.Popen[bytes]] = {
        (me.head, p): gitio.git_start(gitio.blob_args(me.head, p), repo.workdir)
        for p in paths if (me.head, p) not in BLOBS} if me.head else {}
    try:
        listed = repo.worktrees_from_files()
        siblings = [w for w in (repo.worktrees() if listed is None else listed)
                    if w.id != me.id and not w.prunable and not w.populating
                    and os.path.isdir(w.path)]
    finally:
        prefetched = {k: gitio.git_finish(v, ok=(0,)) for k, v in early.items()}
    remember(BLOBS, {k: v for k, v in prefetched.items() if v is not None})
    prefetched.update({(me.head, p): BLOBS[me.head, p] for p in paths
                       if me.head and (me.head, p) in BLOBS})
    if not siblings:
        return []
    # 1. the merge base of each pair (a pair of commits has one for good)
    heads = sorted({w.head for w in siblings if w.head and w.head != me.head}
                   if me.head else ())
    asked = [h for h in heads if (me.head, h) not in BASES]
    found = gitio.git_many([(["merge-base", me.head or "", h], repo.workdir) for h in asked])
    based = {h: (out.decode().strip() or None) if out is not None else None
             for h, out in zip(asked, found, strict=True)}
    # (a failure is asked again next time; "no common commit" is an answer)
    remember(BASES, {(me.head, h): based[h] for h, out in zip(asked, found, strict=True)
                     if out is not None})
    base_of = {h: BASES[me.head, h] if (me.head, h) in BASES else based.get(h)
               for h in heads}
    moved: set[str] = set()  # bases taken from the merged branch's side
    if merging:
        after = gitio.git_many([(["merge-base", merging, h], repo.workdir) for h in heads])
        for h, res in zip(heads, after, strict=True):
            b2 = res.decode().strip() if res else ""
            b1 = base_of.get(h)
            if b2 and b2 != b1 and (b1 is None or repo.is_ancestor_cli(b1, b2)):
                base_of[h] = b2  # the later of the two: the base after the merge
                moved.add(b2)
    # against such a base, this worktree's change is the merged tree's, not the merge's
    after_merge: dict[str, dict[str, hunks.FileDiff]] = {}
    if merged and moved:
        texts = gitio.git_many([(["diff", "--no-color", "--no-ext-diff", "-M", "-U0", b, merged,
                                  "--", *paths], repo.workdir) for b in sorted(moved)],
                               env=repo.objects_env())  # (the merge's tree is in the store)
        after_merge = {b: hunks.parse((t or b"").decode("utf-8", "replace"))
                       for b, t in zip(sorted(moved), texts, strict=True)}
    if me.head:
        base_of[me.head] = me.head
    bases = {w.id: base_of.get(w.head) if w.head else None for w in siblings}
    # 2. each side's change of the requested paths: the file on disk against the base's
    # blob. Byte-identical needs no git at all; the rest is one `git diff --no-index` each
    # (git's own diff, without reading a 10k-entry index)
    distinct = sorted({b or "" for b in bases.values()})
    # moves, as git's merge follows them: a requested path this worktree moved is its
    # old path in the base; a sibling that moved that old path has its work at the new one
    moves = renames([(me.path, b or None) for b in distinct]
                    + [(w.path, bases[w.id]) for w in siblings])
    origin: dict[tuple[str | None, str], str] = {}  # (base, requested path) -> base path
    for one in distinct:
        back = {new: old for old, new in moves.get((me.path, one or None), {}).items()}
        origin.update({(one or None, p): back.get(p, p) for p in paths})
    wanted = [(b or None, p) for b in distinct for p in paths
              if (b or None, p) not in prefetched or origin[b or None, p] != p]
    known = {k: BLOBS[k[0], origin[k]] for k in wanted if (k[0], origin[k]) in BLOBS}
    asked_blobs = [k for k in wanted if k not in known]
    blobs = gitio.git_many([(gitio.blob_args(b, origin[b, p]), repo.workdir)
                            for b, p in asked_blobs], ok=(0,))
    remember(BLOBS, {(b, origin[b, p]): blob
                     for (b, p), blob in zip(asked_blobs, blobs, strict=True)
                     if blob is not None})
    base_blob = {**{k: v for k, v in prefetched.items() if k[0] in bases.values()}, **known,
                 **dict(zip(asked_blobs, blobs, strict=True))}
    sides = [(w.id, w.path, bases[w.id]) for w in siblings] + [
        ("", me.path, b or None) for b in distinct]
    todo, keys = [], []
    diffs: dict[tuple[str, str | None], dict[str, hunks.FileDiff]] = {}
    lives: dict[tuple[str, str], str] = {}  # (worktree id, requested path) -> its file
    # a person's unsaved editor buffer is that worktree's live file: read in its place
    buffers = unsaved.listing(repo.ecm_dir)
    typed: set[str] = set()  # requested paths this worktree holds in an unsaved buffer
    for key, wpath, base in sides + [(SAVED, me.path, b or None) for b in distinct]:
        for p in paths:
            if key == SAVED and p not in typed:
                continue
            rel = p if key in ("", SAVED) else moves.get((wpath, base), {}).get(
                origin[base, p], origin[base, p])
            live = lives[key, p] = os.path.join(wpath, rel)
            if buffers and key != SAVED:
                live = lives[key, p] = unsaved.live(buffers, key or me.id, rel, live) or live
                if not key and live != os.path.join(wpath, rel):
                    typed.add(p)  # (its saved file's change is asked too: see Side.typed)
            data = raw = _read_bytes(live)
            if data is not None and data != base_blob[base, p] and b"\r\n" in data:
                data = data.replace(b"\r\n", b"\n")  # an autocrlf checkout of the same blob
            if data != base_blob[base, p] and not (
                    os.path.exists(live) and _ignored_new(wpath, p, base_blob[base, p])):
                ck = _diff_key(wpath, base, f"{rel}\0{origin[base, p]}", raw)
                if ck in DIFFS:  # this very file against this very base: diffed before
                    hit = DIFFS[ck]
                    if hit is not None:
                        diffs.setdefault((key, base), {})[p] = hit
                    continue
                todo.append((key, wpath, base, p, rel, live))
                keys.append(ck)
    # the base blobs as files (git diffs files): kept by content, so a buffer typed into
    # is diffed against the same file every time
    olds = {(b, p): scratch.holding(data) for (b, p), data in base_blob.items()
            if data is not None and any(t[2] == b and t[3] == p for t in todo)}
    texts = gitio.git_many([(gitio.file_diff_args(
        olds.get((base, p), os.devnull), live if os.path.exists(live) else os.devnull),
        wpath) for _, wpath, base, p, _rel, live in todo])
    if len(DIFFS) + len(todo) > DIFF_ENTRIES:
        DIFFS.clear()
    for (key, wpath, base, p, rel, live), raw, ck in zip(todo, texts, keys, strict=True):
        parsed = hunks.parse((raw or b"").decode("utf-8", "replace"))
        if not parsed and raw and b"\nBinary files " in b"\n" + raw:
            # two differently named files' binary diff names no path git's way: still a
            # change (without it a sibling's changed image was not seen)
            parsed = {p: hunks.FileDiff((), binary=True)}
        got = None
        for d in parsed.values():
            diffs.setdefault((key, base), {})[p] = got = d
        # kept when git answered about the content read (not a save made meanwhile)
        if raw is not None and _diff_key(wpath, base, f"{rel}\0{origin[base, p]}",
                                         _read_bytes(live)) == ck:
            DIFFS[ck] = got
    theirs = {w.id: diffs.get((w.id, bases[w.id]), {}) for w in siblings}
    mine = {b or None: diffs.get(("", b or None), {}) for b in distinct}
    saved = {b or None: diffs.get((SAVED, b or None), {}) for b in distinct}
    # 3. symbols defined in the requested lines, used by a sibling's new code: its work as
    # last recorded in the ledger (hooks, PostToolUse), a tree-to-tree diff that never
    # walks a worktree; its committed work when it has no recorded state
    defined = {t.path: definitions.defined_at(me.path, t.path, t.ranges,
                                              lives.get(("", t.path))) for t in targets}
    uses: dict[str, dict[str, tuple[decision.Use, ...]]] = {}
    # the edit's new lines that call something (a file after the edit, as the harness or
    # the editor gives it): asked below whether a sibling's change leaves the call unbound
    writing = _writing(targets, lives)
    if any(defined.values()):
        states = {w.id: recorded_tree(ledger, repo, w) for w in siblings}
        pairs = {w.id: (bases[w.id], states[w.id]) for w in siblings}
        asked_trees = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS},
                             key=str)
        more = gitio.git_many([(gitio.tree_diff_args(b, t), repo.workdir)
                               for b, t in asked_trees],
                              env=repo.objects_env())  # (recorded trees: the store)
        fresh = dict(zip(asked_trees, more, strict=True))
        remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
        for w in siblings:  # (two trees' diff never changes: kept by the pair of ids)
            uses[w.id] = {t.path: new_uses(pairs[w.id], fresh, defined[t.path], t.path)
                          for t in targets if defined[t.path]}
    # 5. a call the edit writes to a definition a sibling changed: the scan's own symbol
    # evidence (its work as recorded against the pair's base, this side's new code the
    # edit's lines), asked only of a sibling whose diff mentions a name the lines call
    works = _their_work(repo, ledger, siblings, bases) if writing else {}
    broken = _broken_calls(repo, ledger, me, siblings, bases, base_blob, writing, works)
    intents = _intents(ledger)
    out = []
    for w in siblings:
        declared = intents.get(w.id, {})
        for t in targets:
            own = mine[bases[w.id]].get(t.path)
            base_ranges = None if t.ranges is None else joined(
                tuple(hunks.to_base(t.ranges, own.hunks if own else ())), own)
            if bases[w.id] in after_merge:
                change = after_merge[str(bases[w.id])].get(t.path)
                if change is None:
                    continue  # the merged tree leaves this file as that base has it
                base_ranges = edits_of({t.path: change})[0][1]
            out.append(decision.Side(
                w.id, w.branch, t.path, base_ranges, t.ranges, theirs[w.id].get(t.path),
                declared.get(t.path), t.path in declared, uses.get(w.id, {}).get(t.path, ()),
                own=own, calls=broken.get((w.id, t.path), ()), typed=t.path in typed,
                saved=saved[bases[w.id]].get(t.path)))
    # 4. an edit whose result the harness gave, on lines a sibling changed too: git's own
    # three-way merge of the file says whether they collide (the same change made on both
    # sides merges cleanly: a swarm's two bumps of one dependency are not a conflict)
    jobs = [(i, base_blob[bases[s.agent], s.path], t.result, lives[s.agent, s.path],
             lives.get(("", s.path)))
            for i, s in enumerate(out) for t in targets
            if t.path == s.path and t.result is not None
            and any(c.evidence == "conflict" for c in decision.evidence(s))]
    for i, outcome in merges(jobs, repo.workdir).items():
        out[i] = out[i]._replace(merge=outcome)
    return out


def new_uses(pair: tuple[str | None, str], fresh: Mapping[tuple[str | None, str], bytes | None],
             names: list[str], path: str) -> tuple[decision.Use, ...]:
    """definitions.new_uses of ``names`` (defined in ``path``) in the sibling's recorded
    work, the diff of the trees ``pair``; kept by the two trees and the names (the person
    typing in one definition asks the same question at every keystroke)."""
    key = (pair, tuple(names), path)
    if key in USES:
        return USES[key]
    raw = TREE_DIFFS.get(pair, fresh.get(pair))
    found = tuple(definitions.new_uses((raw or b"").decode("utf-8", "replace"), names, path))
    if raw is not None:
        remember(USES, {key: found})
    return found


def _their_work(repo: gitio.Repo, ledger: Ledger | None, siblings: Sequence[gitio.WorktreeInfo],
                bases: Mapping[str, str | None]) -> dict[str, tuple[str, str]]:
    """Each sibling's work as last recorded in the ledger (hooks, PostToolUse), else its
    committed work: (its tree, its diff against the pair's base), a tree-to-tree diff that
    never walks a worktree (two trees' diff never changes: kept by the pair of ids)."""
    states = {w.id: recorded_tree(ledger, repo, w) for w in siblings}
    pairs = {w.id: (bases[w.id], states[w.id]) for w in siblings}
    asked_trees = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS}, key=str)
    more = gitio.git_many([(gitio.tree_diff_args(b, t), repo.workdir) for b, t in asked_trees],
                          env=repo.objects_env())  # (recorded trees: the store)
    fresh = dict(zip(asked_trees, more, strict=True))
    remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
    return {w.id: (states[w.id], (TREE_DIFFS.get(pairs[w.id], fresh.get(pairs[w.id]))
                                  or b"").decode("utf-8", "replace")) for w in siblings}


def _writing(targets: Sequence[Target], lives: Mapping[tuple[str, str], str]
             ) -> dict[str, tuple[tuple[Range, ...], set[str], bytes]]:
    """Per edited file whose text after the edit is known: the lines the edit writes
    (against the file as it is now; an editor's buffer that is the live file already: its
    own lines, as asked), the names those lines call, and the text after the edit. Files
    whose edit writes no call: left out."""
    out = {}
    for t in targets:
        if t.result is None or registry.dialect_of(t.path) is None:
            continue
        now = _read_bytes(lives.get(("", t.path), ""))
        result = t.result.decode("utf-8", "replace")
        if now is not None and now == t.result:
            lines = tuple(t.ranges or ((1, result.count("\n") + 1),))
        else:
            lines = calls.added(None if now is None else now.decode("utf-8", "replace"),
                                result)
        names = calls.called(result, lines)
        if names:
            out[t.path] = (lines, names, t.result)
    return out


def _broken_calls(repo: gitio.Repo, ledger: Ledger | None, me: gitio.WorktreeInfo,
                  siblings: Sequence[gitio.WorktreeInfo], bases: Mapping[str, str | None],
                  base_blob: Mapping[tuple[str | None, str], bytes | None],
                  writing: Mapping[str, tuple[tuple[Range, ...], set[str], bytes]],
                  works: Mapping[str, tuple[str, str]]
                  ) -> dict[tuple[str, str], tuple[decision.Call, ...]]:
    """(sibling, path) -> the calls the edit writes there that the sibling's recorded
    work leaves unbound, and whether this worktree must yield to them (a standing RA)."""
    if not writing:
        return {}
    called = set().union(*(names for _, names, _ in writing.values()))
    suspects = [w for w in siblings if called & calls.defined(works[w.id][1])]
    if not suspects:
        return {}
    ours = Agent(me.id, me.path, me.branch, me.head)
    edited = [calls.Edited(p, result, lines)
              for p, (lines, _, result) in sorted(writing.items())]
    try:
        # the files after the edit, as blobs the symbol channel reads (written, as a
        # snapshot's are: an object nothing refers to is git's to prune)
        oids = {result: gitio.git(["hash-object", "-w", "--stdin"], cwd=repo.workdir,
                                  input=result).stdout.decode().strip()
                for _, _, result in writing.values()}
        found = calls.new_calls(repo, ledger, ours, [
            (Agent(w.id, w.path, w.branch, w.head, None, works[w.id][0]), bases[w.id])
            for w in suspects], edited, base_blob, oids)
    except Exception:  # the symbol machinery is optional evidence, never a failure
        return {}
    out: dict[tuple[str, str], tuple[decision.Call, ...]] = {}
    for w, got in zip(suspects, found, strict=True):
        held = None
        if got and ledger is not None:
            with contextlib.suppress(LedgerError):
                held = ledger.held(me.id, w.id)
        must_yield = held is not None and held[0] == me.id
        for b in got:
            out[w.id, b.path] = (*out.get((w.id, b.path), ()),
                                 decision.Call(b.path, b.line, b.detail, must_yield))
    return out


def signatures(start: str) -> list[tuple[str, str | None, definitions.Signature]]:
    """Each sibling's rewritten definition headers (its work as last recorded, against
    the pair's merge base): (worktree id, branch, signature). The evidence for a call that a
    sibling's changed signature may break, wherever the call is."""
    repo = gitio.Repo(start, fast=True)
    me = repo.current()
    listed = repo.worktrees_from_files()  # (no `git worktree list`, as the check's own)
    siblings = [w for w in (repo.worktrees() if listed is None else listed)
                if w.id != me.id and not w.prunable and os.path.isdir(w.path)]
    if not siblings:
        return []
    heads = sorted({w.head for w in siblings if w.head})
    asked = [h for h in heads if me.head and (me.head, h) not in BASES]
    found = gitio.git_many([(["merge-base", me.head or "", h], repo.workdir) for h in asked])
    remember(BASES, {(me.head, h): (out.decode().strip() or None)
                     for h, out in zip(asked, found, strict=True) if out is not None})
    base_of = {h: BASES.get((me.head, h)) for h in heads}
    ledger = open_ledger(repo)
    try:
        states = {w.id: recorded_tree(ledger, repo, w) for w in siblings}
    finally:
        if ledger is not None:
            ledger.close()
    # (two trees' diff never changes: kept by the pair of ids, as the symbol evidence's)
    pairs = {w.id: (base_of.get(w.head or ""), states[w.id]) for w in siblings}
    todo = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS}, key=str)
    fresh = dict(zip(todo, gitio.git_many([(gitio.tree_diff_args(b, t), repo.workdir)
                                           for b, t in todo],
                                          env=repo.objects_env()),  # (recorded: the store)
                     strict=True))
    remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
    texts = [TREE_DIFFS.get(pairs[w.id], fresh.get(pairs[w.id])) for w in siblings]
    return [(w.id, w.branch, sig) for w, raw in zip(siblings, texts, strict=True)
            for sig in definitions.changed_signatures((raw or b"").decode("utf-8", "replace"))]


def joined(ranges: tuple[Range, ...], own: hunks.FileDiff | None) -> tuple[Range, ...]:
    """The requested base lines with this worktree's own changes that touch them, as
    git's merge joins them into one change: a sibling's work touching any part of it
    conflicts with the edit (a line changed earlier beside the request is not a gap)."""
    if own is None or not own.hunks:
        return ranges
    out = list(ranges)
    for _ in range(len(own.hunks)):
        more = [h.base for h in hunks.contested(own, out) if h.base not in out]
        if not more:
            break
        out += more
    return tuple(sorted(out))


def merges(jobs: Sequence[tuple[int, bytes | None, bytes | None, str, str | None]],
           cwd: str) -> dict[int, str]:
    """``git merge-file`` of (base blob, this file after the edit, the sibling's file on
    disk; this side's live file, which may already hold the edit's result: an editor's
    shared buffer), per job: "same" when the merge is this side's result (they made no change this
    edit does not make too), "clean" when it merges cleanly otherwise; a conflicted (or
    unreadable) merge is left out."""
    jobs = [j for j in jobs if j[2] is not None and os.path.isfile(j[3])]
    if not jobs:
        return {}
    args = []
    for _, base, result, theirs, live in jobs:
        mine = live if live and scratch.same_file(result or b"", live) \
            else scratch.holding(result or b"")
        args.append((gitio.merge_file_args(mine, scratch.holding(base or b""), theirs), cwd))
    got = gitio.git_many(args, ok=(0,))
    return {i: "same" if merged == result else "clean"
            for (i, _, result, _, _), merged in zip(jobs, got, strict=True) if merged is not None}


def renames(pairs: Sequence[tuple[str, str | None]]
            ) -> dict[tuple[str, str | None], dict[str, str]]:
    """Per (worktree, base): the files it moved since the base, committed or staged (a
    `git mv`), old path -> new path, found as git's merge finds them (-M, its default
    similarity). Unstaged moves (a plain `mv`) are a deletion and a new file to git too."""
    jobs = sorted({(p, b) for p, b in pairs if b})
    out: dict[tuple[str, str | None], dict[str, str]] = {}
    # the staged moves depend on the index file and the base alone: a worktree whose index
    # was not written since (git replaces it whole: a new inode) is not asked again
    marks = {p: _index_mark(p) for p, _ in jobs}
    ask = [(p, b) for p, b in jobs if marks[p] is None or MOVES.get((p, b), (None,))[0]
           != marks[p]]
    texts = gitio.git_many([(["diff-index", "--cached", "-M", "-z", "--name-status",
                              "--diff-filter=R", b], p) for p, b in ask])
    if len(MOVES) + len(ask) > DIFF_ENTRIES:
        MOVES.clear()
    for (p, b), raw in zip(ask, texts, strict=True):
        parts = (raw or b"").decode("utf-8", "surrogateescape").split("\0")
        moved = {}
        for i in range(0, len(parts) - 2, 3):
            if parts[i].startswith("R"):
                moved[parts[i + 1]] = parts[i + 2]
        mark = marks[p]
        if raw is not None and mark is not None:
            MOVES[p, b] = (mark, moved)
        out[p, b] = moved
    for p, b in jobs:
        if (p, b) not in out:
            out[p, b] = dict(MOVES[p, b][1])
    return out


# The staged moves of a worktree against a base, by its index file's identity (renames).
MOVES: dict[tuple[str, str | None], tuple[tuple[int, int, int], dict[str, str]]] = {}


def _index_mark(worktree: str) -> tuple[int, int, int] | None:
    """The identity of a worktree's index file (None: not known from files)."""
    found = gitfiles.checkout_of(worktree)
    if found is None:
        return None
    try:
        st = os.stat(os.path.join(found[0], found[1], "index"))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


SAVED = "\0saved"  # the key of this worktree's saved files where a buffer is read instead


def edits_of(change: dict[str, hunks.FileDiff]) -> list[tuple[str, tuple[Range, ...] | None]]:
    """The check a change asks, per path: the lines of the old file it replaces (a pure
    insertion: its anchor line; an added or binary file: the whole file)."""
    out: list[tuple[str, tuple[Range, ...] | None]] = []
    for path, d in sorted(change.items()):
        if d.new_file or d.binary or not d.hunks:
            out.append((path, None))
            continue
        rs = sorted({h.base if h.old_lines else (max(1, h.old_start),) * 2 for h in d.hunks})
        out.append((path, tuple(rs)))
    return out


def check(start: str, targets: Sequence[tuple[str, tuple[Range, ...] | None]],
          deny_on: str | None = None, cwd: str | None = None,
          merging: str | None = None, merged: str | None = None,
          results: Mapping[str, str] | None = None,
          steer: Collection[str] = ()) -> decision.Decision:
    """The decision for editing ``targets`` (paths relative to ``cwd``) in the worktree
    that contains ``start`` (by merging the commit ``merging``, when given). ``results``:
    a file's whole text after the edit, by the path given, where the harness says it.
    ``steer``: more siblings that yield here (to the work a merge brings in), beside the
    ones told to yield to this worktree."""
    repo = gitio.Repo(start, fast=True)
    after = results or {}
    tg = [Target(relative(repo, p, cwd or start), r,
                 after[p].encode() if p in after else None) for p, r in targets]
    files = None if deny_on else config_files(repo)
    cfg = None if deny_on or files in POLICY else gitio.git_start(
        ["config", "--get", "proximity.checkPolicy"], repo.workdir)
    ledger = open_ledger(repo)
    try:
        sides = gather(repo, tg, ledger, merging, merged)
        me = repo.current().id
        behind = yielding_to(ledger, me, {s.agent for s in sides})
    finally:
        if ledger is not None:
            ledger.close()
        configured = gitio.git_finish(cfg) if cfg is not None else None
    if cfg is not None and configured is not None and files is not None:
        remember(POLICY, {files: configured})
    elif files in POLICY:
        configured = POLICY[files]
    policy = deny_policy(deny_on or (configured or b"").decode().strip() or None)
    ahead = {a: f"'{text(a)}' was told to yield to the work this merge brings in: it goes "
             "first, they steer" for a in steer}
    d = decision.decide(sides, policy, behind, ahead)
    if d.decision != decision.DENY:
        return d
    # a sibling in the way may hold other worktrees' work, not its own (the main checkout
    # that merged a lane and could not push it yet): right-of-way is that work's
    denying = {c.agent for c in d.conflicts if c.level == decision.RA}
    more = holding_yielders(repo, me, denying) if denying else set()
    if more:
        ahead = {**{a: f"'{text(a)}' holds work that was told to yield to you: you have "
                    "right-of-way, they steer" for a in more}, **ahead}
        d = decision.decide(sides, policy, behind, ahead)
    if d.decision != decision.DENY:
        return d
    return cycles.wait_cycles(repo, me, sides, policy, behind, ahead, d)


def holding_yielders(repo: gitio.Repo, me: str, siblings: set[str]) -> set[str]:
    """Those of ``siblings`` whose work beyond what their branch's remote-tracking ref
    has is other worktrees' lines of work -- each one's HEAD among those commits -- of
    which one was told to yield to this worktree: they yield here as that work does
    (else the main checkout holding a lane's merge it may not push denied the very
    worktree the lane yields to, and each waited for the other)."""
    if repo.no_remote_refs():
        return set()  # no branch has a remote-tracking ref to be beyond (no git process)
    listed = repo.worktrees_from_files()
    trees = [w for w in (repo.worktrees() if listed is None else listed) if not w.prunable]
    candidates = [w for w in trees if w.id in siblings and w.branch and w.head]
    if not candidates:
        return set()
    got = gitio.git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes"],
                    cwd=repo.workdir, ok=(0, 128)).stdout.decode("utf-8", "replace")
    tracking: dict[str, set[str]] = {}
    for line in got.splitlines():
        ref, _, sha = line.partition(" ")
        parts = ref.split("/", 3)  # refs, remotes, <remote>, <branch>
        if len(parts) == 4 and sha:
            tracking.setdefault(parts[3], set()).add(sha)
    ledger = None
    out: set[str] = set()
    try:
        for w in candidates:
            had = tracking.get(str(w.branch))
            if not had or w.head in had:
                continue
            ahead = set(gitio.git(["rev-list", "--max-count=2000", str(w.head), "--not",
                                   *sorted(had)], cwd=repo.workdir, ok=(0, 128)
                                  ).stdout.decode().split())
            lines = [v.id for v in trees if v.id not in (w.id, me) and v.head in ahead]
            if not lines:
                continue
            ledger = ledger or open_ledger(repo)
            if yielding_to(ledger, me, set(lines)):
                out.add(w.id)
    finally:
        if ledger is not None:
            ledger.close()
    return out


# git config --get proximity.checkPolicy, kept by the state of every file git reads it
# from; a configuration that includes other files (their states are not known here) is
# asked every time
POLICY: dict[tuple[tuple[str, int, int, int] | None, ...], bytes] = {}


def config_files(repo: gitio.Repo) -> tuple[tuple[str, int, int, int] | None, ...] | None:
    """The state (inode, size, mtime) of each configuration file git reads for this
    worktree, or None when one includes others."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    names = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
             os.path.join(xdg, "git", "config"),
             os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             os.path.join(repo.common, "config"), os.path.join(repo.gitdir, "config.worktree")]
    out: list[tuple[str, int, int, int] | None] = []
    for name in names:
        try:
            st = os.stat(name)
            with open(name, "rb") as f:
                if b"include" in f.read().lower():
                    return None
        except OSError:
            out.append(None)
            continue
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def yielding_to(ledger: Ledger | None, me: str, others: set[str]) -> set[str]:
    """The siblings a standing Resolution Advisory told to yield to this worktree (the
    one order every worktree reads, scan's ``yields``): this worktree holds course there,
    so where its own change meets theirs their work asks rather than denies it (two
    agents never deny each other into a wait for the other to land); lines only they
    changed stay theirs (decision.held)."""
    if ledger is None:
        return set()
    out = set()
    for other in others:
        try:
            got = ledger.held(me, other)
        except LedgerError:
            return set()
        if got is not None and got[0] == other:
            out.add(other)
    return out


def open_ledger(repo: gitio.Repo) -> Ledger | None:
    try:
        return Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return None
