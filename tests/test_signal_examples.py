"""Issue 34's examples of noise, on the installed diffusers (0.42.1): each shown, hidden or reworded as it should be.

One check over the files that hold them, in a copy of the installed tree whose pipelines are those of these
files and those that run their models; the rest of the copy is read for what it says about them (which
pipelines run which models per step: the same there as in the whole tree, at a third of the facts read).
"""

from __future__ import annotations

import pytest
from installed_trees import copy_installed_diffusers

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import Finding, Frequency, Placement

FILES = (
    "pipelines/deepfloyd_if/safety_checker.py",
    "models/transformers/transformer_wan_animate_2.py",
    "models/transformers/transformer_hunyuan_video15.py",
    "models/transformers/transformer_hunyuanimage.py",
    "pipelines/ledits_pp/pipeline_leditspp_stable_diffusion.py",
    "pipelines/hunyuan_image/pipeline_hunyuanimage.py",
    "models/autoencoders/autoencoder_kl.py",
    "pipelines/allegro/pipeline_allegro.py",
    "pipelines/stable_diffusion/pipeline_stable_diffusion_inpaint.py",
    "pipelines/controlnet/pipeline_controlnet_inpaint.py",
)


PIPELINES = (
    "allegro",
    "controlnet",
    "deepfloyd_if",
    "hunyuan_image",
    "hunyuan_video1_5",
    "ledits_pp",
    "stable_diffusion",
    "wan",
)


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[Finding]:
    root = copy_installed_diffusers(tmp_path_factory.mktemp("installed"), PIPELINES) / "diffusers"
    return run(RunOptions(paths=tuple(root / path for path in FILES), mode=Mode.CHECK, jobs=1)).findings


def _found(findings: list[Finding], path: str, code: str, text: str) -> list[Finding]:
    found = [f for f in findings if f.path.endswith(path) and f.code == code and text in f.message]
    assert found, f"no {code} finding with {text!r} in {path}"
    return found


def test_a_safety_checker_read_costs_once_per_generation_and_is_not_shown(findings: list[Finding]) -> None:
    (read,) = _found(findings, "deepfloyd_if/safety_checker.py", "DIF007", "`watermark_detected.tolist()`")
    assert read.cost is not None and read.cost.frequency is Frequency.GENERATION
    assert "the host waits for the device once per generation (`IFSafetyChecker.forward`: " in read.message
    assert not read.shown_by_default


def test_dif004_self_calls_measured_no_effect_and_are_not_shown(findings: list[Finding]) -> None:
    self_calls = _found(findings, "autoencoder_kl.py", "DIF004", "read off `self._decode(...)`")
    assert all(f.cost is not None and f.cost.frequency is Frequency.NO_EFFECT for f in self_calls)
    assert not any(f.shown_by_default for f in self_calls)


def test_dif005_costs_one_lookup_per_generation_and_is_not_shown(findings: list[Finding]) -> None:
    (lookup,) = _found(findings, "pipelines/allegro/pipeline_allegro.py", "DIF005", "looks up its step index")
    assert lookup.cost is not None and lookup.cost.frequency is Frequency.GENERATION
    assert not lookup.shown_by_default


def test_the_ledits_zero_noise_branches_run_at_the_last_step_only(findings: list[Finding]) -> None:
    branches = _found(findings, "pipeline_leditspp_stable_diffusion.py", "DIF001", "`torch.tensor([0.0]).to(")
    assert len(branches) == 3
    assert all(f.cost is not None and f.cost.frequency is Frequency.LAST_STEP for f in branches)
    assert not any(f.shown_by_default for f in branches)


def test_a_last_step_branch_says_so_instead_of_every_step(findings: list[Finding]) -> None:
    (built,) = _found(findings, "pipelines/hunyuan_image/pipeline_hunyuanimage.py", "DIF006", "torch.tensor([0.0]")
    assert "at the last denoising step only" in built.message and "every denoising step" not in built.message
    assert not built.shown_by_default


def test_a_grid_size_placed_on_the_device_only_by_its_annotation_has_no_known_placement(
    findings: list[Finding],
) -> None:
    (read,) = _found(findings, "transformer_wan_animate_2.py", "DIF007", "`reference_grid[0][axis].item()`")
    assert read.placement is Placement.UNKNOWN
    assert "placement unknown: `reference_grid[0][axis]` is on the device only as far as a type annotation" in read.message
    assert not read.shown_by_default


def test_a_value_used_as_a_size_is_not_told_to_stay_a_tensor(findings: list[Finding]) -> None:
    (read,) = _found(findings, "transformer_wan_animate_2.py", "DIF007", "`grid_sizes[0].tolist()`")
    assert "is used as a size" in read.message and "keep it on the device" not in read.message


def test_token_reorders_are_not_told_to_use_torch_where(findings: list[Finding]) -> None:
    reorders = [
        *_found(findings, "transformer_hunyuan_video15.py", "DIF007", "selects a data-dependent number"),
        *_found(findings, "transformer_hunyuanimage.py", "DIF007", "selects a data-dependent number"),
    ]
    assert len(reorders) == 20
    assert not any("use `torch.where" in f.message for f in reorders)
    assert all("a reorder or a gather" in f.message for f in reorders)


def test_the_two_reorder_statements_are_two_patterns_across_both_models(findings: list[Finding]) -> None:
    video = _found(findings, "transformer_hunyuan_video15.py", "DIF007", "selects a data-dependent number")
    image = _found(findings, "transformer_hunyuanimage.py", "DIF007", "selects a data-dependent number")
    assert len({f.pattern for f in [*video, *image]}) == 2


def test_the_inpaint_noise_timestep_copies_are_one_pattern(findings: list[Finding]) -> None:
    copies = [
        *_found(findings, "pipeline_stable_diffusion_inpaint.py", "DIF006", "`torch.tensor([noise_timestep])`"),
        *_found(findings, "pipeline_controlnet_inpaint.py", "DIF006", "`torch.tensor([noise_timestep])`"),
    ]
    assert len(copies) == 2 and copies[0].pattern == copies[1].pattern
    assert all(f.shown_by_default for f in copies)
