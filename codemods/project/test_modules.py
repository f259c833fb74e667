"""What a checkout's test module says, read from its source once for every reader. No torch, no import of the tests.

One parse of a module yields all that anything asks of it (`TestModule`):
- the gates (`gated_tests`): its words, its classes' shapes (bases, the names each test function reads), and
  its test classes with the model class each is configured for;
- the covering tests (`bot/verify/planning/covering_tests.py`): the classes it configures
  (`pipeline_class`/`model_class`) and the names it imports from diffusers;
- the checkout-test targets (`bot/verify/targets/from_tests.py`): the test classes that hold a model's or a
  pipeline's configuration (`test_sources`).
`CheckoutTestModules` reads each module of a checkout's `tests/` once: the engine keeps the readings per file
digest (`FileMemo`) across runs, and a `codemod verify` run hands one reading to each of its phases.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from codemods.project.index import FileMemo, uncached
from codemods.project.test_sources import CheckoutTest, configured_classes

# The `FileMemo` kind under which a run keeps each module's `TestModule`.
TEST_MODULE = "test-module"
_WORD = re.compile(r"\w+")


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

    words: frozenset[str]  # every word of its text: which modules "name" a class, as a text search would
    classes: tuple[ClassShape, ...]
    test_classes: tuple[TestClass, ...]
    configures: frozenset[str]  # classes its test classes take as `pipeline_class`/`model_class`
    imports: frozenset[str]  # names it imports from diffusers (absolute imports)
    configurations: tuple[CheckoutTest, ...]  # its test classes that configure a model or a pipeline


def tests_dir_of(package: Path) -> Path | None:
    """`<checkout>/tests` for a tree at `<checkout>/src/<package>`, if there is one."""
    if package.parent.name == "src" and (package.parent.parent / "tests" / "__init__.py").is_file():
        return package.parent.parent / "tests"
    return None


def read_test_module(text: str) -> TestModule | None:
    """What the module says, or None when it does not parse (such a module holds no test anyone counts)."""
    tree = _parse(text)
    if tree is None:
        return None
    shapes = tuple(
        ClassShape(
            cls.name,
            frozenset(_base_name(base) for base in cls.bases),
            tuple(
                (function.name, _names_read(function))
                for function in cls.body
                if isinstance(function, ast.FunctionDef) and function.name.startswith("test")
            ),
        )
        for cls in _classes(tree)
    )
    return TestModule(
        frozenset(_WORD.findall(text)),
        shapes,
        tuple(test_classes(tree)),
        *_configured_and_imported(tree),
        tuple(configured_classes(tree)),
    )


def test_files(tests_dir: Path) -> list[Path]:
    return sorted(tests_dir.rglob("*.py"))


def read_test_file(path: str) -> TestModule | None:
    """`read_test_module` of the file at `path` (a worker's job: the engine reads a checkout's tests in parallel)."""
    return uncached(path, TEST_MODULE, read_test_module)


class CheckoutTestModules:
    """The modules of a checkout's `tests/` that parse, each read once (`memo` keeps what it read per file digest,
    across runs); whoever asks of the same checkout shares one reading."""

    def __init__(self, tests_dir: Path, memo: FileMemo = uncached) -> None:
        self.tests_dir = tests_dir
        self._memo = memo

    @cached_property
    def modules(self) -> dict[Path, TestModule]:
        modules = {}
        for path in test_files(self.tests_dir):
            module = self._memo(str(path), TEST_MODULE, read_test_module)
            if module is not None:
                modules[path] = module
        return modules


def checkout_tests_of(package: Path) -> CheckoutTestModules | None:
    """The test modules of the checkout holding the tree `package`, unread yet; None when it has no `tests/`."""
    tests_dir = tests_dir_of(package.resolve())
    return CheckoutTestModules(tests_dir) if tests_dir is not None else None


def test_classes(tree: ast.Module) -> list[TestClass]:
    """The module's classes, with the model class each is configured for and its ancestry within the module."""
    classes = {cls.name: cls for cls in _classes(tree)}

    def configured(name: str, seen: frozenset[str] = frozenset()) -> str | None:
        node = classes.get(name)
        if node is None or name in seen:
            return None
        own = _model_class(node)
        if own:
            return own
        return next((found for base in node.bases if (found := configured(_base_name(base), seen | {name}))), None)

    def ancestry(name: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        node = classes.get(name)
        if node is None or name in seen:
            return frozenset({name})
        return frozenset({name}).union(*(ancestry(_base_name(base), seen | {name}) for base in node.bases))

    return [TestClass(name, configured(name), ancestry(name)) for name in classes]


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def _base_name(base: ast.expr) -> str:
    """`Mixin` for `Mixin` and for `module.Mixin`."""
    return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")


def _names_read(function: ast.FunctionDef) -> frozenset[str]:
    """Attribute names the function reads: `x.name`, and `getattr(x, "name")`/`hasattr(x, "name")`."""
    names = set()
    for node in ast.walk(function):  # one walk: walking the tree costs more than parsing it
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr"):
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                names.add(node.args[1].value)
    return frozenset(names)


def _model_class(cls: ast.ClassDef) -> str | None:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id == "model_class" for t in statement.targets):
                return statement.value.id
        if isinstance(statement, ast.FunctionDef) and statement.name == "model_class":
            for node in ast.walk(statement):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                    return node.value.id
    return None


def _configured_and_imported(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    """(every name assigned to `pipeline_class`/`model_class` or returned by a `model_class` function, every name
    imported from diffusers by an absolute import), at any depth: one walk of the tree for both."""
    configures, imports = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id in ("pipeline_class", "model_class") for t in node.targets):
                configures.add(node.value.id)
        elif isinstance(node, ast.FunctionDef) and node.name == "model_class":
            configures.update(
                n.value.id for n in ast.walk(node) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
            )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "diffusers":
            imports.update(alias.name for alias in node.names)
    return frozenset(configures), frozenset(imports)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
