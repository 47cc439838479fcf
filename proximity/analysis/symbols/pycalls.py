"""Whether a Python call still binds to a function's parameters, from plain data: the call's
shape (``pylang`` reads it from the caller's code) and the parameters' binding shape
(``pylang`` reads it from the definition). Used by the symbol channel to tell a changed
signature that breaks a caller from one that does not."""

from __future__ import annotations

from proximity.analysis.languages.base import Call, Params
from proximity.analysis.symbols.calls import moved_index


def binds(params: Params, call: Call, explicit_self: bool = False) -> str | None:
    """Why ``call`` does not bind to ``params`` ("" when it binds; None: cannot tell, the
    call passes ``*args``/``**kwargs``). Methods reached through an instance drop ``self``."""
    npos, kws, star, dstar = call
    if star or dstar:
        return None
    pos = [*params["pos"], *params["args"]]
    n_posonly = len(params["pos"])
    if params.get("method") in ("inst", "class") and not (
            explicit_self and params["method"] == "inst") and pos:
        if n_posonly:
            n_posonly -= 1
        pos = pos[1:]
    bound: set[str] = set()
    if npos > len(pos) and not params["var"]:
        return f"{npos} positional arguments, at most {len(pos)} accepted"
    bound.update(name for name, _ in pos[:npos])
    names = {name for name, _ in pos[n_posonly:]} | {name for name, _ in params["kwonly"]}
    for k in kws:
        if k in names:
            if k in bound:
                return f"'{k}' given twice"
            bound.add(k)
        elif not params["kw"]:
            return f"unexpected keyword '{k}'"
    for name, has_default in [*pos, *params["kwonly"]]:
        if not has_default and name not in bound:
            return f"missing required '{name}'"
    return ""


def _positional(params: Params, explicit_self: bool) -> list[str]:
    pos = [*params["pos"], *params["args"]]
    if params.get("method") in ("inst", "class") and not (
            explicit_self and params["method"] == "inst") and pos:
        pos = pos[1:]
    return [name for name, _ in pos]


def moved_positional(old: Params, new: Params, call: Call,
                     explicit_self: bool = False) -> str:
    """Why a call that still binds now hands a value to another parameter: its i-th
    positional argument went to ``x`` and now goes to ``y``, while ``x`` still exists
    elsewhere (parameters reordered). A parameter renamed in place is no such case: a
    positional argument does not name it. "" when nothing moved."""
    po, pn = _positional(old, explicit_self), _positional(new, explicit_self)
    i = moved_index(po, pn, call[0], set(pn) | {name for name, _ in new["kwonly"]})
    return "" if i is None else \
        f"positional argument {i + 1} now goes to '{pn[i]}', not '{po[i]}'"


def signature(name: str, params: Params) -> str:
    """``greet(name, *, loud)`` for messages."""
    parts = [n + ("=…" if d else "") for n, d in params["pos"]]
    if params["pos"]:
        parts.append("/")
    parts += [n + ("=…" if d else "") for n, d in params["args"]]
    if params["var"]:
        parts.append("*args")
    elif params["kwonly"]:
        parts.append("*")
    parts += [n + ("=…" if d else "") for n, d in params["kwonly"]]
    if params["kw"]:
        parts.append("**kwargs")
    return f"{name}({', '.join(parts)})"
