"""Targets for diffusers' training helpers (`training_utils`): one call, as a training step makes it."""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target
from bot.verify.targets.pipelines import tiny_unet_2d_condition


@target(
    "compute_dream_and_update_latents",
    "function",
    ("compute_dream_and_update_latents", "UNet2DConditionModel", "DDPMScheduler"),
    "one DREAM correction: a no-grad UNet prediction on a batch of two 8x8 latents",
)
def dream(device: Any) -> Any:
    import torch
    from diffusers import DDPMScheduler
    from diffusers.training_utils import compute_dream_and_update_latents

    from bot.verify.targets.workload import model_workload

    unet = tiny_unet_2d_condition(cross_attention_dim=8).to(device)
    generator = torch.Generator().manual_seed(0)
    latents, noise, target_latents = (torch.randn(2, 4, 8, 8, generator=generator).to(device) for _ in range(3))
    step = {
        "unet": unet,
        "noise_scheduler": DDPMScheduler(),
        "timesteps": torch.tensor([10, 500]).to(device),
        "noise": noise,
        "noisy_latents": latents,
        "target": target_latents,
        "encoder_hidden_states": torch.randn(2, 3, 8, generator=generator).to(device),
    }
    return model_workload(unet, compute_dream_and_update_latents, step)
