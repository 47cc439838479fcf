"""Snapshots of a worktree's live state: staged, unstaged and untracked work as a real tree
object, built in a temporary index (never the user's), in process for a few paths and
through git's own ``add -A`` otherwise; patches a hook host holds out put back; large
untracked files stubbed, loose objects packed."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Collection, Sequence
from typing import Any

from proximity import layout
from proximity.errors import FatalError
from proximity.gitfiles import (
    safe_name,
)
from proximity.gitio import bulk, treebuild
from proximity.gitio.adding import Adding, _excluded, _s
from proximity.gitio.base import (
    MEMO_ENTRIES,
    _cfg_bool,
    _pygit2,
    copy_index,
    file_size,
)
from proximity.gitio.ignores import Ignores
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.run import (
    EMPTY_TREE,
    SNAPSHOT_IDENT,
    Where,
    _b,
    git,
    git_finish,
    git_start,
    reap,
)

OVERLAY_MAX = 64  # paths a snapshot builds in process (Repo.snapshot_overlay); more: git


class Snapshots(Adding, Ignores):
    """Snapshots: a worktree's live state as a tree (never the user's index)."""

    # -- snapshots ----------------------------------------------------------------------
    def snapshot_tree(self, wt: WorktreeInfo, index_file: str | None = None,
                      start_tree: list[str] | None = None, from_user_index: bool = False,
                      keep: bool = True) -> str:
        """The tree of everything in the worktree that git would keep (add -A).

        Works on a private copy of a per-worktree shadow index, never the user's index;
        the shadow keeps git's stat cache between runs so unchanged files are not re-read.
        Untracked files over ``self.large_bytes`` are never hashed: the tree holds a small
        stub naming their size and mtime instead (a change still shows). ``keep``: the
        private copy becomes the shadow (False: the shadow is left as it was).
        """
        try:
            return self._write_live(lambda: self._snapshot_tree(
                wt, index_file, start_tree, from_user_index, keep))
        except FatalError as e:
            if from_user_index or "invalid object" not in str(e):
                raise
            # a shadow naming objects the store no longer holds (its gc, a scratch store
            # gone with its process): start again from the user's index
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.ecm_dir, "index", f"{safe_name(wt.id)}.idx"))
            return self._write_live(lambda: self._snapshot_tree(
                wt, index_file, start_tree, True, keep))

    def _snapshot_tree(self, wt: WorktreeInfo, index_file: str | None,
                       start_tree: list[str] | None, from_user_index: bool, keep: bool
                       ) -> str:
        user_index = index_file or os.path.join(wt.admin, "index")
        shadow_dir = layout.index_dir(self.ecm_dir)
        shadow = os.path.join(shadow_dir, f"{safe_name(wt.id)}.idx")
        tmp = self._scratch(safe_name(wt.id), max(file_size(user_index), file_size(shadow)))
        src = user_index
        try:
            if not (from_user_index and os.path.exists(user_index)) and os.path.exists(
                    shadow) and (
                not os.path.exists(user_index)
                or os.stat(shadow).st_mtime_ns >= os.stat(user_index).st_mtime_ns
            ):
                src = shadow
        except OSError:
            src = user_index
        try:
            if os.path.exists(src):
                copy_index(src, tmp)
            env = {"GIT_INDEX_FILE": tmp}
            if start_tree is not None and src == user_index and os.path.exists(tmp):
                # the tree of the user's index this snapshot starts from (the resident
                # service compares a commit's index with it: see service.snapshots)
                start_tree.append(self._git(["write-tree"], cwd=wt.at, env=env
                                            ).stdout.decode().strip())  # tmp is private already
            others, shadow_only, theirs, links = self._untracked(wt, env, user_index)
            large = self._large(wt, others | shadow_only)
            names = {_s(raw) for raw in others | shadow_only} - set(large)
            groups = bulk.summarize(names, map(_s, theirs))
            self.summaries[wt.id] = groups
            if groups:
                links = self._add_summarized(wt, env, others, large, groups, theirs, links)
            elif large or links:
                if large:
                    git(["update-index", "-z", "--force-remove", "--stdin"], cwd=wt.at,
                        env=env, input=b"".join(_b(p) + b"\0" for p in large))
                specs = b"".join(b":(exclude,literal)" + _b(p) + b"\0" for p in large)
                self._git(["add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                           "--pathspec-file-nul"], cwd=wt.at, env=env, ok=(0, 1),
                          input=b".\0" + specs + _excluded(links))
            else:
                self._git(["add", "-A", "--ignore-errors", "."], cwd=wt.at, env=env,
                          ok=(0, 1))
            self._add_links(wt, env, links)
            if large:
                self._add_stubs(wt, env, large)
            tree = self._git(["write-tree"], cwd=wt.at, env=env).stdout.decode().strip()
            if os.path.dirname(tmp) == shadow_dir and keep and self._kept_objects():
                os.replace(tmp, shadow)
            return tree
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
            with contextlib.suppress(FatalError, OSError):  # housekeeping never fails it
                self.pack_loose_objects()

    def shadow_trees(self, live: Collection[str]) -> dict[str, str]:
        """name -> the tree each shadow index of a live worktree (``live``: their safe
        names) holds, the objects `proximity gc` keeps for it; a retired worktree's
        shadow, or one that names objects the store no longer has, is removed (a next
        snapshot starts from the user's index)."""
        d = os.path.join(self.ecm_dir, "index")
        out: dict[str, str] = {}
        try:
            names = [n for n in os.listdir(d) if n.endswith(".idx") and not n.startswith(".")]
        except OSError:
            return out
        for name in names:
            shadow = os.path.join(d, name)
            if name[:-4] in live:
                try:
                    out[name[:-4]] = self.index_tree(shadow, self.here)
                    continue
                except FatalError as e:
                    if "invalid object" not in str(e):
                        continue  # (not ours to judge: a snapshot reads it, or replaces it)
            with contextlib.suppress(OSError):
                os.unlink(shadow)
        return out

    def _kept_objects(self) -> bool:
        """Whether objects go to the store now (a shadow index may name them: objects in
        a scratch store go with this process)."""
        return self.store.current() == self.store.objects

    def snapshot_paths(self, wt: WorktreeInfo, paths: Sequence[str], keep: bool) -> str:
        """The tree of `add -A` over the worktree when only ``paths`` (relative: files or
        directories, existing or deleted) changed since its shadow index was written: the
        shadow plus `add -A -- <paths>` (literal pathspecs). ``keep``: the result becomes
        the shadow (else it is left as it was). The caller knows the rest is unchanged
        (the resident service's watcher) and that none of ``paths`` is a large file."""
        shadow = os.path.join(layout.index_dir(self.ecm_dir), f"{safe_name(wt.id)}.idx")
        tmp = self._scratch(safe_name(wt.id), file_size(shadow))  # beside the shadow, if it can
        keep = keep and os.path.dirname(tmp) == os.path.dirname(shadow) and \
            self._kept_objects()
        try:
            copy_index(shadow, tmp)
            env = {"GIT_INDEX_FILE": tmp}
            here = [p for p in paths if os.path.lexists(os.path.join(wt.path, p))]
            present = set(here)
            gone = [p for p in paths if p not in present]
            if gone:  # a deleted path is named only when the index has it (or under it)
                out = git(["ls-files", "-z", "--", *(":(literal)" + p for p in gone)],
                          cwd=wt.at, env=env).stdout.decode("utf-8", "surrogateescape")
                had = [q for q in out.split("\0") if q]
                here += [p for p in gone if any(q == p or q.startswith(p + "/") for q in had)]
            if here:
                links = self._links_under(wt, env, here)
                self._git(["add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                           "--pathspec-file-nul"], cwd=wt.at, env=env, ok=(0, 1),
                          input=b"".join(b":(literal)" + _b(p) + b"\0" for p in here)
                          + _excluded(links))
                self._add_links(wt, env, links)
            tree = self._git(["write-tree"], cwd=wt.at, env=env).stdout.decode().strip()
            if keep:
                os.replace(tmp, shadow)
            return tree
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def snapshot_overlay(self, wt: WorktreeInfo, base_tree: str, paths: Sequence[str],
                         hashing: tuple[list[str], subprocess.Popen[bytes]] | None = None
                         ) -> str | None:
        """The tree `add -A -- <paths>` gives over an index that holds ``base_tree`` (the
        worktree's shadow index, see snapshot_paths), built in process from ``base_tree``
        without reading or writing an index: regular files hashed by `git hash-object`
        (the filters and attributes `git add` applies), deleted paths dropped. None where
        that is not certain to be git's tree -- libgit2 not open, a directory, a link or
        another special file, a file where the base has a directory or a submodule (or
        the reverse), a new file in a nested repository or one git ignores, core.fileMode
        off, core.ignoreCase on, per-worktree config: then the caller asks git.
        ``hashing``: (files, `git hash-object -w -- files` started already: hash_start);
        its ids are taken when those are exactly the files to hash, and it is always
        waited for."""
        try:
            return self._overlay(wt, base_tree, paths, hashing)
        finally:
            if hashing is not None:
                reap(hashing[1])

    def hash_start(self, cwd: Where, files: Sequence[str]) -> subprocess.Popen[bytes]:
        """`git hash-object -w -- files` started (snapshot_overlay takes its answer);
        ``cwd``: the worktree's At."""
        return git_start(["hash-object", "-w", "--", *files], cwd, env=self.objects_env())

    def _overlay(self, wt: WorktreeInfo, base_tree: str, paths: Sequence[str],
                 hashing: tuple[list[str], subprocess.Popen[bytes]] | None) -> str | None:
        if not self.warm() or not paths or len(paths) > OVERLAY_MAX:
            return None
        pygit2 = _pygit2()
        try:
            cfg = self.pg.config
            if (not _cfg_bool(cfg, "core.fileMode", True) or _cfg_bool(cfg, "core.ignoreCase",
                                                                      False)
                    or _cfg_bool(cfg, "extensions.worktreeConfig", False)):
                return None
            pgw = self._writer()  # (its new trees go to the object store)
            base = pgw[base_tree].peel(pygit2.Tree)
        except (KeyError, ValueError, pygit2.GitError):
            return None
        files: list[tuple[str, int]] = []
        gone: list[str] = []
        new: list[str] = []
        for rel in paths:
            parts = rel.split("/")
            if (not rel or "\n" in rel or rel.startswith("/") or any(
                    x in ("", ".", "..", ".git") for x in parts)):
                return None
            kind = treebuild.tree_kind(base, parts)
            if kind == "blocked":  # a parent is a file or a submodule in the base
                return None
            try:
                st = os.lstat(os.path.join(wt.path, rel))
            except FileNotFoundError:
                if kind is not None:
                    gone.append(rel)
                continue
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode) or kind not in (None, "blob"):
                return None
            if kind is None:
                if treebuild.in_nested_repo(wt.path, base, parts):
                    return None
                new.append(rel)
            files.append((rel, 0o100755 if st.st_mode & stat.S_IXUSR else 0o100644))
        if new and self.any_ignored_in(wt, new):
            return None
        changes: dict[tuple[str, ...], tuple[str, int] | None] = {
            tuple(p.split("/")): None for p in gone}
        if files:
            got = None
            if hashing is not None and hashing[0] == [p for p, _ in files]:
                got = git_finish(hashing[1], ok=(0,))
            out = got.split() if got is not None else self._git(
                ["hash-object", "-w", "--stdin-paths"], cwd=wt.at,
                input=b"".join(_b(p) + b"\n" for p, _ in files)).stdout.split()
            if len(out) != len(files):
                return None
            for (rel, mode), oid in zip(files, out, strict=True):
                changes[tuple(rel.split("/"))] = (oid.decode(), mode)
        wrote: list[str] = []
        try:
            tree = str(treebuild.tree_with(pgw, base, changes, wrote) or EMPTY_TREE)
        except (KeyError, ValueError, TypeError, pygit2.GitError):
            return None
        # what it holds beyond base_tree: the objects a check of it reads (unreadable)
        self.derived(tree, base_tree, [v[0] for v in changes.values() if v] + wrote)
        return tree

    def index_tree(self, index_file: str, cwd: Where) -> str:
        """The tree an index file holds (`git write-tree`), from a private copy: the
        index itself is never written. Remembered by the file's identity and stat (git
        replaces an index file whole, never in place)."""
        try:
            st = os.stat(index_file)
            key: tuple[Any, ...] = ("index-tree", os.path.realpath(index_file), st.st_ino,
                                    st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            key = ()
        if key and key in self.memo:
            return str(self.memo[key])
        tree = self._index_tree(index_file, cwd)
        if key:
            if len(self.memo) > MEMO_ENTRIES:
                self.memo.clear()
            self.memo[key] = tree
        return tree

    def _index_tree(self, index_file: str, cwd: Where) -> str:
        return self._write_live(lambda: self._index_tree_once(index_file, cwd))

    def _index_tree_once(self, index_file: str, cwd: Where) -> str:
        # (in the temporary directory when the ledger's index directory cannot take it)
        tmp = self._scratch(os.path.basename(index_file) + ".proximity", file_size(index_file)) \
            if os.path.isdir(layout.index_dir(self.ecm_dir)) else \
            f"{index_file}.proximity-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            copy_index(index_file, tmp)
            return self._git(["write-tree"], cwd=cwd, env={"GIT_INDEX_FILE": tmp}
                             ).stdout.decode().strip()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def snapshot_commit(self, tree: str, head: str | None,
                        message: str = "proximity snapshot") -> str:
        """A content-addressed commit of ``tree`` on ``head``: same state and message, same
        id (fixed identity and dates). Written in process: the very object `git
        commit-tree` writes with SNAPSHOT_IDENT (tests/test_faults.py compares them)."""
        return self._write_live(lambda: self._snapshot_commit(tree, head, message))

    def _snapshot_commit(self, tree: str, head: str | None, message: str) -> str:
        if self.warm():
            pygit2 = _pygit2()
            try:
                sig = pygit2.Signature("proximity", "proximity@localhost", 0, 0)
                oid = self._writer().create_commit(None, sig, sig, message + "\n",
                                                   pygit2.Oid(hex=tree),
                                                   [pygit2.Oid(hex=head)] if head else [])
                return str(oid)
            except (ValueError, KeyError, pygit2.GitError):
                pass
        args = ["commit-tree", tree, "-m", message]
        if head:
            args[2:2] = ["-p", head]
        out = self._git(args, env=SNAPSHOT_IDENT)
        return out.stdout.decode().strip()
