"""A compile test the change turns on and that hits its recompile limit gets the override maintainers write.

The end-to-end case is a tiny package of our own: a model whose last block is built in another
configuration (as SD3's `context_pre_only` last block), and a compile mixin test in the shape of
diffusers' `test_torch_compile_repeated_blocks` (fullgraph, `recompile_limit` 1 by default).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bot.verify.checkout.own_tests import run_own_tests
from bot.verify.checkout.turned_on_tests import carry_recompile_limits
from bot.verify.running.recompile_limit import with_recompile_limit
from bot.verify.running.zygote import Zygote

TEST_MODULE = '''\
class TestModelCompile(ModelTesterConfig, TorchCompileTesterMixin):
    pass


class TestModelLoRA(ModelTesterConfig, LoraTesterMixin):
    """LoRA tests."""

    def test_lora(self):
        pass
'''

WITH_LIMIT = '''\
class TestModelCompile(ModelTesterConfig, TorchCompileTesterMixin):
    def test_torch_compile_repeated_blocks(self):
        # The JointTransformerBlock instances differ in configuration, so the shared block forward compiles 2 times.
        super().test_torch_compile_repeated_blocks(recompile_limit=2)


class TestModelLoRA(ModelTesterConfig, LoraTesterMixin):
    """LoRA tests."""

    def test_lora(self):
        pass
'''

MODEL = """\
import torch


class Block(torch.nn.Module):
    def __init__(self, last):
        super().__init__()
        self.last = last

    def forward(self, x):
        return x * 2 if self.last else x + 1


class TinyModel(torch.nn.Module):
    _repeated_blocks = ["Block"]

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(last=i == 2) for i in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
"""

TESTS = """\
import pytest
import torch

from diffusers.tiny import TinyModel


@pytest.mark.skipif(True, reason="test requires a hardware accelerator")
class TorchCompileTesterMixin:
    def setup_method(self):
        torch.compiler.reset()

    @torch.no_grad()
    def test_torch_compile_repeated_blocks(self, recompile_limit=1):
        if not getattr(self.model_class, "_repeated_blocks", None):
            pytest.skip("no _repeated_blocks")
        model = self.model_class()
        for block in model.blocks:
            block.compile(fullgraph=True)
        with torch._dynamo.config.patch(recompile_limit=recompile_limit):
            model(torch.ones(2))
            model(torch.ones(2))


class TestTinyModelCompile(TorchCompileTesterMixin):
    model_class = TinyModel
"""

NODE = "tests/test_tiny.py::TestTinyModelCompile::test_torch_compile_repeated_blocks"
CARRIED = TESTS.replace(
    "class TestTinyModelCompile(TorchCompileTesterMixin):\n    model_class = TinyModel\n",
    "class TestTinyModelCompile(TorchCompileTesterMixin):\n    model_class = TinyModel\n\n"
    "    def test_torch_compile_repeated_blocks(self):\n"
    "        # The Block instances differ in configuration, so the shared block forward compiles 2 times.\n"
    "        super().test_torch_compile_repeated_blocks(recompile_limit=2)\n",
)


def test_a_class_that_only_passes_gets_the_override_in_place_of_pass() -> None:
    name = "test_torch_compile_repeated_blocks"
    assert with_recompile_limit(TEST_MODULE, "TestModelCompile", name, 2, ["JointTransformerBlock"]) == WITH_LIMIT


def test_writing_the_override_again_changes_nothing() -> None:
    name = "test_torch_compile_repeated_blocks"
    assert with_recompile_limit(WITH_LIMIT, "TestModelCompile", name, 3, ["JointTransformerBlock"]) == WITH_LIMIT


def test_a_class_with_a_body_gets_the_override_after_it() -> None:
    assert with_recompile_limit(TESTS, "TestTinyModelCompile", "test_torch_compile_repeated_blocks", 2, ["Block"]) == (
        CARRIED
    )


def test_a_turned_on_test_hitting_its_recompile_limit_passes_with_the_measured_override(
    tmp_path: Path, zygote: Zygote
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "src" / "diffusers").mkdir(parents=True)
    (checkout / "src" / "diffusers" / "__init__.py").write_text("")
    (checkout / "src" / "diffusers" / "tiny.py").write_text(MODEL)
    (checkout / "tests").mkdir()
    (checkout / "tests" / "__init__.py").write_text("")
    (checkout / "tests" / "test_tiny.py").write_text(TESTS)
    trees = {}
    for side in ("original", "rewritten"):
        trees[side] = tmp_path / side / "diffusers"
        shutil.copytree(checkout / "src" / "diffusers", trees[side])
    (trees["original"] / "tiny.py").write_text(MODEL.replace('    _repeated_blocks = ["Block"]\n\n', ""))
    python, lift = Path(sys.executable), ["test_torch_compile_repeated_blocks"]
    result = run_own_tests(python, checkout, trees, [NODE], tmp_path / "runs", lift=lift, zygote=zygote)
    assert [(broken["test"], broken["before"]) for broken in result.broken] == [(NODE, "skipped")]
    carry_recompile_limits(python, checkout, trees, result, tmp_path / "carry", 300, lambda message: None, zygote)
    assert (result.broken, result.fixed) == ([], [{"test": NODE, "fix": "recompile_limit=2 in TestTinyModelCompile"}])
    assert result.test_edits == {"tests/test_tiny.py": CARRIED}
