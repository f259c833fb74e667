"""Kandinsky 5 pipeline targets: the real `__call__` from precomputed prompt embeddings (DIF004 paths).

diffusers' own Kandinsky 5 tests load a `Qwen2VLProcessor`, which needs torchvision; the pipelines
accept `prompt_embeds_qwen`, `prompt_embeds_clip` and `prompt_cu_seqlens` (and negative ones) instead,
so these targets build no text encoder or tokenizer at all. Each runs 2 steps with guidance, so both
transformer calls of a step run, then the VAE decode; the image-conditioned ones also encode an image
with their VAE (I2V's 17 frames are the fewest that reach its first-frame normalization: 5 latent
frames, 4 normalized against the fifth). The transformer is models.py's tiny one; the VAEs are the
class each pipeline declares, at toy width, with the spatial compression the pipeline assumes (8).

They run beside a checkout's own Kandinsky 5 test targets, not instead of them: where torchvision
loads, those run too (text encoders included); where it does not, they fail on both trees and say
nothing, and these vouch for the rewrites.
"""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target
from bot.verify.targets.models import KANDINSKY5_TINY

STEPS = 2
SIDE = 32  # pixels; 4x4 latents, 2x2 patches
TEXT_TOKENS, NEGATIVE_TOKENS = 8, 6


def _vae(vae_cls: str, levels: int, down: str, up: str, **config: Any) -> Any:
    """A `vae_cls` 8 channels wide at every level, with 16 latent channels (the transformer's visual width)."""
    import diffusers

    return getattr(diffusers, vae_cls)(
        block_out_channels=[8] * levels,
        down_block_types=[down] * levels,
        up_block_types=[up] * levels,
        in_channels=3,
        out_channels=3,
        latent_channels=KANDINSKY5_TINY["in_visual_dim"],
        layers_per_block=1,
        mid_block_add_attention=False,
        norm_num_groups=4,
        **config,
    )


def _video_vae() -> Any:
    """Three levels: 8x spatial compression, as the video pipelines read from its config, and 4x temporal."""
    hunyuan = ("HunyuanVideoDownBlock3D", "HunyuanVideoUpBlock3D")
    return _vae("AutoencoderKLHunyuanVideo", 3, *hunyuan, spatial_compression_ratio=8, temporal_compression_ratio=4)


def _image_vae() -> Any:
    """Four levels: the 8x the image pipelines hard-code."""
    return _vae(
        "AutoencoderKL", 4, "DownEncoderBlock2D", "UpDecoderBlock2D", scaling_factor=0.3611, shift_factor=0.1159
    )


def _embeddings(device: Any) -> dict[str, Any]:
    """Qwen and CLIP embeddings (and their sequence bounds) for a prompt and a negative prompt, 16 wide."""
    import torch

    from bot.verify.targets.workload import to_device

    draw = torch.Generator().manual_seed(1)
    width = KANDINSKY5_TINY["in_text_dim"]
    embeddings = {
        "prompt_embeds_qwen": torch.randn(1, TEXT_TOKENS, width, generator=draw),
        "prompt_embeds_clip": torch.randn(1, KANDINSKY5_TINY["in_text_dim2"], generator=draw),
        "prompt_cu_seqlens": torch.tensor([0, TEXT_TOKENS], dtype=torch.int32),
        "negative_prompt_embeds_qwen": torch.randn(1, NEGATIVE_TOKENS, width, generator=draw),
        "negative_prompt_embeds_clip": torch.randn(1, KANDINSKY5_TINY["in_text_dim2"], generator=draw),
        "negative_prompt_cu_seqlens": torch.tensor([0, NEGATIVE_TOKENS], dtype=torch.int32),
    }
    return to_device(embeddings, device)


def _kandinsky5(pipeline_cls: str, vae: Any, device: Any, visual_cond: bool, **call: Any) -> Any:
    import diffusers
    import torch

    from bot.verify.targets.workload import pipeline_workload

    torch.manual_seed(0)
    transformer = diffusers.Kandinsky5Transformer3DModel(**{**KANDINSKY5_TINY, "visual_cond": visual_cond})
    pipeline = getattr(diffusers, pipeline_cls)(
        transformer=transformer,
        vae=vae,
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        scheduler=diffusers.FlowMatchEulerDiscreteScheduler(shift=7.0),
    )
    if hasattr(pipeline, "resolutions"):
        # The image pipelines resize anything off their list to at least 1024x1024; the list is data on
        # the instance, so a toy size joins it and the run stays toy-sized.
        pipeline.resolutions = [(SIDE, SIDE)]
    kwargs = {
        **_embeddings(device),
        "height": SIDE,
        "width": SIDE,
        "num_inference_steps": STEPS,
        "guidance_scale": 4.0,
        "output_type": "np",
        "return_dict": False,
        **call,
    }
    return pipeline_workload(pipeline.to(device), kwargs, "transformer")


def _red_image() -> Any:
    from PIL import Image

    return Image.new("RGB", (SIDE, SIDE), (200, 40, 40))


_VIDEO = ("Kandinsky5Transformer3DModel", "AutoencoderKLHunyuanVideo", "FlowMatchEulerDiscreteScheduler")
_IMAGE = ("Kandinsky5Transformer3DModel", "AutoencoderKL", "FlowMatchEulerDiscreteScheduler")


def _register(kind: str, what: str, **call: Any) -> None:
    """`Kandinsky5{kind}Pipeline`: T2V/I2V make video with the video VAE, T2I/I2I images with the image one;
    the I2* ones start from an encoded image, which their transformer reads as visual conditioning."""
    name = f"Kandinsky5{kind}Pipeline"
    video = kind.endswith("V")
    conditioned = kind.startswith("I")

    def build(device: Any) -> Any:
        image = {"image": _red_image()} if conditioned else {}
        vae = _video_vae() if video else _image_vae()
        return _kandinsky5(name, vae, device, conditioned, **image, **call)

    exercises = f"2 steps with guidance from precomputed prompt embeddings (no text encoders), {what}"
    target(name, "pipeline", (name, *(_VIDEO if video else _IMAGE)), exercises, beside_checkout_tests=True)(build)


_register("T2V", "5 frames 32x32", num_frames=5)
_register("I2V", "17 frames 32x32 from an encoded first frame", num_frames=17)
_register("T2I", "a 32x32 image")
_register("I2I", "a 32x32 image from an encoded one")
