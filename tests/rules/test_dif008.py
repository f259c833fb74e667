"""DIF008: the ways a buffer can be complex."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run

MODULE = """
import torch


class Rope(torch.nn.Module):
    def __init__(self, angles: torch.Tensor):
        super().__init__()
        table = {value}
        self.register_buffer("table", table, persistent=False)
"""


def _findings(tmp_path: Path, value: str):
    target = tmp_path / "rope.py"
    target.write_text(textwrap.dedent(MODULE.format(value=value)))
    return run(RunOptions(paths=(target,), mode=Mode.CHECK, select=("DIF008",), jobs=1)).findings


@pytest.mark.parametrize(
    "value",
    [
        "torch.polar(torch.ones_like(angles), angles)",
        "torch.view_as_complex(angles.reshape(-1, 2))",
        "angles.to(torch.complex64)",
        "torch.zeros(4, dtype=torch.cfloat)",
        "torch.exp(1j * angles)",
        "torch.cat([torch.polar(angles, angles), torch.polar(angles, angles)], dim=1)",
    ],
)
def test_a_complex_buffer_is_reported(tmp_path: Path, value: str) -> None:
    (finding,) = _findings(tmp_path, value)
    assert finding.fix is None and "drops its imaginary part" in finding.message


@pytest.mark.parametrize("value", ["angles.cos()", "torch.view_as_real(torch.polar(angles, angles))", "angles.abs()"])
def test_a_real_buffer_is_not_reported(tmp_path: Path, value: str) -> None:
    assert _findings(tmp_path, value) == []
