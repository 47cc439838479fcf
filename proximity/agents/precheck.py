"""The pre-edit check's facts: may this worktree edit these lines now?

In process, without a scan or a snapshot: for each sibling worktree, only its change of the
requested paths (its files on disk against the blobs of the pair's merge base, with git's own
diff; committed, staged, unstaged and untracked work alike), its declared intents from the
ledger, and — only when the requested lines hold a definition's header — the identifiers its
new code uses (its last recorded state: a tree-to-tree diff).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from proximity import gitio, unsaved
from proximity.agents import (
    cycles,
    decision,
    definitions,
    filemerge,
    placing,
    scratch,
    standing,
    theirs,
)
from proximity.agents.checkpolicy import POLICY, config_files, deny_policy
from proximity.agents.edits import Target, encoded
from proximity.agents.kept import (
    BASES,
    BLOBS,
    DIFF_ENTRIES,
    DIFFS,
    TREE_DIFFS,
    diff_key,
    remember,
)
from proximity.agents.scratch import read_bytes
from proximity.analysis import hunks
from proximity.analysis.intervals import MAX_PATH_BYTES
from proximity.errors import LedgerError, UsageError
from proximity.ledger import Ledger, clocks
from proximity.model import Range
from proximity.safetext import text

if TYPE_CHECKING:
    from proximity.ledger import Ledger

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


# -- facts ----------------------------------------------------------------------------
def _ignored_new(worktree: gitio.At, path: str, base_blob: bytes | None) -> bool:
    """A file the base does not have and git would not add (ignored): not their work."""
    return base_blob is None and path not in gitio.untracked(worktree, [path]) and \
        not _tracked(worktree, path)


def _tracked(worktree: gitio.At, path: str) -> bool:
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
        (me.head, p): gitio.git_start(gitio.blob_args(me.head, p), repo.here)
        for p in paths if (me.head, p) not in BLOBS} if me.head else {}
    try:
        siblings = [w for w in repo.worktrees_fast()
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
    found = gitio.git_many([(["merge-base", me.head or "", h], repo.here) for h in asked])
    based = {h: (out.decode().strip() or None) if out is not None else None
             for h, out in zip(asked, found, strict=True)}
    # (a failure is asked again next time; "no common commit" is an answer)
    remember(BASES, {(me.head, h): based[h] for h, out in zip(asked, found, strict=True)
                     if out is not None})
    base_of = {h: BASES[me.head, h] if (me.head, h) in BASES else based.get(h)
               for h in heads}
    moved: set[str] = set()  # bases taken from the merged branch's side
    if merging:
        after = gitio.git_many([(["merge-base", merging, h], repo.here) for h in heads])
        for h, res in zip(heads, after, strict=True):
            b2 = res.decode().strip() if res else ""
            b1 = base_of.get(h)
            if b2 and b2 != b1 and (b1 is None or repo.is_ancestor_cli(b1, b2)):
                base_of[h] = b2  # the later of the two: the base after the merge
                moved.add(b2)
    # against such a base, this worktree's change is the merged tree's, not the merge's
    after_merge: dict[str, dict[str, hunks.FileDiff]] = {}
    if merged and moved:
        texts = gitio.git_many([([*gitio.MOVED_DIFF_ARGS, b, merged, "--", *paths],
                                 repo.here) for b in sorted(moved)],
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
    moves = filemerge.renames([(me.at, b or None) for b in distinct]
                              + [(w.at, bases[w.id]) for w in siblings])
    origin: dict[tuple[str | None, str], str] = {}  # (base, requested path) -> base path
    for one in distinct:
        back = {new: old for old, new in moves.get((me.path, one or None), {}).items()}
        origin.update({(one or None, p): back.get(p, p) for p in paths})
    wanted = [(b or None, p) for b in distinct for p in paths
              if (b or None, p) not in prefetched or origin[b or None, p] != p]
    known = {k: BLOBS[k[0], origin[k]] for k in wanted if (k[0], origin[k]) in BLOBS}
    asked_blobs = [k for k in wanted if k not in known]
    blobs = gitio.git_many([(gitio.blob_args(b, origin[b, p]), repo.here)
                            for b, p in asked_blobs], ok=(0,))
    remember(BLOBS, {(b, origin[b, p]): blob
                     for (b, p), blob in zip(asked_blobs, blobs, strict=True)
                     if blob is not None})
    base_blob = {**{k: v for k, v in prefetched.items() if k[0] in bases.values()}, **known,
                 **dict(zip(asked_blobs, blobs, strict=True))}
    sides = [(w.id, w.path, bases[w.id]) for w in siblings] + [
        ("", me.path, b or None) for b in distinct]
    # where git runs in each worktree: its repository named, never the one its `.git`
    # file names (gitio.At)
    ats = {w.path: w.at for w in [*siblings, me]}
    todo, keys = [], []
    diffs: dict[tuple[str, str | None], dict[str, hunks.FileDiff]] = {}
    lives: dict[tuple[str, str], str] = {}  # (worktree id, requested path) -> its file
    # a person's unsaved editor buffer is that worktree's live file: read in its place
    buffers = unsaved.listing(repo.ecm_dir)
    typed: set[str] = set()  # requested paths this worktree holds in an unsaved buffer
    read: dict[str, bytes | None] = {}  # the files read, by path
    large: set[str] = set()  # files past scratch.MAX_READ: never read whole
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
            if key not in ("", SAVED) and scratch.retyped(repo, base, origin[base, p],
                                                  os.path.join(wpath, rel),
                                                  os.path.join(me.path, p)):
                # a file made a link, or a link a file: git's merge stops at "distinct
                # types" whatever the lines (its diff has no lines of one file to place)
                diffs.setdefault((key, base), {})[p] = hunks.FileDiff((), binary=True,
                                                                       retyped=True)
                continue
            if live not in read:  # (this worktree's file: once, whatever the bases)
                whole = scratch.read_capped(live, scratch.MAX_READ)
                if isinstance(whole, scratch.TooLarge):
                    large.add(live)
                read[live] = None if isinstance(whole, scratch.TooLarge) else whole
            if live in large and not scratch.outside(wpath, live, rel):
                # compared with its base in pieces; a change is one of the whole file
                if not scratch.same_content(live, base_blob[base, p]):
                    diffs.setdefault((key, base), {})[p] = hunks.FileDiff((), binary=True,
                                                                           large=True)
                continue
            data = raw = read[live]
            if data is None or scratch.outside(wpath, live, rel):  # (a FIFO, a device, a
                data = raw = None  # directory linked out of the worktree: read as gone)
                live = lives[key, p] = os.devnull
            if data is not None and data != base_blob[base, p] and b"\r\n" in data:
                data = data.replace(b"\r\n", b"\n")  # an autocrlf checkout of the same blob
            if data != base_blob[base, p] and not (
                    os.path.exists(live) and _ignored_new(ats[wpath], p, base_blob[base, p])):
                ck = diff_key(wpath, base, f"{rel}\0{origin[base, p]}", raw)
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
    lining = placing.asked(targets, me.path, typed, read)  # (lines as git places them)
    # each diff runs outside every repository (both paths are absolute): a sibling's
    # .gitattributes is its data, never a way to run a filter configured here on its files
    away, env = scratch.away()
    texts = gitio.git_many([(gitio.file_diff_args(
        olds.get((base, p), os.devnull), live if os.path.exists(live) else os.devnull),
        away) for *_, base, p, _rel, live in todo] + lining.jobs, env=env)
    targets = placing.placed(targets, lining, texts[len(todo):])
    texts = texts[:len(todo)]
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
        if raw is not None and diff_key(wpath, base, f"{rel}\0{origin[base, p]}",
                                         read_bytes(live)) == ck:
            DIFFS[ck] = got
    their_diffs = {w.id: diffs.get((w.id, bases[w.id]), {}) for w in siblings}
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
    writing = theirs.writing(targets, lives)
    if any(defined.values()):
        states = theirs.recorded_trees(ledger, repo, siblings)
        pairs = {w.id: (bases[w.id], states[w.id]) for w in siblings}
        asked_trees = sorted({pr for pr in pairs.values() if pr not in TREE_DIFFS},
                             key=str)
        more = gitio.git_many([(gitio.tree_diff_args(b, t), repo.here)
                               for b, t in asked_trees],
                              env=repo.objects_env())  # (recorded trees: the store)
        fresh = dict(zip(asked_trees, more, strict=True))
        remember(TREE_DIFFS, {k: v for k, v in fresh.items() if v is not None})
        for w in siblings:  # (two trees' diff never changes: kept by the pair of ids)
            uses[w.id] = {t.path: theirs.new_uses(pairs[w.id], fresh, defined[t.path], t.path)
                          for t in targets if defined[t.path]}
    # 5. a call the edit writes to a definition a sibling changed: the scan's own symbol
    # evidence (its work as recorded against the pair's base, this side's new code the
    # edit's lines), asked only of a sibling whose diff mentions a name the lines call
    works = theirs.their_work(repo, ledger, siblings, bases) if writing else {}
    broken = theirs.broken_calls(repo, ledger, me, siblings, bases, base_blob, writing, works)
    intents = _intents(ledger)
    out = []
    for w in siblings:
        declared = intents.get(w.id, {})
        for t in targets:
            own = mine[bases[w.id]].get(t.path)
            base_ranges = None if t.ranges is None else filemerge.joined(
                tuple(hunks.to_base(t.ranges, own.hunks if own else ())), own)
            if bases[w.id] in after_merge:
                change = after_merge[str(bases[w.id])].get(t.path)
                if change is None:
                    continue  # the merged tree leaves this file as that base has it
                base_ranges = edits_of({t.path: change})[0][1]
            out.append(decision.Side(
                w.id, w.branch, t.path, base_ranges, t.ranges, their_diffs[w.id].get(t.path),
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
    for i, outcome in filemerge.merges(jobs, repo.here, read).items():
        out[i] = out[i]._replace(merge=outcome)
    return out



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
          steer: Collection[str] = (), look: bool = False) -> decision.Decision:
    """The decision for editing ``targets`` (paths relative to ``cwd``) in the worktree
    that contains ``start`` (by merging the commit ``merging``, when given). ``results``:
    a file's whole text after the edit, by the path given, where the harness says it.
    ``steer``: more siblings that yield here (to the work a merge brings in), beside the
    ones told to yield to this worktree. ``look``: a look at the siblings' lines, not an
    edit (answer.CheckRequest): the deny is not a wait."""
    repo = gitio.Repo(start, fast=True)
    after = results or {}
    tg = [Target(relative(repo, p, cwd or start), r,
                 encoded(after[p]) if p in after else None) for p, r in targets]
    files = None if deny_on else config_files(repo)
    cfg = None if deny_on or files in POLICY else gitio.git_start(
        ["config", "--get", "proximity.checkPolicy"], repo.here)
    ledger = standing.open_ledger(repo)
    try:
        sides = gather(repo, tg, ledger, merging, merged)
        me = repo.current().id
        waiting = cycles.own_waits(ledger, me)
        behind = standing.yielding_to(ledger, me, {s.agent for s in sides})
        behind -= standing.landed_since(repo, ledger, me, behind)
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
    d = _decided(repo, me, sides, policy, behind, ahead, look)
    if waiting:
        cycles.ended_waits(repo, me, {t.path for t in tg}, waiting, d)
    return d


def _decided(repo: gitio.Repo, me: str, sides: Sequence[decision.Side], policy: str,
             behind: set[str], ahead: dict[str, str], look: bool) -> decision.Decision:
    """The decision on the sides gathered: the policy's, with right-of-way from standing
    advisories, held yields and wait cycles (a deny that stands recorded as a wait)."""
    d = decision.decide(sides, policy, behind, ahead)
    if d.decision != decision.DENY:
        return cycles.waited_on(repo, me, d)
    # a sibling in the way may hold other worktrees' work, not its own (the main checkout
    # that merged a lane and could not push it yet): right-of-way is that work's
    denying = {c.agent for c in d.conflicts if c.level == decision.RA}
    more = standing.holding_yielders(repo, me, denying) if denying else set()
    if more:
        ahead = {**{a: f"'{text(a)}' holds work that was told to yield to you: you have "
                    "right-of-way, they steer" for a in more}, **ahead}
        d = decision.decide(sides, policy, behind, ahead)
    if d.decision != decision.DENY or look:
        return d
    return cycles.wait_cycles(repo, me, sides, policy, behind, ahead, d)
