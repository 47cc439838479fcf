"""The standing order as the pre-edit check reads it: which siblings a standing Resolution
Advisory told to yield to this worktree, directly or through the lines of work a checkout
holds."""

from __future__ import annotations

from proximity import gitio
from proximity.errors import FatalError, LedgerError
from proximity.ledger import Ledger


def open_ledger(repo: gitio.Repo) -> Ledger | None:
    try:
        return Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return None


def yielding_to(ledger: Ledger | None, me: str, others: set[str]) -> set[str]:
    """The siblings a standing Resolution Advisory told to yield to this worktree (the
    one order every worktree reads, scan's ``yields``): this worktree holds course there,
    so where its own change meets theirs their work asks rather than denies it (two
    agents never deny each other into a wait for the other to land); lines only they
    changed stay theirs (decision.held)."""
    if ledger is None:
        return set()
    out = set()
    for other in others:
        try:
            got = ledger.held(me, other)
        except LedgerError:
            return set()
        if got is not None and got[0] == other:
            out.add(other)
    return out


def holding_yielders(repo: gitio.Repo, me: str, siblings: set[str]) -> set[str]:
    """Those of ``siblings`` whose work beyond what their branch's remote-tracking ref
    has is other worktrees' lines of work -- each one's HEAD among those commits -- of
    which one was told to yield to this worktree: they yield here as that work does
    (else the main checkout holding a lane's merge it may not push denied the very
    worktree the lane yields to, and each waited for the other)."""
    if repo.no_remote_refs():
        return set()  # no branch has a remote-tracking ref to be beyond (no git process)
    trees = [w for w in repo.worktrees_fast() if not w.prunable]
    candidates = [w for w in trees if w.id in siblings and w.branch and w.head]
    if not candidates:
        return set()
    got = gitio.git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes"],
                    cwd=repo.here, ok=(0, 128)).stdout.decode("utf-8", "replace")
    tracking: dict[str, set[str]] = {}
    for line in got.splitlines():
        ref, _, sha = line.partition(" ")
        parts = ref.split("/", 3)  # refs, remotes, <remote>, <branch>
        if len(parts) == 4 and sha:
            tracking.setdefault(parts[3], set()).add(sha)
    ledger = None
    out: set[str] = set()
    try:
        for w in candidates:
            had = tracking.get(str(w.branch))
            if not had or w.head in had:
                continue
            ahead = set(gitio.git(["rev-list", "--max-count=2000", str(w.head), "--not",
                                   *sorted(had)], cwd=repo.here, ok=(0, 128)
                                  ).stdout.decode().split())
            lines = [v.id for v in trees if v.id not in (w.id, me) and v.head in ahead]
            if not lines:
                continue
            ledger = ledger or open_ledger(repo)
            if yielding_to(ledger, me, set(lines)):
                out.add(w.id)
    finally:
        if ledger is not None:
            ledger.close()
    return out


def landed_since(repo: gitio.Repo, ledger: Ledger | None, me: str, others: set[str]
                 ) -> set[str]:
    """Of ``others`` (told to yield to this worktree), those that pushed over it anyway
    (their LANDING said it overrode the guard) and whose committed work on the files the
    decision was about is on a remote's trunk now, where this worktree's is not: landed
    work holds (tcas.rightofway.landed), so they yield here no longer; the next scan
    records it the same way. (This worktree was otherwise told it had right-of-way until
    then.) Only after such a LANDING: files are coarser than the scan's lines, and a
    trunk that moved under a sibling for other reasons must not turn its ask into a
    deny."""
    if not others or ledger is None or repo.no_remote_refs():
        return set()
    try:
        others = {str(m["from"]) for m in ledger.messages(me, limit=200)
                  if m["type"] == "landed" and m["from"] in others
                  and isinstance(m["body"], dict) and m["body"].get("over") is True}
    except LedgerError:
        return set()
    return landed_over(repo, ledger, me, others)


def landed_over(repo: gitio.Repo, ledger: Ledger | None, me: str, others: set[str]
                ) -> set[str]:
    """Of ``others``, those whose committed work on the files of their standing decision
    with this worktree (any file, when none is kept) is on a remote's trunk now, where
    this worktree's is not."""
    if not others or ledger is None or repo.no_remote_refs():
        return set()
    try:
        tips = repo.trunk_tips()
        if not tips:
            return set()
        heads = {w.id: w.head for w in repo.worktrees_fast()}
        mine = heads.get(me)
        out = set()
        for other in sorted(others):
            theirs = heads.get(other)
            if not mine or not theirs:
                continue
            files = set(ledger.held_files(me, other) or ())
            if _landed(repo, theirs, mine, tips, files) and \
                    not _landed(repo, mine, theirs, tips, files):
                out.add(other)
        return out
    except (FatalError, LedgerError, KeyError, ValueError):
        return set()  # (not known: the standing decision answers)


def _landed(repo: gitio.Repo, head: str, other: str, tips: list[str], files: set[str]
            ) -> bool:
    """Whether the commits of ``head`` that ``other`` lacks are on a trunk, and change one
    of ``files`` (any file, when none is known)."""
    if repo.is_ancestor(head, other) or not any(repo.is_ancestor(head, t) for t in tips):
        return False
    base = repo.merge_base(head, other)
    if base is None:
        return False
    changed = repo.changed_paths(base, head)
    return not files or bool(files & set(changed))
