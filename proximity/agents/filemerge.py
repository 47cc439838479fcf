"""git's view of one file as a merge sees it: the requested lines joined with this side's
own changes that touch them, ``git merge-file`` of an edit against a sibling's file, and the
moves git's merge would follow (staged or committed renames)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence

from proximity import gitio
from proximity.agents import scratch
from proximity.agents.kept import DIFF_ENTRIES
from proximity.analysis import hunks
from proximity.model import Range


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
           cwd: gitio.Where, read: Mapping[str, bytes | None]) -> dict[int, str]:
    """``git merge-file`` of (base blob, this file after the edit, the sibling's file on
    disk; this side's live file, which may already hold the edit's result: an editor's
    shared buffer), per job: "same" when the merge is this side's result (they made no change this
    edit does not make too), "clean" when it merges cleanly otherwise; a conflicted (or
    unreadable) merge is left out. ``read``: the files the caller read, by path."""
    jobs = [j for j in jobs if j[2] is not None and os.path.isfile(j[3])]
    if not jobs:
        return {}
    args = []
    for _, base, result, theirs, live in jobs:
        mine = live if live and scratch.same_file(result or b"", live) \
            else scratch.holding(result or b"")
        args.append((gitio.merge_file_args(mine, scratch.holding(base or b""), theirs), cwd))
    got = gitio.git_many(args, ok=(0,))
    out = {i: "same" if merged == result else "clean"
           for (i, _, result, _, _), merged in zip(jobs, got, strict=True) if merged is not None}
    # git's own merge has the last word: ort lines the files up with another diff
    # (histogram; `merge-file` of git before 2.44 has only myers), and a landing is its merge
    clean = [j for j in jobs if j[0] in out]
    for (i, *_), stops in zip(clean, ort_conflicts(
            [(base or b"", result or b"", read[theirs] if theirs in read
              else scratch.read_bytes(theirs)) for _, base, result, theirs, _ in clean]),
            strict=True):
        if stops:
            del out[i]
    return out


def ort_conflicts(triples: Sequence[tuple[bytes, bytes, bytes | None]]) -> list[bool]:
    """Per (base, ours, theirs): whether git's merge of the two (the ort strategy, as
    `git merge`, `rebase` and `merge-tree` run it) stops with a conflict. Asked of three
    commits per triple in a scratch repository of this process (one `fast-import` for
    all, then one `merge-tree` each). A triple git cannot answer is not a conflict."""
    if not triples:
        return []
    # (a bare repository of this process's own, with no working tree and no commit at its
    # HEAD: no worktree's .gitattributes is read there, so none names a merge driver or
    # union merge for these files, as in gitio's merges of whole trees)
    where = scratch.merge_repository()
    # (names of its own for each question: a service asks from several threads at once)
    token = os.urandom(6).hex()
    stream: list[bytes] = []
    marks: list[tuple[int, int] | None] = []
    for n, (base, ours, theirs) in enumerate(triples):
        if theirs is None:
            marks.append(None)
            continue
        for k, data in enumerate((base, ours, theirs)):
            stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (10 * n + k + 1, len(data), data))
        for k, ref in ((4, b"b"), (5, b"o"), (6, b"t")):
            parent = b"from :%d\n" % (10 * n + 4) if k != 4 else b""
            stream.append(b"commit refs/m/%s/%s%d\nmark :%d\ncommitter p <p> 0 +0000\ndata 0\n%s"
                          b"M 100644 :%d f\n\n" % (token.encode(), ref, n, 10 * n + k, parent,
                                                  10 * n + (k - 3)))
        marks.append((10 * n + 5, 10 * n + 6))
    if not stream:
        return [False] * len(triples)
    exported = os.path.join(where, f"marks-{token}")
    ids: dict[int, str] = {}
    try:
        done = gitio.git(["fast-import", "--quiet", "--force", f"--export-marks={exported}"],
                         where, input=b"".join(stream), ok=(0, 1, 128))
        if done.returncode == 0:
            with open(exported, encoding="ascii") as f:
                for line in f:
                    mark, _, sha = line.strip().partition(" ")
                    ids[int(mark[1:])] = sha
    finally:
        with contextlib.suppress(OSError):
            os.unlink(exported)
    asked = [(n, ids[m[0]], ids[m[1]]) for n, m in enumerate(marks)
             if m is not None and m[0] in ids and m[1] in ids]
    got = gitio.git_many([(["merge-tree", "--write-tree", "--name-only", o, t], where)
                          for _, o, t in asked], ok=(0, 1))
    shutil.rmtree(os.path.join(where, "refs", "m", token), ignore_errors=True)
    out = [False] * len(triples)
    for (n, _, _), text in zip(asked, got, strict=True):
        # a conflict names its paths after the tree's id; a clean merge is the id alone
        out[n] = text is not None and len([x for x in text.split(b"\n") if x]) > 1
    return out


def renames(pairs: Sequence[tuple[gitio.At, str | None]]
            ) -> dict[tuple[str, str | None], dict[str, str]]:
    """Per (worktree, base): the files it moved since the base, committed or staged (a
    `git mv`), old path -> new path, found as git's merge finds them (-M, its default
    similarity), keyed by (the worktree's path, base). Unstaged moves (a plain `mv`) are
    a deletion and a new file to git too."""
    jobs = sorted({(w, b) for w, b in pairs if b})
    out: dict[tuple[str, str | None], dict[str, str]] = {}
    # the staged moves depend on the index file and the base alone: a worktree whose index
    # was not written since (git replaces it whole: a new inode) is not asked again
    marks = {w: _index_mark(w) for w, _ in jobs}
    ask = [(w, b) for w, b in jobs if marks[w] is None or MOVES.get((w, b), (None,))[0]
           != marks[w]]
    texts = gitio.git_many([(["diff-index", "--cached", "-M", "-z", "--name-status",
                              "--diff-filter=R", b], w) for w, b in ask])
    if len(MOVES) + len(ask) > DIFF_ENTRIES:
        MOVES.clear()
    for (w, b), raw in zip(ask, texts, strict=True):
        parts = (raw or b"").decode("utf-8", "surrogateescape").split("\0")
        moved = {}
        for i in range(0, len(parts) - 2, 3):
            if parts[i].startswith("R"):
                moved[parts[i + 1]] = parts[i + 2]
        mark = marks[w]
        if raw is not None and mark is not None:
            MOVES[w, b] = (mark, moved)
        out[w.path, b] = moved
    for w, b in jobs:
        if (w.path, b) not in out:
            out[w.path, b] = dict(MOVES[w, b][1])
    return out


# The staged moves of a worktree against a base, by its index file's identity (renames).
MOVES: dict[tuple[gitio.At, str | None], tuple[tuple[int, int, int], dict[str, str]]] = {}


def _index_mark(worktree: gitio.At) -> tuple[int, int, int] | None:
    """The identity of a worktree's index file (None: not known from files): the one in
    the git dir the repository lists for it (gitio.At), which its git reads."""
    if not worktree.admin:
        return None
    try:
        st = os.stat(os.path.join(worktree.admin, "index"))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino
