"""Git access: the only package that talks to git. pygit2 (libgit2) in process, the git CLI
where git's own behaviour is the truth (ignore rules for snapshots, ``merge-tree`` for exact
conflicts), every git process through one runner with one time-limit policy (``run``).

``Repo`` is the repository opened from any of its worktrees; its methods come by concern:
worktrees and heads (``base``, ``listing``), history (``history``), objects and merges
(``objects``), trees built in process (``treebuild``), the policy's inputs (``policyfiles``),
snapshots of live state (``snapshots``) and the stashed edits put back on them
(``patches``), trees of foreign work brought in (``results``). Callers use this package's
names only.
"""

from __future__ import annotations

# the file-only helpers live in gitfiles.py (light enough for the hooks' thin client)
from proximity.gitfiles import (
    MAIN_ID,
    agent_id,
    checkout_of,
    common_dir,
    common_of,
    find_git_dir,
    found_by_git,
    of_repository,
    operation_in_progress,
    populating,
    safe_name,
    steps_left,
    worktree_id,
)
from proximity.gitio.base import LARGE_STUB, MEMO_ENTRIES, sweep_scratch
from proximity.gitio.bulk import summary_text
from proximity.gitio.bulk import under as under_summary
from proximity.gitio.history import SOLE_BASE_WALK, History
from proximity.gitio.ignores import any_ignored
from proximity.gitio.listing import WorktreeInfo
from proximity.gitio.objects import LOOSE_LIMIT
from proximity.gitio.patches import Patches
from proximity.gitio.policyfiles import POLICY_FILES, config_files, policy_inputs
from proximity.gitio.results import Results
from proximity.gitio.run import (
    CALL_CLASS,
    CALLS,
    DIFF_ALGORITHM,
    DIFF_ARGS,
    EMPTY_TREE,
    MIN_GIT,
    MOVED_DIFF_ARGS,
    SNAPSHOT_IDENT,
    TIMEOUTS,
    At,
    Where,
    blob_args,
    clean_env,
    commit_of,
    file_diff_args,
    git,
    git_finish,
    git_many,
    git_start,
    git_version,
    is_ancestor_cli,
    live_diff_args,
    merge_file_args,
    new_file_diff,
    reap,
    require_git,
    time_limit,
    tree_diff,
    tree_diff_args,
    untracked,
)
from proximity.gitio.snapshots import OVERLAY_MAX, Snapshots
from proximity.gitio.store import gc as store_gc
from proximity.gitio.store import quote_path, refused_write, sweep_scratch_stores


class Repo(Snapshots, Results, Patches, History):
    """A repository, opened from any of its worktrees."""


__all__ = [
    "CALLS", "CALL_CLASS", "DIFF_ALGORITHM", "DIFF_ARGS", "EMPTY_TREE", "LARGE_STUB",
    "LOOSE_LIMIT", "MAIN_ID", "MEMO_ENTRIES", "MIN_GIT", "MOVED_DIFF_ARGS", "OVERLAY_MAX",
    "POLICY_FILES", "SNAPSHOT_IDENT", "SOLE_BASE_WALK", "TIMEOUTS",
    "At", "Repo", "Where", "WorktreeInfo", "agent_id", "any_ignored", "blob_args",
    "checkout_of", "clean_env",
    "commit_of", "common_dir", "common_of", "config_files", "file_diff_args", "find_git_dir",
    "found_by_git", "git", "git_finish", "git_many", "git_start", "git_version",
    "is_ancestor_cli", "live_diff_args", "merge_file_args", "new_file_diff",
    "of_repository", "operation_in_progress", "policy_inputs",
    "populating", "quote_path", "reap", "refused_write", "require_git", "safe_name",
    "steps_left", "store_gc", "summary_text", "sweep_scratch", "sweep_scratch_stores",
    "time_limit", "tree_diff", "tree_diff_args", "under_summary", "untracked",
    "worktree_id",
]
