"""What a commit's tree becomes when foreign work enters it, worked out in the object store
only (a temporary index at most; never the worktree or the user's index): git's merge of
two trees over a given base (a cherry-pick, a stash applied), a patch applied (``git am``),
paths taken from another commit (``checkout REF -- PATH``, ``restore --source``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

from proximity.errors import FatalError
from proximity.gitio.objects import Objects
from proximity.gitio.run import SNAPSHOT_IDENT

Result = tuple[str, list[str]]  # (tree, the paths left conflicted)


class Results(Objects):
    """Trees of work brought in, before it is."""

    def merge3(self, base: str, ours: str, theirs: str) -> Result | None:
        """git's own merge of two trees (or commits) over ``base``: the merge of two
        commits on one root commit of ``base``'s tree, whose only merge base is that root
        (None: git cannot merge them)."""
        try:
            def commit(tree: str, *parents: str) -> str:
                args = ["commit-tree", f"{tree}^{{tree}}", "-m", "proximity merge"]
                for p in parents:
                    args += ["-p", p]
                return self._git(args, env=SNAPSHOT_IDENT).stdout.decode().strip()

            root = commit(base)
            return self.merge_result(commit(ours, root), commit(theirs, root))
        except FatalError:
            return None

    @contextlib.contextmanager
    def _index_of(self, head: str, stem: str) -> Iterator[dict[str, str]]:
        """The environment of a temporary index holding ``head``'s tree, removed after."""
        tmp = self._scratch(stem)
        env = {"GIT_INDEX_FILE": tmp}
        try:
            self._git(["read-tree", head], env=env)
            yield env
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def with_patches(self, head: str, patches: Sequence[str], cwd: str) -> Result | None:
        """``head``'s tree with the patch files applied in order, as `git am` would
        (None: one does not apply; then `git am` stops there too)."""
        try:
            with self._index_of(head, "am") as env:
                for p in patches:
                    path = os.path.abspath(os.path.join(cwd, p))
                    if self._git(["apply", "--cached", "--whitespace=nowarn", "--", path],
                                 env=env, ok=(0, 1, 128)).returncode != 0:
                        return None
                return self._written(env)
        except FatalError:
            return None

    def with_paths(self, head: str, source: str, paths: Sequence[str], cwd: str,
                   overlay: bool) -> Result | None:
        """``head``'s tree with ``paths`` (pathspecs, relative to ``cwd``) as ``source``
        has them; ``overlay``: a file under them that ``source`` lacks stays (checkout),
        else it goes (restore)."""
        spec = ["--", *paths]
        where = self.here.inside(cwd)  # (the pathspecs are relative to it)
        try:
            with self._index_of(head, "paths") as env:
                taken = self._git(["ls-tree", "-r", "-z", "--full-name", source, *spec],
                                  cwd=where, env=env).stdout
                if not overlay:
                    mine = self._git(["ls-files", "-z", "--full-name", *spec], cwd=where,
                                     env=env).stdout
                    have = {e.split(b"\t", 1)[1] for e in taken.split(b"\0") if b"\t" in e}
                    gone = [p for p in mine.split(b"\0") if p and p not in have]
                    if gone:
                        self._git(["update-index", "-z", "--force-remove", "--stdin"],
                                  env=env, input=b"\0".join(gone) + b"\0")
                if taken:  # ls-tree's lines are one of the forms --index-info reads
                    self._git(["update-index", "-z", "--index-info"], env=env, input=taken)
                return self._written(env)
        except FatalError:
            return None

    def _written(self, env: dict[str, str]) -> Result:
        # (in the private object store, as every object of work not committed here)
        return self._git(["write-tree"], env=env).stdout.decode().strip(), []
