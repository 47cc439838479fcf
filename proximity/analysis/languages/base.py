"""What a language is to proximity: one record of functions, the same for every language.

Each language module (named after its language) builds one ``Language`` and the registry
lists them; everything else asks the registry by path or extension. A
language says which files are its own and which tree-sitter grammar reads them (loaded
lazily), what a file imports and which repository paths that names, what it defines and
refers to, how a reference bound by an import reaches its definition, whether a call still
binds to a changed definition, and how a module offers other modules' names (re-exports).

Facts about a blob are plain JSON-able data, cached per blob id (their shape is described
in ``symbols/pylang.py``); import records are lists whose first field is the language's
``tag``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Literal, NamedTuple, Protocol

from proximity.analysis.parsers import Grammar

Record = list[Any]  # an import as written: [tag, ...], cached as JSON per blob id
Facts = dict[str, Any]  # a blob's defs, binds, refs...: JSON, cached per blob id
Bind = list[Any]  # [local, kind, module, level, name, line, type_only]
Def = list[Any]  # [kind, signature hash, body hash, first line, last line, params or None]
Ref = list[Any]  # [chain, line, call shape or None, type_only]
Params = dict[str, Any]  # a function's binding shape, as its language reads it
Call = list[Any]  # a call's shape: [argument count, keywords, *args, **kwargs, constants]
Target = tuple[str, tuple[str, ...], bool]  # (path or package, qualified name, via a class)
FactsOf = Callable[[str], "Facts | None"]  # path -> the facts of that file in some tree
Resolve = Callable[[str, Record], list[str]]  # (importing file, record) -> repository paths
# (why a call no longer binds, why it did not before, the signature for messages); a
# reason starting with SOFT binds but may behave differently; None: cannot tell
Binding = tuple["str | None", "str | None", str]
SOFT = "soft:"

UNKNOWN = "?"  # the target of a method reached through a receiver of unknown type
PACKAGE = "dir:"  # a directory that is one namespace, as a target: PACKAGE + its path


class Lookup(Protocol):
    """What a language's hooks may ask about the file being read (``symbols.reads``)."""

    @property
    def src(self) -> str: ...

    @property
    def facts(self) -> Facts: ...

    @property
    def paths(self) -> AbstractSet[str]: ...

    def first(self, rec: Record) -> str:
        """The first path ``rec``, imported by this file, resolves to ("": none)."""
        ...

    def resolve(self, src: str, rec: Record) -> list[str]:
        """The paths ``rec`` resolves to when ``src`` imports it."""
        ...

    def through(self, rec: Bind, chain: list[str]) -> tuple[str, list[str]] | None:
        """(target, the chain's names left there) for a chain whose root ``rec`` binds."""
        ...


def receiver(chain: list[str]) -> Target | None:
    """``obj.meth``: a method reached through a receiver of unknown type (``UNKNOWN``)."""
    return (UNKNOWN, (chain[-1],), False) if len(chain) >= 2 else None


def file_scope(rd: Lookup, chain: list[str]) -> Target | None:
    """A chain no import binds: a definition of the file itself, else ``receiver``."""
    root, defs = chain[0], rd.facts["defs"]
    if root in defs and (len(chain) == 1 or defs[root][0] not in ("constant", "alias")):
        return rd.src, tuple(chain), len(chain) > 1 and defs[root][0] == "class"
    return receiver(chain)


class Manifest(NamedTuple):
    """A file that declares the import path of the directory it sits in."""

    file: str  # its name
    root_of: Callable[[bytes], str | None]  # its content -> the import path it declares


class Reexports(NamedTuple):
    """How a module offers other modules' names as its own."""

    # (a file, every path) -> the files standing for the modules that hold it, nearest first
    parents: Callable[[str, AbstractSet[str]], list[str]]
    # (a parent read as a Lookup, its base facts, the changed file, the changed file's
    # names -> themselves, the base facts of any path) -> offered name -> name in the file
    offered: Callable[[Lookup, Facts, str, dict[str, str], FactsOf], dict[str, str]]


class Language(NamedTuple):
    """One language, as every part of the analysis sees it. (A named tuple, as the other
    records here: each is built once at import, where a frozen dataclass's generated code
    would cost every in-process hook a few milliseconds.)"""

    name: str  # the registry's key (and the key of its roots in a stored graph)
    title: str  # its name for people (several names joined with "/")
    tag: str  # the first field of its import records
    dialects: Mapping[str, str]  # file extension -> dialect (a grammar's name)
    grammars: Mapping[str, Grammar]  # dialect -> tree-sitter grammar (loaded on first use)
    # (dialect, bytes) -> the file's imports as written
    imports: Callable[[str, bytes], list[Record]]
    # (every path, the module roots its manifests declare: directory -> import path) -> a
    # resolver of its import records to repository paths
    resolver: Callable[[AbstractSet[str], Mapping[str, str]], Resolve]
    # (dialect, bytes) -> facts, None when it does not parse (unknown, never "removed")
    analyse: Callable[[str, bytes], Facts | None]
    # (reader, the import binding a chain's root, the chain) -> (target, names left)
    through: Callable[[Lookup, Bind, list[str]], tuple[str, list[str]] | None]
    # (dialect, old params, new params, call, via an instance, qualified name) -> Binding,
    # or None when this language cannot tell from these params
    binding: Callable[[str, Params, Params, Call, bool, str], Binding | None]
    # (reader, a chain no import binds) -> what it refers to
    scope: Callable[[Lookup, list[str]], Target | None] = file_scope
    # "directory": all files of a directory are one namespace (a definition moves
    # between them freely); "file": each file is a module, and moving it moves the module
    namespace: Literal["file", "directory"] = "file"
    manifest: Manifest | None = None
    package_file: str = ""  # the stem of the file that stands for its directory's module
    constructor: str = ""  # the method a call of the class itself runs
    reexports: Reexports | None = None
    # (reader, binding) -> the module file an import statement names besides its bound
    # name's own target ("" for none)
    also_imports: Callable[[Lookup, Bind], str] | None = None
    # (merged program, reader, its facts, a local bound to a module that moved) -> whether
    # the import still holds after the merge
    keeps_moved: Callable[[FactsOf, Lookup, Facts, str], bool] | None = None
    # how a line starts a definition, for a look before any parse: modifiers (regular
    # expressions) that may come first, then a word after which the defined name follows
    # (a function, a type) or one that declares a variable or constant
    modifiers: tuple[str, ...] = ()
    definers: tuple[str, ...] = ()
    declarers: tuple[str, ...] = ()


def namespace_of(lang: Language, path: str) -> str:
    """The target a file's definitions are reached through: the file, or its directory."""
    return PACKAGE + posixpath.dirname(path) if lang.namespace == "directory" else path
