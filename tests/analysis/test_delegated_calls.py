"""A pipeline's call of its scheduler's method with a sigma argument, judged by the scheduler's code.

Each test writes a pipeline that reads one sigma and hands it to its scheduler, gathers the call as
DIF002 does when it scans the pipeline, and asks the scheduler's code whether a CPU sigma works there.
"""

from __future__ import annotations

import textwrap

from codemods.analysis.schedules.delegated_calls import delegated_call_blocker
from codemods.analysis.schedules.sigma_consumers import sigma_consumers
from codemods.analysis.schedules.sigma_flow import DelegatedCall
from codemods.source import SourceFile

SCHEDULER = """
import torch
from dataclasses import dataclass


@dataclass
class EulerOutput(BaseOutput):
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor = None


class EulerScheduler(SchedulerMixin):
    def scale_model_input(self, sample: torch.Tensor, timestep):
        sigma = self.sigmas[self.step_index]
        return sample / ((sigma**2 + 1) ** 0.5)

    def flat_input(self, sample: torch.Tensor, timestep):
        return sample.view(1)

    def step(self, model_output: torch.Tensor, timestep, sample: torch.Tensor, return_dict=True):
        sigma = self.sigmas[self.step_index]
        pred_original_sample = model_output
        prev_sample = sample + (sample - pred_original_sample) / sigma
        if not return_dict:
            return (prev_sample,)
        return EulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)

    def add_zeros(self, sample, timestep):
        return sample + torch.zeros(3, device=sample.device)

    def add_flat_noise(self, sample, timestep):
        noise = randn_tensor(sample.shape, device=sample.device)
        return sample + noise.view(1)
"""


def _calls(loop: str) -> list[DelegatedCall]:
    pipeline = textwrap.dedent("""
    class Pipeline(DiffusionPipeline):
        def __init__(self, unet: UNet2DModel, scheduler: EulerScheduler):
            self.register_modules(unet=unet, scheduler=scheduler)

        def __call__(self, latents, guess):
            for i, t in enumerate(self.scheduler.timesteps):
                sigma = self.scheduler.sigmas[i]
    """) + textwrap.indent(textwrap.dedent(loop), " " * 12)
    (consumer,) = sigma_consumers(SourceFile("pipeline.py", pipeline))
    assert consumer.device_needs == ()
    return list(consumer.scheduler_calls)


def _blocker(call: DelegatedCall) -> str | None:
    return delegated_call_blocker(SourceFile("scheduler.py", SCHEDULER), "EulerScheduler", call)


def test_a_sigma_scaled_by_arithmetic_works_from_the_cpu() -> None:
    (call,) = _calls("latents = latents + self.scheduler.scale_model_input(sigma, t) * self.unet(latents, t)")
    assert (call.method, call.arguments, call.accessor, call.result_may_be_scalar) == (
        "scale_model_input", ((0, "scalar"),), None, True,
    )  # fmt: skip
    assert _blocker(call) is None


def test_a_method_that_gives_the_sigma_dimensions_blocks_the_move() -> None:
    (call,) = _calls("latents = latents * self.scheduler.flat_input(sigma, t)")
    assert (
        _blocker(call)
        == "with it, EulerScheduler.flat_input line 18 gives a sigma dimensions (`.view()`): as a CPU tensor it could not meet device tensors (`sample.view(1)`)"
    )


def test_a_step_whose_read_field_holds_only_device_values_works_from_the_cpu() -> None:
    (call,) = _calls("""
        latents = self.scheduler.step((guess - latents) / sigma, t, latents)[0]
        self.unet(torch.cat([latents, latents]), t)
    """)
    assert (call.accessor, call.result_may_be_scalar) == (0, False)
    assert _blocker(call) is None


def test_a_field_that_returns_the_sigma_to_a_caller_that_cannot_take_it_blocks_the_move() -> None:
    (call,) = _calls("""
        latents = self.scheduler.step((guess - latents) / sigma, t, latents).pred_original_sample
        self.unet(torch.cat([latents, latents]), t)
    """)
    assert (call.accessor, call.result_may_be_scalar) == ("pred_original_sample", False)
    assert _blocker(call) == (
        "EulerScheduler.step returns the sigma in `.pred_original_sample` of its result, which the caller cannot "
        "take as a CPU scalar"
    )


def test_a_tensor_built_on_the_sigmas_device_blocks_the_move() -> None:
    (call,) = _calls("latents = latents * self.scheduler.add_zeros(sigma, t)")
    assert _blocker(call) == (
        "with it, EulerScheduler.add_zeros line 29 reads its `.device` (with CPU sigmas, the CPU) for something not "
        "shaped like it (`sample.device`)"
    )


def test_noise_made_like_the_sigma_is_followed_as_a_sigma() -> None:
    (call,) = _calls("latents = latents * self.scheduler.add_flat_noise(sigma, t)")
    assert _blocker(call) == (
        "with it, EulerScheduler.add_flat_noise line 33 gives a sigma dimensions (`.view()`): as a CPU tensor it "
        "could not meet device tensors (`noise.view(1)`)"
    )
