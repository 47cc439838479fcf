"""Whether libgit2 may read a live state: the objects a snapshot names beyond its HEAD,
listed by git and their loose files inflated (loose.py), or -- for a tree written in
process over a state already found readable -- just the objects it added."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from proximity.gitio.base import RepoCore
from proximity.gitio.loose import alternates, damage, loose_files
from proximity.gitio.run import EMPTY_TREE


class Readable(RepoCore):
    def derived(self, tree: str, base: str, objects: Sequence[str]) -> None:
        """``tree`` was written from ``base`` with ``objects`` (the blobs and trees it
        holds that ``base`` may not): once ``base`` is found readable, a check of
        ``tree`` inflates just those (unreadable)."""
        self._remember(("derived", tree), (tree, base, *objects), (base, tuple(objects)))

    def unreadable(self, tree: str, head: str | None) -> str | None:
        """Why libgit2 must not read the live state ``tree`` (loose.py): an object it
        names beyond ``head`` that git cannot read, or whose loose file does not inflate
        whole, in one line; None: it may. git lists the objects (by plumbing: libgit2
        would wedge on the very trees it checks); a None is remembered for the tree, whose
        every object is then in a commit or found whole, whichever HEAD asks next. A tree
        written in process over one found readable (derived) needs only its own objects
        inflated: no git process."""
        old = head or EMPTY_TREE
        key = ("unreadable", tree)
        if key in self.memo:
            return None
        was = self.memo.get(("derived", tree))
        if was is not None and ("unreadable", was[0]) in self.memo:
            why = self._damaged(was[1])
            if why is None:
                self._remember(key, (tree,), None)
            return why
        proc = self._git(["diff-tree", "-r", "-z", "--no-renames", old, tree], ok=(0, 128))
        why = None
        if proc.returncode:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            why = f"git cannot read it: {err[0] if err else 'exit 128'}"
        else:
            parts = proc.stdout.split(b"\0")
            named = [(fields[3], raw.decode("utf-8", "replace"))
                     for meta, raw in zip(parts[0::2], parts[1::2], strict=False)
                     if len(fields := meta.decode().split()) >= 5 and fields[4] != "D"
                     and fields[1] != "160000"]
            paths: dict[str, str] = {}
            for oid, raw in named:
                paths.setdefault(oid, raw)
            why = self._damaged(list(paths), paths)
        if why is None:  # (a damaged one is read again: its file may be mended)
            self._remember(key, (old, tree), why)
        return why

    def _damaged(self, oids: Sequence[str], paths: dict[str, str] | None = None
                 ) -> str | None:
        """The first of ``oids`` with a loose file that does not inflate whole, in any
        object directory (libgit2 may read that copy though git has a whole one), in one
        line (``paths``: the path each names, for the line); None: none (packed ones are
        git's). A damaged copy in the store of an object the repository holds whole as a
        loose file (`git add` wrote it since) is removed instead: libgit2 reads that."""
        own = self.store.read_dirs()
        dirs = [self.store.repo_objects, *own]
        for oid, path in ((o, p) for o in oids for p in loose_files(dirs, o)):
            wrong = damage(path)
            if wrong and not self._redundant(path, oid, own):
                # (where, short: the line names the object and must stay one line)
                where = os.path.join(os.path.basename(self.common), os.path.relpath(
                    os.path.dirname(os.path.dirname(path)), self.common))
                named = f" ({paths[oid]})" if paths and oid in paths else ""
                return f"object {oid[:12]}{named} cannot be read: its loose file in {where} {wrong}"
        return None

    def _redundant(self, path: str, oid: str, own: Sequence[str]) -> bool:
        """Whether ``path``, a damaged loose file, was the store's copy of an object the
        repository holds whole as a loose file, and is gone now. Only a plain file in the
        store's own directories, reached through no link, is removed."""
        top = next((d for d in own if path == os.path.join(d, oid[:2], oid[2:])), None)
        if top is None or any(os.path.islink(x) for x in (
                path, os.path.dirname(path), top, os.path.dirname(top))):
            return False
        if not any(damage(p) is None for p in loose_files(alternates(self.store.repo_objects),
                                                           oid)):
            return False  # (the store's is the only copy: named, its worktree on commits)
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return False
            os.unlink(path)
        except FileNotFoundError:
            return True
        except OSError:  # (a read-only store: named as any other)
            return False
        return True
