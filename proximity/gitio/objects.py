"""A repository's objects: trees and blobs, the differences between two trees (as git's
diff sees them), and git's merge of two trees (``merge-tree``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from proximity import model, owned
from proximity.errors import FatalError
from proximity.gitio.base import LARGE_STUB, _pygit2
from proximity.gitio.readable import Readable
from proximity.gitio.run import EMPTY_TREE, MOVED_DIFF_ARGS, git, tree_diff

LOOSE_LIMIT = 2048  # loose objects (estimated as git does) before snapshots pack them

if TYPE_CHECKING:
    import pygit2


_TREE = 0o040000  # a tree entry's mode


def _kind(mode: int) -> str:
    if mode == 0o120000:
        return model.SYMLINK
    if mode == 0o160000:
        return model.SUBMODULE
    return model.TEXT


def _changes(repo: Objects, diff: Any, max_bytes: int) -> Iterator[model.FileChange]:
    for i, delta in enumerate(diff.deltas):
        status = delta.status_char()
        if status not in "ADMRT":
            status = "A" if status == "C" else "M"
        old, new = delta.old_file, delta.new_file
        old_oid = "" if status == "A" else str(old.id)
        new_oid = "" if status == "D" else str(new.id)
        path = new.path if status == "A" else old.path
        new_path = new.path if status == "R" else ""
        common = dict(
            path=path, status=status, new_path=new_path, old_oid=old_oid, new_oid=new_oid,
            old_mode=0 if status == "A" else int(old.mode),
            new_mode=0 if status == "D" else int(new.mode),
        )
        kinds = {_kind(int(old.mode)) if status != "A" else model.TEXT,
                 _kind(int(new.mode)) if status != "D" else model.TEXT}
        special = kinds - {model.TEXT}
        if special:
            yield model.FileChange(kind=special.pop(), ranges=None, **common)
            continue
        if status == "M" and old_oid == new_oid:
            yield model.FileChange(kind=model.MODE, ranges=(), **common)
            continue
        sizes = [repo.blob_size(o) for o in (old_oid, new_oid) if o]
        if max(sizes, default=0) > max_bytes or (
                new_oid and sizes[-1] < 200
                and repo.blob(new_oid).startswith(LARGE_STUB.encode())):
            yield model.FileChange(kind=model.LARGE, ranges=None, **common)
            continue
        patch = diff[i]
        if patch.delta.is_binary:
            yield model.FileChange(kind=model.BINARY, ranges=None, **common)
            continue
        ranges: list[tuple[int, int]] = []
        new_ranges: list[tuple[int, int]] = []
        old_lines = 0
        for h in patch.hunks:
            if h.old_lines == 0:
                ranges.append((h.old_start + 1, h.old_start))
            else:
                ranges.append((h.old_start, h.old_start + h.old_lines - 1))
            if h.new_lines == 0:
                new_ranges.append((h.new_start + 1, h.new_start))
            else:
                new_ranges.append((h.new_start, h.new_start + h.new_lines - 1))
            old_lines = max(old_lines, h.old_start + h.old_lines - 1)
        if status == "A":
            ranges = [(1, 0)]
        yield model.FileChange(
            ranges=tuple(ranges), new_ranges=tuple(new_ranges), old_lines=old_lines,
            **common,
        )


def _type_bits(mode: int) -> int:
    """An entry's type as `diff-tree` compares them: tree, file (either exec bit), link,
    submodule."""
    return mode & 0o170000


def _walk_delta(old: Any, new: Any, prefix: str, out: dict[str, tuple[str, str]]) -> None:
    """`diff-tree -r --no-renames` of two libgit2 trees into ``out`` (path -> status,
    new id or "" when deleted), descending only into subtrees whose ids differ: a small
    change in a large tree costs its depth, not the tree (libgit2's diff spent ~1 ms on
    setup for any pair of 10k-file trees). A file that becomes a link or a submodule is
    "T", as git says; a file that becomes a directory is its deletion and the additions."""
    a = {e.name: e for e in old} if old is not None else {}
    b = {e.name: e for e in new} if new is not None else {}
    for name in sorted(a.keys() | b.keys()):
        x, y = a.get(name), b.get(name)
        if x is not None and y is not None and x.id == y.id and x.filemode == y.filemode:
            continue
        path = prefix + name
        xt = x is not None and _type_bits(x.filemode) == _TREE
        yt = y is not None and _type_bits(y.filemode) == _TREE
        if xt or yt:
            _walk_delta(x if xt else None, y if yt else None, path + "/", out)
        if x is not None and not xt and y is not None and not yt:
            same = _type_bits(x.filemode) == _type_bits(y.filemode)
            out[path] = ("M" if same else "T", str(y.id))
        elif x is not None and not xt:
            out[path] = ("D", "")
        elif y is not None and not yt:
            out[path] = ("A", str(y.id))


class Objects(Readable):
    """Objects: trees, blobs, their differences, and git's merge of two trees."""
    def pack_loose_objects(self, limit: int = 0) -> int:
        """Pack the object store's loose objects once there are many (snapshots write
        them on every commit; left loose they pile up). Returns how many were packed.
        Never waits: one process at a time, others skip."""
        import fcntl

        objects = self.store.objects
        limit = limit or LOOSE_LIMIT
        try:
            sample = len(os.listdir(os.path.join(objects, "17")))
        except OSError:
            sample = 0
        if sample * 256 < limit:
            return 0
        try:
            owned.private_dir(self.ecm_dir)
            lock = open(os.path.join(self.ecm_dir, ".pack.lock"), "a+")  # noqa: SIM115
        except OSError:
            return 0
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return 0
            oids = []
            for d in os.listdir(objects):
                if len(d) == 2 and all(c in "0123456789abcdef" for c in d):
                    with contextlib.suppress(OSError):
                        oids += [d + n for n in os.listdir(os.path.join(objects, d))
                                 if len(n) in (38, 62)]
            if not oids:
                return 0
            env = {"GIT_OBJECT_DIRECTORY": objects}  # (its alternates: the repository's)
            git(["pack-objects", "-q", "--local", os.path.join(objects, "pack", "pack")],
                cwd=self.common, env=env, input="\n".join(oids).encode() + b"\n")
            git(["prune-packed", "-q"], cwd=self.common, env=env)
            return len(oids)

    def changed_paths(self, old_tree: str, new_tree: str) -> dict[str, str]:
        """path -> new blob id ("" when deleted) between two tree-ishes, via git plumbing
        (remembered for object ids: what they name never changes)."""
        return {p: oid for p, (_st, oid) in self.tree_delta(old_tree, new_tree).items()}

    def committed_path(self, old_head: str, new_head: str, path: str) -> bool:
        """Whether ``path`` changed between two commits (False when unsure)."""
        try:
            return path in self.tree_delta(old_head, new_head)
        except FatalError:
            return False

    def tree_delta(self, old_tree: str, new_tree: str) -> dict[str, tuple[str, str]]:
        """path -> (status A/D/M/T, new blob id or "" when deleted) between two tree-ishes,
        no rename detection (`diff-tree -r --no-renames`); in process through libgit2, by
        git when libgit2 cannot read them; remembered for object ids."""
        if old_tree == new_tree:
            return {}
        key = ("tree_delta", old_tree, new_tree)
        if key in self.memo:
            return dict(self.memo[key])
        result: dict[str, tuple[str, str]] | None = None
        if self.warm():
            try:
                pygit2 = _pygit2()
                old, new = self.pg.revparse_single(old_tree), self.pg.revparse_single(new_tree)
                result = {}
                _walk_delta(old.peel(pygit2.Tree), new.peel(pygit2.Tree), "", result)
            except (KeyError, ValueError, TypeError, _pygit2().GitError):
                result = None
        if result is None:
            result = {}
            out = self._git(["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree]
                            ).stdout
            parts = out.split(b"\0")
            for meta, raw in zip(parts[0::2], parts[1::2], strict=False):
                fields = meta.decode().split()
                if len(fields) >= 5:
                    result[raw.decode("utf-8", "surrogateescape")] = (
                        fields[4][:1], "" if fields[4] == "D" else fields[3])
        self._remember(key, (old_tree, new_tree), dict(result))
        return result

    def moves(self, old: str | None, new: str) -> dict[str, str]:
        """Files moved between two tree-ishes, new path -> old path, found as git's merge
        finds them (similar content, git's default threshold of 50 %); {} when libgit2
        cannot tell."""
        pygit2 = _pygit2()
        try:
            a, b = (self.pg[t].peel(pygit2.Tree) for t in (old or EMPTY_TREE, new))
            diff = self.pg.diff(a, b)
            diff.find_similar()
            return {d.new_file.path: d.old_file.path for d in diff.deltas
                    if d.status == pygit2.enums.DeltaStatus.RENAMED}
        except Exception:
            return {}

    def moved_diff(self, old: str | None, new: str, src: str, dst: str) -> str:
        """git's own `diff -U0` of a file moved from ``src`` to ``dst`` between two
        tree-ishes: the move and only the lines it changed (renames followed, -M)."""
        return self._git([*MOVED_DIFF_ARGS, old or EMPTY_TREE, new, "--", src, dst],
                         ok=(0, 1)).stdout.decode("utf-8", "replace")

    def tree_diff(self, old: str | None, new: str, paths: Sequence[str]) -> str:
        """The `git diff -U0` text between two tree-ishes for ``paths`` (message and
        advisory hunks: shown, never judged), made by libgit2 in process from the paths'
        blobs with git's indent heuristic, so it costs what the shown files do (a spawned
        `git diff` cost more than the rest of a message); from git itself when libgit2
        cannot read the objects."""
        pygit2 = _pygit2()
        try:
            trees = [self.pg[t].peel(pygit2.Tree) for t in (old or EMPTY_TREE, new)]
            out = []
            for path in paths:
                a, b = (self._blob_at(t, path) for t in trees)
                if (a is None and b is None) or (a is not None and b is not None
                                               and a.id == b.id):
                    continue
                # the blobs stay referenced while libgit2 reads them
                patch = pygit2.Patch.create_from(
                    a, b, old_as_path=path, new_as_path=path, context_lines=0,
                    interhunk_lines=0, flag=pygit2.enums.DiffOption.INDENT_HEURISTIC)
                out.append(str(patch.text or ""))
            return "".join(out)
        except Exception:
            return tree_diff(self.here, old, new, paths, env=self.objects_env())

    def _blob_at(self, tree: pygit2.Tree, path: str) -> pygit2.Blob | None:
        """The blob at ``path`` in ``tree`` (None: absent, a directory, a submodule)."""
        try:
            entry = tree[path]
        except (KeyError, ValueError):
            return None
        return cast("pygit2.Blob", self.pg[entry.id]) if entry.type_str == "blob" else None

    def blob_id_at(self, tree: str, path: str) -> str | None:
        """The id of the blob at ``path`` in ``tree`` (None: absent, a directory, a link
        to elsewhere, a submodule)."""
        try:
            entry = self.pg[tree].peel(_pygit2().Tree)[path]
        except (KeyError, ValueError, TypeError, _pygit2().GitError):
            return None
        return str(entry.id) if entry.type_str == "blob" else None

    def tree_has(self, tree: str, path: str) -> bool:
        """Whether ``path`` is an entry (file, link or submodule) of ``tree``."""
        try:
            self.pg[tree].peel(_pygit2().Tree)[path]
            return True
        except (KeyError, ValueError, TypeError, _pygit2().GitError):
            return False

    def has_object(self, oid: str) -> bool:
        try:
            return oid in self.pg
        except (ValueError, TypeError):
            return False

    def blob(self, oid: str) -> bytes:
        return bytes(cast("pygit2.Blob", self.pg[oid]).data)

    def blob_size(self, oid: str) -> int:
        """The size from the object's header: a 300 MB blob is not inflated to learn it
        (``pg[oid].size`` reads the whole object: seconds per hook for one large file)."""
        try:
            return int(self.pg.odb.read_header(oid)[1])
        except (AttributeError, KeyError, ValueError):  # an odb without header reads
            return int(cast("pygit2.Blob", self.pg[oid]).size)

    def files(self, tree: str) -> dict[str, str]:
        """path -> blob id of every regular file in a tree (recursive)."""
        pygit2 = _pygit2()
        out: dict[str, str] = {}
        stack: list[tuple[str, Any]] = [("", self.pg[tree])]
        while stack:
            prefix, t = stack.pop()
            for e in t:
                if e.type_str == "tree":
                    stack.append((prefix + e.name + "/", self.pg[e.id]))
                elif e.type_str == "blob" and e.filemode != pygit2.enums.FileMode.LINK:
                    out[prefix + e.name] = str(e.id)
        return out

    # -- diffs and merges ---------------------------------------------------------------
    def changes(self, old_tree: str, new_tree: str, max_bytes: int) -> list[model.FileChange]:
        """What changed from ``old_tree`` to ``new_tree``, in old-side line coordinates."""
        git2 = _pygit2()
        if old_tree == new_tree:
            return []
        key = ("changes", old_tree, new_tree, max_bytes)
        if key in self.memo:
            return list(self.memo[key])
        old = cast("pygit2.Tree", self.pg[old_tree])
        diff = old.diff_to_tree(cast("pygit2.Tree", self.pg[new_tree]), context_lines=0,
                                interhunk_lines=0, flags=git2.enums.DiffOption.PATIENCE)
        diff.find_similar(flags=git2.enums.DiffFind.FIND_RENAMES)
        out = [fc for fc in _changes(self, diff, max_bytes)]
        self._remember(key, (old_tree, new_tree), tuple(out))
        return out

    def merge_result(self, a: str, b: str, unrelated: bool = False
                     ) -> tuple[str, list[str]] | None:
        """git's merge of two commits, written nowhere but the object store: (its tree --
        with conflict markers where it conflicts -- and the paths it leaves conflicted);
        None if git cannot merge them (``unrelated``: histories with no common commit
        are merged too, as the scan's snapshots may be).

        Run away from every worktree (``_git_away``): the answer is a verdict every side
        shares (cached per pair of snapshots, whoever asked first), so it must not hang on
        the attributes of the worktree that asked (an untracked ``* merge=union`` there
        made every conflict clean) nor run a merge driver one names. A committed
        ``.gitattributes`` is not read either: a path whose committed ``merge=union``
        would merge cleanly is called a conflict (conservative, never silently clean);
        ``$GIT_DIR/info/attributes``, the user's own, is read."""
        args = ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages"]
        try:
            proc = self._write_live(lambda: self._git_away([*args, a, b], ok=(0, 1)))
        except FatalError as e:
            if not (unrelated and "unrelated histories" in str(e)):
                return None
            try:
                proc = self._write_live(lambda: self._git_away(
                    [*args, "--allow-unrelated-histories", a, b], ok=(0, 1)))
            except FatalError:
                return None
        parts = proc.stdout.split(b"\0")
        tree = parts[0].decode("ascii", "replace").strip()
        if len(tree) not in (40, 64):
            return None
        out = set()
        for raw in parts[1:] if proc.returncode else ():
            if raw:
                path = raw.decode("utf-8", "surrogateescape")
                for side in (a, b):  # a file moved aside for a directory: "path~<side>"
                    path = path.removesuffix(f"~{side}")
                out.add(path)
        return tree, sorted(out)

    def merge_conflicts(self, a: str, b: str) -> list[str] | None:
        """Paths git's own merge of two snapshot commits leaves conflicted; None if unknown."""
        got = self.merge_result(a, b, unrelated=True)
        return None if got is None else got[1]
