"""A language is one module: each is named only in its own module (with the helpers only it
uses) and the registry; the registry reads every source file by exactly one language; the
grammars load on first use and the tables that describe them name what they have."""

from __future__ import annotations

import ast
import functools
import importlib
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest
from test_layout import PKG, ROOT, module_name, modules_loaded_by, package_imports

from proximity.agents import definitions
from proximity.analysis import imports, parsers
from proximity.analysis.languages import registry
from proximity.analysis.languages.base import Language
from proximity.analysis.symbols import tslang

LANGUAGES = registry.LANGUAGES
REGISTRY = "proximity.analysis.languages.registry"

# Places that name a language for another reason than reading its code, each with why.
NOT_ANALYSIS = {
    ("proximity/analysis/resolve.py", "go"):
        "set_go_mods, the name tests/test_depgraph.py calls set_roots by",
    ("proximity/service/stamp.py", ".py"): "proximity's own source files, not code it reads",
    ("proximity/commands/launcher.py", ".py"): "proximity's own launch.py, which it runs",
    ("proximity/commands/demo.py", ".py"): "the demo's sample project",
    ("proximity/commands/swarm.py", ".py"): "the demo's sample project",
    ("proximity/config.py", ".py"): "sample paths that probe an exclude list",
    ("proximity/service/fswatch.py", "rust"): "a parameter of the file watcher's library",
}
# proximity is written in Python: outside the analysis of code, the word is the interpreter
INTERPRETER = ("python", "Python")


def module_of(lang: Language) -> str:
    return f"proximity.analysis.languages.{lang.name}"


@functools.cache
def importers() -> dict[str, frozenset[str]]:
    """Each module of the package -> the modules of the package that import it."""
    by: dict[str, set[str]] = defaultdict(set)
    for mod, targets in package_imports().items():
        by.setdefault(mod, set())
        for target, _ in targets:
            if target != mod:
                by[target].add(mod)
    return {mod: frozenset(them) for mod, them in by.items()}


def own_modules(lang: Language) -> set[str]:
    """The language's module and the helpers only it (or its other helpers) imports."""
    own = {module_of(lang)}
    grew = True
    while grew:
        grew = False
        for mod, by in importers().items():
            if mod not in own and mod != REGISTRY and by and by <= own:
                own.add(mod)
                grew = True
    return own


def marks(lang: Language) -> tuple[set[str], re.Pattern[str], set[str]]:
    """How code would name the language: identifier words, words of prose, and string
    values (its tag, names, extensions, manifest)."""
    words = {lang.name, lang.tag, *lang.dialects.values()}
    names = "|".join(map(re.escape, [*lang.title.split("/"), lang.tag.upper()]))
    prose = re.compile(rf"\b({names})\b")
    values = words | set(lang.dialects)
    if lang.manifest is not None:
        values.add(lang.manifest.file)
    return words, prose, values


def docstrings(tree: ast.AST) -> set[tuple[int, int]]:
    """Where each docstring starts (line, column)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            out.add((body[0].lineno, body[0].col_offset))
    return out


def named_in(path: Path, lang: Language) -> list[tuple[int, str]]:
    """(line, what) for each place the file names the language."""
    words, prose, values = marks(lang)
    src = path.read_text()
    docs = docstrings(ast.parse(src))
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        line = tok.start[0]
        if tok.type == tokenize.NAME:
            name = tok.string.lower()
            parts = [p for p in name.split("_") if p]
            if name in words - {lang.tag}:  # a tag alone is too short to tell (`rs`: ranges)
                found.append((line, name))
            elif len(parts) > 1:
                found += [(line, w) for w in sorted(set(parts) & words)]
        elif tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING
                                              and tok.start in docs):
            found += [(line, m.group(1)) for m in prose.finditer(tok.string)]
            # code quoted in prose is code: ``go`` names the language as an identifier would
            # (not its tag: ``calls.py`` is one of proximity's own files)
            found += [(line, w) for span in re.findall(r"`+([^`]+)`+", tok.string)
                      for w in sorted(set(re.split(r"\W+", span.lower()))
                                      & (words - {lang.tag} | {lang.name}))]
            found += [(line, v) for v in values if "." in v and v in tok.string
                      and not v.startswith(".")]
        elif tok.type == tokenize.STRING:
            body = tok.string.lstrip("rbfuRBFU").strip("'\"")
            found += [(line, v) for v in values
                      if body == v or ("." in v and body.endswith(v))]
    return found


def test_each_language_is_named_only_in_its_own_modules_and_the_registry():
    """Adding a language is one module and one line in the registry: nothing else in the
    package may know a language by name, tag, extension or manifest (docs may)."""
    wrong = []
    for lang in LANGUAGES:
        allowed = own_modules(lang) | {REGISTRY}
        for path in sorted(PKG.rglob("*.py")):
            if module_name(path) in allowed:
                continue
            rel = str(path.relative_to(ROOT))
            interpreter = INTERPRETER if not rel.startswith("proximity/analysis/") else ()
            wrong += [f"{rel}:{line} names {lang.title}: {what}"
                      for line, what in named_in(path, lang)
                      if (rel, what) not in NOT_ANALYSIS and what not in interpreter]
    assert wrong == []


def test_the_allowances_are_still_needed():
    """Each place allowed to name a language for another reason still does."""
    stale = []
    for (rel, what), _why in NOT_ANALYSIS.items():
        path = ROOT / rel
        hits = {w for lang in LANGUAGES for _, w in named_in(path, lang)} if path.exists() \
            else set()
        if what not in hits:
            stale.append((rel, what))
    assert stale == []


def test_a_language_is_its_module_named_after_it_and_one_line_of_the_registry():
    for lang in LANGUAGES:
        assert importlib.import_module(module_of(lang)).LANGUAGE is lang
    assert len({lang.name for lang in LANGUAGES}) == len(LANGUAGES)
    assert len({lang.tag for lang in LANGUAGES}) == len(LANGUAGES)
    extensions = [ext for lang in LANGUAGES for ext in lang.dialects]
    assert len(extensions) == len(set(extensions)), "an extension read by two languages"
    for lang in LANGUAGES:
        for ext, dialect in lang.dialects.items():
            assert ext.startswith(".") and ext == ext.lower()
            assert dialect in lang.grammars
            assert registry.language_of("src/x" + ext.upper()) is lang
            assert registry.dialect_of("src/x" + ext) == dialect
            assert registry.language(dialect) is lang
        assert registry.tagged(lang.tag) is lang
    assert registry.dialect_of("README.md") is None and registry.tagged("?") is None


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.name)
def test_every_grammar_loads_and_parses(lang):
    for grammar in lang.grammars.values():
        tree = parsers.parse(grammar, b"\n")
        assert not tree.root_node.has_error


def test_the_registry_loads_no_grammar():
    """A hook that reads no code pays for no parser: the registry and every language
    module import without tree-sitter or any grammar."""
    loaded = modules_loaded_by(f"import {REGISTRY}")
    assert not [m for m in loaded if m.split(".")[0].startswith("tree_sitter")], loaded


def syntaxes(lang: Language) -> list[tslang.Syntax]:
    """The tree-sitter syntax tables of the language's own modules."""
    mods = [importlib.import_module(m) for m in sorted(own_modules(lang))]
    return [v for m in mods for v in vars(m).values() if isinstance(v, tslang.Syntax)]


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.name)
def test_a_syntax_names_only_node_types_and_fields_its_grammar_has(lang):
    """A node type misspelt in a table is a definition or a use silently never seen."""
    langs = [parsers.language(g) for g in lang.grammars.values()]
    found = syntaxes(lang)
    assert found or lang.name == "python", "a tree-sitter language describes its grammar"
    for syntax in found:
        kinds = {*syntax.leaves, *syntax.links, *syntax.calls, *syntax.spreads,
                 *syntax.numbers, *syntax.skip_nodes, *syntax.defs, *syntax.readers,
                 *([syntax.new] if syntax.new else [])}
        fields = {*syntax.skip_fields, *syntax.calls.values(),
                  *(f for pair in syntax.links.values() for f in pair)}
        unknown = {k for k in kinds if all(g.id_for_node_kind(k, True) is None for g in langs)}
        unknown |= {f for f in fields if all(g.field_id_for_name(f) is None for g in langs)}
        assert unknown == set()


@pytest.mark.parametrize(("path", "code", "names"), [
    ("src/lib.rs", b"mod a;\nmod b;\nmod c;\nuse std::io;\nuse bstr::B;\nuse super::x;\n",
     ["a", "b", "c", "std::io", "bstr::B", "super::x"]),
    ("main.go", b'package main\n\nimport (\n\t"a/x"\n\t"b/y"\n\t"c/z"\n)\n',
     ["a/x", "b/y", "c/z"]),
    ("a.js", b"import x from './c';\nconst y = require('./b');\nexport { z } from './a';\n",
     ["./c", "./b", "./a"]),
])
def test_imports_come_in_source_order(path, code, names):
    """The records of a blob are cached as they come: the same source gives the same list,
    in the order it is written, in every process."""
    assert [rec[-1] for rec in imports.extract(path, code)] == names


@pytest.mark.parametrize(("path", "code"), [
    ("pkg/geo.py", b"async def area(w, h):\n    return w * h\n"),
    ("src/geo.ts", b"export default function area(w: number, h: number) {\n  return w * h;\n}\n"),
    ("geo/geo.go", b"func Area(w, h int) int {\n\treturn w * h\n}\n"),
    ("src/geo.rs", b"pub(crate) fn area(w: u32, h: u32) -> u32 {\n    w * h\n}\n"),
])
def test_a_definition_header_passes_the_look_before_parsing(path, code):
    """The pre-edit check looks for a header line before it parses; every language's
    header words take part (a language the look missed would never name a definition)."""
    assert [n.lower() for n in definitions.defined_in(path, code, [(1, 1)])] == ["area"]
    assert definitions.defined_in(path, code, [(2, 2)]) == []
