"""A generated corpus of executable semantic collisions, labelled by running them.

Each case is a small multi-file program (Python or JavaScript) and two changes to it, A and
B. The label comes from git and the program itself, never from the generator's intention:
A and B are committed on two branches, `git merge-tree` merges them (a textual conflict is
reported apart), the merged tree is checked out and its own checks are run. Base, A alone
and B alone must each pass their checks, or the case is discarded as invalid. A pair whose
merge fails its checks (or does not import/compile) is a semantic collision; one whose
merge passes is clean.

proximity then scans the same two changes as live worktrees (A committed, B uncommitted)
and its advisory is compared with the label.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
       "GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "c@example.com",
       "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "c@example.com",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
NAMES = ["area", "volume", "price", "weight", "score", "speed", "width", "count", "rank",
         "total", "level", "ratio", "offset", "budget", "margin", "length"]


@dataclass
class Program:
    files: dict[str, str]
    names: dict[str, str]
    lang: str


@dataclass
class Case:
    id: str
    lang: str
    kind: str  # the template, for the report only
    base: dict[str, str]
    a: dict[str, str | None]  # path -> new content (None: delete)
    b: dict[str, str | None]
    label: str = ""  # collision | clean | textual | invalid
    result: dict[str, Any] = field(default_factory=dict)


# -- programs -------------------------------------------------------------------------------

def py_program(rnd: random.Random, v: int) -> Program:
    n = dict(zip(["area", "scale", "legacy", "total", "helper", "CONST"],
                 [f"{w}_{v}" for w in rnd.sample(NAMES, 5)] + [f"RATE_{v}"], strict=True))
    d1, d2 = rnd.choice([("core", "web"), ("lib", "app"), ("pkg/model", "pkg/views"),
                         ("shared", "services/api")])
    k = rnd.randint(2, 9)
    lib = f"{d1}/lib{v}.py"
    app = f"{d2}/app{v}.py"
    n.update({"k": str(k), "lib_mod": lib[:-3].replace("/", "."),
              "app_mod": app[:-3].replace("/", "."), "d1": d1, "d2": d2, "v": str(v)})
    files = {
        lib: f'''"""Library {v}."""
{n["CONST"]} = {k}


def {n["area"]}(w, h):
    return w * h


def {n["scale"]}(x, f):
    return x * f


def {n["legacy"]}():
    return "legacy-{v}"


def {n["total"]}(q):
    return q * {n["CONST"]}


def {n["helper"]}(s):
    return s.strip()
''',
        app: f'''from {n["lib_mod"]} import {n["area"]}, {n["scale"]}, {n["total"]}


def room():
    return {n["area"]}(3, 4)


def grow():
    return {n["scale"]}(2, 3)


def bill():
    return {n["total"]}(10)
''',
        f"check_{v}.py": f'''from {n["app_mod"]} import room, grow, bill

assert room() == 12
assert grow() == 6
assert bill() == {10 * k}
''',
    }
    for d in {d1, d2}:
        parts = d.split("/")
        for i in range(1, len(parts) + 1):
            files.setdefault("/".join(parts[:i]) + "/__init__.py", "")
    return Program(files, n, "python")


def js_program(rnd: random.Random, v: int) -> Program:
    n = dict(zip(["area", "scale", "legacy", "total", "helper", "CONST"],
                 [f"{w}{v}" for w in rnd.sample(NAMES, 5)] + [f"RATE{v}"], strict=True))
    d1, d2 = rnd.choice([("core", "web"), ("lib", "app"), ("src/model", "src/views")])
    k = rnd.randint(2, 9)
    lib, app = f"{d1}/lib{v}.mjs", f"{d2}/app{v}.mjs"
    rel = os.path.relpath(lib, d2)
    n.update({"k": str(k), "lib": lib, "app": app, "v": str(v), "d1": d1, "d2": d2})
    files = {
        lib: f'''export const {n["CONST"]} = {k};

export function {n["area"]}(w, h) {{
  return w * h;
}}

export function {n["scale"]}(x, f) {{
  return x * f;
}}

export function {n["legacy"]}() {{
  return "legacy-{v}";
}}

export function {n["total"]}(q) {{
  return q * {n["CONST"]};
}}

export function {n["helper"]}(s) {{
  return s.trim();
}}
''',
        app: f'''import {{ {n["area"]}, {n["scale"]}, {n["total"]} }} from "./{rel}";

export function room() {{
  return {n["area"]}(3, 4);
}}

export function grow() {{
  return {n["scale"]}(2, 3);
}}

export function bill() {{
  return {n["total"]}(10);
}}
''',
        f"check_{v}.mjs": f'''import {{ room, grow, bill }} from "./{app}";
const eq = (a, b) => {{ if (a !== b) throw new Error(`${{a}} !== ${{b}}`); }};
eq(room(), 12);
eq(grow(), 6);
eq(bill(), {10 * k});
''',
    }
    return Program(files, n, "javascript")


# -- change templates -----------------------------------------------------------------------
# Each returns (kind, a, b, expectation) where a/b map path -> content. B's new code lives in
# new files (a new module and a new check), so git merges A and B without a textual conflict.

def _new_use(p: Program, expr: str, expect: str, tag: str) -> dict[str, str | None]:
    n, v = p.names, p.names["v"]
    if p.lang == "python":
        mod = f"{n['d2']}/extra{v}_{tag}.py"
        names = sorted({x for x in (n["area"], n["scale"], n["legacy"], n["total"])
                        if x in expr})
        return {mod: f"from {n['lib_mod']} import {', '.join(names)}\n\n\n"
                     f"def extra():\n    return {expr}\n",
                f"check_{v}_{tag}.py": f"from {mod[:-3].replace('/', '.')} import extra\n\n"
                                       f"assert extra() == {expect}\n"}
    mod = f"{n['d2']}/extra{v}_{tag}.mjs"
    names = sorted({x for x in (n["area"], n["scale"], n["legacy"], n["total"]) if x in expr})
    rel = os.path.relpath(n["lib"], n["d2"])
    return {mod: f'import {{ {", ".join(names)} }} from "./{rel}";\n\n'
                 f"export function extra() {{\n  return {expr};\n}}\n",
            f"check_{v}_{tag}.mjs": f'import {{ extra }} from "./{mod}";\n'
                                    f"if (extra() !== {expect}) throw new Error('extra');\n"}


def _edit(p: Program, path_key: str, old: str, new: str, a: dict[str, str | None]) -> None:
    path = p.names[path_key] if p.lang == "javascript" else _py_path(p, path_key)
    text = a.get(path) or p.files[path]
    assert old in text, (old, path)
    a[path] = text.replace(old, new)


def _py_path(p: Program, key: str) -> str:
    n = p.names
    return {"lib": n["lib_mod"].replace(".", "/") + ".py",
            "app": n["app_mod"].replace(".", "/") + ".py"}[key]


def t_signature(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a: dict[str, str | None] = {}
    if p.lang == "python":
        _edit(p, "lib", f"def {n['area']}(w, h):\n    return w * h",
              f"def {n['area']}(w, h, depth):\n    return w * h * depth", a)
    else:
        _edit(p, "lib", f"function {n['area']}(w, h) {{\n  return w * h;",
              f"function {n['area']}(w, h, depth) {{\n  return w * h * depth;", a)
    _edit(p, "app", f"{n['area']}(3, 4)", f"{n['area']}(3, 4, 1)", a)
    return "signature change vs new call", a, _new_use(p, f"{n['area']}(2, 5)", "10", "sig")


def t_rename(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a: dict[str, str | None] = {}
    _edit(p, "lib", f" {n['scale']}(x, f)", f" {n['scale']}_by(x, f)", a)
    _edit(p, "app", f"import {{ {n['area']}, {n['scale']}," if p.lang != "python"
          else f"import {n['area']}, {n['scale']},",
          f"import {{ {n['area']}, {n['scale']}_by," if p.lang != "python"
          else f"import {n['area']}, {n['scale']}_by,", a)
    _edit(p, "app", f"{n['scale']}(2, 3)", f"{n['scale']}_by(2, 3)", a)
    return "rename vs new use", a, _new_use(p, f"{n['scale']}(5, 2)", "10", "ren")


def t_removed(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n, v = p.names, p.names["v"]
    a: dict[str, str | None] = {}
    if p.lang == "python":
        _edit(p, "lib", f'def {n["legacy"]}():\n    return "legacy-{v}"\n\n\n', "", a)
    else:
        _edit(p, "lib", f'export function {n["legacy"]}() {{\n  return "legacy-{v}";\n}}\n\n',
              "", a)
    quote = "'" if p.lang == "python" else '"'
    return ("removed export vs new import", a,
            _new_use(p, f"{n['legacy']}()", f"{quote}legacy-{v}{quote}", "rem"))


def t_constant(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n, v, k = p.names, p.names["v"], int(p.names["k"])
    a: dict[str, str | None] = {}
    _edit(p, "lib", f"{n['CONST']} = {k}", f"{n['CONST']} = {k + 1}", a)
    check = f"check_{v}.py" if p.lang == "python" else f"check_{v}.mjs"
    a[check] = p.files[check].replace(f"{10 * k}", f"{10 * (k + 1)}")
    return ("changed constant vs dependent assert", a,
            _new_use(p, f"{n['total']}(5)", str(5 * k), "const"))


def c_refactor(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a: dict[str, str | None] = {}
    if p.lang == "python":
        _edit(p, "lib", "    return w * h\n", "    product = w * h\n    return product\n", a)
    else:
        _edit(p, "lib", "  return w * h;\n", "  const product = w * h;\n  return product;\n", a)
    return "clean: body refactor vs new call", a, _new_use(p, f"{n['area']}(2, 5)", "10", "ok1")


def c_addition(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a: dict[str, str | None] = {}
    if p.lang == "python":
        _edit(p, "lib", f"def {n['helper']}(s):", f"def {n['helper']}_upper(s):\n"
              f"    return s.upper()\n\n\ndef {n['helper']}(s):", a)
    else:
        _edit(p, "lib", f"export function {n['helper']}(s) {{",
              f"export function {n['helper']}Upper(s) {{\n  return s.toUpperCase();\n}}\n\n"
              f"export function {n['helper']}(s) {{", a)
    return ("clean: new function vs new call", a,
            _new_use(p, f"{n['total']}(5)", str(5 * int(n["k"])), "ok2"))


def c_readread(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a = _new_use(p, f"{n['scale']}(3, 3)", "9", "ok3a")
    return "clean: both add calls (read/read)", a, _new_use(p, f"{n['area']}(1, 7)", "7",
                                                            "ok3b")


def c_app_edit(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    a: dict[str, str | None] = {}
    if p.lang == "python":
        _edit(p, "app", "def bill():", f"def hall():\n    return {n['area']}(10, 10)\n\n\n"
              "def bill():", a)
    else:
        _edit(p, "app", "export function bill() {", f"export function hall() {{\n"
              f"  return {n['area']}(10, 10);\n}}\n\nexport function bill() {{", a)
    return ("clean: caller edit vs new call", a,
            _new_use(p, f"{n['scale']}(4, 4)", "16", "ok4"))


def c_docs(p: Program) -> tuple[str, dict[str, str | None], dict[str, str | None]]:
    n = p.names
    return ("clean: docs vs new call", {f"docs/notes{n['v']}.md": "# notes\n"},
            _new_use(p, f"{n['total']}(2)", str(2 * int(n["k"])), "ok5"))


COLLIDING = [t_signature, t_rename, t_removed, t_constant]
CLEAN = [c_refactor, c_addition, c_readread, c_app_edit, c_docs]


def cases(lang: str, variants: int, seed: int = 11) -> list[Case]:
    rnd = random.Random(seed)
    make = py_program if lang == "python" else js_program
    out = []
    for v in range(variants):
        prog = make(rnd, v)
        for t in COLLIDING + CLEAN:
            kind, a, b = t(prog)
            out.append(Case(f"{lang}:{v}:{t.__name__}", lang, kind, dict(prog.files), a, b))
    return out


# -- labelling by running ---------------------------------------------------------------------

def git(cwd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          check=check)


def write(root: str, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        if text is None:
            if os.path.exists(path):
                os.unlink(path)
            continue
        os.makedirs(os.path.dirname(path) or root, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def scan(main: str) -> dict[str, Any]:
    """`scan --json` of the repository at ``main``, in process (the benchmarks' scanner)."""
    from proximity.snapshot import workspace
    from proximity.tcas import pipeline
    from proximity.views import report

    ctx = workspace.open_context(main)
    try:
        return report.scan_json(pipeline.run_scan(ctx))
    finally:
        ctx.close()


def run_checks(root: str, lang: str) -> bool:
    checks = sorted(f for f in os.listdir(root) if f.startswith("check_"))
    for c in checks:
        cmd = [sys.executable, c] if lang == "python" else ["node", c]
        r = subprocess.run(cmd, cwd=root, env={**ENV, "PYTHONPATH": root},
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            return False
    return True


def checks_pass(repo: str, rev: str, lang: str, scratch: str) -> bool:
    out = os.path.join(scratch, rev[:12])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    data = subprocess.run(["git", "archive", rev], cwd=repo, env=ENV, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    try:
        return run_checks(out, lang)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def build(case: Case, root: str) -> tuple[str, str, str]:
    """Repo with branches A and B; worktrees wa (A committed) and wb (B uncommitted)."""
    main = os.path.join(root, "main")
    os.makedirs(main)
    git(main, "init", "-q", "-b", "main")
    write(main, dict(case.base))
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    for br, change in (("A", case.a), ("B", case.b)):
        git(main, "checkout", "-q", "-b", br, "main")
        write(main, change)
        git(main, "add", "-A")
        git(main, "commit", "-qm", br)
    git(main, "checkout", "-q", "main")
    wa, wb = os.path.join(root, "wa"), os.path.join(root, "wb")
    git(main, "worktree", "add", "-q", wa, "A")
    git(main, "worktree", "add", "-q", "-b", "Bwork", wb, "main")
    write(wb, case.b)  # B's work is still uncommitted: what proximity sees early
    return main, wa, wb


def label(case: Case, main: str, scratch: str) -> str:
    for rev in ("main", "A", "B"):
        if not checks_pass(main, rev, case.lang, scratch):
            return "invalid"
    merged = git(main, "merge-tree", "--write-tree", "A", "B", check=False)
    if merged.returncode != 0:
        return "textual"
    tree = merged.stdout.split()[0]
    return "clean" if checks_pass(main, tree, case.lang, scratch) else "collision"


def evaluate(case: Case, scan: Callable[[str], dict[str, Any]]) -> Case:
    root = tempfile.mkdtemp(prefix="proximity-sem-")
    try:
        main, _, _ = build(case, root)
        case.label = label(case, main, os.path.join(root, "scratch"))
        r = scan(main)
        p = next(x for x in r["pairs"] if {x["a"], x["b"]} == {"wa", "wb"})
        case.result = {"advisory": p["advisory"], "risk": p["risk"],
                       "channels": p["channels"]}
        return case
    finally:
        shutil.rmtree(root, ignore_errors=True)
