"""DIF001 on lists of tables kept on `self` (Lumina2's per-axis RoPE, fixture DIF001/lumina2_rope_table_list):
an element moved to the device every call is reported, without a fix, only while the list is provably constant."""

from __future__ import annotations

import textwrap
from pathlib import Path

from codemods.engine import Mode, RunOptions, run

HEAD = """
import torch
from torch import nn


class Rope(nn.Module):
    def __init__(self):
        super().__init__()
"""


def _lines(tmp_path: Path, init: str, methods: str) -> list[int]:
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(init), " " * 8) + methods)
    result = run(RunOptions(paths=(target,), mode=Mode.CHECK, unsafe_fixes=True, select=("DIF001",), jobs=1))
    assert all(not f.fixed for f in result.findings)
    return [f.line for f in result.findings]


FORWARD = """
    def forward(self, x):
        return [self.tables[i].to(x.device) for i in range(len(self.tables))]
"""


def test_an_element_of_a_list_display_of_tensors_moved_every_forward_is_reported(tmp_path: Path) -> None:
    assert _lines(tmp_path, "self.tables = [torch.ones(4), torch.zeros(4)]\n", FORWARD) == [12]


def test_a_list_from_a_helper_annotated_list_of_tensors_is_reported(tmp_path: Path) -> None:
    helper = """
    def _build(self) -> list[torch.Tensor]:
        return [torch.ones(4)]
    """
    assert _lines(tmp_path, "self.tables = self._build()\n", helper + FORWARD) == [15]


def test_a_list_from_an_unannotated_helper_is_not_reported(tmp_path: Path) -> None:
    helper = """
    def _build(self):
        return [torch.ones(4)]
    """
    assert _lines(tmp_path, "self.tables = self._build()\n", helper + FORWARD) == []


def test_an_element_changed_in_place_is_not_reported(tmp_path: Path) -> None:
    scale = """
    def scale(self, factor):
        self.tables[0].mul_(factor)
    """
    assert _lines(tmp_path, "self.tables = [torch.ones(4)]\n", scale + FORWARD) == []


def test_a_list_replaced_after_init_is_not_reported(tmp_path: Path) -> None:
    reset = """
    def reset(self):
        self.tables = [torch.zeros(4)]
    """
    assert _lines(tmp_path, "self.tables = [torch.ones(4)]\n", reset + FORWARD) == []


def test_a_registered_module_list_is_not_reported(tmp_path: Path) -> None:
    assert _lines(tmp_path, "self.tables = nn.ModuleList([nn.Linear(4, 4)])\n", FORWARD) == []


def test_an_element_moved_outside_hot_code_is_not_reported(tmp_path: Path) -> None:
    cold = """
    def export_tables(self, device):
        return self.tables[0].to(device)
    """
    assert _lines(tmp_path, "self.tables = [torch.ones(4)]\n", cold) == []
