"""Labelled near misses on real code: compatible changes next to breaking ones.

    python benchmarks/nearmiss.py --repo click=/work/.mirror/pallets+click/repo \\
        --repo d3-ease=/work/.mirror/d3+d3-ease/repo --per-kind 3 --json

Each ``--repo NAME=GITDIR`` is a public repository's git dir (for example one brought by a
fetch); its HEAD tree is the base. Targets are real public functions, classes, constants
and modules found with ``ast`` (Python) or on ``export function`` lines (JavaScript). For
each target and kind of change (``nearmiss_cases.FAMILIES``) side A changes the definition
and side B adds a new module using it plus a tiny check that exercises it, once breaking
and once as its compatible near miss.

Labels come from running, never from the variant's name: A and B are committed on two
branches of the base; A alone must pass A's check and B alone B's check (else the case is
invalid and dropped, counted); ``git merge-tree --write-tree`` merges them (a textual
conflict is counted apart); the merged tree is extracted and every check in it is run:
failure is a collision, success is clean.

proximity then scans the same pair as live worktrees of one repository (A committed, B
uncommitted; for a sample also B committed, A uncommitted) and its advisory, channels and
findings are compared with the label. Per-pair rows go to ``benchmarks/out/nearmiss.jsonl``.
Fetched code is read from the given paths and worked on in temp dirs; nothing is copied
into this project.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import nearmiss_cases as nc  # noqa: E402
import nearmiss_edits as ed  # noqa: E402
from semantic import scan, write  # noqa: E402

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
       "GIT_AUTHOR_NAME": "nearmiss", "GIT_AUTHOR_EMAIL": "n@example.com",
       "GIT_COMMITTER_NAME": "nearmiss", "GIT_COMMITTER_EMAIL": "n@example.com",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
OUT = os.path.join(HERE, "out", "nearmiss.jsonl")


def git(cwd: str, *args: str, check: bool = True, env: dict[str, str] | None = None,
        data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, env={**ENV, **(env or {})},
                          capture_output=True, check=check, input=data)


def out(r: subprocess.CompletedProcess[bytes]) -> str:
    return r.stdout.decode().strip()


# -- the base repository ------------------------------------------------------------------------

class Base:
    """A fresh one-commit repository holding a fetched repository's HEAD tree."""

    def __init__(self, name: str, gitdir: str, work: str) -> None:
        self.name = name
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        tar = subprocess.run(["git", "--git-dir", gitdir, "archive", "HEAD"], env=ENV,
                             capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(self.dir, filter="data")
        self.origin = out(subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"],
                                         env=ENV, capture_output=True, check=True))
        git(self.dir, "init", "-q", "-b", "main")
        git(self.dir, "add", "-A")
        git(self.dir, "commit", "-qm", f"base: {name} {self.origin[:12]}", "--no-verify")
        self.commit = out(git(self.dir, "rev-parse", "HEAD"))
        tops = ed.source_root(self.dir)[1]
        py = any(f.endswith(".py") for top in tops
                 for _d, _s, fs in os.walk(os.path.join(self.dir, top)) for f in fs)
        self.lang = "python" if py else "javascript"
        self.index = 0
        self.check_paths = [*tops, "checks"] if self.lang == "python" else \
            ["src", "checks", "package.json"]

    def sources(self) -> dict[str, str]:
        out_: dict[str, str] = {}
        exts = (".py",) if self.lang == "python" else (".js",)
        for d, dirs, files in os.walk(self.dir):
            dirs[:] = [x for x in dirs if x != ".git"]
            for f in files:
                if f.endswith(exts):
                    p = os.path.relpath(os.path.join(d, f), self.dir)
                    with contextlib.suppress(UnicodeDecodeError):
                        out_[p] = ed.read(self.dir, p)
        return out_

    def commit_files(self, files: nc.Files, msg: str) -> str:
        """A commit on the base with ``files`` changed (None deletes), without checkout."""
        self.index += 1
        env = {"GIT_INDEX_FILE": os.path.join(self.dir, ".git", f"nm-index-{self.index}")}
        git(self.dir, "read-tree", self.commit, env=env)
        for path, text in files.items():
            if text is None:
                git(self.dir, "rm", "-q", "--cached", "--ignore-unmatch", path, env=env)
                continue
            oid = out(git(self.dir, "hash-object", "-w", "--stdin", data=text.encode()))
            git(self.dir, "update-index", "--add", "--cacheinfo", f"100644,{oid},{path}",
                env=env)
        tree = out(git(self.dir, "write-tree", env=env))
        os.unlink(env["GIT_INDEX_FILE"])
        return out(git(self.dir, "commit-tree", tree, "-p", self.commit, "-m", msg))


# -- probing: arguments that make a real call run on the base --------------------------------------

PY_PROBE = r'''
import contextlib, importlib, io, json, signal, sys
CANDS = ['"x"', "1", "None", 'b"x"', "[]", "0.5", "{}"]
def boom(*a):
    raise TimeoutError
signal.signal(signal.SIGALRM, boom)
res = {}
for t in json.load(open(sys.argv[1])):
    res[t["key"]] = None
    try:
        obj = getattr(importlib.import_module(t["module"]), t["name"])
    except BaseException:
        continue
    for c in CANDS:
        args = [c] * t["nreq"] + [f"{k}={c}" for k in t["kwreq"]]
        try:
            signal.alarm(2)
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                eval(f"obj({', '.join(args)})", {"obj": obj})
            res[t["key"]] = args
            break
        except BaseException:
            pass
        finally:
            signal.alarm(0)
    args = res[t["key"]]
    if args is None or not t.get("methods"):
        continue
    # a class: the first method that runs on a fresh instance, and the outermost
    # package that re-exports the class
    parts = t["module"].split(".")
    for i in range(1, len(parts)):
        with contextlib.suppress(BaseException):
            if getattr(importlib.import_module(".".join(parts[:i])), t["name"], None) is obj:
                res[t["key"] + "#via"] = ".".join(parts[:i])
                break
    for name, nreq, kwreq in t["methods"]:
        got = None
        for c in CANDS:
            margs = [c] * nreq + [f"{k}={c}" for k in kwreq]
            try:
                signal.alarm(2)
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    eval(f"obj({', '.join(args)}).{name}({', '.join(margs)})", {"obj": obj})
                got = [name, margs]
                break
            except BaseException:
                pass
            finally:
                signal.alarm(0)
        if got is not None:
            res[t["key"] + "#m"] = got
            break
print(json.dumps(res))
'''

JS_PROBE = r'''
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const CANDS = ["0.5", "1", '"x"', "[1, 2]", "{}"];
const res = {};
for (const t of JSON.parse(fs.readFileSync(process.argv[2], "utf8"))) {
  res[t.key] = null;
  let m;
  try { m = await import(pathToFileURL(t.abs)); } catch { continue; }
  for (const c of CANDS) {
    const args = Array(t.nreq).fill(c);
    try { new Function("f", `return f(${args.join(", ")})`)(m[t.name]); res[t.key] = args; break; }
    catch { /* next candidate */ }
  }
}
console.log(JSON.stringify(res));
'''


def probe(base: Base, targets: list[ed.Target], scratch: str) -> None:
    todo = [t for t in targets if t.what in ("function", "class")]
    key = {id(t): f"{t.path}:{t.name}" for t in todo}
    items = [{"key": key[id(t)], "module": t.module, "name": t.name, "nreq": t.nreq,
              "kwreq": t.kwreq, "abs": os.path.join(base.dir, t.path), "methods": t.methods}
             for t in todo]
    spec = os.path.join(scratch, f"probe-{base.name}.json")
    with open(spec, "w") as f:
        json.dump(items, f)
    script = os.path.join(scratch, "probe.py" if base.lang == "python" else "probe.mjs")
    with open(script, "w") as f:
        f.write(PY_PROBE if base.lang == "python" else JS_PROBE)
    cmd = [sys.executable, script, spec] if base.lang == "python" else ["node", script, spec]
    root = todo[0].root if todo else ""
    r = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL,
                       env={**ENV, "PYTHONPATH": os.path.join(base.dir, root)})
    lines = r.stdout.strip().splitlines()
    got = json.loads(lines[-1]) if lines else {}
    for t in todo:
        t.args = got.get(key[id(t)])
        if t.what == "class":
            t.via = got.get(key[id(t)] + "#via") or ""
            t.method, t.margs = got.get(key[id(t)] + "#m") or ("", None)
    # module targets: B uses a probed public function of the module
    by_path: dict[str, list[ed.Target]] = defaultdict(list)
    for t in todo:
        if t.what == "function" and t.args is not None:
            by_path[t.path].append(t)
    for t in targets:
        if t.what == "module" and by_path.get(t.path):
            text = ed.read(base.dir, t.path)
            fns = [f for f in by_path[t.path]
                   if "__all__" not in text or f'"{f.name}"' in text or f"'{f.name}'" in text]
            if fns:
                t.used, t.args = fns[0].name, fns[0].args


# -- labelling by running ------------------------------------------------------------------------

def run_checks(base: Base, rev: str, scratch: str, lang: str) -> tuple[bool, str]:
    dest = tempfile.mkdtemp(dir=scratch)
    try:
        tar = git(base.dir, "archive", rev, *base.check_paths).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(dest, filter="data")
        checks_dir = os.path.join(dest, "checks")
        checks = sorted(os.listdir(checks_dir)) if os.path.isdir(checks_dir) else []
        root = os.path.join(dest, "src") if "src" in base.check_paths and lang == "python" \
            else dest
        for c in checks:
            cmd = [sys.executable, f"checks/{c}"] if lang == "python" else ["node",
                                                                            f"checks/{c}"]
            try:
                r = subprocess.run(cmd, cwd=dest, env={**ENV, "PYTHONPATH": root},
                                   capture_output=True, text=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return False, f"{c}: timeout"
            if r.returncode != 0:
                lines = r.stderr.strip().splitlines() or ["?"]
                err = [x for x in lines if "Error" in x] or lines
                return False, f"{c}: {err[-1].strip()[:200]}"
        return True, ""
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def label(base: Base, case: nc.Case, scratch: str) -> tuple[str, str, str]:
    """(label, A commit, B commit); label: collision | clean | textual | invalid."""
    a = base.commit_files(case.a, f"A: {case.id}")
    b = base.commit_files(case.b, f"B: {case.id}")
    for side, rev in (("A", a), ("B", b)):
        ok, why = run_checks(base, rev, scratch, case.lang)
        if not ok:
            case.why = f"{side} alone fails: {why}"
            return "invalid", a, b
    merged = git(base.dir, "merge-tree", "--write-tree", a, b, check=False)
    if merged.returncode != 0:
        return "textual", a, b
    ok, why = run_checks(base, out(merged).split()[0], scratch, case.lang)
    case.why = why
    return ("clean" if ok else "collision"), a, b


# -- scanning the pair as live worktrees -------------------------------------------------------

def scan_pair(base: Base, case: nc.Case, a: str, b: str, swapped: bool, scratch: str
              ) -> dict[str, Any]:
    """Scan A and B as two live worktrees of the base repository.

    Default: A committed on its branch, B uncommitted in its worktree; ``swapped``: B
    committed, A uncommitted. The worktrees are removed afterwards; the base repository
    (and proximity's per-blob caches in its ledger) is reused by the next pair.
    """
    base.index += 1
    n = base.index
    wa, wb = os.path.join(scratch, f"wa{n}"), os.path.join(scratch, f"wb{n}")
    try:
        if swapped:
            git(base.dir, "worktree", "add", "-q", "-b", f"nmA{n}", wa, base.commit)
            write(wa, case.a)
            git(base.dir, "worktree", "add", "-q", "-b", f"nmB{n}", wb, b)
        else:
            git(base.dir, "worktree", "add", "-q", "-b", f"nmA{n}", wa, a)
            git(base.dir, "worktree", "add", "-q", "-b", f"nmB{n}", wb, base.commit)
            write(wb, case.b)
        t0 = time.monotonic()
        res = scan(base.dir)
        secs = time.monotonic() - t0
        paths = {ag["id"]: os.path.basename(ag["path"] or "") for ag in res["agents"]}
        p = next(x for x in res["pairs"] if {paths.get(x["a"]), paths.get(x["b"])}
                 == {f"wa{n}", f"wb{n}"})
        return {"advisory": p["advisory"], "risk": p["risk"], "channels": p["channels"],
                "finding_kinds": sorted({f"{f['channel']}:{f['kind']}" for f in p["findings"]
                                         if f["score"] > 0}),
                "findings": [{k: f[k] for k in ("channel", "kind", "score", "detail")}
                             for f in p["findings"]][:8],
                "scan_seconds": round(secs, 3)}
    finally:
        for w in (wa, wb):
            git(base.dir, "worktree", "remove", "--force", w, check=False)
        git(base.dir, "worktree", "prune", check=False)
        git(base.dir, "branch", "-q", "-D", f"nmA{n}", f"nmB{n}", check=False)


# -- the run -------------------------------------------------------------------------------------

def build_cases(base: Base, targets: list[ed.Target], per_kind: int, rnd: random.Random,
                families: Sequence[str]) -> tuple[list[nc.Case], Counter[str]]:
    src = base.sources()
    cases: list[nc.Case] = []
    skipped: Counter[str] = Counter()
    for fam in families:
        pool = [t for t in targets if nc.eligible(fam, t)]
        rnd.shuffle(pool)
        made = 0
        cap = 2 * per_kind if fam == "constant" else per_kind  # constants are scarce
        for t in pool:
            if made >= cap:
                break
            style = "existing-module" if made % 2 else "new-file"
            try:
                cases.extend(nc.make(fam, t, src, style))
                made += 1
            except (ValueError, KeyError, AssertionError, StopIteration, SyntaxError):
                skipped[f"{fam}: edit not applicable"] += 1
    return cases, skipped


def evaluate(repos: dict[str, str], per_kind: int, seed: int, swap_every: int,
             families: Sequence[str], limit: int | None, rows_out: str | None,
             log: Any = None, per_kind_js: int = 0) -> dict[str, Any]:
    scratch = tempfile.mkdtemp(prefix="proximity-nearmiss-")
    rnd = random.Random(seed)
    rows: list[dict[str, Any]] = []
    invalid: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    t0 = time.monotonic()
    try:
        all_cases: list[tuple[Base, nc.Case]] = []
        for name, gitdir in repos.items():
            base = Base(name, gitdir, scratch)
            if base.lang == "javascript" and shutil.which("node") is None:
                skipped[f"{name}: node not installed"] += 1
                continue
            targets = (ed.python_targets(name, base.dir) if base.lang == "python"
                       else ed.js_targets(name, base.dir))
            probe(base, targets, scratch)
            fams = [f for f in families if (f.startswith("js-")) == (base.lang != "python")]
            n = per_kind_js if base.lang == "javascript" and per_kind_js else per_kind
            cases, sk = build_cases(base, targets, n, rnd, fams)
            skipped.update(sk)
            all_cases.extend((base, c) for c in cases)
            if log:
                print(f"{name} ({base.lang}, {base.origin[:12]}): {len(targets)} targets, "
                      f"{sum(t.args is not None for t in targets)} callable, "
                      f"{len(cases)} cases", file=log)
        if limit is not None:
            all_cases = all_cases[:limit]
        for i, (base, case) in enumerate(all_cases):
            case.label, a, b = label(base, case, scratch)
            if case.label == "invalid":
                invalid[f"{case.family}: {case.why.split(':')[0]}"] += 1
            row: dict[str, Any] = {"id": case.id, "repo": case.repo, "lang": case.lang,
                                   "kind": case.family, "variant": case.variant,
                                   "target": case.target, "label": case.label,
                                   "why": case.why, "b_style": case.b_style,
                                   "arrangement": "A-committed"}
            if case.label in ("collision", "clean", "textual"):
                row.update(scan_pair(base, case, a, b, False, scratch))
                rows.append(row)
                if swap_every and zlib.crc32(case.target.encode()) % swap_every == 0:
                    sw = {**row, "arrangement": "B-committed"}
                    sw.update(scan_pair(base, case, a, b, True, scratch))
                    rows.append(sw)
            else:
                rows.append(row)
            if log:
                print(f"[{i + 1}/{len(all_cases)} {time.monotonic() - t0:5.0f}s] {case.id}: "
                      f"{case.label} {row.get('advisory', '')} {case.why[:80]}", file=log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if rows_out:
        os.makedirs(os.path.dirname(rows_out), exist_ok=True)
        with open(rows_out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    res = summarise(rows)
    import proximity

    res.update({"invalid": dict(invalid), "skipped": dict(skipped),
                "seconds": round(time.monotonic() - t0, 1), "repos": sorted(repos),
                "proximity": os.path.dirname(os.path.abspath(proximity.__file__))})
    return res


def _pr(rows: list[dict[str, Any]], flagged: set[str]) -> dict[str, Any]:
    pos = [r for r in rows if r["label"] == "collision"]
    hit = [r for r in rows if r["advisory"] in flagged]
    tp = sum(r["label"] == "collision" for r in hit)
    return {"precision": round(tp / len(hit), 3) if hit else None,
            "recall": round(tp / len(pos), 3) if pos else None}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["label"] in ("collision", "clean")
              and r["arrangement"] == "A-committed"]
    by_kind: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        rs = [r for r in scored if r["kind"] == kind]
        adv = Counter(f"{r['label']}:{r['advisory']}" for r in rs)
        all_k = [r for r in rows if r["kind"] == kind and r["arrangement"] == "A-committed"]
        by_kind[kind] = {"n": len(all_k), "labels": dict(Counter(r["label"] for r in all_k)),
                         "advisories": dict(adv),
                         "ta_or_ra": _pr(rs, {"traffic", "resolution"}),
                         "ra": _pr(rs, {"resolution"})}
    col = [r for r in scored if r["label"] == "collision"]
    clean = [r for r in scored if r["label"] == "clean"]
    near = [r for r in clean if r["variant"] == "near-miss"]
    sw = [r for r in rows if r["arrangement"] == "B-committed" and r["label"] in
          ("collision", "clean")]

    def rate(rs: list[dict[str, Any]], flagged: set[str]) -> float | None:
        return round(sum(r["advisory"] in flagged for r in rs) / len(rs), 3) if rs else None

    return {
        "by_kind": by_kind,
        "labels": dict(Counter(r["label"] for r in rows if r["arrangement"] == "A-committed")),
        "collisions": len(col), "clean": len(clean), "clean_near_misses": len(near),
        "ta_or_ra_recall": rate(col, {"traffic", "resolution"}),
        "ra_recall": rate(col, {"resolution"}),
        "ra_on_clean_near_misses": rate(near, {"resolution"}),
        "ra_on_clean": rate(clean, {"resolution"}),
        "ta_or_ra_on_clean": rate(clean, {"traffic", "resolution"}),
        "swapped": {"n": len(sw),
                    "ta_or_ra_recall": rate([r for r in sw if r["label"] == "collision"],
                                            {"traffic", "resolution"}),
                    "ra_on_clean": rate([r for r in sw if r["label"] == "clean"],
                                        {"resolution"})},
        "misses": [r["id"] for r in col if r["advisory"] == "clear"],
        "false_ra": [r["id"] for r in clean if r["advisory"] == "resolution"],
    }


def fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:5.3f}"


def print_report(res: dict[str, Any]) -> None:
    print(f"near misses on real code ({', '.join(res['repos'])}): labels {res['labels']}; "
          f"invalid {sum(res['invalid'].values())}, edit not applicable "
          f"{sum(res['skipped'].values())}; {res['seconds']}s")
    print(f"{'kind':15} {'n':>3} {'coll':>4} {'clean':>5} {'text':>4} {'inv':>3} "
          f"{'RA/TA/clear on collisions':>26} {'RA/TA/clear on clean':>21} "
          f"{'P(TA+)':>6} {'R(TA+)':>6} {'P(RA)':>6} {'R(RA)':>6}")
    for kind, k in res["by_kind"].items():
        lab, adv = k["labels"], k["advisories"]

        def trio(lbl: str, adv: dict[str, int] = adv) -> str:
            return "/".join(str(adv.get(f"{lbl}:{a}", 0))
                            for a in ("resolution", "traffic", "clear"))
        print(f"{kind:15} {k['n']:3} {lab.get('collision', 0):4} {lab.get('clean', 0):5} "
              f"{lab.get('textual', 0):4} {lab.get('invalid', 0):3} {trio('collision'):>26} "
              f"{trio('clean'):>21} {fmt(k['ta_or_ra']['precision']):>6} "
              f"{fmt(k['ta_or_ra']['recall']):>6} {fmt(k['ra']['precision']):>6} "
              f"{fmt(k['ra']['recall']):>6}")
    print(f"TA-or-RA recall on {res['collisions']} collisions: {fmt(res['ta_or_ra_recall'])} "
          f"(target >= 0.9)   RA recall: {fmt(res['ra_recall'])}")
    print(f"RA on {res['clean_near_misses']} clean near misses: "
          f"{fmt(res['ra_on_clean_near_misses'])} (target <= 0.05)   RA on all clean: "
          f"{fmt(res['ra_on_clean'])}   any advisory on clean: "
          f"{fmt(res['ta_or_ra_on_clean'])}")
    sw = res["swapped"]
    print(f"swapped sample (B committed, A live), {sw['n']} pairs: TA-or-RA recall "
          f"{fmt(sw['ta_or_ra_recall'])}, RA on clean {fmt(sw['ra_on_clean'])}")
    if res["invalid"]:
        print("invalid (dropped): " + ", ".join(f"{k} {v}" for k, v in
                                                sorted(res["invalid"].items())))
    for name in ("misses", "false_ra"):
        if res[name]:
            print(f"{name}: " + ", ".join(res[name]))


def use_code(code: str) -> None:
    """Import proximity from ``code`` (an exported revision), whatever is installed."""
    import importlib.util

    pkg = os.path.join(os.path.abspath(code), "proximity")
    spec = importlib.util.spec_from_file_location(
        "proximity", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["proximity"] = mod
    spec.loader.exec_module(mod)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=GITDIR",
                    help="a public repository's git dir (repeat)")
    ap.add_argument("--per-kind", type=int, default=3, help="targets per kind per repository")
    ap.add_argument("--per-kind-js", type=int, default=0,
                    help="targets per kind per JavaScript repository (default: --per-kind)")
    ap.add_argument("--kinds", nargs="*", default=list(nc.FAMILIES))
    ap.add_argument("--limit", type=int, default=None, help="at most this many cases")
    ap.add_argument("--swap-every", type=int, default=4,
                    help="also scan one target in n with B committed, A live (0: never)")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--rows", default=OUT, help="per-pair JSON lines ('' for none)")
    ap.add_argument("--code", default=None, metavar="DIR",
                    help="import proximity from DIR (e.g. `git archive REV proximity` "
                         "extracted there) instead of this checkout")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    repos = dict(r.split("=", 1) for r in args.repo)
    if args.code:
        use_code(args.code)
    if not repos:
        ap.error("give at least one --repo NAME=GITDIR")
    res = evaluate(repos, args.per_kind, args.seed, args.swap_every, args.kinds, args.limit,
                   args.rows or None, log=None if args.quiet else sys.stderr,
                   per_kind_js=args.per_kind_js)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
