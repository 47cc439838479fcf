"""Whether a call still binds to a changed definition, per language, as running it would
say: Python's own argument binding (``pycalls``); Go and Rust by parameter types in order
and the result (a number literal passed where a built-in numeric type changed still
compiles); JavaScript/TypeScript by count, with a new parameter the body never dereferences
only a soft break (it arrives as ``undefined``)."""

from __future__ import annotations

import re
from typing import Any

from proximity.analysis.symbols import pycalls
from proximity.analysis.symbols.writes import Changed, WriterFile

# language -> the family whose calls bind alike
FAMILY = {"python": "py", "javascript": "js", "typescript": "js", "tsx": "js", "go": "go",
          "rust": "rs"}


def _js_binds(params: dict[str, Any], call: list[Any], ts: bool) -> str | None:
    if call[2]:
        return None
    shape = params["js"]
    need = max((i + 1 for i, (_, req) in enumerate(shape) if req), default=0)
    if call[0] < need:
        missing = [n for n, req in shape[call[0]:] if req]
        if not ts and "deref" in params and not set(missing) & set(params["deref"]):
            # JavaScript passes undefined; a body that never dereferences the parameter
            # (`limit > 0`, `if (x)`) does not throw for it (such a merge runs clean)
            return SOFT + f"'{missing[0]}' is not passed (undefined there)"
        return f"missing required '{shape[call[0]][0]}'"
    if ts and call[0] > len(shape) and not params["rest"]:
        return f"{call[0]} arguments, at most {len(shape)} accepted"
    return ""


SOFT = "soft:"  # a call that binds but may behave differently (JavaScript's undefined)


def _call_types(params: dict[str, Any], explicit_self: bool) -> list[str]:
    """Go and Rust: the parameter types a call passes arguments for (a Rust method called
    on its receiver passes none for ``self``)."""
    types = list(params["types"])
    if types and types[0].lstrip("&").startswith(("self", "mut self")) and not explicit_self:
        return types[1:]
    return types


def _native_binds(params: dict[str, Any], call: list[Any], explicit_self: bool) -> str:
    """Go and Rust: why a call's argument count does not fit (``""`` when it does)."""
    n, need = call[0], len(_call_types(params, explicit_self))
    if call[2]:  # f(xs...): the count says nothing
        return ""
    if params.get("variadic") is None and n != need:
        return f"{n} argument(s), {need} expected"
    if params.get("variadic") is not None and n < need:
        return f"{n} argument(s), at least {need} expected"
    return ""


def _native_binding(old: dict[str, Any], new: dict[str, Any], call: list[Any],
                    explicit_self: bool) -> tuple[str, str]:
    """Go and Rust (statically typed, no defaults or keywords): (why the call no longer
    compiles, why it did not before). A parameter renamed, or a variadic one added after
    the same parameters, changes no call; other type changes do; the count is checked."""
    before = _native_binds(old, call, explicit_self)
    if old["result"] != new["result"]:
        return "its result type changed", before
    ot, nt, ov, nv = old["types"], new["types"], old.get("variadic"), new.get("variadic")
    if ot == nt and (ov == nv or ov is None):
        return "", before  # renamed parameters, or a variadic one added
    why = _native_binds(new, call, explicit_self)
    if why:
        return why, before
    if _constants_fit(old, new, call, explicit_self):
        return "", before
    return "its parameter types changed", before


_NUMERIC = re.compile(r"(u?int(8|16|32|64)?|uintptr|float(32|64)|complex(64|128)|byte|rune"
                      r"|[iu](8|16|32|64|128|size)|f(32|64))")


def _constants_fit(old: dict[str, Any], new: dict[str, Any], call: list[Any],
                   explicit_self: bool) -> bool:
    """Go and Rust: every argument whose parameter's type changed is a number literal and
    both types are built-in numeric ones (Go's untyped constant, Rust's inferred literal:
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


def _js_moved(old: dict[str, Any], new: dict[str, Any], call: list[Any]) -> str:
    """A JS/TS call whose i-th argument now lands in another, still existing, parameter."""
    po, pn = [n for n, _ in old["js"]], [n for n, _ in new["js"]]
    i = pycalls.moved_index(po, pn, call[0], set(pn))
    return "" if i is None else f"argument {i + 1} now goes to '{pn[i]}', not '{po[i]}'"


def _js_sig(qual: str, params: dict[str, Any]) -> str:
    parts = [n + ("" if req else "?") for n, req in params["js"]]
    return f"{qual}({', '.join(parts + (['...rest'] if params['rest'] else []))})"


def binding(ch: Changed, wf: WriterFile, call: list[Any], via_class: bool
             ) -> tuple[str | None, str | None, str]:
    """(why the call no longer binds, why it did not bind before, signature for messages)."""
    old, new = ch.old[5], (ch.new or ch.old)[5]
    if wf.lang == "python" and old is not None and new is not None:
        why = pycalls.binds(new, call, via_class)
        before = pycalls.binds(old, call, via_class)
        if why == "" and before == "":
            why = pycalls.moved_positional(old, new, call, via_class)
        return why, before, pycalls.signature(ch.qual, new)
    if FAMILY[wf.lang] == "js" and old is not None and new is not None:
        ts = wf.lang != "javascript"
        why, before = _js_binds(new, call, ts), _js_binds(old, call, ts)
        if why == "" and before == "":
            why = _js_moved(old, new, call)
        return why, before, _js_sig(ch.qual, new)
    if old is not None and new is not None and "types" in old and "types" in new:
        why, before = _native_binding(old, new, call, via_class)
        parts = [*new["types"], *([f"...{new['variadic']}"] if new.get("variadic") else [])]
        return why, before, f"{ch.qual}({', '.join(parts)})"
    return "its parameters changed", "", ch.qual + "(…)"
