"""`proximity check PATH[:START-END]…`: may this worktree edit these lines now?

In process, without a scan: for each sibling worktree, only its change of the requested
paths (``git diff`` from the pair's merge base to its files on disk, untracked files
included), its declared intents from the ledger, and — only when the requested lines define
symbols — the identifiers its new code uses. ``--hook HARNESS`` reads an agent harness's
pre-edit event on stdin and answers in that harness's format (see proximity/harness.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

from proximity import checker, gitio, hunks
from proximity.errors import ConfigError, FatalError, LedgerError
from proximity.intervals import Range

if TYPE_CHECKING:
    import argparse

    from proximity.ledger import Ledger

SPEC = re.compile(r"^(.*?):(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)$")
MAX_SYMBOLS = 40
MAX_UNTRACKED_SCAN = 200
MAX_SCAN_BYTES = 256 * 1024


class Target(NamedTuple):
    path: str  # relative to the worktree root, '/'-separated
    ranges: tuple[Range, ...] | None  # lines of the current file; None: the whole file


def parse_spec(spec: str) -> tuple[str, tuple[Range, ...] | None]:
    """``path`` or ``path:10-20,30`` -> (path, ranges or None for the whole file)."""
    m = SPEC.match(spec)
    if not m:
        return spec, None
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        s, e = int(lo), int(hi or lo)
        if e < s or s < 1:
            raise FatalError(f"bad line range {part!r} in {spec!r} (want START-END, 1-based)")
        out.append((s, e))
    return m.group(1), tuple(out)


def relative(repo: gitio.Repo, path: str, cwd: str) -> str:
    full = os.path.realpath(os.path.join(cwd, path))
    rel = os.path.relpath(full, repo.workdir)
    if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
        raise FatalError(f"{path} is outside this worktree ({repo.workdir})")
    return rel.replace(os.sep, "/")


def deny_policy(repo: gitio.Repo, given: str | None) -> str:
    """``--deny-on``, else git config ``proximity.checkPolicy``, else ``ra``."""
    value = given or gitio.config_get(repo.workdir, "proximity.checkPolicy") or "ra"
    if value not in checker.POLICIES:
        raise ConfigError(f"proximity.checkPolicy = {value!r}: want one of "
                          f"{', '.join(checker.POLICIES)}")
    return value


# -- facts ----------------------------------------------------------------------------
class _Bases:
    """Per-base memo: which paths the base has, and this worktree's own diff from it."""

    def __init__(self, repo: gitio.Repo, me: gitio.WorktreeInfo, paths: list[str]) -> None:
        self.repo, self.me, self.paths = repo, me, paths
        self._in: dict[tuple[str | None, str], bool] = {}
        self._mine: dict[str | None, dict[str, hunks.FileDiff]] = {}

    def has(self, base: str | None, path: str) -> bool:
        key = (base, path)
        if key not in self._in:
            self._in[key] = gitio.path_in_commit(self.repo.workdir, base, path)
        return self._in[key]

    def diffs(self, worktree: str, base: str | None) -> dict[str, hunks.FileDiff]:
        """One worktree's change of the requested paths since ``base`` (untracked too)."""
        out = hunks.parse(gitio.live_diff(worktree, base, self.paths))
        maybe_new = [p for p in self.paths if p not in out and not self.has(base, p)
                     and os.path.isfile(os.path.join(worktree, p))]
        if maybe_new:
            for p in gitio.untracked(worktree, maybe_new):
                out.update(hunks.parse(gitio.new_file_diff(worktree, p)))
        return out

    def mine(self, base: str | None) -> dict[str, hunks.FileDiff]:
        if base not in self._mine:
            self._mine[base] = self.diffs(self.me.path, base)
        return self._mine[base]


def _intents(ledger: Ledger | None) -> dict[str, dict[str, tuple[Range, ...] | None]]:
    """Live intents per stream (forward decay above zero)."""
    if ledger is None:
        return {}
    from proximity import clocks

    try:
        items = ledger.intents()
        now = ledger.clocks()
    except LedgerError:
        return {}
    out: dict[str, dict[str, tuple[Range, ...] | None]] = {}
    for stream, paths in items.items():
        for path, (ranges, clock) in paths.items():
            if clocks.forward_decay(clocks.hop_count(clock, now.get(stream, clock))) > 0:
                out.setdefault(stream, {})[path] = tuple(ranges) if ranges else None
    return out


def _defined(worktree: str, t: Target) -> list[str]:
    """Short names of the innermost definitions the requested lines fall in."""
    from proximity import parsers

    if parsers.language_of(t.path) is None:
        return []
    try:
        with open(os.path.join(worktree, t.path), "rb") as f:
            data = f.read(MAX_SCAN_BYTES + 1)
        if len(data) > MAX_SCAN_BYTES:
            return []
        from proximity import symbols

        defs = symbols.analyse(t.path, data)["defs"]
        ambient = symbols.AMBIENT
    except Exception:  # the symbol machinery is optional evidence, never a failure
        return []
    spans = [(q, int(v[3]), int(v[4])) for q, v in defs.items() if len(v) >= 5]
    if t.ranges is not None:
        spans = [(q, lo, hi) for q, lo, hi in spans
                 if any(lo <= e and s <= hi for s, e in t.ranges)]
        spans = [x for x in spans if not any(y is not x and x[1] <= y[1] and y[2] <= x[2]
                                             and (y[1], y[2]) != (x[1], x[2]) for y in spans)]
    names = {q.rsplit(".", 1)[-1] for q, _, _ in spans}
    return sorted(n for n in names if n not in ambient and len(n) > 2)[:MAX_SYMBOLS]


def _uses(worktree: str, base: str | None, names: list[str], skip: str
          ) -> list[checker.Use]:
    """Where the sibling's new code (tracked and untracked) uses one of ``names``."""
    if not names:
        return []
    word = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    defines = re.compile(r"\b(def|class|function|func|fn|type|interface|struct|enum)\s+$")
    found: list[checker.Use] = []
    seen: set[tuple[str, str]] = set()

    def scan(path: str, hs: Sequence[hunks.Hunk]) -> None:
        for h in hs:
            line = h.new_start
            for text in h.lines:
                if text.startswith("-"):
                    continue
                body = text[1:]
                for m in word.finditer(body):
                    if defines.search(body[:m.start()]):
                        continue  # their own definition of a same-named symbol
                    key = (m.group(1), path)
                    if key not in seen:
                        seen.add(key)
                        found.append(checker.Use(m.group(1), path, line, (h,)))
                line += 1

    for path, d in hunks.parse(gitio.live_diff(worktree, base)).items():
        if path != skip:
            scan(path, d.hunks)
    for path in gitio.untracked(worktree)[:MAX_UNTRACKED_SCAN]:
        if path == skip:
            continue
        try:
            if os.path.getsize(os.path.join(worktree, path)) > MAX_SCAN_BYTES:
                continue
        except OSError:
            continue
        for p, d in hunks.parse(gitio.new_file_diff(worktree, path)).items():
            scan(p, d.hunks)
    return found[:10]


def gather(repo: gitio.Repo, targets: Sequence[Target], ledger: Ledger | None
           ) -> list[checker.Side]:
    """Every sibling's evidence about the targets (siblings in parallel: git's work)."""
    me = repo.current()
    siblings = [w for w in repo.worktrees()
                if w.id != me.id and not w.prunable and os.path.isdir(w.path)]
    if not siblings:
        return []
    paths = sorted({t.path for t in targets})
    bases = _Bases(repo, me, paths)
    intents = _intents(ledger)
    defined = {t.path: _defined(me.path, t) for t in targets}

    def one(w: gitio.WorktreeInfo) -> list[checker.Side]:
        base = gitio.merge_base_cli(repo.workdir, me.head, w.head)
        theirs = bases.diffs(w.path, base)
        mine = bases.mine(base)
        out = []
        for t in targets:
            own = mine.get(t.path)
            base_ranges = None if t.ranges is None else tuple(
                hunks.to_base(t.ranges, own.hunks if own else ()))
            declared = intents.get(w.id, {})
            uses = tuple(_uses(w.path, base, defined[t.path], t.path)) \
                if defined[t.path] else ()
            out.append(checker.Side(
                w.id, w.branch, t.path, base_ranges, t.ranges, theirs.get(t.path),
                declared.get(t.path), t.path in declared, uses))
        return out

    with ThreadPoolExecutor(max_workers=min(8, len(siblings))) as pool:
        return [s for sides in pool.map(one, siblings) for s in sides]


def check(start: str, targets: Sequence[tuple[str, tuple[Range, ...] | None]],
          deny_on: str | None = None, cwd: str | None = None) -> checker.Decision:
    """The decision for editing ``targets`` (paths relative to ``cwd``) in the worktree
    that contains ``start``."""
    gitio.require_git()
    repo = gitio.Repo(start, fast=True)
    policy = deny_policy(repo, deny_on)
    tg = [Target(relative(repo, p, cwd or start), r) for p, r in targets]
    ledger = _open_ledger(repo)
    try:
        sides = gather(repo, tg, ledger)
    finally:
        if ledger is not None:
            ledger.close()
    return checker.decide(sides, policy)


def _open_ledger(repo: gitio.Repo) -> Ledger | None:
    from proximity.ledger import Ledger

    try:
        return Ledger(repo.ecm_dir, create=False)
    except LedgerError:
        return None


def run(args: argparse.Namespace) -> int:
    if args.hook:
        from proximity import harness

        return harness.run(args.hook, sys.stdin.read(), args.deny_on)
    if not args.paths:
        raise FatalError("name at least one PATH[:START-END] to check (or use --hook)")
    cwd = os.path.abspath(args.repo or os.getcwd())
    d = check(cwd, [parse_spec(s) for s in args.paths], args.deny_on)
    if args.json:
        print(json.dumps(checker.decision_json(d), indent=2))
    else:
        print(checker.decision_text(d))
    return 0 if d.decision == checker.ALLOW else 1
