"""Scheduler targets: `set_timesteps(N, device=...)` and N steps on tiny latents (DIF002, DIF005 paths).

One driver serves every scheduler that runs from its default configuration: a fixed
"model" (a linear function of the sample), `scale_model_input` where the scheduler has it,
and `step(..., return_dict=False)` with a seeded CPU generator where `step` takes one. A run
starts with `set_timesteps`, which resets the scheduler, so every run is the same run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.verify.targets import target

STEPS = 4


@dataclass(frozen=True)
class SchedulerRecipe:
    cls: str
    config: dict[str, Any] = field(default_factory=dict)
    set_timesteps: dict[str, Any] = field(default_factory=dict)
    steps: int = STEPS


def seeded_latents(device: Any) -> Any:
    """The latents every scheduler target starts from: the same seed on every tree and device, for the parity check."""
    import torch

    return torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(1)).to(device)


def register_scheduler(recipe: SchedulerRecipe) -> None:
    def build(device: Any) -> Any:
        import inspect

        import diffusers
        import torch

        from bot.verify.targets.workload import Workload

        scheduler = getattr(diffusers, recipe.cls)(**recipe.config)
        scheduler.set_timesteps(recipe.steps, device=device, **recipe.set_timesteps)
        steps = len(scheduler.timesteps)
        latents = seeded_latents(device)
        takes_generator = "generator" in inspect.signature(scheduler.step).parameters
        scales = hasattr(scheduler, "scale_model_input")

        def run() -> Any:
            scheduler.set_timesteps(recipe.steps, device=device, **recipe.set_timesteps)
            sample = latents
            noise = torch.Generator().manual_seed(2)
            for timestep in scheduler.timesteps:
                model_input = scheduler.scale_model_input(sample, timestep) if scales else sample
                model_output = model_input * 0.1 + 0.01
                extra = {"generator": noise} if takes_generator else {}
                sample = scheduler.step(model_output, timestep, sample, return_dict=False, **extra)[0]
            return sample

        return Workload(run=run, unit="step", units=steps)

    exercises = f"set_timesteps({recipe.steps}) and every step on 1x4x8x8 latents"
    target(recipe.cls, "scheduler", (recipe.cls,), exercises)(build)


# Every scheduler of diffusers 0.42.1 that runs this loop from its defaults (the others need a
# model of their own shape or extra step arguments; they show up as unverified, with the reason).
RECIPES = [
    SchedulerRecipe("CMStochasticIterativeScheduler"),
    SchedulerRecipe("CogVideoXDDIMScheduler"),
    SchedulerRecipe("DDIMInverseScheduler"),
    SchedulerRecipe("DDIMParallelScheduler"),
    SchedulerRecipe("DDIMScheduler"),
    SchedulerRecipe("DDPMParallelScheduler"),
    SchedulerRecipe("DDPMScheduler"),
    SchedulerRecipe("DEISMultistepScheduler"),
    SchedulerRecipe("DPMSolverMultistepInverseScheduler"),
    SchedulerRecipe("DPMSolverMultistepScheduler"),
    SchedulerRecipe("DPMSolverSinglestepScheduler", {"lower_order_final": True}),
    SchedulerRecipe("EDMDPMSolverMultistepScheduler"),
    SchedulerRecipe("EDMEulerScheduler"),
    SchedulerRecipe("EulerAncestralDiscreteScheduler"),
    SchedulerRecipe("EulerDiscreteScheduler"),
    SchedulerRecipe("FlowMapEulerDiscreteScheduler"),
    SchedulerRecipe("FlowMatchEulerDiscreteScheduler"),
    SchedulerRecipe("FlowMatchHeunDiscreteScheduler"),
    SchedulerRecipe("FlowMatchLCMScheduler"),
    SchedulerRecipe("HeunDiscreteScheduler"),
    SchedulerRecipe("IPNDMScheduler"),
    SchedulerRecipe("KDPM2AncestralDiscreteScheduler"),
    SchedulerRecipe("KDPM2DiscreteScheduler"),
    SchedulerRecipe("LCMScheduler"),
    SchedulerRecipe("LTXEulerAncestralRFScheduler"),
    SchedulerRecipe("MiniMaxH3Scheduler"),
    SchedulerRecipe("PNDMScheduler"),
    SchedulerRecipe("SASolverScheduler"),
    SchedulerRecipe("SCMScheduler", steps=2),
    SchedulerRecipe("TCDScheduler"),
    SchedulerRecipe("UnCLIPScheduler"),
    SchedulerRecipe("UniPCMultistepScheduler"),
]

for _recipe in RECIPES:
    register_scheduler(_recipe)


@target(
    "ScoreSdeVeScheduler",
    "scheduler",
    ("ScoreSdeVeScheduler",),
    f"set_timesteps/set_sigmas({STEPS}), then per step a corrector step_correct and a predictor step_pred",
)
def score_sde_ve(device: Any) -> Any:
    """Its loop is not `step()`: a corrector and a predictor step per timestep, as ScoreSdeVePipeline runs them."""
    import diffusers
    import torch

    from bot.verify.targets.workload import Workload

    scheduler = diffusers.ScoreSdeVeScheduler()
    latents = seeded_latents(device)

    def run() -> Any:
        scheduler.set_timesteps(STEPS, device=device)
        scheduler.set_sigmas(STEPS)
        sample, noise = latents, torch.Generator().manual_seed(2)
        for timestep in scheduler.timesteps:
            sample = scheduler.step_correct(sample * 0.1, sample, generator=noise, return_dict=False)[0]
            sample = scheduler.step_pred(sample * 0.1, timestep, sample, generator=noise, return_dict=False)[0]
        return sample

    return Workload(run=run, unit="step", units=STEPS)
