"""What the languages' bindings of a call share, from plain data: a positional argument
that now lands in another parameter, and the binding of a statically typed function (its
parameter types in order, a trailing variadic one and its result, read by
``tslang.typed_params``; no defaults or keywords)."""

from __future__ import annotations

import re

from proximity.analysis.languages.base import Binding, Call, Params


def moved_index(old: list[str], new: list[str], count: int, still: set[str]) -> int | None:
    """The first of ``count`` positional arguments whose parameter moved: it went to
    ``old[i]``, now goes to ``new[i]``, and ``old[i]`` is still a parameter (in ``still``).
    Any language whose calls bind positional arguments in order."""
    for i in range(min(count, len(old), len(new))):
        if old[i] != new[i] and old[i] in still:
            return i
    return None


def typed_binding(dialect: str, old: Params, new: Params, call: Call, via_class: bool,
                  qual: str) -> Binding | None:
    """A statically typed call: (why it no longer compiles, why it did not before, the
    signature). A parameter renamed, or a variadic one added after the same parameters,
    changes no call; other type changes do (but see ``_constants_fit``); the count is
    checked. None when the definitions carry no types."""
    if "types" not in old or "types" not in new:
        return None
    parts = [*new["types"], *([f"...{new['variadic']}"] if new.get("variadic") else [])]
    return (*_typed(old, new, call, via_class), f"{qual}({', '.join(parts)})")


def _call_types(params: Params, explicit_self: bool) -> list[str]:
    """The parameter types a call passes arguments for (a method called on its receiver
    passes none for ``self``)."""
    types = list(params["types"])
    if types and types[0].lstrip("&").startswith(("self", "mut self")) and not explicit_self:
        return types[1:]
    return types


def _count(params: Params, call: Call, explicit_self: bool) -> str:
    """Why a call's argument count does not fit (``""`` when it does)."""
    n, need = call[0], len(_call_types(params, explicit_self))
    if call[2]:  # f(xs...): the count says nothing
        return ""
    if params.get("variadic") is None and n != need:
        return f"{n} argument(s), {need} expected"
    if params.get("variadic") is not None and n < need:
        return f"{n} argument(s), at least {need} expected"
    return ""


def _typed(old: Params, new: Params, call: Call, explicit_self: bool) -> tuple[str, str]:
    before = _count(old, call, explicit_self)
    if old["result"] != new["result"]:
        return "its result type changed", before
    ot, nt, ov, nv = old["types"], new["types"], old.get("variadic"), new.get("variadic")
    if ot == nt and (ov == nv or ov is None):
        return "", before  # renamed parameters, or a variadic one added
    why = _count(new, call, explicit_self)
    if why:
        return why, before
    if _constants_fit(old, new, call, explicit_self):
        return "", before
    return "its parameter types changed", before


_NUMERIC = re.compile(r"(u?int(8|16|32|64)?|uintptr|float(32|64)|complex(64|128)|byte|rune"
                      r"|[iu](8|16|32|64|128|size)|f(32|64))")


def _constants_fit(old: Params, new: Params, call: Call, explicit_self: bool) -> bool:
    """Every argument whose parameter's type changed is a number literal and both types
    are built-in numeric ones (an untyped constant, or an inferred literal:
    ``MinimumNArgs(1)`` into ``n uint`` compiles; a literal too large for the new type
    would not, which is not checked). A named type may take it too: not known here, so a
    change."""
    consts = call[4] if len(call) > 4 else []
    ot, nt = _call_types(old, explicit_self), _call_types(new, explicit_self)
    if len(ot) != len(nt) or len(consts) < len(nt):
        return False
    for i, (o, n) in enumerate(zip(ot, nt, strict=True)):
        if o == n:
            continue
        kind = consts[i]
        if not (kind == "num" and _NUMERIC.fullmatch(o) and _NUMERIC.fullmatch(n)):
            return False
    return True
