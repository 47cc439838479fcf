"""Where a warm check's time goes when a person types: the question the editor's server
asks at each keystroke (the buffer's lines that differ from HEAD, the buffer as the edit's
result, the buffer shared as unsaved live work first), asked again and again in one warm
process on a generated repository, timed and profiled (cProfile, the later half).

    python benchmarks/check_profile.py --files 10000 --worktrees 8 --runs 30
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from genrepo import ENV, generate, module_paths

from proximity import gitfiles, layout, unsaved
from proximity.lsp.answer import ask
from proximity.lsp.judge import own_lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--worktrees", type=int, default=8)
    ap.add_argument("--changes", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--top", type=int, default=25, help="profile lines shown")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "repo")
        os.makedirs(root)
        generate(root, a.files, a.worktrees, a.changes)
        for w in sorted(os.listdir(root)):  # a ledger as after a day of work
            subprocess.run([sys.executable, "-m", "proximity", "snapshot"],
                           cwd=os.path.join(root, w), env=ENV, check=True, capture_output=True)
        me, sib = os.path.join(root, "wt00"), os.path.join(root, "wt01")
        shared = module_paths(a.files)[a.changes - 1]  # wt00 and wt01 both append to it
        with open(os.path.join(me, shared)) as f:
            rows = f.read().split("\n")
        with open(os.path.join(sib, shared)) as f:
            contested = f.read().split("\n").index("# edit by agent 1")
        head = subprocess.run(["git", "show", f"HEAD:{shared}"], cwd=me, env=ENV, text=True,
                              capture_output=True, check=True).stdout
        found = gitfiles.checkout_of(me)
        assert found is not None
        gitdir = os.path.realpath(os.path.join(found[0], found[1]))
        common = os.path.realpath(gitfiles.common_dir(gitdir))
        ecm, agent = layout.ecm_dir(common), gitfiles.agent_id(gitdir, common)

        def keystroke(i: int) -> str:
            body = "\n".join([*rows[:contested], f"# typed by the person {i}",
                              *rows[contested + 1:]])
            unsaved.write(ecm, agent, shared, body.encode())
            return ask(os.path.join(me, shared), own_lines(body, head), body).decision

        decided = {keystroke(i) for i in range(3)}  # warm
        times, prof = [], cProfile.Profile()
        for i in range(a.runs):
            t = time.perf_counter()
            if i >= a.runs // 2:
                prof.enable()
            decided.add(keystroke(100 + i))
            if i >= a.runs // 2:
                prof.disable()
            times.append((time.perf_counter() - t) * 1000)
        unsaved.sweep(ecm)
    plain = sorted(times[:a.runs // 2])  # (the profiled half is slower: not counted)
    print(f"{a.files} files x {a.worktrees} worktrees, {len(plain)} keystrokes timed, "
          f"decisions {sorted(decided)}: p50 {statistics.median(plain):.1f} ms, p95 "
          f"{plain[round(0.95 * (len(plain) - 1))]:.1f} ms, max {plain[-1]:.1f} ms; "
          f"{a.runs - len(plain)} more profiled:")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(a.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
