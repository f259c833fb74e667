"""DIF007: the max of a tensor filled with an `int` parameter is that parameter, and only then."""

from __future__ import annotations

from pathlib import Path

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers

_FILLED = """
import torch

class Block(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: {n_type}):
        lengths = torch.full((x.shape[0],), n, dtype={dtype}, device=x.device)
        {between}
        return lengths.max().item()
"""


def _fill_finding(tmp_path: Path, n_type: str = "int", dtype: str = "torch.int32", between: str = "pass"):
    target = tmp_path / "snippet.py"
    target.write_text(_FILLED.format(n_type=n_type, dtype=dtype, between=between))
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, select=("DIF007",), jobs=1))
    [finding] = result.findings
    return finding, target.read_text()


def test_the_max_of_a_tensor_filled_with_an_int_parameter_becomes_the_parameter(tmp_path: Path) -> None:
    finding, fixed = _fill_finding(tmp_path)
    assert finding.fixed and "        return n\n" in fixed


def test_a_float_filled_tensor_keeps_its_item(tmp_path: Path) -> None:
    # `.item()` of a float tensor gives a float (and rounds to float32): not the parameter itself.
    finding, fixed = _fill_finding(tmp_path, dtype="torch.float32")
    assert not finding.fixed and "lengths.max().item()" in fixed
    assert finding.not_fixed_reason == "without an integer `dtype=`, `.item()` need not give back the fill value itself"


def test_a_filled_tensor_written_into_keeps_its_item(tmp_path: Path) -> None:
    finding, fixed = _fill_finding(tmp_path, between="lengths[0] = 1")
    assert not finding.fixed and "lengths.max().item()" in fixed
    assert finding.not_fixed_reason == "`lengths` is rebound, or something may write into it"


def test_a_fill_value_that_is_not_an_int_parameter_keeps_its_item(tmp_path: Path) -> None:
    finding, _ = _fill_finding(tmp_path, n_type="torch.Tensor")
    assert finding.not_fixed_reason == "the fill value is not an `int` parameter that the function leaves alone"
