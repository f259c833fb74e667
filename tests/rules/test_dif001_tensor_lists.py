"""DIF001 on lists of tables kept on `self` (Lumina2's per-axis RoPE; fixtures DIF001/lumina2_rope_table_list,
lumina2_rope_before_lru_cache, trap lumina2_table_list_appended): an element moved to the device every call is
reported; the moved list is cached as a tuple by one getter (an unsafe fix) only while the list provably never
changes, and otherwise the finding says what changes it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import FixSafety
from codemods.project.index import installed_diffusers
from tools.fixture_cases import find_case, write_files

HEAD = """
import torch
from torch import nn


class Rope(nn.Module):
    def __init__(self):
        super().__init__()
"""

FORWARD = """
    def forward(self, x):
        return [self.tables[i].to(x.device) for i in range(len(self.tables))]
"""

GETTER = """
    @functools.lru_cache(maxsize=None)
    def _get_device_tables(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        \"\"\"Return tables, each tensor on the given device.\"\"\"
        return tuple(tensor.to(device) for tensor in self.tables)
"""


def _run(target: Path, unsafe: bool = True):
    return run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=unsafe, select=("DIF001",), jobs=1))


def _snippet(tmp_path: Path, init: str, methods: str) -> Path:
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(init), " " * 8) + methods)
    return target


def _declined(tmp_path: Path, init: str, methods: str) -> list[tuple[int, str | None]]:
    """(line, not_fixed_reason) of each finding; the file must be left as it was."""
    target = _snippet(tmp_path, init, methods)
    before = target.read_text()
    result = _run(target)
    assert target.read_text() == before and all(not f.fixed for f in result.findings)
    return [(f.line, f.not_fixed_reason) for f in result.findings]


def _lumina2_tree(tmp_path: Path) -> Path:
    """0.42.1's transformer_lumina2.py (main's `Lumina2RotaryPosEmbed` too) and torch_utils.py, as a tree."""
    write_files(find_case("DIF001/lumina2_rope_table_list").input_files(), tmp_path / "tree")
    return tmp_path / "tree" / "diffusers" / "models" / "transformers" / "transformer_lumina2.py"


def test_lumina2s_rope_tables_are_cached_as_a_tuple_by_one_getter(tmp_path: Path) -> None:
    path = _lumina2_tree(tmp_path)
    before = path.read_text()
    result = _run(path)
    [finding] = result.findings
    assert (finding.line, finding.fix_safety, finding.fixed) == (258, FixSafety.UNSAFE, True)
    expected = (
        before.replace(
            "            freqs = self.freqs_cis[i].to(ids.device)\n",
            "            freqs = self._get_device_freqs_cis(ids.device)[i]\n",
        )
        .replace(
            "        return torch.cat(result, dim=-1).to(device)\n\n",
            "        return torch.cat(result, dim=-1).to(device)\n\n"
            "    @lru_cache_unless_export(maxsize=None)\n"
            "    def _get_device_freqs_cis(self, device: torch.device) -> tuple[torch.Tensor, ...]:\n"
            '        """Return freqs_cis, each tensor on the given device."""\n'
            "        return tuple(freqs.to(device) for freqs in self.freqs_cis)\n\n",
        )
        .replace(
            "from ...utils import apply_lora_scale, logging\n",
            "from ...utils import apply_lora_scale, logging\nfrom ...utils.torch_utils import lru_cache_unless_export\n",
        )
    )
    assert path.read_text() == expected
    ast.parse(expected)


def test_a_second_run_over_lumina2_changes_nothing_and_finds_nothing(tmp_path: Path) -> None:
    path = _lumina2_tree(tmp_path)
    _run(path)
    fixed = path.read_text()
    second = _run(path)
    assert path.read_text() == fixed
    assert [f for f in second.findings if f.code == "DIF001"] == [] and not second.errors


def test_the_list_getter_is_applied_only_with_unsafe_fixes(tmp_path: Path) -> None:
    path = _lumina2_tree(tmp_path)
    before = path.read_text()
    [finding] = _run(path, unsafe=False).findings
    assert finding.fix_safety == FixSafety.UNSAFE and not finding.fixed and finding.not_fixed_reason is None
    assert path.read_text() == before


def test_a_list_display_of_tensors_gets_the_getter(tmp_path: Path) -> None:
    target = _snippet(tmp_path, "self.tables = [torch.ones(4), torch.zeros(4)]\n", FORWARD)
    [finding] = _run(target).findings
    assert finding.fixed
    text = target.read_text()
    assert GETTER.lstrip("\n") in text
    assert "        return [self._get_device_tables(x.device)[i] for i in range(len(self.tables))]\n" in text


def test_a_class_with_the_getter_already_just_calls_it(tmp_path: Path) -> None:
    target = _snippet(tmp_path, "self.tables = [torch.ones(4)]\n", GETTER + FORWARD)
    target.write_text("import functools\n" + target.read_text())
    [finding] = _run(target).findings
    assert finding.fixed
    text = target.read_text()
    assert text.count("def _get_device_tables") == 1
    assert "        return [self._get_device_tables(x.device)[i] for i in range(len(self.tables))]\n" in text


def test_a_list_appended_to_after_init_is_reported_without_a_fix(tmp_path: Path) -> None:
    extend = """
    def extend(self, table):
        self.tables.append(table)
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", extend + FORWARD) == [
        (15, "line 12 (`extend`) changes the list: `self.tables.append(table)`")
    ]


def test_an_element_changed_in_place_is_reported_without_a_fix(tmp_path: Path) -> None:
    scale = """
    def scale(self, factor):
        self.tables[0].mul_(factor)
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", scale + FORWARD) == [
        (15, "line 12 (`scale`) changes the list: `self.tables[0].mul_(factor)`")
    ]


def test_a_list_rebound_after_init_is_reported_without_a_fix(tmp_path: Path) -> None:
    reset = """
    def reset(self):
        self.tables = [torch.zeros(4)]
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", reset + FORWARD) == [
        (15, "`self.tables` is reassigned or changed outside `__init__` (line 12)")
    ]


def test_a_move_that_also_casts_is_reported_without_a_fix(tmp_path: Path) -> None:
    cast = """
    def forward(self, x):
        return self.tables[0].to(x.device, x.dtype)
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", cast) == [
        (12, "the call also casts to a runtime dtype; a per-device cache would need the dtype in its key")
    ]


def test_a_list_handed_out_is_reported_without_a_fix(tmp_path: Path) -> None:
    tables = """
    def all_tables(self):
        return self.tables
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", tables + FORWARD) == [
        (15, "line 12 (`all_tables`) uses `self.tables` other than as `self.tables[i].to(device)` or `len(...)`")
    ]


def test_a_list_reached_from_another_class_is_reported_without_a_fix(tmp_path: Path) -> None:
    owner = """

class Owner(nn.Module):
    def __init__(self):
        super().__init__()
        self.rope = Rope()
        self.rope.tables.append(torch.ones(4))
"""
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", FORWARD + owner) == [
        (12, "line 19 reaches `.tables` from outside `Rope`")
    ]


def test_a_helper_that_keeps_the_list_it_returns_is_reported_without_a_fix(tmp_path: Path) -> None:
    helper = """
    def _build(self) -> list[torch.Tensor]:
        tables = []
        tables.append(torch.ones(4))
        self.first = tables
        return tables
    """
    reason = "`_build` may return a list something else holds; only `x = []`, `x.append(...)`, `return x` is"
    assert _declined(tmp_path, "self.tables = self._build()\n", helper + FORWARD) == [(18, reason)]


def test_a_list_from_an_unannotated_helper_is_not_reported(tmp_path: Path) -> None:
    helper = """
    def _build(self):
        return [torch.ones(4)]
    """
    assert _declined(tmp_path, "self.tables = self._build()\n", helper + FORWARD) == []


def test_a_registered_module_list_is_not_reported(tmp_path: Path) -> None:
    assert _declined(tmp_path, "self.tables = nn.ModuleList([nn.Linear(4, 4)])\n", FORWARD) == []


def test_an_element_moved_outside_hot_code_is_not_reported(tmp_path: Path) -> None:
    cold = """
    def export_tables(self, device):
        return self.tables[0].to(device)
    """
    assert _declined(tmp_path, "self.tables = [torch.ones(4)]\n", cold) == []


def test_a_list_whose_getter_name_the_tensor_getter_takes_is_left_to_the_hand(tmp_path: Path) -> None:
    forward = """
    def forward(self, x):
        return self.pos_tables.to(x.device) * self.neg_tables.to(x.device) * self.tables[0].to(x.device)
    """
    init = "self.pos_tables = torch.ones(4)\nself.neg_tables = torch.ones(4)\nself.tables = [torch.ones(4)]\n"
    target = _snippet(tmp_path, init, forward)
    result = _run(target)
    reason = "the getter `_get_device_tables` may be the one the class's tensor attributes get; cache it by hand"
    # pos_tables and neg_tables share `_get_device_tables` (a tuple); the list keeps its copies.
    assert [(f.column, f.fixed, f.not_fixed_reason) for f in result.findings] == [
        (15, True, None),
        (46, True, None),
        (55, False, reason),  # where it stands after the fix
    ]
    assert target.read_text().count("def _get_device_tables(") == 1
