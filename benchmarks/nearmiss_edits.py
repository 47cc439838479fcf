"""Source edits for the near-miss benchmark: find real targets and change them.

Python edits work from the ``ast`` of the real file and splice text at the node positions
(the rest of the file keeps its bytes); JavaScript edits work on ``export function`` lines.
Every edit is only a proposal: whether it leaves the project working, and whether the merge
with the other side breaks, is decided by running the code (``nearmiss.py``), never here.
"""

from __future__ import annotations

import ast
import copy
import io
import os
import re
import tokenize
from dataclasses import dataclass, field

SKIP_NAMES = frozenset(("launch", "edit", "open_url", "pause", "getchar", "prompt", "confirm",
                        "clear", "main", "open_file", "get_terminal_size"))


@dataclass
class Target:
    repo: str
    lang: str  # python | javascript
    what: str  # function | class | constant | module
    path: str  # file in the repository
    module: str  # dotted module (python) or the file path (javascript)
    name: str
    root: str = ""  # source root put on PYTHONPATH ("src" or "")
    nreq: int = 0  # required positional parameters (without self)
    posonly: int = 0  # positional-only parameters
    params: list[str] = field(default_factory=list)  # positional parameter names
    kwreq: list[str] = field(default_factory=list)  # required keyword-only names
    has_kwargs: bool = False
    value: str = ""  # constant: repr of its literal
    vtype: str = ""  # constant: type name
    args: list[str] | None = None  # argument sources that run on the base (probed)
    used: str = ""  # module target: the public name B uses
    refs_in_module: int = 0  # references to the name inside its own module
    # class: its public plain methods (name, required positional, required keyword-only)
    methods: list[tuple[str, int, list[str]]] = field(default_factory=list)
    method: str = ""  # class: a method that runs on an instance (probed)
    margs: list[str] | None = None  # ... with these arguments
    via: str = ""  # class: a package that re-exports it (``from click import Command``);
    # JavaScript: the name src/index.js re-exports it as (``export {a as b} from``)


# -- discovery ----------------------------------------------------------------------------

def source_root(base: str) -> tuple[str, list[str]]:
    """("src", ["src"]) for a src layout; ("", [top-level packages]) for a flat one."""
    if os.path.isdir(os.path.join(base, "src")):
        return "src", ["src"]
    pkgs = sorted(d for d in os.listdir(base) if not d.startswith((".", "test"))
                  and os.path.isfile(os.path.join(base, d, "__init__.py")))
    return "", pkgs


def py_files(base: str, root: str) -> list[str]:
    out = []
    for top in source_root(base)[1]:
        for d, dirs, files in os.walk(os.path.join(base, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith((".", "test")))
            for f in sorted(files):
                if f.endswith(".py"):
                    out.append(os.path.relpath(os.path.join(d, f), base))
    return out


def module_of(path: str, root: str) -> str:
    rel = os.path.relpath(path, root) if root else path
    mod = rel[:-3].replace(os.sep, ".")
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


def read(base: str, path: str) -> str:
    with open(os.path.join(base, path), encoding="utf-8") as f:
        return f.read()


def _public(name: str) -> bool:
    return not name.startswith("_") and name not in SKIP_NAMES


def _counts(tree: ast.Module) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out[n.id] = out.get(n.id, 0) + 1
    return out


def python_targets(repo: str, base: str) -> list[Target]:
    root = source_root(base)[0]
    out: list[Target] = []
    for path in py_files(base, root):
        if os.path.basename(path) == "__main__.py":
            continue
        try:
            tree = ast.parse(read(base, path))
        except SyntaxError:
            continue
        mod = module_of(path, root)
        if any(p.startswith("_") and p != "__init__" for p in path.split(os.sep)[-1:]) \
                and not path.endswith("__init__.py"):
            private_module = True
        else:
            private_module = False
        names: dict[str, int] = {}
        for node in tree.body:
            for n in _defined(node):
                names[n] = names.get(n, 0) + 1
        refs = _counts(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and _public(node.name) \
                    and not node.decorator_list and names.get(node.name) == 1:
                t = Target(repo, "python", "function", path, mod, node.name, root,
                           refs_in_module=refs.get(node.name, 0))
                _fill_params(t, node.args, skip_self=False)
                if not private_module:
                    out.append(t)
            elif isinstance(node, ast.ClassDef) and _public(node.name) \
                    and not node.decorator_list and names.get(node.name) == 1:
                init = next((b for b in node.body if isinstance(b, ast.FunctionDef)
                             and b.name == "__init__" and not b.decorator_list), None)
                if init is not None and not private_module:
                    t = Target(repo, "python", "class", path, mod, node.name, root)
                    _fill_params(t, init.args, skip_self=True)
                    t.methods = _methods(node)
                    out.append(t)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) \
                    and _public(node.targets[0].id) and names.get(node.targets[0].id) == 1 \
                    and isinstance(node.value, ast.Constant) \
                    and type(node.value.value) in (int, str, float, bool) \
                    and node.value.lineno == node.value.end_lineno and not private_module:
                v = node.value.value
                out.append(Target(repo, "python", "constant", path, mod, node.targets[0].id,
                                  root, value=repr(v), vtype=type(v).__name__))
        if not path.endswith("__init__.py") and not private_module:
            out.append(Target(repo, "python", "module", path, mod, mod.rsplit(".", 1)[-1],
                              root))
    return out


def _methods(cls: ast.ClassDef) -> list[tuple[str, int, list[str]]]:
    """Public undecorated methods without ``*args``: the ones a call can be probed on."""
    out = []
    for b in cls.body:
        if isinstance(b, ast.FunctionDef) and _public(b.name) and not b.decorator_list \
                and b.args.vararg is None and len(b.args.posonlyargs + b.args.args) >= 1:
            t = Target("", "python", "function", "", "", b.name)
            _fill_params(t, b.args, skip_self=True)
            out.append((b.name, t.nreq, t.kwreq))
    return out


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.If, ast.Try)):
        out = []
        for child in [*node.body, *node.orelse, *getattr(node, "finalbody", [])]:
            out.extend(_defined(child))
        for h in getattr(node, "handlers", []):
            for child in h.body:
                out.extend(_defined(child))
        return out
    return []


def _fill_params(t: Target, a: ast.arguments, skip_self: bool) -> None:
    pos = [x.arg for x in a.posonlyargs + a.args]
    if skip_self and pos:
        pos = pos[1:]
    t.params = pos
    t.posonly = len(a.posonlyargs) - (1 if skip_self and a.posonlyargs else 0)
    t.nreq = len(pos) - len(a.defaults)
    t.kwreq = [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    t.has_kwargs = a.kwarg is not None


JS_EXPORT = re.compile(r"^export function (\w+)\(([^)]*)\)\s*\{", re.M)
JS_REEXPORT = re.compile(r"export\s*\{([^}]*)\}\s*from\s*[\"'](\./[^\"']+)[\"']")


def js_index_names(base: str) -> dict[tuple[str, str], str]:
    """(file, name) -> the name ``src/index.js`` re-exports it as."""
    index = os.path.join(base, "src", "index.js")
    if not os.path.isfile(index):
        return {}
    out = {}
    for m in JS_REEXPORT.finditer(read(base, "src/index.js")):
        path = os.path.normpath(os.path.join("src", m.group(2)))
        for part in m.group(1).split(","):
            words = part.split()
            if len(words) == 3 and words[1] == "as":
                out[(path, words[0])] = words[2]
            elif len(words) == 1:
                out[(path, words[0])] = words[0]
    return out


def js_targets(repo: str, base: str) -> list[Target]:
    out = []
    src = os.path.join(base, "src")
    via = js_index_names(base)
    for d, _dirs, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(".js"):
                continue
            path = os.path.relpath(os.path.join(d, f), base)
            text = read(base, path)
            if re.search(r"^import .* from \"[^.]", text, re.M):
                continue  # a bare (npm) import: not runnable without installing it
            for m in JS_EXPORT.finditer(text):
                params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                nreq = len([p for p in params if "=" not in p and not p.startswith("...")])
                out.append(Target(repo, "javascript", "function", path, path, m.group(1),
                                  params=params, nreq=nreq,
                                  via=via.get((path, m.group(1)), "")))
    return out


# -- python edits ---------------------------------------------------------------------------

def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _pos(text: str, starts: list[int], line: int, col_bytes: int) -> int:
    """Character offset of (1-based line, utf-8 byte column)."""
    s = starts[line - 1]
    line_text = text[s: starts[line] if line < len(starts) else len(text)]
    return s + len(line_text.encode()[:col_bytes].decode(errors="ignore"))


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    for lo, hi, new in sorted(edits, reverse=True):
        text = text[:lo] + new + text[hi:]
    return text


def find_def(tree: ast.Module, name: str) -> ast.FunctionDef | ast.ClassDef:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
    raise KeyError(name)


def _signature_span(text: str, fn: ast.FunctionDef) -> tuple[int, int]:
    """(start of `def`, offset just after the signature's colon)."""
    starts = _offsets(text)
    lo = _pos(text, starts, fn.lineno, fn.col_offset)
    toks = tokenize.generate_tokens(io.StringIO(text[lo:]).readline)
    depth = 0
    for tok in toks:
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
            elif tok.string == ":" and depth == 0:
                row, col = tok.end
                return lo, (lo + col if row == 1 else starts[fn.lineno + row - 2] + col)
    raise ValueError("no colon")


def set_signature(text: str, fn: ast.FunctionDef, args: ast.arguments) -> str:
    lo, hi = _signature_span(text, fn)
    ret = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else ""
    return text[:lo] + f"def {fn.name}({ast.unparse(args)}){ret}:" + text[hi:]


def _function(text: str, t: Target, method: str = "__init__") -> ast.FunctionDef:
    node = find_def(ast.parse(text), t.name)
    if isinstance(node, ast.ClassDef):
        init = next(b for b in node.body
                    if isinstance(b, ast.FunctionDef) and b.name == method)
        return init
    return node


def add_param(text: str, t: Target, name: str, *, required: bool, kwonly: bool,
              method: str = "__init__") -> str:
    """A new parameter of the function, or of a class's ``method``."""
    fn = _function(text, t, method)
    a = copy.deepcopy(fn.args)
    if kwonly:
        a.kwonlyargs.append(ast.arg(name))
        a.kw_defaults.append(None if required else ast.Constant(False))
    elif required:
        n_pos = len(a.posonlyargs) + len(a.args)
        at = n_pos - len(a.defaults) - len(a.posonlyargs)
        if at < 0:
            raise ValueError("required slot inside positional-only parameters")
        a.args.insert(at, ast.arg(name))
    else:
        a.args.append(ast.arg(name))
        a.defaults.append(ast.Constant(None))
    return set_signature(text, fn, a)


def rename_param(text: str, t: Target, old: str, new: str) -> str:
    fn = _function(text, t)
    a = copy.deepcopy(fn.args)
    for x in a.posonlyargs + a.args + a.kwonlyargs:
        if x.arg == old:
            x.arg = new
    starts = _offsets(text)
    edits = []
    for stmt in fn.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == old:
                lo = _pos(text, starts, n.lineno, n.col_offset)
                edits.append((lo, lo + len(old), new))
    text = _splice(text, edits)
    fn = _function(text, t)
    return set_signature(text, fn, a)


def body_refactor(text: str, t: Target) -> str:
    fn = _function(text, t)
    first = fn.body[0]
    if first.lineno == fn.lineno:
        raise ValueError("one-line function")
    doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str)
    anchor = fn.body[1] if doc and len(fn.body) > 1 else first
    if doc and len(fn.body) == 1:
        raise ValueError("docstring only")
    starts = _offsets(text)
    at = starts[anchor.lineno - 1]
    indent = " " * anchor.col_offset
    return text[:at] + f"{indent}_refactored = None  # local kept for a later step\n" + text[at:]


def change_constant(text: str, t: Target) -> str:
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id == t.name)
    v = node.value
    assert isinstance(v, ast.Constant)
    starts = _offsets(text)
    lo = _pos(text, starts, v.lineno, v.col_offset)
    hi = _pos(text, starts, v.lineno, v.end_col_offset or v.col_offset)
    val = v.value
    new = repr(not val if isinstance(val, bool) else val + 1 if isinstance(val, int)
               else val * 2 + 1 if isinstance(val, float) else str(val) + "-v2")
    return text[:lo] + new + text[hi:]


def rename_everywhere(files: dict[str, str], old: str, new: str) -> dict[str, str]:
    """Rename NAME tokens (and exact string tokens, for ``__all__``) in every file."""
    out = {}
    for path, text in files.items():
        starts = _offsets(text)
        edits = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if (tok.type == tokenize.NAME and tok.string == old) or (
                        tok.type == tokenize.STRING and tok.string in (f'"{old}"', f"'{old}'")):
                    lo = starts[tok.start[0] - 1] + tok.start[1]
                    q = tok.string[0] if tok.type == tokenize.STRING else ""
                    edits.append((lo, lo + len(tok.string), f"{q}{new}{q}"))
        except (tokenize.TokenError, SyntaxError):
            continue
        if edits:
            out[path] = _splice(text, edits)
    return out


def _resolve(path: str, root: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    pkg = module_of(path, root)
    parts = pkg.split(".")
    if not path.endswith("__init__.py"):
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*parts, *([node.module] if node.module else [])])


def retarget_imports(files: dict[str, str], root: str, old_mod: str, new_mod: str,
                     only_name: str | None = None) -> dict[str, str]:
    """Point `from old_mod import ...` (or only the name ``only_name``) at new_mod."""
    out = {}
    old_parent, old_leaf = old_mod.rsplit(".", 1)
    new_leaf = new_mod.rsplit(".", 1)[1]
    for path, text in files.items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        starts = _offsets(text)
        edits = []
        for n in ast.walk(tree):
            if not isinstance(n, ast.ImportFrom):
                continue
            mod = _resolve(path, root, n)
            lo = _pos(text, starts, n.lineno, n.col_offset)
            hi = _pos(text, starts, n.end_lineno or n.lineno, n.end_col_offset or 0)
            indent = ""
            if mod == old_mod:
                keep = [a for a in n.names if only_name is not None and a.name != only_name]
                moved = [a for a in n.names if only_name is None or a.name == only_name]
                if not moved:
                    continue
                parts = []
                if keep:
                    parts.append(ast.unparse(ast.ImportFrom(n.module, keep, n.level)))
                parts.append(ast.unparse(ast.ImportFrom(new_mod, moved, 0)))
                indent = " " * n.col_offset
                edits.append((lo, hi, ("\n" + indent).join(parts)))
            elif mod == old_parent and only_name is None \
                    and any(a.name == old_leaf for a in n.names):
                names = [ast.alias(new_leaf, a.asname or old_leaf) if a.name == old_leaf
                         else a for a in n.names]
                edits.append((lo, hi, ast.unparse(ast.ImportFrom(n.module, names, n.level))))
        if edits:
            out[path] = _splice(text, edits)
    return out


def move_function(text: str, t: Target) -> tuple[str, str]:
    """(module text without the function, new module text holding it)."""
    tree = ast.parse(text)
    fn = find_def(tree, t.name)
    lines = text.splitlines(keepends=True)
    lo = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
    hi = fn.end_lineno or fn.lineno
    body = "".join(lines[lo - 1: hi])
    rest = "".join(lines[: lo - 1] + lines[hi:])
    defined = set()
    for node in tree.body:
        if node is not fn and not (isinstance(node, ast.If)
                                   and "TYPE_CHECKING" in ast.unparse(node.test)):
            defined.update(_defined(node))
    needed = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} & defined)
    head = ""
    if "from __future__ import annotations" in text:
        head = "from __future__ import annotations\n\n"
    if needed:
        head += f"from {t.module} import {', '.join(needed)}  # noqa: F401\n"
    return rest, head + "\n\n" + body


# -- javascript edits -----------------------------------------------------------------------

def js_rename(files: dict[str, str], old: str, new: str) -> dict[str, str]:
    pat = re.compile(rf"(?<![\w$.\"']){re.escape(old)}(?![\w$\"'])")
    out = {}
    for path, text in files.items():
        new_text = pat.sub(new, text)
        if new_text != text:
            out[path] = new_text
    return out


def js_add_param(text: str, t: Target, name: str, *, required: bool) -> str:
    m = re.search(rf"^export function {re.escape(t.name)}\(([^)]*)\)\s*\{{", text, re.M)
    if m is None:
        raise ValueError("export not found")
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    if any(p.startswith("...") for p in params):
        raise ValueError("rest parameter")
    params.append(name if required else f"{name} = 1")
    head = f"export function {t.name}({', '.join(params)}) {{"
    use = f"\n  {name} = {name}.valueOf();"
    return text[: m.start()] + head + use + text[m.end():]
