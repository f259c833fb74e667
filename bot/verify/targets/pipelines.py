"""Pipeline targets: tiny components, a few steps, no downloads (DIF004 and DIF005 paths).

Each builds its components from configurations as small as diffusers' pipeline tests use;
the Stable Diffusion one gets a tiny CLIP text encoder and a tokenizer whose vocabulary is
written on the spot. Every call draws its noise from a CPU generator seeded the same way.
"""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target

STEPS = 3


def _unet_2d(sample_size: int, channels: int = 3) -> Any:
    from diffusers import UNet2DModel

    return UNet2DModel(
        sample_size=sample_size,
        in_channels=channels,
        out_channels=channels,
        layers_per_block=1,
        block_out_channels=(4, 8),
        norm_num_groups=4,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
    )


def _tiny_vae() -> Any:
    """A two-level AutoencoderKL with 4 latent channels, for latent pipelines."""
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        block_out_channels=[4, 8],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        latent_channels=4,
        norm_num_groups=2,
    )


def tiny_unet_2d_condition(**changes: Any) -> Any:
    """A two-level UNet2DConditionModel on 4 latent channels, cross-attention 32 wide; `changes` override."""
    from diffusers import UNet2DConditionModel

    config = {
        "block_out_channels": (4, 8),
        "layers_per_block": 1,
        "sample_size": 8,
        "in_channels": 4,
        "out_channels": 4,
        "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
        "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
        "cross_attention_dim": 32,
        "norm_num_groups": 2,
        "attention_head_dim": 2,
    }
    return UNet2DConditionModel(**{**config, **changes})


def _unconditional(pipeline_cls: str, scheduler_cls: str, device: Any, **call: Any) -> Any:
    import diffusers

    from bot.verify.targets.workload import pipeline_workload

    pipeline = getattr(diffusers, pipeline_cls)(unet=_unet_2d(8), scheduler=getattr(diffusers, scheduler_cls)())
    kwargs = {"num_inference_steps": STEPS, "output_type": "np", "return_dict": False, **call}
    return pipeline_workload(pipeline.to(device), kwargs, "unet")


@target("DDPMPipeline", "pipeline", ("DDPMPipeline", "UNet2DModel", "DDPMScheduler"), "3 steps, 8x8 image")
def ddpm(device: Any) -> Any:
    return _unconditional("DDPMPipeline", "DDPMScheduler", device)


@target("DDIMPipeline", "pipeline", ("DDIMPipeline", "UNet2DModel", "DDIMScheduler"), "3 steps, 8x8 image")
def ddim(device: Any) -> Any:
    return _unconditional("DDIMPipeline", "DDIMScheduler", device)


@target("PNDMPipeline", "pipeline", ("PNDMPipeline", "UNet2DModel", "PNDMScheduler"), "4 steps (PNDM's minimum)")
def pndm(device: Any) -> Any:
    return _unconditional("PNDMPipeline", "PNDMScheduler", device, num_inference_steps=4)


@target("LDMPipeline", "pipeline", ("LDMPipeline", "VQModel", "UNet2DModel", "DDIMScheduler"), "3 steps, VQ decode")
def ldm(device: Any) -> Any:
    from diffusers import DDIMScheduler, LDMPipeline, VQModel

    from bot.verify.targets.workload import pipeline_workload

    vqvae = VQModel(
        block_out_channels=(8, 8),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=3,
        norm_num_groups=4,
        num_vq_embeddings=16,
    )
    pipeline = LDMPipeline(vqvae=vqvae, unet=_unet_2d(8), scheduler=DDIMScheduler())
    kwargs = {"num_inference_steps": STEPS, "output_type": "np", "return_dict": False}
    return pipeline_workload(pipeline.to(device), kwargs, "unet")


@target(
    "DanceDiffusionPipeline",
    "pipeline",
    ("DanceDiffusionPipeline", "UNet1DModel", "IPNDMScheduler"),
    "3 steps of 512 audio samples",
)
def dance_diffusion(device: Any) -> Any:
    from diffusers import DanceDiffusionPipeline, IPNDMScheduler, UNet1DModel

    from bot.verify.targets.workload import pipeline_workload

    unet = UNet1DModel(
        block_out_channels=(32, 32, 64),
        extra_in_channels=64,
        sample_size=512,
        sample_rate=16_000,
        in_channels=2,
        out_channels=2,
        flip_sin_to_cos=True,
        use_timestep_embedding=False,
        time_embedding_type="fourier",
        mid_block_type="UNetMidBlock1D",
        down_block_types=("DownBlock1DNoSkip", "DownBlock1D", "AttnDownBlock1D"),
        up_block_types=("AttnUpBlock1D", "UpBlock1D", "UpBlock1DNoSkip"),
    )
    pipeline = DanceDiffusionPipeline(unet=unet, scheduler=IPNDMScheduler())
    kwargs = {"num_inference_steps": STEPS, "return_dict": False}
    return pipeline_workload(pipeline.to(device), kwargs, "unet")


@target(
    "DiTPipeline",
    "pipeline",
    ("DiTPipeline", "DiTTransformer2DModel", "AutoencoderKL", "DPMSolverMultistepScheduler"),
    "3 steps with classifier-free guidance, multistep solver",
)
def dit(device: Any) -> Any:
    from diffusers import DiTPipeline, DiTTransformer2DModel, DPMSolverMultistepScheduler

    from bot.verify.targets.workload import pipeline_workload

    transformer = DiTTransformer2DModel(
        sample_size=8,
        num_layers=2,
        patch_size=2,
        attention_head_dim=4,
        num_attention_heads=2,
        in_channels=4,
        out_channels=8,
        attention_bias=True,
        activation_fn="gelu-approximate",
        num_embeds_ada_norm=1000,
        norm_type="ada_norm_zero",
        norm_elementwise_affine=False,
    )
    vae = _tiny_vae()
    pipeline = DiTPipeline(transformer=transformer, vae=vae, scheduler=DPMSolverMultistepScheduler())
    kwargs = {"class_labels": [1], "num_inference_steps": STEPS, "output_type": "np", "return_dict": False}
    return pipeline_workload(pipeline.to(device), kwargs, "transformer")


@target(
    "StableDiffusionPipeline",
    "pipeline",
    ("StableDiffusionPipeline", "UNet2DConditionModel", "AutoencoderKL", "EulerDiscreteScheduler"),
    "3 steps with guidance: tiny CLIP text encoder, Euler scheduler, 16x16 image",
)
def stable_diffusion(device: Any) -> Any:
    from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline

    from bot.verify.targets.text_encoders import tiny_clip
    from bot.verify.targets.workload import pipeline_workload

    unet = tiny_unet_2d_condition()
    vae = _tiny_vae()
    text_encoder, tokenizer = tiny_clip(hidden_size=32)
    pipeline = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=EulerDiscreteScheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    kwargs = {
        "prompt": "a tiny red cube",
        "num_inference_steps": STEPS,
        "guidance_scale": 5.0,
        "height": 16,
        "width": 16,
        "output_type": "np",
        "return_dict": False,
    }
    return pipeline_workload(pipeline.to(device), kwargs, "unet")


@target(
    "StableDiffusionUpscalePipeline",
    "pipeline",
    ("StableDiffusionUpscalePipeline", "UNet2DConditionModel", "AutoencoderKL", "EulerDiscreteScheduler"),
    "3 steps with guidance: an 8x8 image upscaled, tiny CLIP text encoder, Euler scheduler",
)
def stable_diffusion_upscale(device: Any) -> Any:
    """The x4 upscaler's layout at toy size: the UNet reads the latents beside the noised low-res image
    (4 + 3 channels) and takes the noise level as a class label; the diffusers test's DDIM scheduler
    never looks up a step index, so Euler stands in for the schedulers that do."""
    from diffusers import DDPMScheduler, EulerDiscreteScheduler, StableDiffusionUpscalePipeline
    from PIL import Image

    from bot.verify.targets.text_encoders import tiny_clip
    from bot.verify.targets.workload import pipeline_workload

    unet = tiny_unet_2d_condition(in_channels=7, num_class_embeds=400)
    text_encoder, tokenizer = tiny_clip(hidden_size=32)
    pipeline = StableDiffusionUpscalePipeline(
        vae=_tiny_vae(),
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        low_res_scheduler=DDPMScheduler(),
        scheduler=EulerDiscreteScheduler(),
    )
    kwargs = {
        "prompt": "a tiny red cube",
        "image": Image.new("RGB", (8, 8), (200, 40, 40)),
        "num_inference_steps": STEPS,
        "guidance_scale": 5.0,
        "output_type": "np",
        "return_dict": False,
    }
    return pipeline_workload(pipeline.to(device), kwargs, "unet")
