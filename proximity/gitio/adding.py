"""How a snapshot adds a worktree's files to its temporary index besides git's own
``add -A``: untracked files listed, large ones stubbed (never hashed), untracked files in
bulk summarized (bulk.py), and repositories embedded in the worktree recorded by their HEAD
without git running inside them."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence

from proximity.gitio import bulk
from proximity.gitio.base import LARGE_STUB
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.objects import Objects
from proximity.gitio.run import _b, git


class Adding(Objects):
    """The parts of a snapshot that add files to its temporary index (Snapshots)."""

    def _untracked(self, wt: WorktreeInfo, env: Mapping[str, str], user_index: str
                   ) -> tuple[set[bytes], set[bytes], set[bytes], list[bytes]]:
        """(untracked files the shadow does not hold, untracked files it holds -- which
        may have grown or gone since --, the files the user's index tracks, the embedded
        repositories `add -A` would reach: see _add_links): index reads and the walk
        `add -A` makes anyway."""
        def listing(args: list[str], index: str) -> set[bytes]:
            out = git(["ls-files", "-z", *args], cwd=wt.at, env={"GIT_INDEX_FILE": index},
                      ok=(0, 1)).stdout
            return {p for p in out.split(b"\0") if p}

        tmp_index = env["GIT_INDEX_FILE"]
        others = listing(["--others", "--exclude-standard"], tmp_index)
        theirs = listing([], user_index) if os.path.exists(user_index) else set()
        staged = self._staged(wt, tmp_index, ["."]) if os.path.exists(tmp_index) else {}
        held = set(staged) - theirs
        # (git lists an untracked repository as its directory, with a trailing slash)
        links = _embedded(wt.path, [p for p, mode in staged.items() if mode == GITLINK]
                          + [p[:-1] for p in others if p.endswith(b"/")])
        return others - theirs, held, theirs, links  # (a large file the user staged is theirs)

    def _staged(self, wt: WorktreeInfo, index: str, paths: Sequence[str]) -> dict[bytes, bytes]:
        """path -> mode of the entries of ``index`` under ``paths`` (literal)."""
        out = git(["ls-files", "-z", "--stage", "--", *(":(literal)" + p for p in paths)],
                  cwd=wt.at, env={"GIT_INDEX_FILE": index}, ok=(0, 1)).stdout
        staged: dict[bytes, bytes] = {}
        for entry in out.split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            if tab:
                staged[path] = meta.split(b" ", 1)[0]
        return staged

    def _links_under(self, wt: WorktreeInfo, env: Mapping[str, str], paths: Sequence[str]
                     ) -> list[bytes]:
        """The embedded repositories `add -A -- paths` would reach (see _add_links): the
        index's gitlinks under those of ``paths`` that are directories, and those
        directories themselves when they hold a `.git`."""
        dirs = []
        for p in paths:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(os.path.join(wt.path, p)).st_mode):
                    dirs.append(p)
        if not dirs:
            return []
        staged = self._staged(wt, env["GIT_INDEX_FILE"], dirs)
        return _embedded(wt.path, [p for p, mode in staged.items() if mode == GITLINK]
                         + [_b(d) for d in dirs])

    def _add_links(self, wt: WorktreeInfo, env: Mapping[str, str], links: Sequence[bytes]
                   ) -> None:
        """Record the embedded repositories ``links`` as `add -A` would, a gitlink to each
        one's HEAD, without what `add` does besides: for a gitlink the index holds
        already, `add` runs `git status` inside that repository to see whether it is
        modified, which reads that repository's own config and runs what it names
        (core.fsmonitor, a clean filter of its own): a repository an agent made or
        unpacked in a worktree, whoever's, would run its commands in every sibling's
        hooks. So `add` passes them by (_excluded) and `update-index` records them: it
        reads the HEAD alone (a repository gone since: its entry goes, as with `add`)."""
        if links:
            self._git(["update-index", "-z", "--add", "--remove", "--stdin"], cwd=wt.at,
                      env=env, input=b"".join(p + b"\0" for p in links), ok=(0, 128))

    def _large(self, wt: WorktreeInfo, cands: set[bytes]) -> dict[str, os.stat_result]:
        """Those of the untracked ``cands`` larger than ``large_bytes`` (never hashed: a
        stub names their size and time); no content is read."""
        large: dict[str, os.stat_result] = {}
        root = os.fsencode(wt.path)
        for raw in cands:
            try:
                st = os.lstat(os.path.join(root, raw))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.large_bytes:
                large[_s(raw)] = st
        return large

    def _add_summarized(self, wt: WorktreeInfo, env: Mapping[str, str], others: set[bytes],
                        large: Mapping[str, os.stat_result], groups: Mapping[str, int],
                        theirs: set[bytes], links: Sequence[bytes]) -> list[bytes]:
        """The snapshot of a worktree with untracked files in bulk (bulk.py): tracked
        files as `add -u` finds them (the shadow's own untracked entries included), the
        untracked files outside the summarized groups added by name, and the groups'
        files and the large ones out of the index. No walk of the summarized files but
        git's own listing of them. The embedded repositories ``links`` are passed by (see
        _add_links): those the summary does not leave out are returned, to be recorded."""
        tracked_dirs = bulk.dirs_of(_s(t) for t in theirs)
        held = git(["ls-files", "-z"], cwd=wt.at, env=env).stdout.split(b"\0")
        drop = [raw for raw in held if raw and raw not in theirs and (
            _s(raw) in large or bulk.group_of(_s(raw), tracked_dirs) in groups)]
        if drop:
            git(["update-index", "-z", "--force-remove", "--stdin"], cwd=wt.at, env=env,
                input=b"".join(raw + b"\0" for raw in drop))
        self._git(["add", "-u", "--ignore-errors", "--pathspec-from-file=-",
                   "--pathspec-file-nul"], cwd=wt.at, env=env, ok=(0, 1),
                  input=b".\0" + _excluded(links))
        kept = [p for p in links if p in theirs or not bulk.under(_s(p) + "/", groups)]
        new = [raw for raw in others if _s(raw) not in large
               and bulk.group_of(_s(raw), tracked_dirs) not in groups
               and raw.rstrip(b"/") not in links]
        if new:
            self._git(["add", "--ignore-errors", "--pathspec-from-file=-",
                       "--pathspec-file-nul"], cwd=wt.at, env=env, ok=(0, 1),
                      input=b"".join(b":(literal)" + raw + b"\0" for raw in new))
        return kept

    def _add_stubs(self, wt: WorktreeInfo, env: Mapping[str, str],
                   large: Mapping[str, os.stat_result]) -> None:
        lines = []
        for path, st in sorted(large.items()):
            stub = (f"{LARGE_STUB}size={st.st_size} mtime_ns={st.st_mtime_ns}\n").encode()
            oid = self._git(["hash-object", "-w", "--stdin"], cwd=wt.at, env=env,
                            input=stub).stdout.decode().strip()
            mode = "100755" if st.st_mode & 0o111 else "100644"
            lines.append(f"{mode} {oid}\t".encode() + _b(path) + b"\0")
        self._git(["update-index", "-z", "--index-info"], cwd=wt.at, env=env,
                  input=b"".join(lines))


def _s(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


GITLINK = b"160000"  # an index entry's mode for a repository (a submodule's commit)


def _embedded(root: str, paths: Sequence[bytes]) -> list[bytes]:
    """Those of ``paths`` (in the worktree at ``root``) that hold a `.git` now: the
    repositories `add` would look inside (git passes by a gitlink with none: an
    uninitialized submodule)."""
    top = os.fsencode(root)
    return sorted({p for p in paths if p and os.path.lexists(os.path.join(top, p, b".git"))})


def _excluded(links: Sequence[bytes]) -> bytes:
    """Pathspecs (NUL-terminated) that keep `add` off ``links``."""
    return b"".join(b":(exclude,literal)" + p + b"\0" for p in links)
