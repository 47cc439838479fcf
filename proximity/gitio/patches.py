"""Putting back what a hook host holds out: the pre-commit framework and prek stash a
worktree's unstaged edits as a patch while hooks run; applied to the snapshot the hook read
(in a temporary index, never the worktree or the user's index), it restores the worktree as
its user has it, and only on the state it was made from."""

from __future__ import annotations

import contextlib
import os

from proximity.errors import FatalError
from proximity.gitio.base import RepoCore, _pygit2
from proximity.gitio.run import Where
from proximity.gitio.store import refused_write


class Patches(RepoCore):
    """A hook host's stashed edits put back on a snapshot."""

    def tree_with_patch(self, tree: str, patch: str, cwd: Where) -> str | None:
        """``tree`` with a `git diff --binary` patch of tracked files applied, in a
        temporary index (a hook host's stashed unstaged edits: stash.py): the files of
        the patch that ``tree`` holds as the patch found them (each file's blob before
        it), so nothing is applied twice, and a file a hook rewrote meanwhile keeps what
        was read; None when no file fits or git cannot apply them. The worktree and the
        user's index are never touched."""
        fits = self._patch_fits(tree, patch)
        if not fits:
            return None
        try:
            return self._write_live(lambda: self._applied(tree, fits, cwd))
        except (FatalError, OSError):
            return None

    def _applied(self, tree: str, fits: list[bytes], cwd: Where) -> str | None:
        tmp = self._scratch("unstash")
        env = {"GIT_INDEX_FILE": tmp}
        part = f"{tmp}.patch"
        try:
            with open(part, "xb") as f:  # the fitting files' sections, in their order
                f.write(b"".join(fits))
            self._git(["read-tree", tree], cwd=cwd, env=env)
            for extra in ([], ["-c", "core.autocrlf=false"]):  # as the hosts retry it
                applied = self._git([*extra, "apply", "--cached", "--whitespace=nowarn", "--",
                                     part], cwd=cwd, env=env, ok=(0, 1, 128))
                if applied.returncode == 0:
                    return str(self._git(["write-tree"], cwd=cwd, env=env
                                         ).stdout.decode().strip())
                if refused_write(applied.stderr.decode(errors="replace")):
                    raise FatalError(applied.stderr.decode(errors="replace"))
            return None
        finally:
            for path in (tmp, part):
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def _patch_fits(self, tree: str, patch: str) -> list[bytes]:
        """The sections (one per file) of a `diff --binary` patch whose file is, in
        ``tree``, the blob the patch starts from: its `index` line's id (abbreviated for
        text), absent for a new file, present for a mode change alone."""
        import re

        pygit2 = _pygit2()
        try:
            with open(patch, "rb") as f:
                data = f.read()
            deltas = list(pygit2.Diff.parse_diff(data).deltas)
            sections = [b"diff --git " + x for x in re.split(rb"^diff --git ", data,
                                                            flags=re.M)[1:]]
            if not deltas or len(sections) != len(deltas):
                return []
            root = self.pg[tree].peel(pygit2.Tree)
            out = []
            for d, section in zip(deltas, sections, strict=True):
                try:
                    have = str(root[d.old_file.path].id)
                except KeyError:
                    have = ""
                m = re.search(rb"^index ([0-9a-f]+)\.\.[0-9a-f]+", section, flags=re.M)
                before = m.group(1).decode() if m else None
                if before is None:
                    fits = bool(have)
                elif before.strip("0") == "":
                    fits = not have
                else:
                    fits = have.startswith(before)
                if fits:
                    out.append(section)
            return out
        except (OSError, ValueError, KeyError, TypeError, pygit2.GitError):
            return []
