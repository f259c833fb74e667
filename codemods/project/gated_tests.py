"""The checkout's tests that a class attribute turns on. No torch, no import of the tests.

diffusers gates tests on model attributes: the compile mixin's `test_torch_compile_repeated_blocks`
skips unless `model_class._repeated_blocks` is set. A change that adds `_repeated_blocks` to a model
(DIF003) makes that test run for each of the model's test classes that take the mixin: a test that
never ran for that model, and one that can fail (`FailOnRecompileLimitHit` where the stacked blocks
are not all built alike, as SD3's last block and SD3.5's dual-attention blocks are). The engine
therefore declines such a change unless the run opts in; `codemod verify` and the bot opt in, run
those tests (`bot/verify/checkout/turned_on_tests.py`) and carry the override they need.

Each test module's words are read once, and a module is parsed only when its words name what a question
asks of (`test_modules`); the run's cache keeps both per file digest: the test functions that read the
attribute, the classes that derive from their holders (across the whole `tests/`), and the modules that name
the model are then set operations, not a text search of every module for every model.
"""

from __future__ import annotations

from pathlib import Path

from codemods.project.files import FileMemo
from codemods.project.index import ProjectIndex
from codemods.project.layout import package_root, tests_dir_of
from codemods.project.test_modules import CheckoutTestModules, TestModule


def tests_turned_on(index: ProjectIndex, path: str, model: str, attribute: str) -> list[str]:
    """The tests of the checkout holding `path` that setting `attribute` on its class `model` turns on."""
    tests_dir = _checkout_tests_dir(path)
    if tests_dir is None:
        return []
    gates = index.checkout_fact(
        ("gates", tests_dir), lambda: CheckoutGates(CheckoutTestModules(tests_dir, index.file_memo))
    )
    return gates.turned_on(model, {attribute})


def read_gates_ahead(path: str, attribute: str, memo: FileMemo) -> bool:
    """Read into `memo` all that `tests_turned_on` reads of the checkout holding `path` for `attribute`, whatever
    the model (the modules that name a holder of a gated test hold every model's test classes); whether the
    checkout has tests. A run calls this while its workers scan: it resolves its findings alone, after them."""
    tests_dir = _checkout_tests_dir(path)
    if tests_dir is None:
        return False
    CheckoutGates(CheckoutTestModules(tests_dir, memo)).gated_on({attribute})
    return True


def _checkout_tests_dir(path: str) -> Path | None:
    root = package_root(Path(path))
    return tests_dir_of(root) if root is not None else None


class CheckoutGates:
    """The test functions of a checkout's `tests/` gated on class attributes, from one reading of its modules."""

    def __init__(self, tests: CheckoutTestModules) -> None:
        self.tests_dir = tests.tests_dir
        self._tests = tests
        self._gated: dict[frozenset[str], dict[str, frozenset[str]]] = {}
        self._holding: dict[frozenset[str], list[tuple[Path, TestModule]]] = {}

    def _naming(self, names: set[str]) -> list[tuple[Path, TestModule]]:
        """The modules whose text names one of `names` (as a word) and that parse: only those are read."""
        return [
            (path, module)
            for path, words in self._tests.words.items()
            if not words.isdisjoint(names) and (module := self._tests.module(path)) is not None
        ]

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
                cls.name: cls.bases
                for _, module in self._naming(known)
                for cls in module.classes
                if cls.name not in known
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
        key = frozenset(attributes)
        # A test class holds a gated function only if its module names a holder (a base, or the class itself):
        # those modules, found once for every model, are the few whose words are then searched for the model.
        if key not in self._holding:
            self._holding[key] = self._naming(set().union(*gated.values()))
        node_ids = []
        for path, module in self._holding[key]:
            if model not in self._tests.words[path]:
                continue
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
