"""The real-scale cases: which change each measures, what it builds, and how long a generation is.

A case runs the code a change rewrote at the size a user runs it: the model at its released
width (the constructor's defaults where they are the released model's, else the published
configuration written here), its block stacks capped at `Scale.blocks`, inputs at the released
resolution; for pipeline and scheduler changes the pipeline's own loop (or the loop as the
scheduler targets drive it) over the documented default number of steps, from random latents and
embeddings. `generation_units` turns a per-unit saving into one whole generation's, at the
pipeline's documented defaults (CFG doubles the forwards). No torch at import: the parent reads
this registry, only a worker builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.verify.real_scale.scale import Scale

if TYPE_CHECKING:
    from bot.verify.real_scale.builders import Built

Build = Callable[[Any, Scale], "Built"]

SD3_MEDIUM = {
    "sample_size": 128,
    "patch_size": 2,
    "in_channels": 16,
    "attention_head_dim": 64,
    "num_attention_heads": 24,
    "joint_attention_dim": 4096,
    "caption_projection_dim": 1536,
    "pooled_projection_dim": 2048,
    "out_channels": 16,
    "pos_embed_max_size": 192,
}
"""stabilityai/stable-diffusion-3-medium-diffusers, transformer/config.json (24 layers)."""

SD3_TEXT_TOKENS = 333  # 77 CLIP tokens + 256 T5 tokens, as the pipeline concatenates them
KANDINSKY5_T2V = {"in_visual_dim": 16, "out_visual_dim": 16, "visual_cond": True}
"""16 latent channels (HunyuanVideo's VAE) with the visual conditioning the T2V pipeline feeds; the rest defaults."""


@dataclass(frozen=True)
class RealCase:
    name: str
    rules: tuple[str, ...]
    files: tuple[str, ...]  # package-relative files whose rewrites the case runs
    built: str  # what it builds, for the report
    generation: str  # one generation at the documented defaults, in words
    generation_units: int | None  # units of the workload in that generation; None: the measured run is one
    build: Build
    regional_compile: bool = False  # DIF003: compile its repeated blocks where the tree declares them


_registry: dict[str, RealCase] = {}


def case(
    name: str,
    rules: tuple[str, ...],
    files: tuple[str, ...],
    built: str,
    generation: str,
    units: int | None,
    regional_compile: bool = False,
) -> Callable[[Build], Build]:
    def register(build: Build) -> Build:
        _registry[name] = RealCase(name, rules, files, built, generation, units, build, regional_compile)
        return build

    return register


def all_cases() -> list[RealCase]:
    return sorted(_registry.values(), key=lambda c: c.name)


def get_case(name: str) -> RealCase:
    if name not in _registry:
        raise KeyError(f"no real-scale case named {name!r} (known: {', '.join(sorted(_registry))})")
    return _registry[name]


def cases_for(changed_files: set[str]) -> list[RealCase]:
    """The cases that run a changed file's rewrites."""
    return [c for c in all_cases() if set(c.files) & changed_files]


def _sd3_medium(device: Any, scale: Scale) -> tuple[Any, str, int, int, Any]:
    """The SD3 medium transformer, its image side and text length at this scale, and the draws for its inputs."""
    from bot.verify.real_scale.builders import Inputs, released_model

    model, blocks = released_model("SD3Transformer2DModel", SD3_MEDIUM, {"num_layers": 24}, scale, device)
    return model, blocks, scale.side(1024), scale.text(SD3_TEXT_TOKENS), Inputs(device, model.dtype)


@case(
    "QwenImagePipeline",
    ("DIF001",),
    ("models/transformers/transformer_qwenimage.py",),
    "QwenImagePipeline.__call__ with true CFG (4 forwards in 2 steps), Qwen-Image transformer (constructor "
    "defaults: 3072 wide, 60 layers), 1024x1024 (4096 image tokens), 128 text tokens",
    "50 steps (the pipeline's default)",
    50,
)
def qwen_pipeline(device: Any, scale: Scale) -> Built:
    from diffusers import FlowMatchEulerDiscreteScheduler

    from bot.verify.real_scale.builders import Built, Inputs, guided_embeds, pipeline_loop, released_model

    model, blocks = released_model("QwenImageTransformer2DModel", {}, {"num_layers": 60}, scale, device)
    side, text = scale.side(1024), scale.text(128)
    draw = Inputs(device, model.dtype)
    scheduler = FlowMatchEulerDiscreteScheduler(
        use_dynamic_shifting=True, base_shift=0.5, max_shift=0.9, base_image_seq_len=256, max_image_seq_len=8192
    )
    tokens = (side // 16) ** 2
    call = {**guided_embeds(draw, text, 3584, mask="embeds_mask"), "latents": draw.randn(1, tokens, 64)}
    call.update(true_cfg_scale=4.0, height=side, width=side, num_inference_steps=scale.steps or 2)
    workload = pipeline_loop("QwenImagePipeline", {"transformer": model, "scheduler": scheduler}, call)
    return Built(workload, {"blocks": blocks, "input": f"{side}x{side} ({tokens} image tokens), {text} text tokens"})


@case(
    "StableDiffusion3Pipeline",
    ("DIF005",),
    ("pipelines/stable_diffusion_3/pipeline_stable_diffusion_3.py",),
    "StableDiffusion3Pipeline.__call__, 28 steps with CFG, SD3 medium transformer (1536 wide, 24 layers), "
    "FlowMatchEulerDiscreteScheduler(shift=3.0), 1024x1024, 333 text tokens",
    "28 steps (the pipeline's default)",
    None,
)
def sd3_pipeline(device: Any, scale: Scale) -> Built:
    from diffusers import FlowMatchEulerDiscreteScheduler

    from bot.verify.real_scale.builders import Built, guided_embeds, pipeline_loop

    model, blocks, side, text, draw = _sd3_medium(device, scale)
    call = {
        **guided_embeds(draw, text, 4096),
        "pooled_prompt_embeds": draw.randn(1, 2048),
        "negative_pooled_prompt_embeds": draw.randn(1, 2048),
        "latents": draw.randn(1, 16, side // 8, side // 8),
        "height": side,
        "width": side,
        "num_inference_steps": scale.steps or 28,
    }
    components = {"transformer": model, "scheduler": FlowMatchEulerDiscreteScheduler(shift=3.0)}
    workload = pipeline_loop("StableDiffusion3Pipeline", components, call)
    return Built(workload, {"blocks": blocks, "input": f"{side}x{side}, {text} text tokens, CFG"})


@case(
    "SanaPipeline",
    ("DIF005",),
    ("pipelines/sana/pipeline_sana.py",),
    "SanaPipeline.__call__, 20 steps with CFG, Sana 1600M transformer (constructor defaults: 2240 wide, 20 layers), "
    "DPMSolverMultistepScheduler with flow sigmas, 1024x1024 (32x32 latents), 300 text tokens",
    "20 steps (the pipeline's default)",
    None,
)
def sana_pipeline(device: Any, scale: Scale) -> Built:
    from diffusers import DPMSolverMultistepScheduler

    from bot.verify.real_scale.builders import Built, Inputs, guided_embeds, pipeline_loop, released_model

    model, blocks = released_model("SanaTransformer2DModel", {}, {"num_layers": 20}, scale, device)
    side, text = scale.side(1024), scale.text(300)
    draw = Inputs(device, model.dtype)
    scheduler = DPMSolverMultistepScheduler(flow_shift=3.0, use_flow_sigmas=True, prediction_type="flow_prediction")
    call = {
        **guided_embeds(draw, text, 2304, mask="attention_mask"),
        "negative_prompt": None,  # its default "" would be encoded, and clash with the embeddings
        "latents": draw.randn(1, 32, side // 32, side // 32),
        "height": side,
        "width": side,
        "num_inference_steps": scale.steps or 20,
        "use_resolution_binning": False,
    }
    workload = pipeline_loop("SanaPipeline", {"transformer": model, "scheduler": scheduler}, call)
    return Built(workload, {"blocks": blocks, "input": f"{side}x{side}, {text} text tokens, CFG"})


@case(
    "FlowMatchHeunDiscreteScheduler",
    ("DIF002",),
    ("schedulers/scheduling_flow_match_heun_discrete.py",),
    "set_timesteps(28) and every step (two per timestep but the last) with the SD3 medium transformer "
    "(1536 wide) as the model, 1024x1024 latents, 333 text tokens",
    "28 steps: 55 scheduler steps",
    None,
)
def heun_loop(device: Any, scale: Scale) -> Built:
    from diffusers import FlowMatchHeunDiscreteScheduler

    from bot.verify.real_scale.builders import Built, scheduler_loop

    model, blocks, side, text, draw = _sd3_medium(device, scale)
    inputs = {"encoder_hidden_states": draw.randn(1, text, 4096), "pooled_projections": draw.randn(1, 2048)}
    latents = draw.randn(1, 16, side // 8, side // 8)
    workload = scheduler_loop(model, FlowMatchHeunDiscreteScheduler(), scale.steps or 28, latents, inputs, device)
    return Built(workload, {"blocks": blocks, "input": f"{side}x{side}, {text} text tokens"})


@case(
    "Kandinsky5Transformer3DModel",
    ("DIF001",),
    ("models/transformers/transformer_kandinsky.py",),
    "4 forwards (2 steps with CFG) of the Kandinsky 5 T2V transformer (constructor defaults: 2048 wide, "
    "32 visual blocks; 16 latent channels, visual conditioning), 121 frames at 512x768, 256 text tokens",
    "50 steps with CFG: 100 forwards (the pipeline's defaults)",
    100,
)
def kandinsky5(device: Any, scale: Scale) -> Built:
    import torch

    from bot.verify.real_scale.builders import Built, Inputs, forwards, released_model

    model, blocks = released_model(
        "Kandinsky5Transformer3DModel", KANDINSKY5_T2V, {"num_visual_blocks": 32}, scale, device
    )
    frames = scale.frames or 121
    height, width = (scale.pixels, scale.pixels) if scale.pixels else (512, 768)
    latent_frames, text = (frames - 1) // 4 + 1, scale.text(256)
    draw = Inputs(device, model.dtype)
    inputs = {
        "hidden_states": draw.randn(1, latent_frames, height // 8, width // 8, 33),
        "encoder_hidden_states": draw.randn(1, text, 3584),
        "pooled_projections": draw.randn(1, 768),
        "timestep": torch.tensor([500.0], device=device, dtype=model.dtype),
        "visual_rope_pos": [torch.arange(n, device=device) for n in (latent_frames, height // 16, width // 16)],
        "text_rope_pos": torch.arange(text, device=device),
    }
    tokens = latent_frames * (height // 16) * (width // 16)
    described = f"{frames} frames at {height}x{width} ({tokens} video tokens), {text} text tokens"
    return Built(forwards(model, inputs, 2 * (scale.steps or 2)), {"blocks": blocks, "input": described})


@case(
    "NucleusMoEImageTransformer2DModel",
    ("DIF001",),
    ("models/transformers/transformer_nucleusmoe_image.py",),
    "4 forwards (2 steps with CFG) of the NucleusMoE-Image transformer (constructor defaults: 2048 wide, "
    "24 layers, dense first three and last), 1024x1024 (4096 image tokens), 128 text tokens",
    "50 steps with CFG: 100 forwards (the pipeline's defaults)",
    100,
)
def nucleusmoe(device: Any, scale: Scale) -> Built:
    import torch

    from bot.verify.real_scale.builders import Built, Inputs, forwards, released_model

    model, blocks = released_model("NucleusMoEImageTransformer2DModel", {}, {"num_layers": 24}, scale, device)
    side, text = scale.side(1024), scale.text(128)
    draw = Inputs(device, model.dtype)
    grid = side // 16
    inputs = {
        "hidden_states": draw.randn(1, grid * grid, 64),
        "encoder_hidden_states": draw.randn(1, text, 3584),
        "encoder_hidden_states_mask": draw.ones(1, text),
        "timestep": torch.tensor([1.0], device=device, dtype=model.dtype),
        "img_shapes": [(1, grid, grid)],
    }
    described = f"{side}x{side} ({grid * grid} image tokens), {text} text tokens"
    return Built(forwards(model, inputs, 2 * (scale.steps or 2)), {"blocks": blocks, "input": described})


@case(
    "SD3Transformer2DModel[compile]",
    ("DIF003",),
    ("models/transformers/transformer_sd3.py",),
    "SD3 medium transformer (1536 wide), 1024x1024, CFG batch of 2: the first compiled forward (cold compile) "
    "and steady forwards; compile_repeated_blocks where the tree declares _repeated_blocks, else torch.compile",
    "28 steps with CFG in one batch: 28 forwards, after one cold compile",
    28,
    regional_compile=True,
)
def sd3_compile(device: Any, scale: Scale) -> Built:
    from bot.verify.real_scale.builders import Built, forwards

    model, blocks, side, text, draw = _sd3_medium(device, scale)
    inputs = {
        "hidden_states": draw.randn(2, 16, side // 8, side // 8),
        "encoder_hidden_states": draw.randn(2, text, 4096),
        "pooled_projections": draw.randn(2, 2048),
        "timestep": draw.randn(2).abs() * 1000,
    }
    return Built(forwards(model, inputs, scale.steps or 2), {"blocks": blocks, "input": f"{side}x{side}, batch 2"})
