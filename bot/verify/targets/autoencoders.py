"""Autoencoder targets (DIF004 rewrites `self._decode(z).sample` in `decode` and `forward`).

One run goes through both places a VAE builds output objects: `forward` on a one-sample
batch (encode, then decode without slicing) and `decode` of a two-sample batch with
slicing on (the per-slice path). Configurations follow diffusers' own tiny model tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bot.verify.targets import target
from bot.verify.targets.models import Draw


@dataclass(frozen=True)
class VaeRecipe:
    cls: str
    config: dict[str, Any]
    sample: tuple[int, ...]  # forward input (batch 1); empty: the class has no forward worth running
    latents: tuple[int, ...]  # decode input (batch 2, decoded slice by slice)
    forward_kwargs: dict[str, Any] = field(default_factory=dict)
    decode_kwargs: dict[str, Any] = field(default_factory=dict)


def register_vae(recipe: VaeRecipe) -> None:
    def build(device: Any) -> Any:
        import diffusers
        import torch

        from bot.verify.targets.workload import Slot, Workload

        vae = getattr(diffusers, recipe.cls)(**recipe.config).eval().to(device)
        draw = Draw()
        sample = draw.randn(*recipe.sample).to(device) if recipe.sample else None
        latents = draw.randn(*recipe.latents).to(device)
        forward, decode = Slot(vae), Slot(vae.decode)

        def run() -> Any:
            with torch.no_grad():
                if sample is not None:
                    whole = forward(sample, return_dict=False, **recipe.forward_kwargs)
                else:
                    whole = decode(latents[:1], return_dict=False, **recipe.decode_kwargs)
                with slicing(vae):
                    sliced = decode(latents, return_dict=False, **recipe.decode_kwargs)
            return whole, sliced

        def compile_with(compiler: Any) -> None:
            forward.compile_with(compiler)
            decode.compile_with(compiler)

        return Workload(run=run, unit="forward", units=1, model=vae, compile_with=compile_with)

    what = ("forward" if recipe.sample else "decode of one sample") + ", then sliced decode of a 2-sample batch"
    target(recipe.cls, "model", (recipe.cls,), what)(build)


@contextmanager
def slicing(vae: Any) -> Iterator[None]:
    """`use_slicing` on for the block: a batch is encoded and decoded one sample at a time (its own code path)."""
    vae.use_slicing = True
    try:
        yield
    finally:
        vae.use_slicing = False


def sliced_forward_workload(vae: Any, inputs: dict[str, Any]) -> Any:
    """A checkout test's autoencoder: its forward as the test configures it, then a batch of two or more, sliced.

    The sliced pass is tried once here: where the tree's own sliced path cannot take these inputs
    (Magvit's, on diffusers main), the run is the plain forward alone. A tree whose sliced path
    breaks only after the rewrite runs one output fewer, and parity fails it.
    """
    import torch

    from bot.verify.targets.workload import Slot, Workload

    batch = next(value.shape[0] for value in inputs.values() if isinstance(value, torch.Tensor) and value.dim())
    several = inputs if batch > 1 else {name: _twice(value, batch) for name, value in inputs.items()}
    forward = Slot(vae)
    try:
        with torch.no_grad(), slicing(vae):
            forward(**several, return_dict=False)
        passes = [inputs, several]
    except Exception:  # noqa: BLE001 - any failure of the tree's own sliced path: measure the forward alone
        passes = [inputs]

    def run() -> Any:
        outputs = []
        with torch.no_grad():
            outputs.append(forward(**passes[0], return_dict=False))
            if len(passes) > 1:
                with slicing(vae):
                    outputs.append(forward(**passes[1], return_dict=False))
        return tuple(outputs)

    return Workload(run=run, unit="forward", units=1, model=vae, compile_with=forward.compile_with)


def _twice(value: Any, batch: int) -> Any:
    """A tensor with the batch twice over; anything else (a timestep, a flag) as it is."""
    import torch

    if isinstance(value, torch.Tensor) and value.dim() and len(value) == batch:
        return torch.cat([value, value])
    return value


_KL_2D = {
    "block_out_channels": [4, 8],
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
    "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"],
    "latent_channels": 4,
    "norm_num_groups": 2,
}

RECIPES = [
    VaeRecipe("AutoencoderKL", _KL_2D, sample=(1, 3, 16, 16), latents=(2, 4, 8, 8)),
    VaeRecipe(
        "AsymmetricAutoencoderKL",
        {
            "in_channels": 3,
            "out_channels": 3,
            "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
            "down_block_out_channels": [4, 8],
            "layers_per_down_block": 1,
            "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"],
            "up_block_out_channels": [4, 8],
            "layers_per_up_block": 1,
            "latent_channels": 4,
            "norm_num_groups": 2,
            "sample_size": 16,
        },
        sample=(1, 3, 16, 16),
        latents=(2, 4, 8, 8),
    ),
    VaeRecipe(
        "AutoencoderTiny",
        {
            "in_channels": 3,
            "out_channels": 3,
            "encoder_block_out_channels": [8, 8],
            "decoder_block_out_channels": [8, 8],
            "num_encoder_blocks": [1, 1],
            "num_decoder_blocks": [1, 1],
        },
        sample=(1, 3, 16, 16),
        latents=(2, 4, 8, 8),
    ),
    VaeRecipe(
        "AutoencoderOobleck",
        {
            "encoder_hidden_size": 12,
            "decoder_channels": 12,
            "decoder_input_channels": 6,
            "audio_channels": 2,
            "downsampling_ratios": [2, 4],
            "channel_multiples": [1, 2],
        },
        sample=(1, 2, 24),
        latents=(2, 6, 3),
    ),
    VaeRecipe(
        "AutoencoderKLTemporalDecoder",
        {
            "block_out_channels": [32, 32],
            "in_channels": 3,
            "out_channels": 3,
            "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
            "latent_channels": 4,
            "layers_per_block": 1,
        },
        sample=(2, 3, 16, 16),
        latents=(2, 4, 8, 8),
        forward_kwargs={"num_frames": 2},
        decode_kwargs={"num_frames": 2},
    ),
    VaeRecipe(
        "AutoencoderKLFlux2",
        {
            "sample_size": 16,
            "in_channels": 3,
            "out_channels": 3,
            "down_block_types": ("DownEncoderBlock2D",),
            "up_block_types": ("UpDecoderBlock2D",),
            "block_out_channels": (4,),
            "layers_per_block": 1,
            "latent_channels": 1,
            "norm_num_groups": 1,
            "use_quant_conv": False,
            "use_post_quant_conv": False,
        },
        sample=(1, 3, 16, 16),
        latents=(2, 1, 16, 16),
    ),
    VaeRecipe(
        "AutoencoderKLCogVideoX",
        {
            "in_channels": 3,
            "out_channels": 3,
            "down_block_types": ("CogVideoXDownBlock3D",) * 2,
            "up_block_types": ("CogVideoXUpBlock3D",) * 2,
            "block_out_channels": (8, 8),
            "latent_channels": 4,
            "layers_per_block": 1,
            "norm_num_groups": 2,
            "temporal_compression_ratio": 4,
        },
        sample=(1, 3, 5, 8, 8),
        latents=(2, 4, 2, 4, 4),
    ),
    VaeRecipe(
        "AutoencoderKLWan",
        {"base_dim": 3, "z_dim": 4, "dim_mult": [1, 1], "num_res_blocks": 1, "temperal_downsample": [False]},
        sample=(),
        latents=(2, 4, 2, 4, 4),
    ),
    VaeRecipe(
        "AutoencoderKLQwenImage",
        {
            "base_dim": 8,
            "z_dim": 4,
            "dim_mult": [1, 2],
            "num_res_blocks": 1,
            "temperal_downsample": [False],
            "latents_mean": [0.0] * 4,
            "latents_std": [1.0] * 4,
        },
        sample=(),
        latents=(2, 4, 1, 4, 4),
    ),
]

for _recipe in RECIPES:
    register_vae(_recipe)
