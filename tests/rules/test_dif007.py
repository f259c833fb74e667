"""DIF007: what counts as a host sync in hot code, and what is left to other rules or alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from release_files import installed_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers


def _messages(tmp_path: Path, code: str) -> list[tuple[int, str]]:
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(code))
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    return [(f.line, f.message) for f in result.findings]


def test_a_scheduler_sigma_left_on_the_device_is_left_to_dif002(tmp_path: Path) -> None:
    code = """
    import torch

    class HeunScheduler(SchedulerMixin):
        def set_timesteps(self, n, device=None):
            self.sigmas = torch.linspace(1, 0, n).to(device=device)

        def step(self, model_output: torch.Tensor, timestep, sample: torch.Tensor, s_tmin: float = 0.0):
            sigma = self.sigmas[self.step_index]
            return sample if s_tmin <= sigma else model_output
    """
    assert _messages(tmp_path, code) == []


def test_a_timestep_comparison_in_the_loop_says_every_denoising_step(tmp_path: Path) -> None:
    code = """
    class Pipe(DiffusionPipeline):
        def __call__(self, n: int, boundary: float):
            device = self._execution_device
            timesteps, n = retrieve_timesteps(self.scheduler, n, device)
            for t in timesteps:
                if t >= boundary:
                    pass
    """
    ((line, message),) = _messages(tmp_path, code)
    assert line == 7
    assert message == (
        "`t >= boundary` compares a device tensor in Python (`t` is on the device): the host waits for the device "
        "every denoising step; compare a CPU copy made once before the loop (e.g. of the timesteps), or use "
        "`torch.where`"
    )


def test_a_read_in_a_forward_says_which_model_and_that_no_pipeline_tells_how_often(tmp_path: Path) -> None:
    code = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor, mask: torch.Tensor):
            lengths = mask.sum(dim=1).tolist()
            return x
    """
    ((_, message),) = _messages(tmp_path, code)
    assert message.startswith(
        "`mask.sum(dim=1).tolist()` copies a device tensor to the host: the host waits for the device every forward "
        "of a model run once per denoising step (`Block`; no pipeline in the run shows how often); "
    )


def test_a_python_int_index_and_set_up_code_are_not_reported(tmp_path: Path) -> None:
    code = """
    import torch

    class Pipe(DiffusionPipeline):
        def __call__(self, n: int, latents: torch.Tensor):
            device = self._execution_device
            scale = torch.ones(1, device=device).item()
            timesteps, n = retrieve_timesteps(self.scheduler, n, device)
            for i, t in enumerate(timesteps):
                if i == len(timesteps) - 1:
                    pass
    """
    assert _messages(tmp_path, code) == []


def test_ledits_timesteps_kept_on_the_cpu_are_not_syncs(tmp_path: Path) -> None:
    # LEDITS++ calls `set_timesteps` without a device: `if t <= 800:` and `t_to_idx[int(t)]` read CPU tensors.
    path = installed_copy("pipelines/ledits_pp/pipeline_leditspp_stable_diffusion.py", tmp_path)
    lines = path.read_text().splitlines()
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    reported = {lines[f.line - 1].strip() for f in result.findings}
    assert "if t <= 800:" in {line.strip() for line in lines}
    assert not any("t <= 800" in line or "int(t)" in line for line in reported)


def test_a_read_of_values_the_host_built_says_so(tmp_path: Path) -> None:
    code = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, xs: list[torch.Tensor], device: torch.device):
            lens = torch.tensor([x.shape[0] for x in xs], device=device)
            return int(lens.max().item())
    """
    [(line, message)] = _messages(tmp_path, code)
    assert line == 7 and message.endswith(
        "; the host built these values itself (line 6: `torch.tensor([x.shape[0] for x in xs], device=device)`): "
        "use the Python values instead"
    )


def test_skyreels_update_mask_built_on_the_cpu_is_not_a_sync(tmp_path: Path) -> None:
    # `generate_timestep_matrix` builds `step_update_mask` from `torch.zeros(num_blocks, dtype=torch.long)`
    # rows (no device): `update_mask_i[idx].item()` in the per-block loop reads a CPU tensor.
    path = installed_copy("pipelines/skyreels_v2/pipeline_skyreels_v2_diffusion_forcing.py", tmp_path)
    lines = path.read_text().splitlines()
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    assert "if update_mask_i[idx].item():" in {line.strip() for line in lines}
    assert not any("update_mask_i[idx].item()" in lines[f.line - 1] for f in result.findings)


def test_a_per_block_item_of_a_device_mask_is_reported(tmp_path: Path) -> None:
    # The same loop shape as SkyReels-V2's, with the mask made on the device: a sync per step and block.
    code = """
    import torch

    class Pipe(DiffusionPipeline):
        def __call__(self, n: int, blocks: int):
            device = self._execution_device
            timesteps, n = retrieve_timesteps(self.scheduler, n, device)
            step_update_mask = torch.ones((n, blocks), dtype=torch.bool, device=device)
            for i, t in enumerate(timesteps):
                update_mask_i = step_update_mask[i]
                for idx in range(blocks):
                    if update_mask_i[idx].item():
                        pass
    """
    [(line, message)] = _messages(tmp_path, code)
    assert line == 12 and message.startswith("`update_mask_i[idx].item()` copies a device value to the host")


def test_ledits_per_step_cpu_copies_of_guidance_masks_are_reported(tmp_path: Path) -> None:
    # The masks derive from the UNet's `.sample`; the loop's later `noise_pred = ...` no longer hides that,
    # since the `.sample` binding at the top of each iteration kills it. The attention mask is thresholded from
    # `self.smoothing(...)`, a convolution with the weight `LeditsGaussianSmoothing` moved to the pipeline's device;
    # the guidance kept per step starts as `torch.zeros(..., device=self.device)`, the pipeline's accelerator.
    path = installed_copy("pipelines/ledits_pp/pipeline_leditspp_stable_diffusion.py", tmp_path)
    lines = path.read_text().splitlines()
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    reported = [lines[f.line - 1].strip() for f in result.findings if "copies a device tensor" in f.message]
    assert reported == [
        "self.activation_mask[i, c] = attn_mask.detach().cpu()",
        "self.activation_mask[i, c] = intersect_mask.detach().cpu()",
        "torch.where(",
        "self.sem_guidance[i] = noise_guidance_edit.detach().cpu()",
    ]


def test_the_precomputed_schedule_and_dif005s_begin_index_both_go_before_one_with(tmp_path: Path) -> None:
    # ZImageControlNetPipeline (0.42.1): DIF005 and DIF007 each insert before the loop's `with`.
    path = installed_copy("pipelines/z_image/pipeline_z_image_controlnet.py", tmp_path)
    installed_copy("schedulers/scheduling_flow_match_euler_discrete.py", tmp_path)
    options = RunOptions(context=installed_diffusers(), paths=(tmp_path,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF005", "DIF007"), jobs=1)
    result = run(options)
    assert not result.errors
    assert {f.code for f in result.findings if f.fixed} == {"DIF005", "DIF007"}
    fixed = path.read_text()
    loop = fixed.index("        with self.progress_bar(total=num_inference_steps) as progress_bar:")
    made, begin = (
        fixed.index("_precomputed_t_norms = ((1000 - timesteps) / 1000).tolist()"),
        fixed.index("set_begin_index(0)"),
    )
    assert made < begin < loop
    assert "t_norm = _precomputed_t_norms[i]" in fixed and "timestep[0].item()" not in fixed
    run(options)
    assert path.read_text() == fixed


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
    [(line, message)] = _messages(tmp_path, code)
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
    assert _messages(tmp_path, code) == []


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
    [(line, message)] = _messages(tmp_path, code)
    assert line == 7 and message.endswith(
        "use `torch.where`, or decide once, outside the per-call code; placement unknown: `mask.any()` is on the "
        "device only as far as a type annotation says; nothing here shows where it was made or moved"
    )


def _reported_lines(module: str, tmp_path: Path) -> dict[str, str]:
    """The stripped source line of each DIF007 finding in an installed module, with its message."""
    path = installed_copy(module, tmp_path)
    lines = path.read_text().splitlines()
    result = run(RunOptions(paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    return {lines[f.line - 1].strip(): f.message for f in result.findings}


def test_an_element_of_a_sigmas_copy_moved_to_the_latents_device_is_read_every_step(tmp_path: Path) -> None:
    # `sigmas_current = self.scheduler.sigmas.to(device=latents_packed.device)` before the loop.
    reported = _reported_lines("pipelines/ltx/pipeline_ltx_i2v_long_multi_prompt.py", tmp_path)
    message = reported["sigma_val = float(sigmas_current[i].item())"]
    assert message.startswith(
        "`sigmas_current[i].item()` copies a device value to the host: the host waits for the device every denoising step"
    )


def test_a_timestep_from_get_timesteps_slicing_the_schedule_handed_in_is_on_the_device(tmp_path: Path) -> None:
    # CogVideoX video-to-video: `get_timesteps(n, timesteps, strength, device)` returns `timesteps[t_start * order :]`.
    reported = _reported_lines("pipelines/cogvideo/pipeline_cogvideox_video2video.py", tmp_path)
    (message,) = [m for line, m in reported.items() if "t.item()" in line]
    assert message.startswith(
        "`t.item()` copies a device value to the host: the host waits for the device every denoising step"
    )


def test_a_schedule_set_on_the_pipelines_own_execution_device_getter_is_on_the_device(tmp_path: Path) -> None:
    # Cosmos 3 Omni: `device = self._get_execution_device()`, then `set_timesteps(n, device=device)`.
    reported = _reported_lines("pipelines/cosmos/pipeline_cosmos3_omni.py", tmp_path)
    assert reported["timestep = t.item()"].startswith(
        "`t.item()` copies a device value to the host: the host waits for the device every denoising step"
    )
