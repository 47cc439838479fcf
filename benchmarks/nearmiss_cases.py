"""Near-miss pairs on real code: each breaking change next to its compatible twin.

A family is one kind of change to one real target (a function, class, constant or module
found in a fetched repository). It yields two cases, ``breaking`` and ``near-miss``; each
case is side A (changes the definition) and side B (a new module that uses it, plus a tiny
check script that exercises it). Which of the two really breaks is decided later by
running the merged code, not by the name of the variant.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import nearmiss_edits as ed
from nearmiss_edits import Target

Files = dict[str, str | None]


@dataclass
class Case:
    id: str
    repo: str
    lang: str
    family: str
    variant: str  # breaking | near-miss (what the change intends; the label decides)
    target: str
    a: Files
    b: Files
    b_style: str = "new-file"  # or "existing-module": B appends to a module of the base
    label: str = ""
    why: str = ""  # why a case is invalid
    rows: list[dict[str, object]] = field(default_factory=list)


def slug(*parts: str) -> str:
    return re.sub(r"\W+", "_", "_".join(parts)).strip("_").lower()


# -- side B: new code that uses the target, and its check --------------------------------------

def py_b(t: Target, sid: str, imports: str, body: str) -> Files:
    pkg_dir = os.path.dirname(t.path)
    pkg = ed.module_of(os.path.join(pkg_dir, "__init__.py"), t.root)
    mod = f"{pkg_dir}/uses_{sid}.py"
    return {mod: f'"""New code that relies on {t.module}.{t.name}."""\n\n{imports}\n\n\n'
                 f"def use():\n{body}\n",
            f"checks/check_b_{sid}.py": f"from {pkg}.uses_{sid} import use\n\nuse()\n"}


def py_a_check(sid: str, module: str, name: str | None, args: list[str] | None = None
               ) -> Files:
    """A's own check: its module imports and, given ``args``, the changed definition runs."""
    if name is None:
        return {f"checks/check_a_{sid}.py": f"import {module}\n"}
    if args is None:
        return {f"checks/check_a_{sid}.py": f"from {module} import {name}  # noqa: F401\n"}
    return {f"checks/check_a_{sid}.py": f"from {module} import {name}\n\n"
                                        f"{name}({', '.join(args)})\n"}


def call(t: Target, args: list[str]) -> str:
    return f"    return {t.name}({', '.join(args)})"


def js_b(t: Target, sid: str, args: list[str]) -> Files:
    rel = os.path.relpath(t.path, "src")
    rel = rel if rel.startswith(".") else "./" + rel
    return {f"src/uses_{sid}.js": f'import {{ {t.name} }} from "{rel}";\n\n'
                                  f"export function use() {{\n"
                                  f"  return {t.name}({', '.join(args)});\n}}\n",
            f"checks/check_b_{sid}.mjs": f'import {{ use }} from "../src/uses_{sid}.js";\n\n'
                                         "use();\n"}


def js_b_index(t: Target, sid: str, args: list[str]) -> Files:
    """B's new code takes the function from the package's index under its public name."""
    return {f"src/uses_{sid}.js": f'import {{ {t.via} }} from "./index.js";\n\n'
                                  f"export function use() {{\n"
                                  f"  return {t.via}({', '.join(args)});\n}}\n",
            f"checks/check_b_{sid}.mjs": f'import {{ use }} from "../src/uses_{sid}.js";\n\n'
                                         "use();\n"}


def js_a_check(sid: str, path: str, name: str, args: list[str]) -> Files:
    return {f"checks/check_a_{sid}.mjs":
            f'import {{ {name} }} from "../{path}";\n\n{name}({", ".join(args)});\n'}


# -- families ---------------------------------------------------------------------------------

Pair = list[tuple[str, Files, Files]]  # (variant, a, b)
Maker = Callable[[Target, dict[str, str], str], Pair]


def _new_param(t: Target, src: dict[str, str], sid: str, kwonly: bool) -> Pair:
    """A gains ``strict_mode`` (without a default: breaking; with one: the near miss), B
    calls the target as before."""
    assert t.args is not None
    b = py_b(t, sid, f"from {t.module} import {t.name}", call(t, t.args))
    out: Pair = []
    for variant, req in (("breaking", True), ("near-miss", False)):
        a = {t.path: ed.add_param(src[t.path], t, "strict_mode", required=req, kwonly=kwonly),
             **py_a_check(sid + variant[0], t.module, t.name, [*t.args, "strict_mode=None"])}
        out.append((variant, a, b))
    return out


def f_param_required(t: Target, src: dict[str, str], sid: str) -> Pair:
    return _new_param(t, src, sid, kwonly=False)


def f_kwonly(t: Target, src: dict[str, str], sid: str) -> Pair:
    return _new_param(t, src, sid, kwonly=True)


def f_param_rename(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None and t.nreq >= 1
    p = t.params[t.nreq - 1]
    new = p + "_value"
    a = {t.path: ed.rename_param(src[t.path], t, p, new),
         **py_a_check(sid, t.module, t.name, t.args)}
    pos = t.args[: t.nreq]
    kw = t.args[t.nreq:]
    by_kw = [*pos[:-1], f"{p}={pos[-1]}", *kw]
    imp = f"from {t.module} import {t.name}"
    return [("breaking", a, py_b(t, sid + "k", imp, call(t, by_kw))),
            ("near-miss", a, py_b(t, sid + "p", imp, call(t, t.args)))]


def _package_sources(src: dict[str, str]) -> dict[str, str]:
    return {p: s for p, s in src.items() if p.endswith(".py")}


def f_fn_rename(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None
    new = t.name + "_renamed"
    renamed = ed.rename_everywhere(_package_sources(src), t.name, new)
    b = py_b(t, sid, f"from {t.module} import {t.name}", call(t, t.args))
    fn_end = ed.find_def(ed.ast.parse(renamed[t.path]), new).end_lineno or 0
    lines = renamed[t.path].splitlines(keepends=True)
    alias = "".join(lines[:fn_end]) + f"\n\n{t.name} = {new}\n" + "".join(lines[fn_end:])
    return [("breaking", {**renamed, **py_a_check(sid + "b", t.module, new, t.args)}, b),
            ("near-miss", {**renamed, t.path: alias,
                           **py_a_check(sid + "n", t.module, new, t.args)},
             b)]


def _new_module(t: Target, leaf: str) -> tuple[str, str]:
    pkg_dir = os.path.dirname(t.path)
    pkg = ed.module_of(os.path.join(pkg_dir, "__init__.py"), t.root)
    return f"{pkg_dir}/{leaf}.py", f"{pkg}.{leaf}"


def f_fn_removed(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None and t.refs_in_module == 0
    rest, moved = ed.move_function(src[t.path], t)
    new_path, new_mod = _new_module(t, f"{t.name}_impl")
    others = {p: s for p, s in _package_sources(src).items() if p != t.path}
    retarget = ed.retarget_imports(others, t.root, t.module, new_mod, only_name=t.name)
    b = py_b(t, sid, f"from {t.module} import {t.name}", call(t, t.args))
    reexport = rest.rstrip("\n") + f"\n\nfrom {new_mod} import {t.name}  # noqa: E402,F401\n"
    return [("breaking", {t.path: rest, new_path: moved, **retarget,
                          **py_a_check(sid + "b", new_mod, t.name, t.args)}, b),
            ("near-miss", {t.path: reexport, new_path: moved,
                           **py_a_check(sid + "n", new_mod, t.name, t.args)}, b)]


def f_module_move(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.used and t.args is not None
    new_path, new_mod = _new_module(t, f"{t.name}_moved")
    others = {p: s for p, s in _package_sources(src).items() if p != t.path}
    retarget = ed.retarget_imports(others, t.root, t.module, new_mod)
    body = f"    return {t.used}({', '.join(t.args)})"
    b = py_b(t, sid, f"from {t.module} import {t.used}", body)
    shim = f'"""Moved to {new_mod}."""\n\nfrom {new_mod} import *  # noqa: F401,F403\n'
    base: Files = {t.path: None, new_path: src[t.path], **retarget}
    return [("breaking", {**base, **py_a_check(sid + "b", new_mod, t.used, t.args)}, b),
            ("near-miss", {**base, t.path: shim,
                           **py_a_check(sid + "n", new_mod, t.used, t.args)}, b)]


def f_constant(t: Target, src: dict[str, str], sid: str) -> Pair:
    a = {t.path: ed.change_constant(src[t.path], t), **py_a_check(sid, t.module, t.name)}
    imp = f"from {t.module} import {t.name}"
    return [("breaking", a, py_b(t, sid + "v", imp, f"    assert {t.name} == {t.value}")),
            ("near-miss", a, py_b(t, sid + "t", imp,
                                  f"    assert isinstance({t.name}, {t.vtype})"))]


def f_class_init(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None
    a = {t.path: ed.add_param(src[t.path], t, "owner_ref", required=True, kwonly=False),
         **py_a_check(sid, t.module, t.name, [*t.args, "owner_ref=None"])}
    imp = f"from {t.module} import {t.name}"
    typed = py_b(t, sid + "t", imp, "")
    mod = next(p for p in typed if not p.startswith("checks/"))
    typed[mod] = (f'"""New code that relies on {t.module}.{t.name}."""\n\n{imp}\n\n\n'
                  f"def use(value: {t.name} | None = None) -> {t.name} | None:\n"
                  "    return value\n")
    return [("breaking", a, py_b(t, sid + "i", imp, call(t, t.args))), ("near-miss", a, typed)]


def f_body(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None
    a = {t.path: ed.body_refactor(src[t.path], t),
         **py_a_check(sid, t.module, t.name, t.args)}
    return [("near-miss", a, py_b(t, sid, f"from {t.module} import {t.name}",
                                  call(t, t.args)))]


def _moved(t: Target, src: dict[str, str]) -> tuple[str, str, Files]:
    """A ``git mv`` of the target's module with the package's imports rewritten."""
    new_path, new_mod = _new_module(t, f"{t.name}_moved")
    others = {p: s for p, s in _package_sources(src).items() if p != t.path}
    retarget = ed.retarget_imports(others, t.root, t.module, new_mod)
    return new_path, new_mod, {t.path: None, new_path: src[t.path], **retarget}


def f_move_edit(t: Target, src: dict[str, str], sid: str) -> Pair:
    """A moves the module while B edits it: B appends a helper to it and, breaking, also
    imports the helper from the old path in new code; the near miss only edits (git
    carries the edit through the rename)."""
    assert t.used and t.args is not None
    _new_path, new_mod, moved = _moved(t, src)
    helper = f"{t.used}_again"
    edited = (src[t.path].rstrip("\n") + f"\n\n\ndef {helper}():\n"
              f"    return {t.used}({', '.join(t.args)})\n")
    a = {**moved, **py_a_check(sid + "a", new_mod, t.used, t.args)}
    top = t.module.split(".")[0]
    only_edit: Files = {t.path: edited,
                        f"checks/check_b_{sid}e.py": f"import {top}  # noqa: F401\n"}
    uses = py_b(t, sid + "u", f"from {t.module} import {helper}", f"    return {helper}()")
    return [("breaking", a, {**uses, t.path: edited}), ("near-miss", a, only_edit)]


def f_move_users(t: Target, src: dict[str, str], sid: str) -> Pair:
    """A moves the module (breaking) / moves it leaving a star shim (near miss); B's new
    code imports the module itself and calls through it (``from pkg import mod``)."""
    assert t.used and t.args is not None
    _new_path, new_mod, moved = _moved(t, src)
    pkg, leaf = t.module.rsplit(".", 1)
    b = py_b(t, sid, f"from {pkg} import {leaf}",
             f"    return {leaf}.{t.used}({', '.join(t.args)})")
    shim = f'"""Moved to {new_mod}."""\n\nfrom {new_mod} import *  # noqa: F401,F403\n'
    return [("breaking", {**moved, **py_a_check(sid + "b", new_mod, t.used, t.args)}, b),
            ("near-miss", {**moved, t.path: shim,
                           **py_a_check(sid + "n", new_mod, t.used, t.args)}, b)]


def _method_param(t: Target, src: dict[str, str], sid: str, b: Files) -> Pair:
    """A gives the class's method a new required / optional parameter; B as given."""
    assert t.args is not None and t.margs is not None
    out: Pair = []
    for variant, req in (("breaking", True), ("near-miss", False)):
        margs = ", ".join([*t.margs, "strict_mode=None"])
        a = {t.path: ed.add_param(src[t.path], t, "strict_mode", required=req, kwonly=False,
                                  method=t.method),
             f"checks/check_a_{sid}{variant[0]}.py":
                 f"from {t.module} import {t.name}\n\n"
                 f"{t.name}({', '.join(t.args)}).{t.method}({margs})\n"}
        out.append((variant, a, b))
    return out


def f_reexport_method(t: Target, src: dict[str, str], sid: str) -> Pair:
    """B reaches the class through the package that re-exports it and calls the method on
    a new instance: ``from click import Command; Command(...).m(...)``."""
    assert t.args is not None and t.margs is not None and t.via
    body = f"    return {t.name}({', '.join(t.args)}).{t.method}({', '.join(t.margs)})"
    return _method_param(t, src, sid, py_b(t, sid, f"from {t.via} import {t.name}", body))


def f_instance_method(t: Target, src: dict[str, str], sid: str) -> Pair:
    """B keeps an instance and calls the method on it later: ``x = C(...); x.m(...)``, or
    (one target in two) ``self.obj = C(...)`` then ``self.obj.m(...)``."""
    assert t.args is not None and t.margs is not None
    made, margs = f"{t.name}({', '.join(t.args)})", ", ".join(t.margs)
    if zlib.crc32(t.name.encode()) % 2:
        body = (f"    class _User:\n        def __init__(self):\n            self.obj = {made}\n"
                f"\n        def run(self):\n            return self.obj.{t.method}({margs})\n"
                "\n    return _User().run()")
    else:
        body = f"    obj = {made}\n    return obj.{t.method}({margs})"
    return _method_param(t, src, sid, py_b(t, sid, f"from {t.module} import {t.name}", body))


def f_js_export(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None
    new = t.name + "Renamed"
    renamed = ed.js_rename({p: s for p, s in src.items() if p.endswith(".js")}, t.name, new)
    if t.path not in renamed:
        raise ValueError("not renamed")
    alias = renamed[t.path].rstrip("\n") + f"\n\nexport {{ {new} as {t.name} }};\n"
    b = js_b(t, sid, t.args)
    return [("breaking", {**renamed, **js_a_check(sid + "b", t.path, new, t.args)}, b),
            ("near-miss", {**renamed, t.path: alias,
                           **js_a_check(sid + "n", t.path, new, t.args)},
             b)]


def f_js_param(t: Target, src: dict[str, str], sid: str) -> Pair:
    assert t.args is not None
    b = js_b(t, sid, t.args)
    out: Pair = []
    for variant, req in (("breaking", True), ("near-miss", False)):
        a = {t.path: ed.js_add_param(src[t.path], t, "scaleBy", required=req),
             **js_a_check(sid + variant[0], t.path, t.name,
                         [*t.args, *["undefined"] * (len(t.params) - t.nreq), "1"])}
        out.append((variant, a, b))
    return out


def f_js_index_param(t: Target, src: dict[str, str], sid: str) -> Pair:
    """js-param, with B importing the function from src/index.js, which re-exports it
    (``export {linear as easeLinear} from "./linear.js"``)."""
    assert t.args is not None and t.via
    b = js_b_index(t, sid, t.args)
    return [(v, a, b) for v, a, _b in f_js_param(t, src, sid)]


FAMILIES: dict[str, tuple[str, str, Maker]] = {
    # family: (target kind, description, maker)
    "param-required": ("function", "new required parameter / new optional parameter",
                       f_param_required),
    "param-kwonly": ("function", "keyword-only without default / with default", f_kwonly),
    "param-rename": ("function", "parameter renamed, B passes it by keyword / positionally",
                     f_param_rename),
    "fn-rename": ("function", "function renamed / renamed keeping old = new", f_fn_rename),
    "fn-removed": ("function", "function moved out / moved out and re-exported",
                   f_fn_removed),
    "module-move": ("module", "module moved (git mv) / moved leaving a shim", f_module_move),
    "constant": ("constant", "constant changed, B asserts the value / only its type",
                 f_constant),
    "class-init": ("class", "class gains a required __init__ arg, B instantiates / only "
                   "annotates", f_class_init),
    "body": ("function", "body-only refactor (compatible)", f_body),
    "move-edit": ("module", "module moved while B edits it and imports the edit from the "
                  "old path / only edits it", f_move_edit),
    "move-users": ("module", "module moved / moved leaving a shim, B imports the module "
                   "itself (from pkg import mod)", f_move_users),
    "reexport-method": ("class", "method of a re-exported class gains a required / optional "
                        "parameter, B uses the package's name", f_reexport_method),
    "instance-method": ("class", "method gains a required / optional parameter, B calls it "
                        "on a kept instance", f_instance_method),
    "js-export": ("jsfunction", "export renamed / renamed with export {new as old}",
                  f_js_export),
    "js-param": ("jsfunction", "required parameter added / default parameter added",
                 f_js_param),
    "js-index-param": ("jsfunction", "required / default parameter added, B imports it "
                       "from the package's index.js", f_js_index_param),
}


def eligible(family: str, t: Target) -> bool:
    kind = FAMILIES[family][0]
    if kind == "jsfunction":
        return t.lang == "javascript" and t.args is not None and (
            family != "js-index-param" or bool(t.via))
    if t.lang != "python" or t.what != kind:
        return False
    if kind in ("function", "class"):
        if t.args is None:
            return False
        if family == "param-rename":
            return t.nreq >= 1 and t.posonly < t.nreq
        if family == "fn-removed":
            return t.refs_in_module == 0 and not t.path.endswith("__init__.py")
        if family in ("reexport-method", "instance-method"):
            return t.margs is not None and (family != "reexport-method" or bool(t.via))
    if kind == "module":
        return bool(t.used)
    return True


def host_for(t: Target, src: dict[str, str], a_paths: set[str]) -> str | None:
    """An existing module next to the target that B can append its new code to."""
    here = os.path.dirname(t.path)
    ext = ".py" if t.lang == "python" else ".js"
    pool = sorted(p for p in src if os.path.dirname(p) == here and p.endswith(ext)
                  and p != t.path and p not in a_paths
                  and os.path.basename(p) not in ("__init__.py", "__main__.py", "index.js")
                  and not re.search(rf"\b{re.escape(t.name)}\b", src[p]))
    if t.lang == "python":
        # prefer modules that already import the target's module (its real consumers);
        # never one the target's module imports (B's import would be circular)
        leaf = t.module.rsplit(".", 1)[-1]
        mine = re.compile(rf"^\s*from\s+[\w.]*\b{re.escape(leaf)}\s+import", re.M)
        stem = {p: os.path.basename(p)[:-3] for p in pool}
        pool = [p for p in pool if not re.search(rf"\b{re.escape(stem[p])}\b", src[t.path])]
        pool = [p for p in pool if mine.search(src[p])] or pool
    if not pool:
        return None
    return pool[zlib.crc32(t.name.encode()) % len(pool)]


def relocate_b(t: Target, b: Files, host: str, src: dict[str, str], sid: str) -> Files:
    """The same new code, appended to an existing module instead of a new file."""
    fn = f"use_{sid}" if t.lang == "python" else f"use{sid.title().replace('_', '')}"
    out: Files = {}
    for path, text in b.items():
        assert text is not None
        if path.startswith("checks/"):
            if t.lang == "python":
                host_mod = ed.module_of(host, t.root)
                out[path] = f"from {host_mod} import {fn}\n\n{fn}()\n"
            else:
                out[path] = f'import {{ {fn} }} from "../{host}";\n\n{fn}();\n'
            continue
        lines = text.splitlines()
        if t.lang == "python":
            lines = [ln for ln in lines if not ln.startswith('"""')]
            lines = [ln + "  # noqa: E402" if ln.startswith("from ") else ln for ln in lines]
        code = "\n".join(lines).strip("\n")
        code = re.sub(r"\bfunction use\(|^def use\(", lambda m: m.group(0).replace(
            "use(", fn + "("), code, flags=re.M)
        sep = "\n\n\n" if t.lang == "python" else "\n\n"
        out[host] = src[host].rstrip("\n") + sep + code + "\n"
    return out


def make(family: str, t: Target, src: dict[str, str], b_style: str = "new-file"
         ) -> list[Case]:
    sid = slug(t.repo, family, t.name)
    out = []
    for variant, a, b in FAMILIES[family][2](t, src, sid):
        style = b_style
        if family == "move-edit":
            style = "new-file"  # B's edit is the module itself: nothing to relocate
        if style == "existing-module":
            host = host_for(t, src, set(a))
            if host is None:
                style = "new-file"
            else:
                b = relocate_b(t, b, host, src, sid)
        out.append(Case(f"{t.repo}:{family}:{t.module}.{t.name}:{variant}", t.repo, t.lang,
                        family, variant, f"{t.module}.{t.name}", a, b, style))
    return out
