"""The checkout's tests that a class attribute turns on. No torch, no import of the tests.

diffusers gates tests on model attributes: the compile mixin's `test_torch_compile_repeated_blocks`
skips unless `model_class._repeated_blocks` is set. A change that adds `_repeated_blocks` to a model
(DIF003) makes that test run for each of the model's test classes that take the mixin: a test that
never ran for that model, and one that can fail (`FailOnRecompileLimitHit` where the stacked blocks
are not all built alike, as SD3's last block and SD3.5's dual-attention blocks are). The engine
therefore declines such a change unless the run opts in; `codemod verify` and the bot opt in, run
those tests (`bot/verify/checkout/turned_on_tests.py`) and carry the override they need.

Each test module is parsed once, into what the gates need of it (`TestModule`), which the run's
cache keeps per file digest: the test functions that read the attribute, the classes that derive
from their holders (across the whole `tests/`), and the modules that name the model are then set
operations, not a text search of every module for every model.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from codemods.node_index import nodes_within
from codemods.project.index import FileMemo, ProjectIndex, package_root, uncached


def tests_dir_of(package: Path) -> Path | None:
    """`<checkout>/tests` for a tree at `<checkout>/src/<package>`, if there is one."""
    if package.parent.name == "src" and (package.parent.parent / "tests" / "__init__.py").is_file():
        return package.parent.parent / "tests"
    return None


def tests_turned_on(index: ProjectIndex, path: str, model: str, attribute: str) -> list[str]:
    """The tests of the checkout holding `path` that setting `attribute` on its class `model` turns on."""
    root = package_root(Path(path))
    tests_dir = tests_dir_of(root) if root is not None else None
    if tests_dir is None:
        return []
    gates = index.checkout_fact(("gates", tests_dir), lambda: CheckoutGates(tests_dir, index.file_memo))
    return gates.turned_on(model, {attribute})


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
    """What the gates need of one test module: read once, kept per file digest (`FileMemo`)."""

    words: frozenset[str]  # every word of its text: which modules "name" a class, as a text search would
    classes: tuple[ClassShape, ...]
    test_classes: tuple[TestClass, ...]


def read_test_module(text: str) -> TestModule | None:
    """The module's shape, or None when it does not parse (such a module holds no test the gates count)."""
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
    return TestModule(frozenset(_WORD.findall(text)), shapes, tuple(test_classes(tree)))


_WORD = re.compile(r"\w+")
# The `FileMemo` kind under which a run keeps each module's `TestModule`.
TEST_MODULE = "test-module"


def test_files(tests_dir: Path) -> list[Path]:
    return sorted(tests_dir.rglob("*.py"))


def read_test_file(path: str) -> TestModule | None:
    """`read_test_module` of the file at `path` (a worker's job: the engine reads a checkout's tests in parallel)."""
    return uncached(path, TEST_MODULE, read_test_module)

class CheckoutGates:
    """The test functions of a checkout's `tests/` gated on class attributes, each module read once
    (`memo` keeps what it read per file digest, across runs)."""

    def __init__(self, tests_dir: Path, memo: FileMemo = uncached) -> None:
        self.tests_dir = tests_dir
        self._memo = memo
        self._gated: dict[frozenset[str], dict[str, frozenset[str]]] = {}

    @cached_property
    def _modules(self) -> dict[Path, TestModule]:
        modules = {}
        for path in test_files(self.tests_dir):
            module = self._memo(str(path), TEST_MODULE, read_test_module)
            if module is not None:
                modules[path] = module
        return modules

    def _naming(self, names: set[str]) -> list[tuple[Path, TestModule]]:
        """The modules whose text names one of `names` (as a word)."""
        return [(path, module) for path, module in self._modules.items() if not module.words.isdisjoint(names)]

    def gated_on(self, attributes: set[str]) -> dict[str, frozenset[str]]:
        """Test function -> the test classes that hold it: those that define it reading one of `attributes`, and
        every class of `tests/` deriving from one of those (by name: a mixin of `testing_utils/` is imported)."""
        key = frozenset(attributes)
        if key not in self._gated:
            self._gated[key] = {function: frozenset(holding) for function, holding in self._holders(key).items()}
        return self._gated[key]

    def _holders(self, attributes: frozenset[str]) -> dict[str, set[str]]:
        holders: dict[str, set[str]] = {}
        for _, module in self._naming(attributes):
            for cls in module.classes:
                for function, names_read in cls.tests_reading:
                    if names_read & attributes:
                        holders.setdefault(function, set()).add(cls.name)
        known: set[str] = set().union(*holders.values()) if holders else set()
        while True:
            derived = {
                cls.name: cls.bases for _, module in self._naming(known) for cls in module.classes if cls.name not in known
            }
            added = False
            for name, bases in derived.items():
                for function, holding in holders.items():
                    if bases & holding:
                        holding.add(name)
                        added = True
            if not added:
                return holders
            known = set().union(*holders.values())

    def turned_on(self, model: str, attributes: set[str]) -> list[str]:
        """Pytest node ids of the tests that setting `attributes` on `model` turns on: its test classes (configured
        for it) that hold a test function gated on one of them."""
        gated = self.gated_on(attributes)
        if not gated:
            return []
        node_ids = []
        for path, module in self._naming({model}):
            module_path = path.relative_to(self.tests_dir.parent).as_posix()
            for test_class in module.test_classes:
                if test_class.model_class != model:
                    continue
                node_ids += [
                    f"{module_path}::{test_class.name}::{function}"
                    for function, holding in sorted(gated.items())
                    if holding & test_class.ancestry
                ]
        return node_ids


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
    names = {node.attr for node in nodes_within(function, ast.Attribute)}
    for node in nodes_within(function, ast.Call):
        if getattr(node.func, "id", None) in ("getattr", "hasattr"):
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                names.add(node.args[1].value)
    return frozenset(names)


def _model_class(cls: ast.ClassDef) -> str | None:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id == "model_class" for t in statement.targets):
                return statement.value.id
        if isinstance(statement, ast.FunctionDef) and statement.name == "model_class":
            for node in nodes_within(statement, ast.Return):
                if isinstance(node.value, ast.Name):
                    return node.value.id
    return None


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
