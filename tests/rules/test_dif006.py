"""DIF006: which factory-then-`.to(device)` rewrites are safe, and what is only reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from release_files import installed_copy, release_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import FixSafety
from codemods.project.index import installed_diffusers

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
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF006",), jobs=1))
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
    assert "builds a tensor from Python values and copies it to the device every forward of a model" in finding.message


def _run_release(version: str, relative: str, tmp_path: Path, select: tuple[str, ...] = ("DIF006",)):
    path = release_copy(version, relative, tmp_path)
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.WRITE, unsafe_fixes=True, select=select, jobs=1))
    return path, result


def test_unipc_tensors_rebuilt_every_step_are_dif006s_not_dif002s(tmp_path: Path) -> None:
    path, result = _run_release(
        "0.16.1", "schedulers/scheduling_unipc_multistep.py", tmp_path, select=("DIF002", "DIF006")
    )
    lines = path.read_text().splitlines()
    rebuilt = [f for f in result.findings if "torch.tensor(rks, device=device)" in lines[f.line - 1]]
    assert len(rebuilt) == 2 and {f.code for f in rebuilt} == {"DIF006"}
    assert {f.code for f in result.findings} == {"DIF006"}


def test_controlnet_guess_mode_scales_are_created_on_the_device(tmp_path: Path) -> None:
    path, result = _run_release("0.16.1", "models/controlnet.py", tmp_path)

    [finding] = result.findings
    assert finding.fixed and finding.fix_safety is FixSafety.UNSAFE  # logspace may round otherwise on the device
    assert "combined with device tensors (`mid_block_res_sample *= scales[-1]`, line 565)" in finding.message
    assert "                -1, 0, len(down_block_res_samples) + 1, device=controlnet_cond.device\n" in path.read_text()


def test_guess_mode_scales_made_on_the_device_are_left_alone(tmp_path: Path) -> None:
    # diffusers 0.25.1 carries the maintainers' fix (#3313): `torch.logspace(..., device=sample.device)`.
    _, result = _run_release("0.25.1", "models/controlnet.py", tmp_path)
    assert result.findings == []


def test_an_optional_tensor_parameter_is_never_the_device(tmp_path: Path) -> None:
    target = tmp_path / "block.py"
    target.write_text(
        textwrap.dedent(
            """
            import torch


            class Block(torch.nn.Module):
                def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
                    y = self.proj(x)
                    scales = torch.linspace(0, 1, 4)
                    y *= scales[-1]
                    return y
            """
        )
    )
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF006",), jobs=1))
    [finding] = result.findings
    assert finding.fixed and "torch.linspace(0, 1, 4, device=x.device)" in target.read_text()


def _omnigen_rope(tmp_path: Path) -> Path:
    # The whole module as released: OmniGenSuScaledRotaryEmbedding keeps `long_factor`/`short_factor`, two lists
    # from `rope_scaling`, and builds a tensor from one of them on every forward.
    return installed_copy("models/transformers/transformer_omnigen.py", tmp_path)


def test_omnigens_rope_factors_are_cached_per_device(tmp_path: Path) -> None:
    path = _omnigen_rope(tmp_path)
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF006",), jobs=1))
    assert [(f.line, f.fix_safety, f.fixed) for f in result.findings] == [
        (156, FixSafety.UNSAFE, True),
        (158, FixSafety.UNSAFE, True),
    ]
    assert "            ext_factors = self._get_device_long_factor(hidden_states.device)\n" in path.read_text()


def test_a_factor_list_extended_after_init_is_not_cached(tmp_path: Path) -> None:
    path = _omnigen_rope(tmp_path)
    text = path.read_text()
    last_of_init = "        self.original_max_position_embeddings = original_max_position_embeddings\n"
    assert text.count(last_of_init) == 1
    extend = "\n    def extend(self, factors):\n        self.long_factor.extend(factors)\n"
    path.write_text(text.replace(last_of_init, last_of_init + extend))
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, unsafe_fixes=True, select=("DIF006",), jobs=1))
    long_factor, short_factor = result.findings
    assert (long_factor.line, long_factor.fix) == (159, None)
    assert long_factor.not_fixed_reason == "line 154 reads `self.long_factor` other than to copy it, and may change it"
    assert (short_factor.line, short_factor.fix_safety) == (161, FixSafety.UNSAFE)  # still only copied


ROPE = """
import torch


class Rope(torch.nn.Module):
    def __init__(self, factors):
        super().__init__()
        self.factors = {value}

    def forward(self, x: torch.Tensor):
        scale = {build}
        {after}
        return x * scale
"""


@pytest.mark.parametrize(
    ("value", "build", "after", "reason"),
    [
        (
            "factors",
            "torch.tensor(self.factors, dtype=x.dtype, device=x.device)",
            "pass",
            "the dtype is not a constant `torch.<dtype>`; the cache would need it in its key",
        ),
        (
            "factors",
            "torch.tensor(self.factors, requires_grad=True, device=x.device)",
            "pass",
            "the call passes `requires_grad`; only `dtype=` and `device=` are cached",
        ),
        (
            "list(factors)",
            "torch.tensor(self.factors, device=x.device)",
            "pass",
            "`self.factors` is set from `list(factors)` (line 8), not provably constant",
        ),
        (
            "factors",
            "torch.tensor(self.factors, device=x.device)",
            "self.factors = [2.0]",
            "line 12 assigns, extends or deletes `self.factors`",
        ),
        (
            "factors",
            "torch.tensor(self.factors, device=x.device)",
            "scale.mul_(2)",
            "line 12 changes the built tensor in place; a cached tensor would keep the change",
        ),
        (
            "factors",
            "torch.tensor(self.factors, device=x.device)",
            "self.last_scale = scale",  # kept on the module: any later change would reach the cache
            "line 12 changes the built tensor in place; a cached tensor would keep the change",
        ),
        (
            "[1.0, 2.0]",
            "torch.as_tensor(self.factors, device=x.device)",
            "pass",
            "only `torch.tensor(self.<attribute>, ...)` is cached per device",
        ),
    ],
)
def test_a_build_not_proven_constant_is_reported_with_the_reason(
    tmp_path: Path, value: str, build: str, after: str, reason: str
) -> None:
    target = tmp_path / "rope.py"
    target.write_text(ROPE.format(value=value, build=build, after=after))
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.CHECK, unsafe_fixes=True, select=("DIF006",), jobs=1))
    [finding] = result.findings
    assert (finding.fix, finding.not_fixed_reason) == (None, reason)


def test_an_init_argument_rebound_before_it_is_kept_is_not_provably_constant(tmp_path: Path) -> None:
    target = tmp_path / "rope.py"
    source = ROPE.format(value="factors", build="torch.tensor(self.factors, device=x.device)", after="pass")
    target.write_text(
        source.replace("        super().__init__()\n", "        super().__init__()\n        factors = self.inv_freq\n")
    )
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.CHECK, unsafe_fixes=True, select=("DIF006",), jobs=1))
    [finding] = result.findings
    assert (finding.fix, finding.not_fixed_reason) == (
        None,
        "`self.factors` is set from `factors` (line 9), not provably constant",
    )
