"""Where values live: the one-sided device/host/Python answers DIF002, DIF005-DIF007 build on."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.placement.class_places import places_at
from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.place import Place
from codemods.source import SourceFile


def _place_of(code: str, expression: str, line_text: str | None = None) -> Place:
    """The place of the first `expression` on the line containing `line_text` (default: the last use)."""
    source = SourceFile("snippet.py", textwrap.dedent(code))
    matches = []
    for node, ancestors in source.walk_lines(range(1, len(source.lines) + 1)):
        on_line = line_text is None or line_text in source.lines[getattr(node, "lineno", 1) - 1]
        if isinstance(node, ast.expr) and ast.unparse(node) == expression and on_line:
            matches.append((node, ancestors))
    node, ancestors = matches[-1]
    places = places_at(source, ancestors)
    assert places is not None
    return places.place(node)


PIPELINE = """
import torch


class Pipe(DiffusionPipeline):
    def __init__(self, transformer: Transformer, scheduler: FlowMatchEulerDiscreteScheduler):
        self.register_modules(transformer=transformer, scheduler=scheduler)

    def __call__(self, num_inference_steps: int = 50, timesteps: list[int] | None = None, boundary: float = 0.5):
        device = self._execution_device
        timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device, timesteps)
        timesteps_cpu = timesteps.cpu()
        for i, t in enumerate(timesteps):
            noise_pred = self.transformer(latents, timestep=t.expand(2), return_dict=False)[0]
            use_first = t >= boundary
            use_cpu = timesteps_cpu[i] >= boundary
            latents = self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]
"""


def test_the_loop_timestep_lives_where_retrieve_timesteps_put_it() -> None:
    # The `timesteps` parameter (a list) is rebound before the loop: only that binding reaches it.
    assert _place_of(PIPELINE, "t", "use_first") is Place.DEVICE


def test_a_cpu_copy_of_the_timesteps_is_on_the_host() -> None:
    assert _place_of(PIPELINE, "timesteps_cpu[i]") is Place.HOST


def test_the_enumerate_index_and_python_parameters_are_not_tensors() -> None:
    assert _place_of(PIPELINE, "i", "use_cpu") is Place.PYTHON
    assert _place_of(PIPELINE, "boundary", "use_first") is Place.PYTHON


def test_a_component_output_lives_on_the_device() -> None:
    assert _place_of(PIPELINE, "noise_pred", "step") is Place.DEVICE


def test_a_cpu_timestep_device_on_another_backend_does_not_hide_the_cuda_path() -> None:
    code = """
    class Pipe(DiffusionPipeline):
        def __call__(self, num_inference_steps):
            device = self._execution_device
            if XLA_AVAILABLE:
                timestep_device = "cpu"
            else:
                timestep_device = device
            timesteps, n = retrieve_timesteps(self.scheduler, num_inference_steps, timestep_device)
            for t in timesteps:
                flag = t > 3
    """
    assert _place_of(code, "t", "flag") is Place.DEVICE


MODULE = """
import torch
from torch import nn


class Embed(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))
        self.proj = nn.Linear(dim, dim)
        self.table = torch.arange(dim)

    def forward(self, x: torch.Tensor, size: int, timestep: torch.Tensor | float):
        host = torch.arange(size)
        moved = host.to(x.device)
        made = torch.arange(size, device=x.device)
        projected = self.proj(x)
        values = x.tolist()
        n = x.shape[0]
        return self.scale, self.table, timestep
"""


def test_tensor_parameters_buffers_and_submodule_outputs_are_on_the_device() -> None:
    assert _place_of(MODULE, "x", "tolist") is Place.DEVICE
    assert _place_of(MODULE, "self.scale") is Place.DEVICE
    assert _place_of(MODULE, "self.proj(x)") is Place.DEVICE


def test_factories_without_a_device_are_on_the_host_until_moved() -> None:
    assert _place_of(MODULE, "torch.arange(size)") is Place.HOST
    assert _place_of(MODULE, "host.to(x.device)") is Place.DEVICE
    assert _place_of(MODULE, "torch.arange(size, device=x.device)") is Place.DEVICE


def test_a_tensor_built_once_in_init_stays_on_the_host() -> None:
    assert _place_of(MODULE, "self.table") is Place.HOST


def test_reads_and_shapes_are_python_values() -> None:
    assert _place_of(MODULE, "x.tolist()") is Place.PYTHON
    assert _place_of(MODULE, "x.shape[0]") is Place.PYTHON


def test_a_parameter_that_may_be_a_number_is_unknown() -> None:
    assert _place_of(MODULE, "timestep", "return") is Place.UNKNOWN


SCHEDULER = """
import numpy as np
import torch


class MyScheduler(SchedulerMixin):
    def set_timesteps(self, num_inference_steps, device=None):
        sigmas = np.linspace(1, 0, num_inference_steps)
        sigmas = torch.from_numpy(sigmas).to(dtype=torch.float32, device=device)
        self.timesteps = sigmas * 1000
        self.sigmas = torch.cat([sigmas, torch.zeros(1, device=sigmas.device)])
        self.sigmas = self.sigmas.to("cpu")

    def step(self, model_output: torch.Tensor, timestep, sample: torch.Tensor):
        sigma = self.sigmas[self.step_index]
        t = self.timesteps[self.step_index]
        return sample + sigma * model_output
"""


def test_a_scheduler_keeps_what_set_timesteps_leaves() -> None:
    assert _place_of(SCHEDULER, "sigma", "return") is Place.HOST
    assert _place_of(SCHEDULER, "self.timesteps[self.step_index]") is Place.DEVICE


def test_a_local_reassigned_from_numpy_to_the_device_is_followed_in_order() -> None:
    assert _place_of(SCHEDULER, "sigmas", "self.timesteps = ") is Place.DEVICE


PREPARED = """
import torch


class Pipe(DiffusionPipeline):
    def prepare_latents(self, batch_size, device, on_host):
        latents = torch.randn(batch_size, 4, device=device)
        mask = torch.zeros(batch_size, device=device, dtype=torch.bool)
        if on_host:
            return latents, torch.zeros(batch_size, dtype=torch.bool)
        return latents, mask

    def __call__(self, batch_size: int, on_host: bool):
        device = self._execution_device
        latents, mask = self.prepare_latents(batch_size, device, on_host)
        kept = latents[mask]
"""


def test_an_item_every_return_of_a_method_makes_on_the_device_is_on_the_device() -> None:
    assert _place_of(PREPARED, "latents", "kept") is Place.DEVICE


def test_an_item_one_return_makes_on_the_host_is_unknown() -> None:
    assert _place_of(PREPARED, "mask", "kept") is Place.UNKNOWN


def test_the_device_of_an_unannotated_input_of_a_model_method_is_the_device() -> None:
    code = """
    import torch


    class Patchify(torch.nn.Module):
        def patchify(self, hidden_states):
            sizes = torch.tensor([2, 2], device=hidden_states.device)
    """
    assert _place_of(code, "torch.tensor([2, 2], device=hidden_states.device)") is Place.DEVICE


def test_the_sample_of_a_model_output_lives_on_the_device() -> None:
    code = """
    class Pipe(DiffusionPipeline):
        def __init__(self, unet: UNet2DConditionModel):
            self.register_modules(unet=unet)

        def __call__(self, latents, t, embeds):
            noise_pred = self.unet(latents, t, encoder_hidden_states=embeds).sample
            return noise_pred
    """
    assert _place_of(code, "self.unet(latents, t, encoder_hidden_states=embeds).sample") is Place.DEVICE


def test_a_timestep_taken_through_tqdm_lives_where_the_timesteps_do() -> None:
    code = """
    class Pipe(DiffusionPipeline):
        def __call__(self, n: int):
            device = self._execution_device
            timesteps, n = retrieve_timesteps(self.scheduler, n, device)
            for i, t in enumerate(tqdm(timesteps)):
                noise = t * 2
    """
    assert _place_of(code, "t", "noise = t") is Place.DEVICE


def test_names_rebound_in_a_cycle_are_placed_without_redoing_the_cycle_per_path_into_it(monkeypatch) -> None:
    # Each name made from the two before it, in nested loops (LTX's long multi-prompt pipeline rebinds its latents
    # so): an answer found inside the cycle is given again wherever the same bindings are in progress, so the work
    # grows with the square of the names. Worked out again per order of entry, these 20 took 94,347 placements.
    names = [f"v{i}" for i in range(20)]
    rebound = "\n".join(f"            {name} = {names[k - 1]} * w + {names[k - 2]}" for k, name in enumerate(names))
    code = f"def step(x: torch.Tensor, w):\n    for i in range(3):\n        for j in range(3):\n{rebound}\n"
    function = ast.parse(code.replace("v0 = ", "v0 = x + ", 1)).body[0]
    assert isinstance(function, ast.FunctionDef)
    placed = []
    place_once = FunctionPlaces._place
    monkeypatch.setattr(FunctionPlaces, "_place", lambda self, node: placed.append(node) or place_once(self, node))
    last = function.body[0].body[0].body[-1]  # type: ignore[attr-defined]
    assert FunctionPlaces(function).place(last.value) is Place.DEVICE
    assert len(placed) < 1_000
