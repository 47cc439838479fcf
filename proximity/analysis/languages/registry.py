"""Every language proximity reads, by name, dialect, extension and import-record tag.

Adding a language is one module beside these and one line in ``LANGUAGES`` (see "Adding a
language" in docs/development.md). Nothing outside the language modules names a language:
everything asks here.
"""

from __future__ import annotations

import os

from proximity.analysis.languages import go, javascript, python, rust
from proximity.analysis.languages.base import Language

LANGUAGES: tuple[Language, ...] = (
    python.LANGUAGE,
    javascript.LANGUAGE,
    go.LANGUAGE,
    rust.LANGUAGE,
)

_BY_EXTENSION = {ext: (lang, dialect) for lang in LANGUAGES
                 for ext, dialect in lang.dialects.items()}
_BY_DIALECT = {dialect: lang for lang in LANGUAGES for dialect in lang.dialects.values()}
_BY_TAG = {lang.tag: lang for lang in LANGUAGES}


def dialect_of(path: str) -> str | None:
    """The dialect (grammar) a file is read in, by its extension; None: not source code."""
    got = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    return got[1] if got is not None else None


def language_of(path: str) -> Language | None:
    got = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    return got[0] if got is not None else None


def language(dialect: str) -> Language:
    """The language of a dialect (KeyError for one no language reads)."""
    return _BY_DIALECT[dialect]


def tagged(tag: str) -> Language | None:
    """The language whose import records start with ``tag``."""
    return _BY_TAG.get(tag)


def directory_modules() -> tuple[str, ...]:
    """The stems of the files that stand for their directory's module, in any language."""
    return tuple(lang.package_file for lang in LANGUAGES if lang.package_file)


def header_words() -> tuple[list[str], list[str], list[str]]:
    """Every language's modifiers, definers and declarers (``Language.modifiers``...)."""
    return (sorted({m for lang in LANGUAGES for m in lang.modifiers}),
            sorted({w for lang in LANGUAGES for w in lang.definers}),
            sorted({w for lang in LANGUAGES for w in lang.declarers}))
