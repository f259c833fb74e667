"""DIF006: which factory-then-`.to(device)` rewrites are safe, and what is only reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemods.engine import Mode, RunOptions, run
from codemods.findings import FixSafety

FORWARD = """
import torch


class Block(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int):
        y = {expression}
        return x * y
"""


def _check(tmp_path: Path, expression: str):
    target = tmp_path / "block.py"
    target.write_text(textwrap.dedent(FORWARD.format(expression=expression)))
    result = run(RunOptions(paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF006",), jobs=1))
    (finding,) = result.findings
    return finding, target.read_text()


@pytest.mark.parametrize(
    ("expression", "safety", "fixed"),
    [
        ("torch.ones(4).to(x.device)", FixSafety.SAFE, "torch.ones(4, device=x.device)"),
        (
            "torch.zeros(n, dtype=torch.long).to(x.device)",
            FixSafety.SAFE,
            "torch.zeros(n, dtype=torch.long, device=x.device)",
        ),
        ("torch.arange(0, 8, 2).to(device=x.device)", FixSafety.SAFE, "torch.arange(0, 8, 2, device=x.device)"),
        # An integer count the rule cannot see: the values may be fractional, computed by another kernel.
        ("torch.arange(0, n / 2).to(x.device)", FixSafety.UNSAFE, "torch.arange(0, n / 2, device=x.device)"),
        ("torch.linspace(0, 1, n).to(x.device)", FixSafety.UNSAFE, "torch.linspace(0, 1, n, device=x.device)"),
    ],
)
def test_a_factory_moved_to_the_device_is_created_there(tmp_path: Path, expression: str, safety, fixed: str) -> None:
    finding, after = _check(tmp_path, expression)
    assert finding.fix_safety is safety and finding.fixed
    assert f"        y = {fixed}\n" in after


def test_a_move_that_also_casts_is_reported_without_a_fix(tmp_path: Path) -> None:
    finding, after = _check(tmp_path, "torch.zeros(n).to(x.device, dtype=x.dtype)")
    assert finding.fix is None and "also changes the dtype" in finding.not_fixed_reason
    assert "torch.zeros(n).to(x.device, dtype=x.dtype)" in after


def test_python_values_copied_every_call_are_reported(tmp_path: Path) -> None:
    finding, _ = _check(tmp_path, "torch.tensor([0.5, 2.0], device=x.device)")
    assert finding.fix is None
    assert "builds a tensor from Python values and copies it to the device every call of `forward`" in finding.message
