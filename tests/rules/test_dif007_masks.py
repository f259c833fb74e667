"""DIF007: truth tests of device masks in LLaDA2's refinement loop and BlockRefinementScheduler.step.

The real files come from the installed 0.42.1, whose copies of both equal main's at 58eb52c080 (but for
LLaDA2 `__call__`'s return annotation).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from release_files import installed_copy

from codemods.engine import Mode, RunOptions, run

LLADA2 = "pipelines/llada2/pipeline_llada2.py"
BLOCK_REFINEMENT = "schedulers/scheduling_block_refinement.py"


def _reported(path: Path) -> dict[str, str]:
    """The stripped source line of each DIF007 finding, with its message."""
    lines = path.read_text().splitlines()
    result = run(RunOptions(paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    assert not result.errors
    return {f"{f.line}: {lines[f.line - 1].strip()}": f.message for f in result.findings}


def _snippet_messages(tmp_path: Path, code: str) -> list[tuple[int, str]]:
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(code))
    result = run(RunOptions(paths=(target,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    return [(f.line, f.message) for f in result.findings]


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
        "`final_transfer.any()` tests a device tensor's truth in Python: the host waits for the device every call "
        "of `step`; use `torch.where`, or decide once, outside the per-call code; the guarded masked copy writes "
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


def test_a_callbacks_replacement_lives_where_its_default_does(tmp_path: Path) -> None:
    code = """
    import torch

    class Pipe(DiffusionPipeline):
        def __init__(self, model, scheduler):
            self.register_modules(model=model, scheduler=scheduler)

        def __call__(self, n: int, mask_token_id: int, callback_on_step_end=None):
            device = self._execution_device
            x = torch.full((1, n), mask_token_id, device=device)
            should_continue = True
            while should_continue:
                done = (x == mask_token_id).any()
                if done:
                    pass
                x = self.scheduler.step(self.model(x), 0, x).prev_sample
                callback_outputs = callback_on_step_end(self, 0, 0, {"x": x})
                x = callback_outputs.pop("x", x)
    """
    [(line, message)] = _snippet_messages(tmp_path, code)
    assert line == 14 and message.startswith("`done` tests a device tensor's truth in Python")


def test_cpu_masks_and_python_bools_in_a_step_loop_are_not_reported(tmp_path: Path) -> None:
    code = """
    import torch

    class Pipe(DiffusionPipeline):
        def __call__(self, n: int, mask_token_id: int, editing: bool):
            x = torch.full((1, n), mask_token_id, device="cpu")
            should_continue = True
            while should_continue:
                masks_remaining = (x == mask_token_id).any()
                if not masks_remaining and not editing:
                    break
                output = self.scheduler.step(self.model(x), 0, x)
                should_continue = editing
    """
    assert _snippet_messages(tmp_path, code) == []


def test_a_guard_whose_where_keeps_another_tensor_gets_no_can_go_note(tmp_path: Path) -> None:
    code = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor, new: torch.Tensor, other: torch.Tensor):
            mask = x > 0
            if mask.any():
                x = torch.where(mask, new, other)
            return x
    """
    [(line, message)] = _snippet_messages(tmp_path, code)
    assert line == 7 and message.endswith("use `torch.where`, or decide once, outside the per-call code")
