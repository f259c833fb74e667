"""Host data built in a pipeline loop that runs a denoiser every pass (GLM-Image's KV-cache fill; fixture
DIF006/glm_image_condition_target_size)."""

from __future__ import annotations

import textwrap

from codemods.analysis.models.model_call_loops import host_data_per_denoiser_pass
from codemods.source import SourceFile

PIPELINE = """
import torch


class Pipe(DiffusionPipeline):
    def __init__(self, transformer, scheduler, vae):
        self.register_modules(transformer=transformer, scheduler=scheduler, vae=vae)

    def __call__(self, images, timesteps, size, device):
        for image in images:
{fill}
        for t in timesteps:
            noise = self.transformer(t)
            latents = self.scheduler.step(noise, t, latents)
"""


def _found(fill: str) -> list[tuple[int, str | None]]:
    text = PIPELINE.format(fill=textwrap.indent(textwrap.dedent(fill), " " * 12))
    return [(f.call.lineno, f.changing) for f in host_data_per_denoiser_pass(SourceFile("pipe.py", text))]


def test_values_the_loop_rebinds_are_named() -> None:
    assert _found("self.transformer(image, size=torch.tensor([image.shape[-2:]], device=device))\n") == [
        (11, "image")
    ]


def test_loop_invariant_values_are_reported_without_a_changing_name() -> None:
    assert _found("self.transformer(image, size=torch.tensor([size], device=device))\n") == [(11, None)]


def test_a_loop_that_runs_no_denoiser_is_not_reported() -> None:
    assert _found("self.vae.encode(image, size=torch.tensor([size], device=device))\n") == []


def test_a_non_tensor_fallback_is_not_reported() -> None:
    fill = """
    if not torch.is_tensor(size):
        size = torch.tensor([size], device=device)
    self.transformer(image, size=size)
    """
    assert _found(fill) == []


def test_host_data_built_on_the_cpu_is_not_reported() -> None:
    assert _found('self.transformer(image, size=torch.tensor([size], device="cpu"))\n') == []
