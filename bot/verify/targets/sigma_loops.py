"""Scheduler targets driven as the pipelines that read one sigma drive them (DIF002 on releases before 0.26).

There `set_timesteps` left the sigmas on the device; DIF002 keeps them on the CPU only where every
sigma a pipeline reads reaches device code as one (0-dim) sigma. These loops copy what the two
pipelines that held the move back do with that sigma, so the census and the parity check see those
uses: StableDiffusionLatentUpscalePipeline hands `sigma` to `scale_model_input(sigma, t)` and
`log(sigma)` to the model; the instruct-pix2pix pipelines hand `(noise_pred - latents) / (-sigma)` to
`step` and read `[0]`.
"""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target
from bot.verify.targets.schedulers import STEPS, SchedulerRecipe, register_scheduler, seeded_latents


def _model(sample: Any, timestep: Any) -> Any:
    """A fixed stand-in for the UNet: a linear function of its input and of the timestep it is given."""
    return sample * 0.1 + timestep * 0.001


@target(
    "EulerDiscreteScheduler as latent upscale drives it",
    "scheduler",
    ("EulerDiscreteScheduler",),
    f"set_timesteps({STEPS}); per step sigmas[i], scale_model_input(sigma, t), log(sigma), step(...).prev_sample",
)
def euler_latent_upscale(device: Any) -> Any:
    import diffusers
    import torch

    from bot.verify.targets.workload import Workload

    scheduler = diffusers.EulerDiscreteScheduler()
    latents = seeded_latents(device)

    def run() -> Any:
        scheduler.set_timesteps(STEPS, device=device)
        sample = latents
        for i, t in enumerate(scheduler.timesteps):
            sigma = scheduler.sigmas[i]
            scaled = scheduler.scale_model_input(sample, t)
            noise_pred = _model(scaled, torch.log(sigma) * 0.25)
            inv_sigma = 1 / (sigma**2 + 1)
            noise_pred = inv_sigma * sample + scheduler.scale_model_input(sigma, t) * noise_pred
            sample = scheduler.step(noise_pred, t, sample).prev_sample
        return sample

    return Workload(run=run, unit="step", units=STEPS)


@target(
    "LMSDiscreteScheduler as instruct-pix2pix drives it",
    "scheduler",
    ("LMSDiscreteScheduler",),
    f"set_timesteps({STEPS}); per step sigmas[i], step((noise_pred - latents) / (-sigma), ...)[0]",
)
def lms_instruct_pix2pix(device: Any) -> Any:
    import diffusers

    from bot.verify.targets.workload import Workload

    scheduler = diffusers.LMSDiscreteScheduler()
    latents = seeded_latents(device)

    def run() -> Any:
        scheduler.set_timesteps(STEPS, device=device)
        sample = latents
        for t in scheduler.timesteps:
            model_input = scheduler.scale_model_input(sample, t)
            noise_pred = _model(model_input, t)
            step_index = (scheduler.timesteps == t).nonzero()[0].item()
            sigma = scheduler.sigmas[step_index]
            noise_pred = model_input - sigma * noise_pred
            noise_pred = (noise_pred - sample) / (-sigma)
            sample = scheduler.step(noise_pred, t, sample, return_dict=False)[0]
        return sample

    return Workload(run=run, unit="step", units=STEPS)


# LMS's plain loop (SciPy integrates its coefficients from the sigmas every step; the LMS targets need SciPy in
# the environment the trees run in, as the scheduler itself does).
register_scheduler(SchedulerRecipe("LMSDiscreteScheduler"))
