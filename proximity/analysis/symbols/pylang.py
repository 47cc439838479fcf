"""Python definitions, imports, references and call binding, for the symbol channel.

``analyse`` turns one blob into plain, cacheable data (``None`` when it does not parse: the
channel then knows nothing about that file, it never reads it as "everything removed"):

* ``defs``: qualified name -> ``[kind, signature hash, body hash, first, last, params]``;
  ``params`` is the binding shape of a function (see ``pycalls.binds``);
* ``binds``: ``[local, kind, module, level, name, line, type_only]`` per imported name
  (``kind`` "mod" for ``import a.b [as m]``, "from" for ``from m import name [as x]``);
* ``refs``: ``[chain, line, call, type_only]`` for each dotted name the code uses
  (``lib.area(1, 2)`` -> ``["lib", "area"]`` with its call shape); a method of an instance
  is its class's (``C(...).m()``, ``x = C(...)`` then ``x.m()``, ``self.a = C()`` then
  ``self.a.m()``: ``["C", "m"]``); any other receiver that is not a name is ``"?"``;
* ``exports``: names the module still offers besides its definitions (imports, re-exports);
  ``dynamic``: a star import, or a module ``__getattr__`` that may answer any name, makes
  every name resolve. A ``__getattr__`` that raises ``AttributeError`` for names it does not
  know (the usual deprecation shim) resolves only the names it mentions: string literals in
  its body and the string keys of module-level collections it reads — those go to
  ``exports``;
* ``stars``: ``[module, level, line]`` per module-level ``from m import *`` (a package
  offers what it star-imports: the symbol channel follows these as re-exports);
  ``all``: the literal names of a module-level ``__all__``, which is what a star import of
  the module takes (absent: every public name).
"""

from __future__ import annotations

import ast
import json
import warnings
from typing import Any

from proximity.analysis.languages.base import Bind, Call, Facts, Params, Ref
from proximity.analysis.symbols.common import as_class_uses, h


def analyse(data: bytes) -> Facts | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError):
        return None
    out: Facts = {"defs": {}, "binds": [], "refs": [], "exports": [], "dynamic": False,
                           "stars": []}
    _defs(tree.body, "", out)
    for fn in out.pop("getattr", []):
        handled = _getattr_names(fn, tree.body)
        if handled is None:
            out["dynamic"] = True
        else:
            out["exports"].extend(sorted(handled))
    try:
        _Refs(out).visit(tree)
        out["refs"].extend(_through_instances(tree, out["refs"]))
    except RecursionError:
        return None
    return out


def _through_instances(tree: ast.Module, refs: list[Ref]) -> list[Ref]:
    """Method uses through instances, as uses of the class's method: ``x = C(...)`` then
    ``x.m()``, and ``self.a = C(...)`` then ``self.a.m()`` (the last such assignment in the
    file stands for every use: a name bound to two classes is rare in real code)."""
    made: dict[tuple[str, ...], list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            cls = chain(node.value.func)
            if cls is None or "?" in cls:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                key = chain(t)
                if key is not None and (len(key) == 1 or (len(key) == 2
                                                          and key[0] == "self")):
                    made[tuple(key)] = cls
    return as_class_uses(refs, made)


def _getattr_names(fn: ast.FunctionDef | ast.AsyncFunctionDef, module: list[ast.stmt]
                   ) -> set[str] | None:
    """The names a module ``__getattr__`` can answer, or None when it may answer any (it
    never raises AttributeError)."""
    raises = any(isinstance(n, ast.Raise) and n.exc is not None
                 and "AttributeError" in ast.unparse(n.exc) for n in ast.walk(fn))
    if not raises:
        return None
    names = {n.value for n in ast.walk(fn)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.isidentifier()}
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    for node in module:  # module-level tables it looks names up in
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in read for t in targets):
                names |= {n.value for n in ast.walk(node.value)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str)
                          and n.value.isidentifier()}
    return names


# decorators whose result is called with other arguments than the function's own: the
# framework supplies them (click's options and context, a command object called with argv,
# mock.patch's mocks, hypothesis' drawn values, pytest's fixtures). A call to such a
# function binds to what the decorator made, so its parameter list is no contract of the
# call's. Other decorators are taken to keep the signature (functools.wraps does).
SUPPLIERS = frozenset(("command", "group", "option", "argument", "pass_context", "pass_obj",
                       "given", "fixture", "patch", "usefixtures"))


def _supplier(d: ast.expr) -> str | None:
    """The decorator's dotted name when it supplies the function's arguments."""
    name = ast.unparse(d.func if isinstance(d, ast.Call) else d)
    parts = name.split(".")
    if parts[-1] in SUPPLIERS or (len(parts) > 1 and parts[-2] == "patch"):
        return name
    return None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> Params:
    a = fn.args
    pos = a.posonlyargs + a.args
    firstdef = len(pos) - len(a.defaults)
    shape = [[p.arg, i >= firstdef] for i, p in enumerate(pos)]
    decos = {ast.unparse(d).rsplit(".", 1)[-1] for d in fn.decorator_list}
    method = ""
    if in_class:
        method = "static" if "staticmethod" in decos else (
            "class" if "classmethod" in decos else "inst")
    params: Params = {
        "pos": shape[: len(a.posonlyargs)], "args": shape[len(a.posonlyargs):],
        "var": a.vararg is not None,
        "kwonly": [[p.arg, d is not None] for p, d in zip(a.kwonlyargs, a.kw_defaults,
                                                          strict=True)],
        "kw": a.kwarg is not None, "method": method,
        "property": bool(decos & {"property", "cached_property", "setter"})}
    supplied = next(filter(None, map(_supplier, fn.decorator_list)), None)
    if supplied is not None:
        params["supplied"] = supplied
    return params


def _defs(body: list[ast.stmt], prefix: str, out: Facts) -> None:
    defs = out["defs"]
    for node in body:
        span = [node.lineno, node.end_lineno or node.lineno]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = _params(node, bool(prefix))
            rest = [ast.unparse(d) for d in node.decorator_list]
            rest += [ast.dump(x) for x in node.body]
            rest.append(ast.unparse(node.args) + "->" + (
                ast.unparse(node.returns) if node.returns else ""))
            defs[prefix + node.name] = ["method" if prefix else "function",
                                        h(json.dumps(params)), h("|".join(rest)), *span, params]
            if not prefix and node.name == "__getattr__":
                out.setdefault("getattr", []).append(node)
        elif isinstance(node, ast.ClassDef):
            bases = ",".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
            defs[prefix + node.name] = ["class", h(bases), h(ast.dump(node)), *span, None]
            _defs(node.body, prefix + node.name + ".", out)
            init = prefix + node.name + ".__init__"
            if init not in defs and _is_dataclass(node):
                params = _fields(node, _is_attrs(node))
                defs[init] = ["method", h(json.dumps(params)), "", *span, params]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            text = ast.unparse(value) if value is not None else ""
            kind = "alias" if isinstance(value, (ast.Name, ast.Attribute)) else "constant"
            for t in targets:
                if isinstance(t, ast.Name):
                    defs[prefix + t.id] = [kind, h(text), h(text), *span, None]
                    if t.id == "__all__" and not prefix:
                        _all(value, out)
        elif isinstance(node, ast.AugAssign) and not prefix and \
                isinstance(node.target, ast.Name) and node.target.id == "__all__":
            _all(None, out)  # extended at run time: no longer a literal list
        elif isinstance(node, (ast.If, ast.Try, ast.With)) and not prefix:
            for part in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(node, part, None) or []
                for s in sub:
                    _defs(s.body if isinstance(s, ast.ExceptHandler) else [s], prefix, out)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not prefix:
            for alias in node.names:
                if alias.name == "*":
                    out["dynamic"] = True
                    if isinstance(node, ast.ImportFrom):
                        out["stars"].append([node.module or "", node.level, node.lineno])
                else:
                    out["exports"].append(alias.asname or alias.name.split(".")[0])


def _all(value: ast.expr | None, out: Facts) -> None:
    """Record a literal ``__all__``; one built at run time (``+=``, a call) leaves
    ``all`` absent, so every public name counts as offered."""
    if isinstance(value, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        out["all"] = [e.value for e in value.elts if isinstance(e, ast.Constant)]
    else:
        out.pop("all", None)


def _is_dataclass(node: ast.ClassDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = ast.unparse(target).rsplit(".", 1)[-1]
        if name in ("dataclass", "define", "frozen", "mutable", "attrs", "s"):
            return not (isinstance(d, ast.Call) and any(
                k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in d.keywords))
    return False


def _is_attrs(node: ast.ClassDef) -> bool:
    """attrs (``@attr.s``, ``@attrs``, ``@define``...), not ``@dataclass``."""
    return not any(ast.unparse(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
                   == "dataclass" for d in node.decorator_list)


# field specifiers: attrs' ``attr.ib()``/``attrib()``/``field()``, dataclasses' ``field()``
_FIELDS = ("ib", "attrib", "field")


def _field(value: ast.expr | None, attrs: bool) -> tuple[bool, bool] | None:
    """(in the generated __init__, has a default) for a class attribute's value when it is
    a field specifier; None when it is not one."""
    if not (isinstance(value, ast.Call)
            and ast.unparse(value.func).rsplit(".", 1)[-1] in _FIELDS):
        return None
    kw = {k.arg: k.value for k in value.keywords if k.arg}
    init = kw.get("init")
    if isinstance(init, ast.Constant) and init.value is False:
        return False, True
    default = any(k in kw for k in ("default", "factory", "default_factory")) or (
        attrs and bool(value.args))  # attr.ib(default) takes it first
    return True, default


def _fields(node: ast.ClassDef, attrs: bool = False) -> Params:
    """The generated ``__init__`` of a dataclass or an attrs class: its fields, in order
    (annotated ones; for attrs also ``x = attr.ib()``, whose ``_x`` takes ``x``)."""
    args: list[list[Any]] = [["self", False]]
    for s in node.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and \
                "ClassVar" not in ast.unparse(s.annotation):
            target = s.target.id
            spec = _field(s.value, attrs) or (True, s.value is not None)
        elif attrs and isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Name):
            target, got = s.targets[0].id, _field(s.value, attrs)
            if got is None:
                continue  # a plain class attribute, not a field
            spec = got
        else:
            continue
        in_init, default = spec
        if in_init:
            args.append([target.lstrip("_") if attrs else target, default])
    return {"pos": [], "args": args, "var": False, "kwonly": [], "kw": False,
            "method": "inst", "property": False}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def chain(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        base = chain(node.value)
        if base is None and isinstance(node.value, ast.Call):
            # ``C(...).m``: a method of what C makes (a class's instance: C's own ``m``)
            made = chain(node.value.func)
            base = made if made is not None and "?" not in made else None
        return [*(base if base is not None else ["?"]), node.attr]
    return None


class _Refs(ast.NodeVisitor):
    def __init__(self, out: Facts) -> None:
        self.binds: list[Bind] = out["binds"]
        self.refs: list[Ref] = out["refs"]
        self.type_only = False

    def _typed(self, node: ast.AST | None) -> None:
        if node is None:
            return
        old, self.type_only = self.type_only, True
        self.visit(node)
        self.type_only = old

    def visit_If(self, node: ast.If) -> None:
        if _type_checking(node.test):
            for s in node.body:
                self._typed(s)
            for s in node.orelse:
                self.visit(s)
        else:
            self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._typed(node.annotation)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        self._typed(node.returns)
        for s in node.body:
            self.visit(s)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._typed(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            local = a.asname or a.name.split(".")[0]
            self.binds.append([local, "mod", a.name, 0, "" if a.asname else a.name,
                               node.lineno, self.type_only])
            self.refs.append([[a.asname] if a.asname else a.name.split("."), node.lineno,
                              None, self.type_only])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            if a.name == "*":
                continue
            local = a.asname or a.name
            self.binds.append([local, "from", node.module or "", node.level, a.name,
                               node.lineno, self.type_only])
            self.refs.append([[local], node.lineno, None, self.type_only])

    def visit_Call(self, node: ast.Call) -> None:
        c = chain(node.func)
        if c is None:
            self.visit(node.func)
        else:
            self.refs.append([c, node.func.end_lineno or node.lineno, _call(node),
                              self.type_only])
            self._inner(node.func)
        for x in node.args:
            self.visit(x)
        for k in node.keywords:
            self.visit(k.value)

    def _inner(self, node: ast.expr) -> None:
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            self.visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        c = chain(node)
        if c is not None and isinstance(node.ctx, ast.Load):
            self.refs.append([c, node.end_lineno or node.lineno, None, self.type_only])
        self._inner(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.refs.append([[node.id], node.lineno, None, self.type_only])


def _call(node: ast.Call) -> Call:
    star = any(isinstance(a, ast.Starred) for a in node.args)
    npos = sum(1 for a in node.args if not isinstance(a, ast.Starred))
    kws = [k.arg for k in node.keywords if k.arg]
    return [npos, kws, star, any(k.arg is None for k in node.keywords)]
