"""Resolving what a file imports (as written) to paths in the repository, per language.

Python modules by dotted name against every possible source root (the shallowest wins),
JavaScript/TypeScript relative specifiers with extension and index lookup (a TS import of
"./x.js" means x.ts), Go import paths through each go.mod's module path to the package
directory, Rust ``mod`` items and ``crate::``/``self::``/``super::`` paths. External packages
resolve to nothing.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping

from proximity.analysis import imports

JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


class Resolver:
    """Maps import records to repository paths for one set of files."""

    def __init__(self, paths: Collection[str]) -> None:
        self.paths = set(paths)
        self.py: dict[str, list[tuple[str, str]]] = defaultdict(list)  # last name -> (mod, path)
        self.dirs: dict[str, list[str]] = defaultdict(list)
        self.go_mods: dict[str, str] = {}
        py_index = self.py
        for p in self.paths:
            if p.endswith(".py") or p.endswith(".pyi"):
                mod = p[: p.rindex(".")]
                if mod.endswith("__init__"):
                    mod = mod[:-8].rstrip("/")
                if mod:
                    py_index[mod[mod.rfind("/") + 1:]].append(("/" + mod, p))
            elif p.endswith(".go") and not p.endswith("_test.go"):
                self.dirs[posixpath.dirname(p)].append(p)

    def set_go_mods(self, mods: Mapping[str, str]) -> None:
        self.go_mods = dict(mods)

    def resolve(self, src: str, rec: imports.Record) -> list[str]:
        kind = rec[0]
        if kind == "py":
            return self._py(src, rec[1], int(rec[2]), rec[3])
        if kind == "js":
            return self._js(src, rec[1])
        if kind == "go":
            return self._go(rec[1])
        if kind == "rs":
            return self._rs(src, rec[1], rec[2])
        return []

    def _py_abs(self, dotted: str) -> list[str]:
        """Paths whose module name ends with ``dotted``; the shallowest source root wins."""
        want = "/" + dotted.replace(".", "/")
        cands = sorted((m.count("/"), p) for m, p in self.py.get(dotted.rsplit(".", 1)[-1], ())
                       if m.endswith(want))
        if not cands:
            return []
        return [p for depth, p in cands if depth == cands[0][0]][:3]

    def _py(self, src: str, module: str, level: int, names: list[str]) -> list[str]:
        if level:
            base = posixpath.dirname(src)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            stem = posixpath.join(base, *module.split(".")) if module else base
            out = []
            for n in names or [""]:
                for cand in (f"{stem}/{n}.py", f"{stem}/{n}/__init__.py"):
                    if n and cand in self.paths:
                        out.append(cand)
                        break
                else:
                    for cand in (f"{stem}.py", f"{stem}/__init__.py"):
                        if cand in self.paths:
                            out.append(cand)
                            break
            return sorted(set(out))
        out = []
        for n in names:
            if n != "*":
                out.extend(self._py_abs(f"{module}.{n}"))
        if not out:
            out = self._py_abs(module)
        return sorted(set(out))

    def _js(self, src: str, spec: str) -> list[str]:
        if not spec.startswith("."):
            return []
        stem = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
        cands = [stem]
        base, ext = posixpath.splitext(stem)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            cands += [base + e for e in JS_EXTS]  # TS imports "./x.js" meaning x.ts
        cands += [stem + e for e in JS_EXTS] + [f"{stem}/index{e}" for e in JS_EXTS]
        for c in cands:
            if c in self.paths:
                return [c]
        return []

    def _go(self, path: str) -> list[str]:
        for root, mod in sorted(self.go_mods.items(), key=lambda kv: -len(kv[1])):
            if path == mod or path.startswith(mod + "/"):
                rel = path[len(mod):].lstrip("/")
                d = posixpath.join(root, rel) if root else rel
                return sorted(self.dirs.get(posixpath.normpath(d) if d else "", []))[:50]
        return []

    def _rs(self, src: str, kind: str, path: str) -> list[str]:
        d = posixpath.dirname(src)
        stem = posixpath.basename(src)[:-3]
        if kind == "mod":
            base = d if stem in ("mod", "lib", "main") else posixpath.join(d, stem)
            for c in (f"{base}/{path}.rs", f"{base}/{path}/mod.rs"):
                if c in self.paths:
                    return [c]
            return []
        parts = [p for p in path.split("::") if p]
        if not parts:
            return []
        if parts[0] == "crate":
            root = d
            while root and posixpath.basename(root) != "src":
                root = posixpath.dirname(root)
            base, parts = (root or d), parts[1:]
        elif parts[0] in ("super", "self"):
            is_root = stem in ("mod", "lib", "main")  # the file is its directory's module
            if parts[0] == "self":
                base = d if is_root else posixpath.join(d, stem)
            else:
                base = posixpath.dirname(d) if is_root else d
            parts = parts[1:]
        else:
            return []
        for k in range(len(parts), 0, -1):
            stem_path = posixpath.join(base, *parts[:k])
            for c in (f"{stem_path}.rs", f"{stem_path}/mod.rs"):
                if c in self.paths:
                    return [c]
        return []


def go_modules(files: Mapping[str, str], read: Callable[[str], bytes]) -> dict[str, str]:
    mods = {}
    for p, oid in files.items():
        if posixpath.basename(p) == "go.mod":
            for line in read(oid).decode(errors="replace").splitlines():
                if line.startswith("module "):
                    mods[posixpath.dirname(p)] = line.split()[1].strip('"')
                    break
    return mods
