"""What a source file imports, as written (unresolved): each language's reading
(``Language.imports``).

Records are plain lists so they can be cached per blob id; the first field is the
language's tag (``Language.tag``), the rest is the language's own.
"""

from __future__ import annotations

from proximity.analysis import parsers
from proximity.analysis.languages import registry
from proximity.analysis.languages.base import Record

__all__ = ["FORMAT", "Record", "extract"]

FORMAT = "i1"  # bump when extraction changes, so cached records of older versions are unused


def extract(path: str, data: bytes) -> list[Record]:
    dialect = registry.dialect_of(path)
    if dialect is None or b"\0" in data[:8000] or parsers.generated(data):
        return []
    return registry.language(dialect).imports(dialect, data)
