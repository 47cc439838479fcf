"""What every language's reading of definitions and references shares: the digest that
stands for a definition's text in the facts (whitespace runs do not count), and method
uses through an instance read as uses of its class's method."""

from __future__ import annotations

import hashlib

from proximity.analysis.languages.base import Ref


def h(s: str) -> str:
    return hashlib.blake2b(" ".join(s.split()).encode(), digest_size=8).hexdigest()


def as_class_uses(refs: list[Ref], made: dict[tuple[str, ...], list[str]]) -> list[Ref]:
    """The references through a name (``x.m``) or an attribute of ``self``/``this``
    (``self.a.m``) that ``made`` says holds an instance of a class, as that class's
    (``C.m``), with the same line and call shape."""
    out = []
    for c, line, call, type_only in refs if made else ():
        for n in (2, 1):
            cls = made.get(tuple(c[:n]))
            if cls is not None and len(c) > n:
                out.append([[*cls, *c[n:]], line, call, type_only])
                break
    return out
