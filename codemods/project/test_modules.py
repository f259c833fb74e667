"""What a checkout's test module says, read from its source once for every reader. No torch, no import of the tests.

One parse and one walk (`test_walk`) of a module yield all that anything asks of it (`TestModule`):
- the gates (`gated_tests`): its classes' shapes (bases, the names each test function reads), and
  its test classes with the model class each is configured for;
- the covering tests (`bot/verify/planning/covering_tests.py`): the classes it configures
  (`pipeline_class`/`model_class`) and the names it imports from diffusers;
- the checkout-test targets (`bot/verify/targets/from_tests.py`): the test classes that hold a model's or a
  pipeline's configuration (`test_sources`).
The gates first ask which modules name a class at all: each module's words, a regular expression over its text
(no parse), choose the few they read (a cold check of a diffusers main checkout reads 32 of its 625).
`CheckoutTestModules` reads each module of a checkout's `tests/` at most once, when first asked: the engine keeps
the words and the readings per file digest (`FileMemo`) across runs, and a `codemod verify` run hands one
reading to each of its phases.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from codemods.project.files import FileMemo, uncached
from codemods.project.layout import tests_dir_of
from codemods.project.test_sources import CheckoutTest, configured_classes
from codemods.project.test_walk import MethodReading, walk_module

# The `FileMemo` kinds under which a run keeps each module's words and its `TestModule`.
TEST_WORDS = "test-words"
TEST_MODULE = "test-module"
_WORD = re.compile(r"\w+")
# Each ASCII character that is not a word character (`\w`), to a space: an ASCII text's words are then what
# `split` gives, in C (`_WORD.findall` takes about 2.5x as long).
_NOT_WORD = str.maketrans(dict.fromkeys((chr(c) for c in range(128) if not chr(c).isalnum() and chr(c) != "_"), " "))


@dataclass(frozen=True)
class TestClass:
    name: str
    model_class: str | None  # the model class it is configured for (`model_class`, or inherited in its module)
    ancestry: frozenset[str]  # its own name and its bases' names, transitively within its module


@dataclass(frozen=True)
class ClassShape:
    name: str
    bases: frozenset[str]
    tests_reading: tuple[tuple[str, frozenset[str]], ...]  # its test functions, each with the attribute names it reads


@dataclass(frozen=True)
class TestModule:
    """What one test module says: read once, kept per file digest (`FileMemo`)."""

    classes: tuple[ClassShape, ...]
    test_classes: tuple[TestClass, ...]
    configures: frozenset[str]  # classes its test classes take as `pipeline_class`/`model_class`
    imports: frozenset[str]  # names it imports from diffusers (absolute imports)
    configurations: tuple[CheckoutTest, ...]  # its test classes that configure a model or a pipeline


def read_test_module(text: str) -> TestModule | None:
    """What the module says, or None when it does not parse (such a module holds no test anyone counts)."""
    tree = parse_module(text)
    if tree is None:
        return None
    walked = walk_module(tree)
    shapes = tuple(
        ClassShape(
            cls.name,
            frozenset(_base_name(base) for base in cls.bases),
            tuple(
                (function.name, frozenset(walked.methods[function].names_read))
                for function in cls.body
                if isinstance(function, ast.FunctionDef) and function.name.startswith("test")
            ),
        )
        for cls in _classes(tree)
    )
    return TestModule(
        shapes,
        tuple(test_classes(tree, walked.methods)),
        walked.configures,
        walked.imports,
        tuple(configured_classes(tree, walked.methods)),
    )


def module_words(text: str) -> frozenset[str]:
    """Every word of the module's text: whether it names a class, as a text search would (no parse)."""
    if text.isascii():
        return frozenset(text.translate(_NOT_WORD).split())
    return frozenset(_WORD.findall(text))


def test_files(tests_dir: Path) -> list[Path]:
    return sorted(tests_dir.rglob("*.py"))


class CheckoutTestModules:
    """The modules of a checkout's `tests/`, each read once, and only when asked for (`memo` keeps what it read
    per file digest, across runs); whoever asks of the same checkout shares one reading. Their words come
    first, without a parse: the gates read only the modules whose words name what they look for."""

    def __init__(self, tests_dir: Path, memo: FileMemo = uncached) -> None:
        self.tests_dir = tests_dir
        self._memo = memo
        self._read: dict[Path, TestModule | None] = {}

    @cached_property
    def words(self) -> dict[Path, frozenset[str]]:
        """Every module's words (an unreadable module has none)."""
        return {
            path: self._memo(str(path), TEST_WORDS, module_words) or frozenset() for path in test_files(self.tests_dir)
        }

    def module(self, path: Path) -> TestModule | None:
        """What the module at `path` says; None when it does not parse."""
        if path not in self._read:
            self._read[path] = self._memo(str(path), TEST_MODULE, read_test_module)
        return self._read[path]

    @cached_property
    def modules(self) -> dict[Path, TestModule]:
        """Every module that parses."""
        return {path: module for path in test_files(self.tests_dir) if (module := self.module(path)) is not None}


def checkout_tests_of(package: Path) -> CheckoutTestModules | None:
    """The test modules of the checkout holding the tree `package`, unread yet; None when it has no `tests/`."""
    tests_dir = tests_dir_of(package.resolve())
    return CheckoutTestModules(tests_dir) if tests_dir is not None else None


def test_classes(tree: ast.Module, methods: dict[ast.FunctionDef, MethodReading]) -> list[TestClass]:
    """The module's classes, with the model class each is configured for and its ancestry within the module."""
    classes = {cls.name: cls for cls in _classes(tree)}
    return [TestClass(name, _configured(name, classes, methods), _ancestry(name, classes)) for name in classes]


# Functions of the module, not closures calling themselves: such a closure is a reference cycle, which kept each
# module's whole tree alive in a run (it keeps the cycle collector off).
def _configured(
    name: str,
    classes: dict[str, ast.ClassDef],
    methods: dict[ast.FunctionDef, MethodReading],
    seen: frozenset[str] = frozenset(),
) -> str | None:
    node = classes.get(name)
    if node is None or name in seen:
        return None
    own = _model_class(node, methods)
    if own:
        return own
    bases = (_configured(_base_name(base), classes, methods, seen | {name}) for base in node.bases)
    return next((found for found in bases if found), None)


def _ancestry(name: str, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()) -> frozenset[str]:
    node = classes.get(name)
    if node is None or name in seen:
        return frozenset({name})
    return frozenset({name}).union(*(_ancestry(_base_name(base), classes, seen | {name}) for base in node.bases))


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def _base_name(base: ast.expr) -> str:
    """`Mixin` for `Mixin` and for `module.Mixin`."""
    return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")


def _model_class(cls: ast.ClassDef, methods: dict[ast.FunctionDef, MethodReading]) -> str | None:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id == "model_class" for t in statement.targets):
                return statement.value.id
        if isinstance(statement, ast.FunctionDef) and statement.name == "model_class":
            for value in methods[statement].returned:
                if isinstance(value, ast.Name):
                    return value.id
    return None


def parse_module(text: str) -> ast.Module | None:
    """The module's tree, or None when it does not parse (a test module no one can count tests in)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
