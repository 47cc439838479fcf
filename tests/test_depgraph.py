"""Import extraction and resolution per language; coupling, distance and hub damping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proximity.analysis import depgraph, imports, reach
from proximity.analysis import resolve as resolver_mod
from proximity.model import FileChange, WorkingSet


def resolve(paths, src, code):
    r = resolver_mod.Resolver(paths)
    r.set_go_mods({"": "example.com/m"})
    return sorted({d for rec in imports.extract(src, code) for d in r.resolve(src, rec)})


def test_python_absolute_relative_and_src_layout():
    paths = ["src/flask/app.py", "src/flask/__init__.py", "src/flask/json/__init__.py",
             "src/flask/helpers.py", "tests/test_app.py"]
    assert resolve(paths, "tests/test_app.py", b"from flask import app\n") == \
        ["src/flask/app.py"]
    assert resolve(paths, "src/flask/app.py", b"from . import helpers\nfrom .json import x\n") \
        == ["src/flask/helpers.py", "src/flask/json/__init__.py"]
    assert resolve(paths, "src/flask/app.py", b"import os\nimport requests\n") == []


def test_python2_syntax_falls_back_to_a_scanner():
    code = b"import helpers\nprint 'hello'\n"
    assert resolve(["pkg/helpers.py", "pkg/main.py"], "pkg/main.py", code) == \
        ["pkg/helpers.py"]


def test_javascript_and_typescript_specifiers():
    paths = ["web/a.ts", "web/b.ts", "web/lib/index.js", "web/c.jsx"]
    code = (b"import x from './b.js';\nconst y = require('./lib');\n"
            b"export { z } from './c';\nimport('react');\n")
    assert resolve(paths, "web/a.ts", code) == ["web/b.ts", "web/c.jsx", "web/lib/index.js"]


def test_go_module_packages():
    paths = ["go.mod", "pkg/x/a.go", "pkg/x/b.go", "pkg/x/a_test.go", "cmd/main.go"]
    code = b'package main\n\nimport (\n\t"fmt"\n\t"example.com/m/pkg/x"\n)\n'
    assert resolve(paths, "cmd/main.go", code) == ["pkg/x/a.go", "pkg/x/b.go"]


def test_rust_mod_and_use():
    paths = ["src/lib.rs", "src/net/mod.rs", "src/net/tcp.rs", "src/util.rs"]
    assert resolve(paths, "src/lib.rs", b"mod net;\nmod util;\n") == \
        ["src/net/mod.rs", "src/util.rs"]
    assert resolve(paths, "src/net/mod.rs", b"use crate::util::helper;\nuse self::tcp::X;\n") \
        == ["src/net/tcp.rs", "src/util.rs"]


def ws(*paths):
    return WorkingSet({p: FileChange(p, "M", ranges=((1, 1),)) for p in paths})


def graph(edges):
    g = depgraph.Graph()
    for s, d in edges:
        g.add(s, d)
    return g


def test_coupling_decays_with_undirected_distance():
    g = graph([("a.py", "m.py"), ("b.py", "m.py"), ("c.py", "b.py")])
    assert reach.channel(g, ws("a.py"), ws("m.py"), 0.5, 4, 30)[0] == 1.0
    assert reach.channel(g, ws("a.py"), ws("b.py"), 0.5, 4, 30)[0] == 0.5
    assert reach.channel(g, ws("a.py"), ws("c.py"), 0.5, 4, 30)[0] == 0.25
    assert reach.channel(g, ws("a.py"), ws("c.py"), 0.5, 2, 30)[0] == 0.0  # depth cap


def test_hubs_are_damped_in_transit_not_at_the_ends():
    edges = [(f"f{i}.py", "hub.py") for i in range(100)]
    g = graph(edges)
    score, _ = reach.channel(g, ws("f1.py"), ws("f2.py"), 0.5, 4, 20)
    assert score == pytest.approx(0.5 * 20 / 100)  # two importers of a hub: barely coupled
    assert reach.channel(g, ws("hub.py"), ws("f2.py"), 0.5, 4, 20)[0] == 1.0


def test_stored_graph_round_trip_matches():
    g = graph([("a.py", "m.py"), ("b.py", "m.py")])
    stored, files, go = depgraph.Graph.from_json(g.to_json({"a.py", "b.py", "m.py", "x.py"}, {}))
    assert sorted(files) == ["a.py", "b.py", "m.py", "x.py"] and go == {}
    for n in ("a.py", "b.py", "m.py", "x.py"):
        assert stored.neighbors(n) == g.neighbors(n)
        assert stored.fan(n) == g.fan(n)
    assert stored.imports("a.py", "m.py") and not stored.imports("m.py", "a.py")


def test_pair_channel_sees_an_edge_only_the_other_agent_adds():
    g = graph([])
    a, b = ws("lib.py"), ws("app.py")
    score, f = reach.channel(g, a, b, 0.5, 4, 30, edges_b=[("app.py", "lib.py")])
    assert score == 1.0 and f[0].detail == "app.py imports lib.py"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), max_size=60),
       st.dictionaries(st.integers(0, 14), st.floats(0.1, 1.0), min_size=1, max_size=3),
       st.integers(1, 5), st.integers(1, 6))
def test_the_networkx_graph_the_stored_graph_and_its_conversion_agree(edges, sources, cap,
                                                                       hub):
    """The graph as built (networkx), as a hook loads it from the ledger (lazy), and as the
    service keeps it (converted back): the same neighbours, fan-in, edges and couplings."""
    g = depgraph.Graph()
    for s, d in edges:
        g.add(f"n{s}.py", f"n{d}.py")
    names = [f"n{i}.py" for i in range(15)]
    stored, _files, _go = depgraph.Graph.from_json(g.to_json(set(names), {}))
    kept = depgraph.Graph.of(stored)
    for x in names:
        assert g.neighbors(x) == stored.neighbors(x) == kept.neighbors(x)
        assert g.fan(x) == stored.fan(x) == kept.fan(x)
        for y in names:
            assert g.imports(x, y) == stored.imports(x, y) == kept.imports(x, y)
    src = {f"n{i}.py": w for i, w in sources.items()}
    runs = [reach.reach(depgraph.View(graph, []), src, 0.5, cap, hub)
            for graph in (g, stored, kept)]
    assert [{k: round(v[0], 9) for k, v in r.items()} for r in runs[1:]] == \
        [{k: round(v[0], 9) for k, v in runs[0].items()}] * 2


def test_equally_strong_findings_are_the_same_in_every_process():
    """Of eight files importing what the other side changed, the five reported are the same
    whatever the interpreter's hash seed (they were picked by set order)."""
    g = depgraph.Graph()
    for i in range(8):
        g.add(f"pkg/user{i}.py", "pkg/core.py")

    def ws(*paths):
        return WorkingSet({p: FileChange(path=p, status="M", ranges=((1, 1),),
                                         new_ranges=((1, 1),)) for p in paths}, {}, {}, {})

    score, found = reach.channel(g, ws("pkg/core.py"),
                                    ws(*[f"pkg/user{i}.py" for i in range(8)]), 0.5, 3, 100)
    assert score == 1.0
    assert [f.path_b for f in found] == [f"pkg/user{i}.py" for i in range(5)]


def _graph_edges(graph) -> set[tuple[str, str]]:
    if isinstance(graph, depgraph.StoredGraph):
        o = graph.order
        return {(o[i], o[j]) for i, row in enumerate(graph.out_idx) for j in row}
    return set(graph.g.edges)


@pytest.mark.parametrize("warm", [True, False])
def test_a_commit_on_main_follows_the_graph_instead_of_building_it_again(
        tmp_path, monkeypatch, warm):
    """main's HEAD moves by files modified in place: the reference graph follows from the
    last one (the resident service's, or the one the ledger keeps), edge for edge what a
    fresh build gives; a commit that adds a file builds it again."""
    import subprocess

    from conftest import git, init_repo

    from proximity import gitio
    from proximity.config import Config
    from proximity.ledger import TrackedDict
    from proximity.model import Facts
    from proximity.snapshot.agents import live_agents
    from proximity.tcas.engine import scan

    files = {"pkg/__init__.py": "", "pkg/a.py": "from pkg import b\n", "pkg/b.py": "X = 1\n",
             "pkg/c.py": "from pkg import a\n", "web/x.js": "import y from './y';\n",
             "web/y.js": "export default 1;\n", "web/z.js": "export const z = 2;\n",
             "notes.txt": "n\n"}
    main = init_repo(tmp_path / "main", files)
    git(main, "worktree", "add", "-q", "-b", "w", str(tmp_path / "w"))
    builds = []
    real_build = depgraph.build
    monkeypatch.setattr(depgraph, "build", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    facts = Facts(memo={} if warm else None, graph_cache=TrackedDict({}))
    cfg = Config()

    def judged(f: Facts):
        repo = gitio.Repo(str(main))
        agents, _ = live_agents(repo)
        return _graph_edges(scan(repo, cfg, f, agents=agents).graph)

    assert ("pkg/a.py", "pkg/b.py") in judged(facts) and len(builds) == 1
    (main / "pkg/a.py").write_text("from pkg import c\n")
    (main / "web/x.js").write_text("import z from './z';\n")
    (main / "notes.txt").write_text("more\n")
    subprocess.run(["git", "commit", "-qam", "imports change"], cwd=main, check=True)
    followed = judged(facts)
    assert len(builds) == 1, builds  # followed, not built
    assert followed == judged(Facts(graph_cache=TrackedDict({}))), followed  # a fresh build
    assert ("pkg/a.py", "pkg/c.py") in followed and ("pkg/a.py", "pkg/b.py") not in followed
    assert ("web/x.js", "web/z.js") in followed and ("web/x.js", "web/y.js") not in followed
    (main / "pkg/d.py").write_text("from pkg import b\n")  # a new file: resolution may change
    git(main, "add", "pkg/d.py")
    subprocess.run(["git", "commit", "-qm", "a new module"], cwd=main, check=True)
    n = len(builds)
    assert ("pkg/d.py", "pkg/b.py") in judged(facts) and len(builds) == n + 1


Judged = list[tuple[object, ...]]


def _judged(main, cfg, facts, findings: bool = False) -> Judged:
    """Every pair as one scan of the repository at ``main`` judges it: (a, b, risk,
    channels[, its findings' text]). ``facts`` with a memo: what the resident service
    keeps across scans; without: a process with nothing kept."""
    from proximity import gitio
    from proximity.snapshot.agents import live_agents
    from proximity.tcas.engine import scan

    repo = gitio.Repo(str(main))
    agents, _ = live_agents(repo)
    return [(p.a, p.b, p.risk, p.channels,
             *([[x.detail for x in p.findings]] if findings else []))
            for p in scan(repo, cfg, facts, agents=agents).pairs]


def _cold():
    from proximity.ledger import TrackedDict
    from proximity.model import Facts

    return Facts(graph_cache=TrackedDict({}))


def _warm():
    from proximity.ledger import TrackedDict
    from proximity.model import Facts

    return Facts(memo={}, graph_cache=TrackedDict({}))


def _b_and_c_apart(tmp_path, extra):
    """``main`` (pkg/a.py imports pkg/b.py and pkg/c.py; and the ``extra`` files) and a
    worktree ``w`` of it: w edits pkg/b.py, main pkg/c.py."""
    from conftest import git, init_repo

    files = {"pkg/__init__.py": "", "pkg/a.py": "from pkg import b\nfrom pkg import c\n",
             "pkg/b.py": "X = 1\n", "pkg/c.py": "Y = 1\n", **extra}
    main = init_repo(tmp_path / "main", files)
    w = tmp_path / "w"
    git(main, "worktree", "add", "-q", "-b", "w", str(w))
    (w / "pkg/b.py").write_text("X = 2\n")
    (main / "pkg/c.py").write_text("Y = 2\n")
    return main, w


def _reaches_made(monkeypatch) -> list[int]:
    """One entry for each reach searched from now on."""
    from proximity.tcas import pairwise

    made: list[int] = []
    real = pairwise.Reach
    monkeypatch.setattr(pairwise, "Reach", lambda *a, **k: made.append(1) or real(*a, **k))
    return made


def test_a_commit_on_main_that_changes_no_import_keeps_the_reaches(tmp_path, monkeypatch):
    """The resident service keeps each worktree's reach over the reference graph across
    scans. A commit on main that changes no import leaves the graph's edges as they were:
    the reaches kept hold (none is computed again). One that changes an import computes
    them again; every answer is the one a process with nothing kept gives."""
    import subprocess

    from proximity.config import Config

    main, _w = _b_and_c_apart(tmp_path, {"notes.txt": "n\n"})
    reaches, warm = _reaches_made(monkeypatch), _warm()

    def judged(f) -> Judged:
        return _judged(main, Config(), f)

    def commit(text: str, message: str) -> None:
        (main / "notes.txt").write_text(text)
        subprocess.run(["git", "commit", "-qam", message], cwd=main, check=True)

    first = judged(warm)
    assert first == judged(_cold())
    assert first[0][3]["dependency"]  # b (w) is two imports from c (main) through a
    commit("more\n", "no import changed")
    n = len(reaches)
    again = judged(warm)
    # main's own state changed (notes.txt): its reach only; w's was kept
    assert len(reaches) - n == 1
    assert again == judged(_cold())
    (main / "pkg/a.py").write_text("X = 0\n")  # a imports nothing now: b and c apart
    commit("again\n", "an import changed")
    n = len(reaches)
    after = judged(warm)
    assert len(reaches) - n == 2  # both again
    assert after == judged(_cold())
    assert not after[0][3]["dependency"]


def test_a_new_state_of_the_same_files_keeps_its_reach(tmp_path, monkeypatch):
    """A reach is the graph searched from the files a worktree touches: an edit or a
    commit that changes what those files hold, not which files they are, finds it kept
    (no search again), and every answer is the one a process with nothing kept gives;
    touching one more file searches again."""
    import subprocess

    from proximity.config import Config

    main, w = _b_and_c_apart(tmp_path, {"pkg/d.py": "Z = 1\n"})
    reaches, warm = _reaches_made(monkeypatch), _warm()

    def judged(f) -> Judged:
        return _judged(main, Config(), f)

    first = judged(warm)
    assert first[0][3]["dependency"]
    (w / "pkg/b.py").write_text("X = 3\n")  # the same file, new content
    n = len(reaches)
    assert judged(warm) == judged(_cold())
    assert len(reaches) == n + 2  # (the cold process's two; the warm one kept both)
    subprocess.run(["git", "commit", "-qam", "b again"], cwd=w, check=True)
    n = len(reaches)
    assert judged(warm) == judged(_cold())
    assert len(reaches) == n + 2
    (w / "pkg/d.py").write_text("Z = 2\n")  # one more file touched: w's searched again
    n = len(reaches)
    assert judged(warm) == judged(_cold())
    assert len(reaches) == n + 1 + 2


def test_a_kept_reach_never_reads_a_graph_changed_under_it(tmp_path):
    """A reach kept across scans reads its graph again for its findings (how hubs damp,
    which way each import goes). The service follows main's graph in place when a commit
    changes an import: a reach made before must not be taken for the graph as it is now,
    even when main goes back to the tree it was made for (a reset, after a commit that
    adds a file made a new graph). Every answer is the one a process with nothing kept
    gives."""
    import subprocess

    from conftest import git, init_repo

    from proximity.config import Config

    imports_t = "from pkg.t import V\n\nA = V\n"
    files = {"pkg/__init__.py": "", "pkg/t.py": "V = 1\n", "pkg/a.py": imports_t,
             "pkg/x.py": imports_t, "pkg/y.py": imports_t, "pkg/w.py": "W = 2\n"}
    main = init_repo(tmp_path / "main", files)
    w1, w2 = tmp_path / "w1", tmp_path / "w2"
    git(main, "worktree", "add", "-q", "-b", "a1", str(w1))
    git(main, "worktree", "add", "-q", "-b", "a2", str(w2))
    cfg = Config(hub_degree=1)  # (t.py, imported three times, is a hub)
    warm = _warm()

    def same() -> Judged:
        got = _judged(main, cfg, warm, findings=True)
        assert got == _judged(main, cfg, _cold(), findings=True)
        return got

    with open(w1 / "pkg/a.py", "a") as f:
        f.write("# w1\n")
    (w2 / "pkg/w.py").write_text("from pkg.t import V\nW = 2\n")
    first = same()
    pair = next(p for p in first if {p[0], p[1]} == {"w1", "w2"})
    assert pair[3]["dependency"]  # a.py -> t.py <- w.py
    start = git(main, "rev-parse", "HEAD").stdout.strip()
    (main / "pkg/x.py").write_text("A = 1\n")  # t.py has one importer fewer: followed
    subprocess.run(["git", "commit", "-qam", "x imports nothing"], cwd=main, check=True)
    same()
    (main / "pkg/z.py").write_text("Z = 1\n")  # a new file: a new graph
    git(main, "add", "pkg/z.py")
    subprocess.run(["git", "commit", "-qm", "z"], cwd=main, check=True)
    same()
    git(main, "reset", "-q", "--hard", start)  # back to the first tree
    same()
    with open(w1 / "pkg/a.py", "a") as f:  # the same files, new content
        f.write("# w1 again\n")
    assert same() != []
