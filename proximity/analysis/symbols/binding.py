"""Whether a call still binds to a changed definition, as running it would say: each
language's own rules (``Language.binding``), or, when its definitions say too little, a
plain "its parameters changed"."""

from __future__ import annotations

from proximity.analysis.languages import registry
from proximity.analysis.languages.base import Binding, Call
from proximity.analysis.symbols.writes import Changed, WriterFile


def binding(ch: Changed, wf: WriterFile, call: Call, via_class: bool) -> Binding:
    """(why the call no longer binds, why it did not bind before, signature for messages)."""
    old, new = ch.old[5], (ch.new or ch.old)[5]
    if old is not None and new is not None:
        got = registry.language(wf.lang).binding(wf.lang, old, new, call, via_class, ch.qual)
        if got is not None:
            return got
    return "its parameters changed", "", ch.qual + "(…)"
