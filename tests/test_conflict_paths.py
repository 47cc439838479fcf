"""The exact channel skips git's merge only where it provably cannot conflict.

Real repositories and real `git merge-tree`: random edits on two sides (modify, add,
delete, rename, a file where the other side makes a directory), the channel's answer
against git's own merge of the same two states every time.
"""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path

import pytest
from conftest import git, init_repo

from proximity import gitio
from proximity.channels import Evidence, conflict
from proximity.config import Config
from proximity.gitio import history
from proximity.model import Agent, Facts
from proximity.tcas.pairwise import Pairwise

BASE = {"a.txt": "".join(f"a {i}\n" for i in range(12)),
        "d1/x.txt": "".join(f"x {i}\n" for i in range(12)),
        "d1/y.txt": "".join(f"y {i}\n" for i in range(12)),
        "d2/z.txt": "".join(f"z {i}\n" for i in range(12)),
        "d3/deep/w.txt": "w\n"}
NEW = ["n.txt", "d1/n.txt", "d4", "d4/n.txt", "d1/x.txt/n.txt", "d3/deep", "d5/q/r.txt",
       "d5/q"]


def _side(repo: Path, base: str, branch: str, rnd: random.Random) -> str:
    """A commit on ``base`` with 1-3 random changes; returns its id."""
    git(repo, "checkout", "-q", "-f", "-B", branch, base)
    for _ in range(rnd.randint(1, 3)):
        files = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")
                       if p.is_file() and ".git" not in p.parts)
        op = rnd.choice(["modify", "modify", "add", "delete", "rename"])
        if op == "modify" and files:
            f = repo / rnd.choice(files)
            lines = f.read_text().splitlines(keepends=True) or ["\n"]
            lines[rnd.randrange(len(lines))] = f"{branch} {rnd.random()}\n"
            f.write_text("".join(lines))
        elif op == "add":
            target = repo / rnd.choice(NEW)
            if target.exists() or any(p.is_file() for p in target.parents if p != repo):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"{branch} new\n")
        elif op == "delete" and files:
            (repo / rnd.choice(files)).unlink()
        elif op == "rename" and files:
            src = rnd.choice(files)
            git(repo, "mv", src, src.replace(".txt", ".moved.txt"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", branch)
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def _evidence(repo: gitio.Repo, pw: Pairwise, ha: str, hb: str) -> Evidence:
    agents = []
    for name, head in (("a", ha), ("b", hb)):
        tree = repo.commit_tree(head)
        agents.append(Agent(name, "", name, head, repo.snapshot_commit(tree, head), tree))
    a, b = agents
    base = repo.merge_base(ha, hb)
    base_tree = repo.commit_tree(base)
    wa, wb = pw.working_set(a, base_tree), pw.working_set(b, base_tree)
    return Evidence(a, b, wa, wb, base, base_tree, pw.cfg, pw)


def test_skipped_merges_are_the_ones_git_merges_cleanly(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "r", BASE)
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    repo = gitio.Repo(str(path))
    rnd = random.Random(11)
    apart = together = conflicts = 0
    for i in range(40):
        ha = _side(path, base, f"a{i}", rnd)
        hb = _side(path, base, f"b{i}", rnd)
        pw = Pairwise(repo, Config(), Facts())
        ev = _evidence(repo, pw, ha, hb)
        truth = repo.merge_conflicts(ev.a.snapshot or "", ev.b.snapshot or "")
        skipped = conflict._apart(ev)
        before = gitio.CALLS.get("merge-tree", 0)
        got = conflict.run(ev)
        ran = gitio.CALLS.get("merge-tree", 0) - before
        assert ran == (0 if skipped else 1)
        if skipped:
            apart += 1
            assert truth == [], (i, truth)
        else:
            together += 1
        conflicts += bool(truth)
        assert [f.path_a for f in got.findings] == truth
    # the sample exercises both branches and real conflicts
    assert apart >= 5 and together >= 5 and conflicts >= 3, (apart, together, conflicts)


def test_file_against_directory_runs_gits_merge(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "r", {"keep.txt": "k\n"})
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    for branch, rel in (("a", "d4"), ("b", "d4/n.txt")):
        git(path, "checkout", "-q", "-B", branch, base)
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(branch + "\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", branch)
    repo = gitio.Repo(str(path))
    ha, hb = (git(path, "rev-parse", b).stdout.strip() for b in ("a", "b"))
    ev = _evidence(repo, Pairwise(repo, Config(), Facts()), ha, hb)
    assert not conflict._apart(ev)
    truth = repo.merge_conflicts(ev.a.snapshot or "", ev.b.snapshot or "")
    assert truth and [f.path_a for f in conflict.run(ev).findings] == truth
    # git moves the file aside as "d4~<snapshot id>": named by its own path, the same
    # from one snapshot to the next
    assert "d4" in truth and not any("~" in p for p in truth), truth


def test_tree_deltas_are_diff_trees(tmp_path: Path) -> None:
    """What changed between two trees, walked in process, is `git diff-tree -r
    --no-renames` over 40 random pairs: modify, add, delete, rename, file <-> directory,
    file -> link ("T"), exec bit ("M"), a submodule entry added and moved on."""
    path = init_repo(tmp_path / "r", BASE)
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    rnd = random.Random(11)
    commits, variants = [base], []
    for i in range(30):
        git(path, "checkout", "-q", "-f", rnd.choice(commits))
        head = _side(path, git(path, "rev-parse", "HEAD").stdout.strip(), f"t{i}", rnd)
        commits.append(head)  # the next sides start from these; links only in variants
        files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                       if p.is_file() and not p.is_symlink() and ".git" not in p.parts)
        rnd.shuffle(files)
        if len(files) > 1 and rnd.random() < 0.5:
            (path / files[0]).unlink()
            (path / files[0]).symlink_to("a.txt")
        if len(files) > 1 and rnd.random() < 0.5:
            (path / files[1]).chmod(0o755)
        git(path, "add", "-A")
        if rnd.random() < 0.4:
            git(path, "update-index", "--add", "--cacheinfo", f"160000,{head},sub/m{i % 3}")
        git(path, "commit", "-q", "--allow-empty", "-m", f"t{i} more")
        variants.append(git(path, "rev-parse", "HEAD").stdout.strip())
    repo = gitio.Repo(str(path))
    repo.pg  # noqa: B018  (libgit2 open: the in-process walk)
    every = commits + variants
    pairs = [(rnd.choice(every), rnd.choice(every)) for _ in range(40)]
    seen: set[str] = set()
    for old, new in pairs:
        want = {}
        out = git(path, "diff-tree", "-r", "-z", "--no-renames", old, new).stdout.split("\0")
        for meta, name in zip(out[0::2], out[1::2], strict=False):
            f = meta.split()
            want[name] = (f[4], "" if f[4] == "D" else f[3])
        assert repo.tree_delta(old, new) == want, (old, new)
        seen.update(st for st, _ in want.values())
        seen.update("sub" for name in want if name.startswith("sub/"))
    assert seen == {"A", "D", "M", "T", "sub"}  # every kind of change was compared


def _criss_cross(tmp_path: Path) -> tuple[Path, str]:
    """Branches a and b with two merge bases: p and q from a base, a merges p then q
    keeping p's line, b merges q then p keeping q's line. (repository, base commit)"""
    path = init_repo(tmp_path / "r", {"f.txt": "one\n", "g.txt": "g\n"})
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    for branch, text in (("p", "p\n"), ("q", "q\n")):
        git(path, "checkout", "-q", "-B", branch, base)
        (path / "f.txt").write_text(text)
        git(path, "commit", "-qam", branch)
    for branch, first, second, keep in (("a", "p", "q", "p\n"), ("b", "q", "p", "q\n")):
        git(path, "checkout", "-q", "-B", branch, first)
        git(path, "merge", "-q", "--no-edit", second, check=False)
        (path / "f.txt").write_text(keep)
        git(path, "add", "-A")
        git(path, "commit", "-q", "--no-edit", "-m", f"merge {second}")
    return path, base


def test_criss_cross_merge_bases_run_gits_merge(tmp_path: Path) -> None:
    """Two merge bases: git merges against a virtual base, so what each side changed
    since one of them says nothing; the channel asks git."""
    path, _ = _criss_cross(tmp_path)
    repo = gitio.Repo(str(path))
    ha, hb = (git(path, "rev-parse", b).stdout.strip() for b in ("a", "b"))
    assert len(git(path, "merge-base", "--all", ha, hb).stdout.split()) == 2
    assert repo.sole_merge_base(ha, hb) is None
    ev = _evidence(repo, Pairwise(repo, Config(), Facts()), ha, hb)
    assert not conflict._apart(ev)
    truth = repo.merge_conflicts(ev.a.snapshot or "", ev.b.snapshot or "")
    assert [f.path_a for f in conflict.run(ev).findings] == truth


def test_no_sole_base_stays_none_one_step_on(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Several merge bases (criss-cross), or too many commits since the base to tell: a
    single-parent step on either side keeps that answer (the same ancestors are shared),
    and a step on a sole base keeps it; every answer agrees with `git merge-base --all`."""
    path, base = _criss_cross(tmp_path)

    def step(branch: str, n: int) -> list[str]:
        git(path, "checkout", "-q", branch)
        out = []
        for i in range(n):
            (path / f"{branch}{i}.txt").write_text(f"{i}\n")
            git(path, "add", "-A")
            git(path, "commit", "-q", "-m", f"{branch} {i}")
            out.append(git(path, "rev-parse", "HEAD").stdout.strip())
        return out

    ha, hb = (git(path, "rev-parse", b).stdout.strip() for b in ("a", "b"))
    repo = gitio.Repo(str(path))
    assert repo.sole_merge_base(ha, hb) is None
    for x in step("a", 2):
        assert repo._sole_by_step(x, hb, repo.merge_base(x, hb) or "") is False
        assert repo.sole_merge_base(x, hb) is None
    # a long branch against a short one: too far to tell, one commit on still too far
    monkeypatch.setattr(history, "SOLE_BASE_WALK", 3)  # where it is read
    git(path, "checkout", "-q", "-B", "long", base)
    git(path, "checkout", "-q", "-B", "short", base)
    short = step("short", 1)[0]
    longs = step("long", 6)
    for x in longs:
        assert git(path, "merge-base", "--all", x, short).stdout.split() == [base]
    repo = gitio.Repo(str(path))  # asked from the first commit on: told, then stepped
    assert [repo.sole_merge_base(x, short) for x in longs] == [base] * 6
    repo = gitio.Repo(str(path))  # first asked 5 commits on: too many to tell, and then
    assert repo.sole_merge_base(longs[4], short) is None  # one more is still too many
    assert repo._sole_by_step(longs[5], short, base) is False
    assert repo.sole_merge_base(longs[5], short) is None


def commit_on(path: Path, branch: str, start: str, rel: str) -> str:
    """A commit on ``branch`` (reset to ``start``) adding ``rel``; its id."""
    git(path, "checkout", "-q", "-B", branch, start)
    (path / rel).write_text(f"{branch} {rel}\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"{branch} {rel}")
    return git(path, "rev-parse", "HEAD").stdout.strip()


def test_merge_bases_derived_from_a_parent_are_gits(tmp_path: Path) -> None:
    """A new commit's merge base with another side is taken from its parent's when the
    other side lacks that parent; when the other side contains it, libgit2 is asked.
    Every answer equals `git merge-base`, and a sole base is only claimed when git has one."""
    path = init_repo(tmp_path / "r", {"f.txt": "f\n", "g.txt": "g\n"})

    commit = partial(commit_on, path)

    base = git(path, "rev-parse", "HEAD").stdout.strip()
    a1 = commit("a", base, "a1.txt")
    b1 = commit("b", base, "b1.txt")
    repo = gitio.Repo(str(path))
    assert repo.merge_base(a1, b1) == base and repo.sole_merge_base(a1, b1) == base
    a2 = commit("a", a1, "a2.txt")
    assert repo._base_by_step(a2, b1) == base  # from a1's, remembered
    git(path, "checkout", "-q", "b")
    git(path, "merge", "-q", "--no-edit", a1)  # b now contains a1
    b2 = git(path, "rev-parse", "HEAD").stdout.strip()
    a3 = commit("a", a2, "a3.txt")
    for x, y in ((a2, b1), (a3, b1), (a1, b2), (a2, b2), (a3, b2), (b2, a3)):
        want = git(path, "merge-base", "--all", x, y).stdout.split()
        got = repo.merge_base(x, y)
        assert got in want, (x, y, got, want)
        assert (repo.sole_merge_base(x, y) is not None) == (len(want) == 1)
    assert repo._base_by_step(a2, b2) is None  # b2 holds a1: not derived
    assert repo.steps_alike(a2, a3, b1) and repo.steps_alike(a2, a3, b2)
    assert not repo.steps_alike(base, a1, b2)  # b2 contains a1
    # ancestry, remembered and derived from a single parent's answer: git's every time
    commits = [base, a1, a2, a3, b1, b2]
    for _ in range(2):  # the second round answers from what the first remembered
        for x in commits:
            for y in commits:
                want = git(path, "merge-base", "--is-ancestor", x, y,
                           check=False).returncode == 0
                assert repo.is_ancestor(x, y) == want, (x, y)
    a4 = commit("a", a3, "a4.txt")
    assert repo.is_ancestor(a1, a4) and repo.is_ancestor(base, a4)  # from a3's answers
    assert not repo.is_ancestor(b1, a4) and not repo.is_ancestor(a4, a3)


def test_several_single_parent_steps_keep_the_merge_bases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HEAD several commits on (commits made with hooks off between two judged ones)
    has the same merge bases as the one judged when every step has one parent and the
    other side contains none of them; a merge on the way, a step the other side holds, or
    a chain longer than the walk is not claimed. Every claim is `git merge-base --all`'s."""
    path = init_repo(tmp_path / "r", {"f.txt": "f\n"})

    commit = partial(commit_on, path)

    base = git(path, "rev-parse", "HEAD").stdout.strip()
    chain = [commit("a", base, "a1.txt")]
    for i in range(2, 6):
        chain.append(commit("a", chain[-1], f"a{i}.txt"))
    b1 = commit("b", base, "b1.txt")
    git(path, "merge", "-q", "--no-edit", chain[2])  # b2 holds a1..a3
    b2 = git(path, "rev-parse", "HEAD").stdout.strip()
    merged = commit("m", chain[-1], "m.txt")
    git(path, "merge", "-q", "--no-edit", b1)
    m2 = git(path, "rev-parse", "HEAD").stdout.strip()
    after = commit("m", m2, "after.txt")
    repo = gitio.Repo(str(path))

    def bases(x: str, y: str) -> set[str]:
        return set(git(path, "merge-base", "--all", x, y).stdout.split())

    claims = {(old, new, other): repo.steps_alike(old, new, other)
              for old in [base, *chain] for new in [*chain, merged, after]
              for other in (b1, b2)}
    for (old, new, other), alike in claims.items():
        if alike:
            assert bases(old, other) == bases(new, other), (old, new, other)
    assert claims[(chain[0], chain[-1], b1)]  # four steps on
    assert not claims[(chain[0], chain[-1], b2)]  # b2 holds a2 and a3
    assert claims[(chain[3], chain[-1], b2)]  # b2 holds none of a5
    assert not claims[(chain[0], after, b1)]  # a merge on the way
    monkeypatch.setattr(history, "STEPS_ALIKE", 2)  # where it is read
    assert repo.steps_alike(chain[2], chain[4], b1)
    assert not repo.steps_alike(chain[1], chain[4], b1)


def test_a_pair_keeps_its_merge_across_commits_made_without_hooks(tmp_path: Path) -> None:
    """One side judged, then two commits on it (hooks off) of a file the other side never
    touched, then judged again: git's merge is not run again, and the answer is git's."""
    path = init_repo(tmp_path / "r", BASE)
    base = git(path, "rev-parse", "HEAD").stdout.strip()

    def commit(branch: str, start: str, rel: str, text: str) -> str:
        git(path, "checkout", "-q", "-f", "-B", branch, start)
        with open(path / rel, "a") as f:
            f.write(text)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"{branch} {rel}")
        return git(path, "rev-parse", "HEAD").stdout.strip()

    hb = commit("b", base, "a.txt", "b's line\n")
    ha = commit("a", base, "a.txt", "a's line\n")  # they conflict in a.txt
    repo = gitio.Repo(str(path))
    first = conflict.run(_evidence(repo, Pairwise(repo, Config(), Facts()), ha, hb))
    assert [f.path_a for f in first.findings] == ["a.txt"]
    for i in range(2):
        ha = commit("a", ha, "d2/z.txt", f"step {i}\n")
    ev = _evidence(repo, Pairwise(repo, Config(), Facts()), ha, hb)
    before = gitio.CALLS.get("merge-tree", 0)
    got = conflict.run(ev)
    assert gitio.CALLS.get("merge-tree", 0) == before  # kept, not merged again
    truth = repo.merge_conflicts(ev.a.snapshot or "", ev.b.snapshot or "")
    assert [f.path_a for f in got.findings] == truth == ["a.txt"]


def test_a_pair_merged_again_only_where_it_could_change(tmp_path: Path) -> None:
    """One side moves on (new live states on the same HEAD, then commits on it), the
    other stays: the last merge is reused only when the moving side has since modified
    files the base holds and the other never touched -- and its answer is git's anyway."""
    counts = [0, 0, 0]
    for seed in (5, 15, 19):
        got = _walk(tmp_path / f"r{seed}", random.Random(seed))
        counts = [x + y for x, y in zip(counts, got, strict=True)]
    reused, asked, conflicted = counts
    assert reused >= 10 and asked >= 10 and conflicted >= 10, counts


def _walk(path: Path, rnd: random.Random) -> tuple[int, int, int]:
    init_repo(path, BASE)
    base = git(path, "rev-parse", "HEAD").stdout.strip()
    repo = gitio.Repo(str(path))
    hb = _side(path, base, "b", rnd)
    ha = _side(path, base, "a", rnd)
    reused = asked = conflicted = 0
    tree = repo.commit_tree(ha)
    for i in range(30):
        if rnd.random() < 0.3:  # the moving side commits its live state
            ha = git(path, "commit-tree", tree, "-p", ha, "-m", f"step {i}").stdout.strip()
        # a live state on that HEAD: a random edit over the last one
        git(path, "checkout", "-q", "-f", ha)
        git(path, "read-tree", "-u", "--reset", tree)
        files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                       if p.is_file() and ".git" not in p.parts)
        op = rnd.choice(["modify", "modify", "modify", "add", "delete"] if files else ["add"])
        target = path / (rnd.choice(files) if op != "add" else rnd.choice(NEW))
        if op == "modify":
            with open(target, "a") as f:
                f.write(f"live {i}\n")
        elif op == "add" and not target.exists() and not any(
                p.is_file() for p in target.parents if p != path):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"new {i}\n")
        elif op == "delete":
            target.unlink()
        git(path, "add", "-A")
        tree = git(path, "write-tree").stdout.strip()
        git(path, "reset", "-q", "--hard", ha)
        pw = Pairwise(repo, Config(), Facts())
        ev = _evidence(repo, pw, ha, hb)
        a = Agent("a", "", "a", ha, repo.snapshot_commit(tree, ha), tree)
        ev = Evidence(a, ev.b, pw.working_set(a, ev.base_tree), ev.wb, ev.base, ev.base_tree,
                      pw.cfg, pw)
        truth = repo.merge_conflicts(a.snapshot or "", ev.b.snapshot or "")
        before = gitio.CALLS.get("merge-tree", 0)
        got = conflict.run(ev)
        ran = gitio.CALLS.get("merge-tree", 0) - before
        reused += ran == 0 and not conflict._apart(ev)
        asked += ran
        assert [f.path_a for f in got.findings] == truth, (i, truth)
        conflicted += bool(truth)
    return reused, asked, conflicted
