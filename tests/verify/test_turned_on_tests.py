"""Tests a change turns on: found from the attribute it adds, run on the CPU with their accelerator skip lifted.

The checkout is a tiny package of our own named `diffusers` with tests in the shape of diffusers'
compile mixin: a mixin test that skips unless `model_class._repeated_blocks` is set, on a class
marked as needing an accelerator; the rewritten tree adds the attribute.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bot.verify.checkout.own_tests import run_own_tests
from bot.verify.checkout.repo_checks import InPlaceChecks
from bot.verify.checkout.turned_on_tests import gained_attributes, turned_on
from codemods.project.test_modules import CheckoutTestModules

MODEL = """\
class Block:
    pass


class TinyModel:
    _supports_gradient_checkpointing = True

    def __init__(self, layers=2):
        self.blocks = [Block() for _ in range(layers)]
"""

MIXIN = """\
import pytest


@pytest.mark.skipif(True, reason="test requires a hardware accelerator")
class CompileTesterMixin:
    def test_compile_repeated_blocks(self, recompile_limit=1):
        if not getattr(self.model_class, "_repeated_blocks", None):
            pytest.skip("the model class has no `_repeated_blocks`")
        assert len(self.model_class._repeated_blocks) <= recompile_limit, "recompile limit hit"

    def test_compile(self):
        assert True
"""

TESTS = """\
from diffusers.tiny import TinyModel

from .compile_mixin import CompileTesterMixin


class TinyModelConfig:
    @property
    def model_class(self):
        return TinyModel


class TestTinyModel(TinyModelConfig):
    def test_layers(self):
        assert len(self.model_class().blocks) == 2


class TestTinyModelCompile(TinyModelConfig, CompileTesterMixin):
    pass
"""

CONFTEST = """\
import sys
from os.path import abspath, dirname, join

sys.path.insert(1, abspath(join(dirname(dirname(__file__)), "src")))
"""

NODE = "tests/models/test_tiny.py::TestTinyModelCompile::test_compile_repeated_blocks"
ADDED = '    _repeated_blocks = ["Block", "Block2"]\n'


def _checkout(root: Path) -> Path:
    (root / "src" / "diffusers").mkdir(parents=True)
    (root / "src" / "diffusers" / "__init__.py").write_text("")
    (root / "src" / "diffusers" / "tiny.py").write_text(MODEL)
    (root / "tests" / "models").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "tests" / "models" / "__init__.py").write_text("")
    (root / "tests" / "models" / "compile_mixin.py").write_text(MIXIN)
    (root / "tests" / "models" / "test_tiny.py").write_text(TESTS)
    return root


def _rewritten() -> str:
    return MODEL.replace(
        "    _supports_gradient_checkpointing = True\n", "    _supports_gradient_checkpointing = True\n" + ADDED
    )


def test_the_names_a_class_gains_are_read_from_the_two_texts() -> None:
    assert gained_attributes(MODEL, _rewritten()) == {"TinyModel": ["_repeated_blocks"]}


def test_the_mixin_test_gated_on_the_gained_name_is_turned_on_for_the_models_test_classes(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    changed = {"tiny.py": {"TinyModel": ["_repeated_blocks"]}}
    found = turned_on(CheckoutTestModules(checkout / "tests"), changed)
    assert (found.node_ids, found.names) == ([NODE], ["test_compile_repeated_blocks"])


def test_a_turned_on_test_runs_with_its_accelerator_skip_lifted_and_its_failure_breaks_the_change(
    tmp_path: Path,
) -> None:
    checkout = _checkout(tmp_path / "checkout")
    trees = {}
    for side in ("original", "rewritten"):
        trees[side] = tmp_path / side / "diffusers"
        shutil.copytree(checkout / "src" / "diffusers", trees[side])
    (trees["rewritten"] / "tiny.py").write_text(_rewritten())
    lift = ["test_compile_repeated_blocks"]
    result = run_own_tests(Path(sys.executable), checkout, trees, [NODE], tmp_path / "runs", lift=lift)
    assert result.broken == [{"test": NODE, "before": "skipped", "message": "AssertionError: recompile limit hit"}]


def test_run_check_repo_names_the_tests_the_written_changes_turn_on(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    (checkout / "src" / "diffusers" / "tiny.py").write_text(_rewritten())
    in_place = InPlaceChecks(checkout, [], {}, None, [])
    changes = {str(checkout / "src" / "diffusers" / "tiny.py"): (MODEL, _rewritten())}
    assert in_place.turned_on_lines(changes) == [
        "check-repo: the changes turn on 1 test(s) that were skipped before; `codemod verify` runs them on the CPU "
        "and carries the test edits they need:",
        f"  {NODE}",
    ]
