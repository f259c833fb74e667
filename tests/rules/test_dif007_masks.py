"""DIF007: truth tests of device masks in LLaDA2's refinement loop and BlockRefinementScheduler.step.

The real files come from the installed 0.42.1, whose copies of both equal main's at 58eb52c080 (but for
LLaDA2 `__call__`'s return annotation).
"""

from __future__ import annotations

from pathlib import Path

from release_files import installed_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers

LLADA2 = "pipelines/llada2/pipeline_llada2.py"
BLOCK_REFINEMENT = "schedulers/scheduling_block_refinement.py"


def _reported(path: Path) -> dict[str, str]:
    """The stripped source line of each DIF007 finding, with its message."""
    lines = path.read_text().splitlines()
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    assert not result.errors
    return {f"{f.line}: {lines[f.line - 1].strip()}": f.message for f in result.findings}


def test_llada2_reports_each_per_pass_mask_test_at_the_test(tmp_path: Path) -> None:
    # `masks_remaining = (block_tokens == mask_token_id).any()` builds a device bool: no sync until an `if`
    # reads it, which the loop does twice per pass (before the model call and after the scheduler step).
    reported = _reported(installed_copy(LLADA2, tmp_path))
    assert [line for line in reported if "masks_remaining" in line] == [
        "462: if not masks_remaining:",
        "520: if masks_remaining:",
    ]
    assert reported["462: if not masks_remaining:"] == (
        "`masks_remaining` tests a device tensor's truth in Python: the host waits for the device every "
        "denoising step; use `torch.where`, or decide once before the loop"
    )


def test_llada2_scheduler_output_mask_guarding_a_no_op_where_says_the_test_can_go(tmp_path: Path) -> None:
    reported = _reported(installed_copy(LLADA2, tmp_path))
    assert reported["496: if final_transfer.any():"] == (
        "`final_transfer.any()` tests a device tensor's truth in Python: the host waits for the device every "
        "denoising step; use `torch.where`, or decide once before the loop; with `final_transfer` all False the "
        "guarded `block_x[:, -block_length:] = torch.where(...)` writes back what is there, so the test can simply go"
    )


def test_llada2_once_per_block_and_python_bool_tests_are_not_reported(tmp_path: Path) -> None:
    reported = _reported(installed_copy(LLADA2, tmp_path))
    assert sorted(reported) == [
        "462: if not masks_remaining:",
        "493: if eos_early_stop and finished.any():",
        "496: if final_transfer.any():",
        "520: if masks_remaining:",
    ]


def test_block_refinement_step_masked_copy_guard_is_reported_with_its_where(tmp_path: Path) -> None:
    reported = _reported(installed_copy(BLOCK_REFINEMENT, tmp_path))
    assert reported["348: if final_transfer.any():"] == (
        "`final_transfer.any()` tests a device tensor's truth in Python: the host waits for the device every "
        "denoising step (in `BlockRefinementScheduler.step`); use `torch.where`, or decide once, outside the per-call code; the guarded masked copy writes "
        "nothing when `final_transfer` is all False, and its mask read syncs as well: `prev_sample = "
        "torch.where(final_transfer, sampled_tokens, prev_sample)` makes the copy without either sync, for tensors "
        "of the mask's shape"
    )


def test_block_refinement_step_reads_of_device_values_are_reported(tmp_path: Path) -> None:
    # `sample: torch.LongTensor` makes `active_block` a device mask; the transfer schedule is on the device
    # `set_timesteps` was given (`device if device is not None else "cpu"`); `timestep: int | torch.Tensor`
    # may be a Python int, so `int(timestep.item())` is left alone.
    reported = _reported(installed_copy(BLOCK_REFINEMENT, tmp_path))
    assert sorted(reported) == [
        "309: if masks_remaining and self._transfer_schedule is not None:",
        "311: num_to_transfer = int(self._transfer_schedule[clamped_step].item())",
        "321: if high_conf.sum().item() >= num_to_transfer:",
        "324: k = min(num_to_transfer, int(active_block[b].sum().item()))",
        "348: if final_transfer.any():",
    ]
