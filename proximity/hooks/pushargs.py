"""The refs a ``git push`` command line pushes, for hook hosts that pass their hooks one.

git hands a pre-push hook every ref it will update, one line each on stdin. The pre-commit
framework and prek read those lines themselves and give their hooks only the first one
that brings commits (PRE_COMMIT_LOCAL_BRANCH, PRE_COMMIT_TO_REF, ...): a branch that must
yield, pushed second (``git push origin mine theirs``, ``git push --all``), would pass
unjudged. The others are read back from the command line of the ``git push`` that runs the
hook (procs.ancestors): its refspecs; ``--all``, ``--branches``, ``--mirror``; else the
remote's configured push refspecs or ``push.default=matching``. Each is resolved against
the local refs (a name is never read as an option), and kept when it brings commits the
remote's tracking ref for it does not have -- the way the hosts themselves decide.

The command line is data. Anything it does not make plain (an alias, an option this
module does not know, a ref it cannot resolve) adds nothing: the guard judges what the host
said, as before. ``--all``, ``matching`` and configured refspecs are followed only to a named
remote, whose tracking refs say what it has already; to a URL, only refspecs named on the
command line count.
"""

from __future__ import annotations

import os

from proximity.errors import FatalError
from proximity.hooks import procs

TYPE_CHECKING = False  # (not typing's: the thin client imports this module)
if TYPE_CHECKING:
    from collections.abc import Mapping

ZERO = "0" * 40

# git's own options before the subcommand that take the next word as their value
_GIT_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                             "--config-env", "--super-prefix", "--attr-source"})
# `git push` long options: True = takes a value (attached with = or the next word),
# False = a flag, None = an optional value that can only be attached (--signed=...)
_LONG: dict[str, bool | None] = {
    "all": False, "branches": False, "mirror": False, "delete": False, "tags": False,
    "dry-run": False, "porcelain": False, "force": False, "force-with-lease": None,
    "force-if-includes": False, "recurse-submodules": True, "thin": False,
    "receive-pack": True, "exec": True, "set-upstream": False, "progress": False,
    "prune": False, "verify": False, "follow-tags": False,
    "signed": None, "atomic": False, "push-option": True, "ipv4": False, "ipv6": False,
    "quiet": False, "verbose": False, "repo": True,
}
_SHORT_FLAGS = frozenset("46dfnquv")  # -o takes a value


class Push:
    """What a ``git push`` command line asks for."""

    __slots__ = ("all", "delete", "refspecs", "remote", "tags")

    def __init__(self) -> None:
        self.remote: str | None = None
        self.refspecs: list[str] = []
        self.all = False  # --all, --branches, --mirror: every local branch
        self.delete = False
        self.tags = False


def parse(argv: list[str]) -> Push | None:
    """The push a git command line asks for, or None: not ``git [opts] push ...``, or a
    word this parser cannot be sure of (then nothing is guessed)."""
    if not argv or os.path.basename(argv[0]) not in ("git", "git.exe"):
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):  # git's own options
        word = argv[i]
        i += 2 if word in _GIT_WITH_VALUE else 1
    if i >= len(argv) or argv[i] != "push":
        return None  # another command, or an alias: not understood
    push, words, i = Push(), argv[i + 1:], 0
    positional: list[str] = []
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            positional.extend(words[i:])
            break
        if word.startswith("--"):
            name, eq, _value = word[2:].partition("=")
            full = _long(name)
            if full is None:
                return None
            takes = _LONG.get(full, False)  # a negated --no-<option> is a flag
            if eq and takes is False:
                return None
            if takes is True and not eq:
                if i >= len(words):
                    return None
                value = words[i]
                i += 1
            else:
                value = _value
            if full in ("all", "branches", "mirror"):
                push.all = True
            elif full == "delete":
                push.delete = True
            elif full == "tags":
                push.tags = True
            elif full == "repo":
                push.remote = value
        elif word.startswith("-") and word != "-":
            for k, ch in enumerate(word[1:], 1):
                if ch == "o":  # -o <option>, attached or the next word
                    if k == len(word) - 1:
                        if i >= len(words):
                            return None
                        i += 1
                    break
                if ch not in _SHORT_FLAGS:
                    return None
                if ch == "d":
                    push.delete = True
        else:
            positional.append(word)
    if positional:
        push.remote = positional[0]
        push.refspecs = positional[1:]
    return push


def _long(name: str) -> str | None:
    """A long option's full name (git accepts any unambiguous prefix), or None."""
    known = [*_LONG, *(f"no-{k}" for k in _LONG if not k.startswith("no-"))]
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)] if name else []
    return hits[0] if len(hits) == 1 else None


def from_ancestors(pid: int | None = None) -> Push | None:
    """The push of the nearest ``git`` process that runs this one (the pre-push hook's),
    or None."""
    for p in procs.ancestors(os.getpid() if pid is None else pid):
        if p.argv and os.path.basename(p.argv[0]) in (b"git", b"git.exe"):
            return parse([a.decode("utf-8", "surrogateescape") for a in p.argv])
    return None


def host_lines(env: Mapping[str, str], cwd: str) -> list[list[str]] | None:
    """Pre-push lines of a push a hook host (pre-commit, prek) passed its hook as
    PRE_COMMIT_LOCAL_BRANCH / PRE_COMMIT_TO_REF / PRE_COMMIT_FROM_REF, the others read back
    from the ``git push`` command line; None when the host names a ref without its commit
    that git cannot resolve (judged as a guard run by hand: the worktree)."""
    if env.get("PRE_COMMIT_TO_REF"):
        told = env.get("PRE_COMMIT_LOCAL_BRANCH", "")
        first = [told, env["PRE_COMMIT_TO_REF"], env.get("PRE_COMMIT_REMOTE_BRANCH", ""),
                 env.get("PRE_COMMIT_FROM_REF", ZERO)]
    else:
        # pre-commit's push of history down to a root commit (a new remote, or one with
        # none of it): the local ref is named, its commit is not
        told = env["PRE_COMMIT_LOCAL_BRANCH"]
        sha = _commit_of(told, cwd)
        if sha is None:
            return None
        first = [told, sha, env["PRE_COMMIT_REMOTE_BRANCH"], ZERO]
    full = told if told.startswith("refs/") else f"refs/heads/{told}"
    return [first, *more_lines(env, cwd, {told, full})]


def more_lines(env: Mapping[str, str], cwd: str, told: set[str],
               push: Push | None = None) -> list[list[str]]:
    """Pre-push lines (local ref, local commit, remote ref, remote commit) for the
    branches the push's command line updates besides the ``told`` local refs (the host's
    own), each bringing commits the remote's tracking ref lacks. Empty when the command
    line makes nothing else plain."""
    if push is None:
        push = from_ancestors()
    if push is None or push.delete:
        return []
    remote = env.get("PRE_COMMIT_REMOTE_NAME") or push.remote or ""
    config = _config(cwd, remote) if not push.refspecs or push.all else ([], "")
    if not (push.refspecs or push.all or config[0] or config[1] == "matching") \
            or (push.tags and not push.refspecs):
        return []  # the usual `git push` (one branch: the host's), or tags only
    listing = _refs(cwd)
    if listing is None:
        return []
    refs, current = listing
    named = bool(config[1]) or any(r.startswith(f"refs/remotes/{remote}/") for r in refs)
    pairs: list[tuple[str, str]] = []  # (local ref, remote ref)
    specs = push.refspecs
    if not specs and not push.all and named:
        specs = config[0]
        if not specs and config[1] == "matching":
            pairs += [(r, r) for r in refs if r.startswith("refs/heads/")
                      and f"refs/remotes/{remote}/{r[11:]}" in refs]
    if push.all and named:
        pairs += [(r, r) for r in refs if r.startswith("refs/heads/")]
    for spec in specs:
        pairs += _resolve(spec, refs, current)
    out: list[list[str]] = []
    seen = set(told)
    for local, dst in pairs:
        if local in seen or not local.startswith("refs/heads/"):
            continue
        seen.add(local)
        branch = dst.removeprefix("refs/heads/")
        tracking = refs.get(f"refs/remotes/{remote}/{branch}") \
            if remote and dst.startswith("refs/heads/") else None
        if tracking is not None and _contains(cwd, tracking, refs[local]):
            continue  # the remote has it already: git updates nothing here
        out.append([local, refs[local], dst, tracking or ZERO])
    return out


def _resolve(spec: str, refs: dict[str, str], current: str | None) -> list[tuple[str, str]]:
    """(local ref, remote ref) pairs a refspec pushes; none for a deletion, a negative
    refspec, or a source that is not one local ref."""
    spec = spec.removeprefix("+")
    if not spec or spec.startswith("^"):
        return []
    src, colon, dst = spec.partition(":")
    if not src:
        return []  # ":dst" deletes
    if "*" in src:
        head, _, tail = src.partition("*")
        dhead, _, dtail = (dst if colon else src).partition("*")
        return [(r, dhead + r[len(head):len(r) - len(tail)] + dtail) for r in refs
                if r.startswith(head) and r.endswith(tail) and len(r) >= len(head) + len(tail)]
    if src == "HEAD" or src == "@":
        local = current
    else:
        # git's order for a short name; two matches make git refuse: so do we
        hits = [c for c in (src, f"refs/{src}", f"refs/tags/{src}", f"refs/heads/{src}",
                            f"refs/remotes/{src}") if c.startswith("refs/") and c in refs]
        local = hits[0] if len({*hits}) == 1 or (hits and hits[0] == src) else None
    if local is None:
        return []
    target = dst if colon and dst else local
    if colon and dst and not dst.startswith("refs/"):
        target = f"refs/heads/{dst}"
    return [(local, target)]


def _refs(cwd: str) -> tuple[dict[str, str], str | None] | None:
    """Every local branch and tag and remote-tracking ref (name -> commit), and the
    current branch; None if git cannot say."""
    out = _git(["for-each-ref", "--format=%(HEAD) %(objectname) %(refname)", "refs/heads",
                "refs/remotes", "refs/tags"], cwd)
    if out is None:
        return None
    refs: dict[str, str] = {}
    current = None
    for line in out[1].decode("utf-8", "surrogateescape").splitlines():
        mark, rest = line[:1], line[2:]  # %(HEAD) is "*" or " "
        sha, _, name = rest.partition(" ")
        refs[name] = sha
        if mark == "*":
            current = name
    return refs, current


def _config(cwd: str, remote: str) -> tuple[list[str], str]:
    """The remote's configured push refspecs and ``push.default`` -- and, as the second
    value's stand-in when unset, "simple" if ``remote`` is a configured remote, "" if not."""
    out = _git(["config", "-z", "--get-regexp", r"^(push\.default|remote\..*\.(url|push))$"],
               cwd, ok=(0, 1))
    if out is None:
        return [], ""
    specs: list[str] = []
    default, configured = "", False
    for item in out[1].decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = item.partition("\n")
        if key == "push.default":
            default = value
        elif key == f"remote.{remote}.push":
            specs.append(value)
        elif key == f"remote.{remote}.url":
            configured = True
    if not configured:
        return [], ""
    return specs, default or "simple"


def _contains(cwd: str, tip: str, sha: str) -> bool:
    """Whether ``sha`` is ``tip`` or one of its ancestors (False when git cannot say)."""
    if sha == tip:
        return True
    out = _git(["merge-base", "--is-ancestor", sha, tip], cwd, ok=(0, 1, 128))
    return out is not None and out[0] == 0


def _commit_of(ref: str, cwd: str) -> str | None:
    """The commit a local ref names (never read as an option), or None."""
    out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
               cwd, ok=(0, 1, 128))
    sha = out[1].decode("ascii", "replace").strip() if out is not None and out[0] == 0 else ""
    return sha if len(sha) in (40, 64) else None


def _git(args: list[str], cwd: str, ok: tuple[int, ...] = (0,)) -> tuple[int, bytes] | None:
    """git's exit code and output, None when git cannot run."""
    # (the thin hook path reads this module: the standard library only)
    # lazy: git's runner (and libgit2: ~110 ms) only when a push names more than its host said
    from proximity import gitio

    try:
        out = gitio.git(args, cwd=cwd, ok=ok)
    except (FatalError, OSError):
        return None
    return out.returncode, out.stdout
