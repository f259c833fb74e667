"""Real-width models and loops, built straight on the device with random weights. Imports torch and diffusers.

A model is its class at the released configuration (the constructor's defaults where they are the
released model's, else the published numbers in `cases`), with its block stacks capped at
`scale.blocks`; its weights are random and made on the device (never on the host). Inputs come from a seeded CPU generator, drawn on the host once and
moved before the measured runs, so both trees see the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from bot.verify.real_scale.scale import Scale
from bot.verify.targets.workload import Slot, Workload, pipeline_workload


@dataclass
class Built:
    workload: Workload
    described: dict[str, str] = field(default_factory=dict)  # blocks built, inputs: for the report


class Inputs:
    """Seeded draws in the run's dtype, on the device."""

    def __init__(self, device: Any, dtype: torch.dtype, seed: int = 1) -> None:
        self.device, self.dtype = device, dtype
        self.generator = torch.Generator().manual_seed(seed)

    def randn(self, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=self.generator).to(self.device, self.dtype)

    def ones(self, *shape: int, dtype: torch.dtype = torch.long) -> torch.Tensor:
        return torch.ones(*shape, dtype=dtype, device=self.device)


def released_model(
    cls_name: str, config: dict[str, Any], stacks: dict[str, int], scale: Scale, device: Any
) -> tuple[torch.nn.Module, str]:
    """`cls_name(**config)` with each stack in `stacks` (config key -> released depth) capped at `scale.blocks`.

    Built as `from_pretrained` builds a model and a user then moves it: parameters are created on
    the meta device and materialised straight on `device` with random values, in the run's dtype
    (float32 for the modules the class keeps in float32); buffers and plain tensor attributes are
    computed on the host at construction, and `.to(device)` moves what it moves. (A
    `torch.device(device)` context would also put plain tensor attributes on the device, where no
    loaded model has them, and hide the very host-to-device copies DIF001 removes.)
    Returns the model in eval mode and what was built, e.g. "num_layers 4 of 60".
    """
    import diffusers

    built = {key: min(depth, scale.blocks) for key, depth in stacks.items()}
    with _parameters_on_meta():
        model = getattr(diffusers, cls_name)(**{**config, **built})
    dtype = getattr(torch, scale.dtype)
    kept = set(getattr(model, "_keep_in_fp32_modules", None) or ())
    for name, module in model.named_modules():
        wanted = torch.float32 if kept & set(name.split(".")) else dtype
        for parameter_name, parameter in list(module.named_parameters(recurse=False)):
            values = torch.empty(parameter.shape, device=device, dtype=wanted).normal_(
                0.0, 0.02
            )  # seeded by the caller
            setattr(module, parameter_name, torch.nn.Parameter(values, requires_grad=False))
    model.to(device)  # buffers, as `.to()` moves a loaded model's
    for (
        name,
        module,
    ) in model.named_modules():  # floating buffers in the run's dtype, as from_pretrained(torch_dtype=...)
        wanted = torch.float32 if kept & set(name.split(".")) else dtype
        for buffer_name, buffer in list(module.named_buffers(recurse=False)):
            if buffer.is_floating_point():
                setattr(module, buffer_name, buffer.to(wanted))
    return model.eval(), ", ".join(f"{key} {built[key]} of {depth}" for key, depth in stacks.items())


@contextmanager
def _parameters_on_meta() -> Iterator[None]:
    """Parameters registered during the block go to the meta device (no host memory, no init cost); the rest is untouched."""
    register = torch.nn.Module.register_parameter

    def register_on_meta(module: torch.nn.Module, name: str, parameter: torch.nn.Parameter | None) -> None:
        if parameter is not None and parameter.device.type != "meta":
            parameter = torch.nn.Parameter(parameter.to("meta"), requires_grad=parameter.requires_grad)
        register(module, name, parameter)

    torch.nn.Module.register_parameter = register_on_meta  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register  # type: ignore[method-assign]


def pipeline_loop(
    pipeline_cls: str, components: dict[str, Any], call: dict[str, Any], denoiser: str = "transformer"
) -> Workload:
    """The pipeline's own `__call__` (no text encoder, no VAE: precomputed embeddings, latent output)."""
    import diffusers

    pipeline_type = getattr(diffusers, pipeline_cls)
    absent = {name: None for name in pipeline_type._get_signature_keys(pipeline_type)[0] if name not in components}
    pipeline = pipeline_type(**absent, **components)
    return pipeline_workload(pipeline, {**call, "output_type": "latent", "return_dict": False}, denoiser)


def forwards(model: torch.nn.Module, inputs: dict[str, Any], calls: int) -> Workload:
    """`calls` forwards in a row with the same inputs, as a denoising loop queues them (unit: forward)."""
    slot = Slot(model)

    def run() -> Any:
        with torch.no_grad():
            for _ in range(calls):
                output = slot(**inputs, return_dict=False)[0]
        return output

    return Workload(run=run, unit="forward", units=calls, model=model, compile_with=slot.compile_with)


def scheduler_loop(
    model: torch.nn.Module, scheduler: Any, steps: int, latents: torch.Tensor, model_inputs: dict[str, Any], device: Any
) -> Workload:
    """`set_timesteps(steps)` and every step, the model's output feeding `scheduler.step`, as the scheduler targets drive it."""
    slot = Slot(model)
    workload = Workload(run=lambda: None, unit="step", units=1, model=model, compile_with=slot.compile_with)

    def run() -> Any:
        scheduler.set_timesteps(steps, device=device)
        sample = latents
        with torch.no_grad():
            for timestep in scheduler.timesteps:
                prediction = slot(hidden_states=sample, timestep=timestep.expand(sample.shape[0]), **model_inputs)
                sample = scheduler.step(prediction[0], timestep, sample, return_dict=False)[0]
        workload.units = len(scheduler.timesteps)
        return sample

    workload.run = run
    return workload


def guided_embeds(draw: Any, text: int, width: int, mask: str | None = None) -> dict[str, Any]:
    """A CFG call's precomputed prompt and negative-prompt embeddings, with all-ones masks named
    `prompt_<mask>` / `negative_prompt_<mask>` where the pipeline takes them."""
    embeds = {"prompt_embeds": draw.randn(1, text, width), "negative_prompt_embeds": draw.randn(1, text, width)}
    if mask is not None:
        embeds |= {f"prompt_{mask}": draw.ones(1, text), f"negative_prompt_{mask}": draw.ones(1, text)}
    return embeds
