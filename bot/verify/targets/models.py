"""Model targets built from a recipe: a tiny configuration (as small as diffusers' own model tests
use) and one forward; here, the models whose RoPE tables DIF001 stops copying on every forward
(and OmniGen, whose RoPE factors DIF006 stops rebuilding).

Inputs are drawn from a seeded CPU generator and moved to the device before the warm-up, so the
census sees only the forward. `transformers.py` holds the block-stacking transformers (DIF003).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.verify.targets import target

Inputs = Callable[["Draw"], dict[str, Any]]


class Draw:
    """Seeded CPU draws for inputs: the same numbers in both trees and on every device."""

    def __init__(self, seed: int = 1) -> None:
        import torch

        self.torch = torch
        self.generator = torch.Generator().manual_seed(seed)

    def randn(self, *shape: int) -> Any:
        return self.torch.randn(*shape, generator=self.generator)

    def timesteps(self, *values: float) -> Any:
        return self.torch.tensor(values)

    def ones(self, *shape: int, dtype: str = "float32") -> Any:
        return self.torch.ones(*shape, dtype=getattr(self.torch, dtype))


@dataclass(frozen=True)
class ModelRecipe:
    cls: str
    config: dict[str, Any]
    inputs: Inputs
    name: str = ""
    exercises: str = "one forward"


def register_model(recipe: ModelRecipe) -> None:
    """A target that builds `recipe.cls(**config)` and runs one forward with `return_dict=False`."""

    def build(device: Any) -> Any:
        import diffusers

        from bot.verify.targets.workload import model_workload, to_device

        model = getattr(diffusers, recipe.cls)(**recipe.config).eval().to(device)
        inputs = to_device(recipe.inputs(Draw()), device)
        return model_workload(model, model, {**inputs, "return_dict": False})

    target(recipe.name or recipe.cls, "model", (recipe.cls,), recipe.exercises)(build)


def _qwen_inputs(draw: Draw) -> dict[str, Any]:
    return {
        "hidden_states": draw.randn(1, 16, 16),
        "encoder_hidden_states": draw.randn(1, 8, 16),
        "encoder_hidden_states_mask": draw.ones(1, 8, dtype="long"),
        "timestep": draw.timesteps(1.0),
        "img_shapes": [(1, 4, 4)],
    }


def _qwen_layered_inputs(draw: Draw) -> dict[str, Any]:
    # Two layers: the first goes through _compute_video_freqs, the last (the condition) through
    # _compute_condition_freqs.
    return {**_qwen_inputs(draw), "hidden_states": draw.randn(1, 32, 16), "img_shapes": [[(1, 4, 4), (1, 4, 4)]]}


# diffusers' own test configuration, with two layers.
_OMNIGEN = {
    "hidden_size": 16,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 32,
    "num_layers": 2,
    "pad_token_id": 0,
    "vocab_size": 1000,
    "in_channels": 4,
    "time_step_dim": 4,
    "rope_scaling": {"long_factor": [1.0, 4.0], "short_factor": [1.0, 2.0]},
}


def _omnigen_inputs(draw: Draw) -> dict[str, Any]:
    # 24 text tokens, the time token and the 16 patches of one 8x8 latent: 41 positions.
    return {
        "hidden_states": draw.randn(1, 4, 8, 8),
        "timestep": draw.timesteps(0.5),
        "input_ids": draw.torch.randint(0, 10, (1, 24), generator=draw.generator),
        "input_img_latents": [draw.randn(1, 4, 8, 8)],
        "input_image_sizes": {0: [[0, 16]]},
        "attention_mask": draw.ones(1, 41, 41),
        "position_ids": draw.torch.arange(41).unsqueeze(0),
    }


_QWEN = {
    "patch_size": 2,
    "in_channels": 16,
    "out_channels": 4,
    "num_layers": 2,
    "attention_head_dim": 16,
    "num_attention_heads": 2,
    "joint_attention_dim": 16,
    "guidance_embeds": False,
    "axes_dims_rope": (8, 4, 4),
}


# The transformer of diffusers' own Kandinsky 5 tests, text inputs 16 wide (kandinsky5.py's pipelines use it too).
KANDINSKY5_TINY: dict[str, Any] = {
    "in_visual_dim": 16,
    "in_text_dim": 16,
    "in_text_dim2": 16,
    "time_dim": 16,
    "out_visual_dim": 16,
    "patch_size": (1, 2, 2),
    "model_dim": 16,
    "ff_dim": 32,
    "num_text_blocks": 1,
    "num_visual_blocks": 2,
    "axes_dims": (1, 1, 2),
    "visual_cond": False,
    "attention_type": "regular",
}

RECIPES = [
    ModelRecipe("QwenImageTransformer2DModel", _QWEN, _qwen_inputs, exercises="forward through QwenEmbedRope"),
    ModelRecipe(
        "QwenImageTransformer2DModel",
        {**_QWEN, "use_layer3d_rope": True},
        _qwen_layered_inputs,
        name="QwenImageTransformer2DModel[layer3d_rope]",
        exercises="forward of a 2-layer image through QwenEmbedLayer3DRope",
    ),
    ModelRecipe(
        "NucleusMoEImageTransformer2DModel",
        {
            "patch_size": 2,
            "in_channels": 16,
            "out_channels": 4,
            "num_layers": 2,
            "attention_head_dim": 16,
            "num_attention_heads": 2,
            "joint_attention_dim": 16,
            "axes_dims_rope": (8, 4, 4),
            "moe_enabled": False,
            "capacity_factors": [8.0, 8.0],
        },
        _qwen_inputs,
        exercises="forward through NucleusMoEEmbedRope",
    ),
    ModelRecipe(
        "Kandinsky5Transformer3DModel",
        KANDINSKY5_TINY,
        lambda d: {
            "hidden_states": d.randn(1, 1, 4, 4, 16),
            "encoder_hidden_states": d.randn(1, 8, 16),
            "pooled_projections": d.randn(1, 16),
            "timestep": d.timesteps(500.0),
            "visual_rope_pos": [d.torch.arange(1), d.torch.arange(2), d.torch.arange(2)],
            "text_rope_pos": d.torch.arange(8),
        },
        exercises="forward through Kandinsky5TimeEmbeddings and its RoPE",
    ),
    ModelRecipe(
        "OmniGenTransformer2DModel", _OMNIGEN, _omnigen_inputs, exercises="forward through its short RoPE factors"
    ),
    ModelRecipe(  # 41 positions past the original 16: the long factors
        "OmniGenTransformer2DModel",
        {**_OMNIGEN, "original_max_position_embeddings": 16},
        _omnigen_inputs,
        name="OmniGenTransformer2DModel[long_factors]",
        exercises="forward through its long RoPE factors",
    ),
]

for _recipe in RECIPES:
    register_model(_recipe)
