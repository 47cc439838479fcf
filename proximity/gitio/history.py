"""A repository's history: merge bases (and whether one is the only one), ancestry,
commits ahead, and whether two steps of history change the same thing."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from proximity.gitio import listing
from proximity.gitio.base import RepoCore, _pygit2
from proximity.gitio.run import EMPTY_TREE, is_ancestor_cli

if TYPE_CHECKING:
    import pygit2

SOLE_BASE_WALK = 500  # commits walked per side to tell that a merge base is the only one
STEPS_ALIKE = 32  # single-parent commits walked back from a new HEAD to the one judged


class History(RepoCore):
    """History: merge bases, ancestry, and what a step of history changed."""

    def is_ancestor_cli(self, anc: str, desc: str) -> bool:
        return is_ancestor_cli(anc, desc, self.here)

    def parents_cli(self, commit: str) -> list[str]:
        """Parents of a commit: from its loose object when it is one (a fresh commit is),
        else from git."""
        import zlib

        try:
            with open(os.path.join(self.common, "objects", commit[:2], commit[2:]), "rb") as f:
                data = zlib.decompress(f.read())
            header, _, body = data.partition(b"\0")
            if header.startswith(b"commit "):
                head = body.split(b"\n\n", 1)[0].split(b"\n")
                return [ln.split()[1].decode() for ln in head if ln.startswith(b"parent ")]
        except (OSError, zlib.error, IndexError):
            pass
        out = self._git(["rev-list", "--parents", "-n", "1", commit]).stdout
        return out.decode().split()[1:]

    # -- history ------------------------------------------------------------------------
    def merge_base(self, a: str | None, b: str | None) -> str | None:
        if not a or not b:
            return None
        key = ("merge-base", a, b)
        if key in self.memo:
            return cast("str | None", self.memo[key])
        got = self._base_by_step(a, b)
        if got is None:
            oid = self.pg.merge_base(a, b)
            got = str(oid) if oid is not None else None
        self._remember(key, (a, b), got)  # commits never change: neither do their bases
        return got

    def sole_merge_base(self, a: str | None, b: str | None) -> str | None:
        """The merge base of ``a`` and ``b`` when it is their only one (git's merge then
        merges against it, not against a virtual base made of several); None: there are
        several, or the commits since it are too many to tell cheaply."""
        base = self.merge_base(a, b)
        if base is None or not a or not b:
            return None
        if base in (a, b):
            return base
        key = ("sole-base", a, b)
        if key in self.memo:
            return base if self.memo[key] else None
        known = self._sole_by_step(a, b, base)
        if known is not None:
            self._remember(key, (a, b), known)
            return base if known else None
        pygit2 = _pygit2()
        since = []
        for tip in (a, b):
            seen: set[str] = set()
            walker = self.pg.walk(tip, pygit2.enums.SortMode.NONE)
            walker.hide(base)
            for c in walker:
                seen.add(str(c.id))
                if len(seen) > SOLE_BASE_WALK:
                    self._remember(key, (a, b), False)  # too many to tell: not claimed
                    return None
            since.append(seen)
        # every common ancestor is an ancestor of base unless the two sides share a commit
        # that base does not contain: then git sees more than one merge base
        sole = not since[0] & since[1]
        self._remember(key, (a, b), sole)
        return base if sole else None

    def commit_tree(self, commit: str | None) -> str:
        if not commit:
            return EMPTY_TREE
        return str(self.pg[commit].peel(_pygit2().Tree).id)

    def subject(self, commit: str | None) -> str:
        if not commit:
            return ""
        message = cast("pygit2.Commit", self.pg[commit]).message
        return str(message).splitlines()[0] if message else ""

    def committed_blobs(self, commit: str | None, names: tuple[str, ...]
                        ) -> tuple[object, ...]:
        """The blob ids of ``names`` (top-level files) in ``commit``'s tree, None for one
        it lacks, read in process; the commit itself when its tree cannot be read."""
        if not commit:
            return (None,)
        try:
            tree = cast("pygit2.Commit", self.pg[commit]).tree
            return tuple(str(tree[n].id) if n in tree else None for n in names)
        except Exception:
            return (commit,)

    def push_arrived(self, remote: str, dest: str, sha: str) -> bool | None:
        """Whether a push of ``sha`` onto ``dest`` at ``remote`` went through, as this
        clone's remote-tracking ref shows it (at ``sha``, or at a commit that has it);
        None when no remote-tracking ref maps it (listing.tracking_tip)."""
        tip = listing.tracking_tip(self.pg, remote, dest)
        if tip is None:
            return None
        return bool(tip) and (tip == sha or self.is_ancestor(sha, tip))

    def is_ancestor(self, anc: str, desc: str) -> bool:
        """Remembered; a single-parent commit's answer is its parent's when that one is
        remembered (its ancestors are itself and its parent's)."""
        if anc == desc:
            return True
        got = self.memo.get(("ancestor", anc, desc))
        if got is None:
            parent = self._only_parent(desc) if self.warm() else None
            if parent is not None:
                got = self.memo.get(("ancestor", anc, parent)) if parent != anc else True
        if got is None:
            try:
                got = bool(self.pg.descendant_of(desc, anc))
            except Exception:
                return False
        self._remember(("ancestor", anc, desc), (anc, desc), got)
        return bool(got)

    def steps_alike(self, old: str, new: str, other: str) -> bool:
        """Whether ``new`` has the same merge bases with ``other`` as ``old`` has: it is
        ``old``, or reaches it through at most STEPS_ALIKE single-parent commits, the
        first of which (hence every one: containing a later one contains it) ``other``
        does not contain. The ancestors of ``new`` are then those commits and ``old``'s,
        and ``other`` shares none of the former. So a commit made with hooks off between
        two judged ones, or a rebase's picks, keep a pair's merge. False when unsure."""
        if new == old:
            return True
        try:
            child = new
            for _ in range(STEPS_ALIKE):
                parents = [str(p) for p in cast("pygit2.Commit", self.pg[child]).parent_ids]
                if len(parents) != 1:
                    return False
                if parents[0] == old:
                    return not self._may_contain(other, old, child)
                child = parents[0]
        except Exception:
            return False
        return False

    def _may_contain(self, other: str, parent: str, child: str) -> bool:
        """Whether ``other`` contains ``child`` (whose only parent is ``parent``): not when
        their remembered merge base is not ``parent`` (``other`` lacks the parent, so the
        child too); else asked of libgit2."""
        known = self._remembered("merge-base", parent, other)
        if isinstance(known, str) and known != parent:
            return False
        return other == child or bool(self.pg.descendant_of(other, child))

    def _only_parent(self, commit: str) -> str | None:
        """The parent of a single-parent commit; None for a root, a merge or unknown."""
        try:
            parents = [str(p) for p in cast("pygit2.Commit", self.pg[commit]).parent_ids]
        except (KeyError, ValueError):
            return None
        return parents[0] if len(parents) == 1 else None

    def _sole_by_step(self, a: str, b: str, base: str) -> bool | None:
        """Whether ``base`` is the only merge base of ``a`` and ``b``, known from one of
        them being a single-parent step, absent from the other, on a commit whose merge
        base with the other was ``base`` too: the shared ancestors are the same, so is the
        answer (True: the only one; False: several, or too many commits since it to tell,
        one more now). None: not known that way."""
        for x, y in ((a, b), (b, a)):
            p = self._only_parent(x)
            if p is None or p == base:
                continue
            for k in ((p, y), (y, p)):
                sole = self.memo.get(("sole-base", *k))
                if sole is not None and self.memo.get(("merge-base", *k)) == base:
                    return bool(sole)
        return None

    def _base_by_step(self, a: str, b: str) -> str | None:
        """The merge base of ``a`` and ``b`` from a remembered one, when one of them is a
        single-parent step the other does not contain (a new commit on a worktree whose
        base with the other was asked before); None: not known that way."""
        for x, y in ((a, b), (b, a)):
            p = self._only_parent(x)
            got = self._remembered("merge-base", p, y) if p is not None else None
            if isinstance(got, str) and got != p:
                return got  # y lacks x's parent, so x too: the same ancestors shared
        return None
