"""DIF003: denoisers that repeat blocks get `_repeated_blocks`, so that `compile_repeated_blocks()` works.

Fixtures (fixtures/DIF003) pin the placement and the traps. Here: the rewrite of the installed
diffusers (which models its pipelines call per step, what UNets' factory-built blocks stack),
checked the way `ModelMixin.compile_repeated_blocks` uses the list (class names matched against
`type(module).__name__` over `model.modules()`), on tiny models built on the CPU.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from installed_trees import DiffusersTrees, run_scripts_in_tree

# Every model of diffusers 0.42.1 that DIF003 fixes, with the list it adds (reviewed one by one): the
# denoisers its pipelines call per step, UNets and ControlNets with what their factory-built blocks stack.
FIXED = {
    ("models/controlnets/controlnet.py", "ControlNetModel"): ("BasicTransformerBlock",),
    ("models/controlnets/controlnet_cosmos.py", "CosmosControlNetModel"): ("CosmosTransformerBlock",),
    ("models/controlnets/controlnet_flux.py", "FluxControlNetModel"): (
        "FluxTransformerBlock",
        "FluxSingleTransformerBlock",
    ),
    ("models/controlnets/controlnet_hunyuan.py", "HunyuanDiT2DControlNetModel"): ("HunyuanDiTBlock",),
    ("models/controlnets/controlnet_qwenimage.py", "QwenImageControlNetModel"): ("QwenImageTransformerBlock",),
    ("models/controlnets/controlnet_sana.py", "SanaControlNetModel"): ("SanaTransformerBlock",),
    ("models/controlnets/controlnet_sparsectrl.py", "SparseControlNetModel"): ("BasicTransformerBlock",),
    ("models/controlnets/controlnet_sd3.py", "SD3ControlNetModel"): (
        "JointTransformerBlock",
        "SD3SingleTransformerBlock",
    ),
    ("models/controlnets/controlnet_z_image.py", "ZImageControlNetModel"): (
        "ZImageControlTransformerBlock",
        "ZImageTransformerBlock",
    ),
    ("models/transformers/ace_step_transformer.py", "AceStepTransformer1DModel"): ("AceStepTransformerBlock",),
    ("models/transformers/auraflow_transformer_2d.py", "AuraFlowTransformer2DModel"): (
        "AuraFlowJointTransformerBlock",
        "AuraFlowSingleTransformerBlock",
    ),
    ("models/transformers/cogvideox_transformer_3d.py", "CogVideoXTransformer3DModel"): ("CogVideoXBlock",),
    ("models/transformers/consisid_transformer_3d.py", "ConsisIDTransformer3DModel"): ("ConsisIDBlock",),
    ("models/transformers/dit_transformer_2d.py", "DiTTransformer2DModel"): ("BasicTransformerBlock",),
    ("models/transformers/hunyuan_transformer_2d.py", "HunyuanDiT2DModel"): ("HunyuanDiTBlock",),
    ("models/transformers/latte_transformer_3d.py", "LatteTransformer3DModel"): ("BasicTransformerBlock",),
    ("models/transformers/lumina_nextdit2d.py", "LuminaNextDiT2DModel"): ("LuminaNextDiTBlock",),
    ("models/transformers/pixart_transformer_2d.py", "PixArtTransformer2DModel"): ("BasicTransformerBlock",),
    ("models/transformers/prior_transformer.py", "PriorTransformer"): ("BasicTransformerBlock",),
    ("models/transformers/sana_transformer.py", "SanaTransformer2DModel"): ("SanaTransformerBlock",),
    ("models/transformers/stable_audio_transformer.py", "StableAudioDiTModel"): ("StableAudioDiTBlock",),
    ("models/transformers/transformer_allegro.py", "AllegroTransformer3DModel"): ("AllegroTransformerBlock",),
    ("models/transformers/transformer_bria.py", "BriaTransformer2DModel"): (
        "BriaTransformerBlock",
        "BriaSingleTransformerBlock",
    ),
    ("models/transformers/transformer_cogview3plus.py", "CogView3PlusTransformer2DModel"): (
        "CogView3PlusTransformerBlock",
    ),
    ("models/transformers/transformer_cogview4.py", "CogView4Transformer2DModel"): ("CogView4TransformerBlock",),
    ("models/transformers/transformer_cosmos.py", "CosmosTransformer3DModel"): ("CosmosTransformerBlock",),
    ("models/transformers/transformer_easyanimate.py", "EasyAnimateTransformer3DModel"): (
        "EasyAnimateTransformerBlock",
    ),
    ("models/transformers/transformer_hunyuan_video_framepack.py", "HunyuanVideoFramepackTransformer3DModel"): (
        "HunyuanVideoTransformerBlock",
        "HunyuanVideoSingleTransformerBlock",
    ),
    ("models/transformers/transformer_lumina2.py", "Lumina2Transformer2DModel"): ("Lumina2TransformerBlock",),
    ("models/transformers/transformer_mochi.py", "MochiTransformer3DModel"): ("MochiTransformerBlock",),
    ("models/transformers/transformer_omnigen.py", "OmniGenTransformer2DModel"): ("OmniGenBlock",),
    ("models/transformers/transformer_prx.py", "PRXTransformer2DModel"): ("PRXBlock",),
    ("models/transformers/transformer_sana_video.py", "SanaVideoTransformer3DModel"): ("SanaVideoTransformerBlock",),
    ("models/transformers/transformer_sd3.py", "SD3Transformer2DModel"): ("JointTransformerBlock",),
    ("models/unets/unet_spatio_temporal_condition.py", "UNetSpatioTemporalConditionModel"): (
        "BasicTransformerBlock",
        "TemporalBasicTransformerBlock",
    ),
    ("models/unets/unet_motion_model.py", "UNetMotionModel"): ("BasicTransformerBlock",),
    ("pipelines/audioldm2/modeling_audioldm2.py", "AudioLDM2UNet2DConditionModel"): ("BasicTransformerBlock",),
}

# Those whose blocks come from `get_down_block`-like factories or are appended to block lists one per block type:
# the names are of what the blocks' transformers stack.
FACTORY_BUILT = {
    "ControlNetModel",
    "SparseControlNetModel",
    "UNetMotionModel",
    "UNetSpatioTemporalConditionModel",
    "AudioLDM2UNet2DConditionModel",
}


def _repeated_blocks(path: Path) -> dict[str, tuple[str, ...]]:
    found = {}
    for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
        for statement in cls.body:
            if isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_repeated_blocks" for t in statement.targets
            ):
                found[cls.name] = tuple(ast.literal_eval(statement.value))
    return found


def test_diffusers_models_get_exactly_the_reviewed_lists(diffusers_trees: DiffusersTrees) -> None:
    added = {}
    for relative in diffusers_trees.changed_files():
        before = _repeated_blocks(diffusers_trees.original / "diffusers" / relative)
        after = _repeated_blocks(diffusers_trees.rewritten / "diffusers" / relative)
        added.update({(relative, cls): names for cls, names in after.items() if cls not in before})
    assert added == FIXED
    fixed = [f for f in diffusers_trees.result.findings if f.code == "DIF003" and f.fixed]
    assert len(fixed) == len(FIXED)


# Models that stack blocks but that no pipeline runs per step (issue 11): reported without a fix where the tree
# does not say how they run (used only by modular pipelines), left alone where it shows them run once per call
# (encoders, latent upsamplers) or only inside another model (UNet3D's temporal transformer, AceStep's encoders).
# Kandinsky3UNet: its `Kandinsky3Block`s are stacked inside `Kandinsky3ResNetBlock`s, themselves repeated blocks.
REPORTED_ONLY = {"AnimaTextConditioner", "MiniMaxMusic3RVQDepthDecoder"}
REPORTED_NESTED = {"Kandinsky3UNet": "itself a block"}
# Models only pipelines under pipelines/deprecated/ run per step (the same on diffusers main): out of the tool's
# scope, that is no evidence they run per step in maintained code, so they are reported without a fix.
DEPRECATED_ONLY = {
    "UNetControlNetXSModel": "StableDiffusionControlNetXSPipeline",
    "Transformer2DModel": "VQDiffusionPipeline",
    "UNet3DConditionModel": "TextToVideoSDPipeline",
    "I2VGenXLUNet": "I2VGenXLPipeline",
    "UVit2DModel": "AmusedPipeline",
}
LEFT_ALONE = {
    "TransformerTemporalModel",
    "DreamLiteTransformer2DModel",
    "AceStepLyricEncoder",
    "AceStepTimbreEncoder",
    "AceStepAudioTokenDetokenizer",
    "LTXLatentUpsamplerModel",
    "LTX2LatentUpsamplerModel",
    # Its blocks sit in a child `nn.Module` (`LTX2VideoDiffusionDecoder3d`), whose `denoise` loops over them; the
    # decode pipeline calls `diffusion_decoder.decode(...)` once per call (default: one decoder step).
    "LTX2VideoDiffusionDecoderModel",
}


def test_models_that_do_not_run_per_step_are_never_fixed(diffusers_trees: DiffusersTrees) -> None:
    findings = {f.message.split("`")[1]: f for f in diffusers_trees.result.findings if f.code == "DIF003"}
    assert {name: (findings[name].fix, findings[name].fixed) for name in REPORTED_ONLY} == dict.fromkeys(
        REPORTED_ONLY, (None, False)
    )
    assert all("denoising loop" in (findings[name].not_fixed_reason or "") for name in REPORTED_ONLY)
    assert not LEFT_ALONE & set(findings)
    for name, reason in REPORTED_NESTED.items():
        assert findings[name].fix is None and reason in (findings[name].not_fixed_reason or "")


def test_models_only_deprecated_pipelines_run_per_step_are_reported_without_a_fix(
    diffusers_trees: DiffusersTrees,
) -> None:
    findings = {f.message.split("`")[1]: f for f in diffusers_trees.result.findings if f.code == "DIF003"}
    assert {name: findings[name].fix for name in DEPRECATED_ONLY} == dict.fromkeys(DEPRECATED_ONLY)
    for name, pipeline in DEPRECATED_ONLY.items():
        assert findings[name].not_fixed_reason.startswith(
            f"the only pipelines that call `{name}` in their denoising loop (`{pipeline}`) are under pipelines/deprecated/"
        )


# In the rewritten tree: every listed name is the `__name__` of an nn.Module class (not a whole model)
# bound under that name in the model's own module; a UNet's names, which its blocks' transformers
# stack, are each the `__name__` of exactly one diffusers module class.
NAMES_RESOLVE = """
import importlib, json
import torch
from diffusers.models.modeling_utils import ModelMixin


def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


problems = []
for module_name, class_name in {targets!r}:
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name)
    for name in cls._repeated_blocks:
        block = vars(module).get(name)
        if class_name in {factory_built!r}:
            named = {{c for c in subclasses(torch.nn.Module) if c.__name__ == name and c.__module__.startswith("diffusers.")}}
            block = named.pop() if len(named) == 1 else None
        if not (isinstance(block, type) and issubclass(block, torch.nn.Module) and block.__name__ == name):
            problems.append(f"{{module_name}}.{{class_name}}: {{name}} is not a module class of that file")
        elif issubclass(block, ModelMixin):
            problems.append(f"{{module_name}}.{{class_name}}: {{name}} is a whole model")
print(json.dumps(problems))
"""


@pytest.fixture(scope="module")
def rewritten_reports(diffusers_trees: DiffusersTrees) -> list:
    """What NAMES_RESOLVE and TINY_MODELS report on the rewritten tree, run in turn in one interpreter."""
    targets = sorted(("diffusers." + path.removesuffix(".py").replace("/", "."), cls) for path, cls in FIXED)
    names = NAMES_RESOLVE.format(targets=targets, factory_built=sorted(FACTORY_BUILT))
    return run_scripts_in_tree(diffusers_trees.rewritten, [names, TINY_MODELS])


def test_every_listed_name_is_a_block_class_of_the_models_file(rewritten_reports: list) -> None:
    assert rewritten_reports[0] == []


# Tiny models, and what `compile_repeated_blocks` hands to `nn.Module.compile` (recorded, not compiled).
TINY_MODELS = """
import json
import torch
from diffusers.models.controlnets.controlnet_flux import FluxControlNetModel
from diffusers.models.transformers.cogvideox_transformer_3d import CogVideoXTransformer3DModel
from diffusers.models.transformers.dit_transformer_2d import DiTTransformer2DModel
from diffusers.models.transformers.sana_transformer import SanaTransformer2DModel
from diffusers.models.controlnets.controlnet import ControlNetModel
from diffusers.models.unets.unet_spatio_temporal_condition import UNetSpatioTemporalConditionModel
from diffusers.models.unets.unet_motion_model import UNetMotionModel

models = {
    "SanaTransformer2DModel": SanaTransformer2DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=2,
        num_cross_attention_heads=2, cross_attention_head_dim=8, cross_attention_dim=16, caption_channels=8,
        sample_size=8,
    ),
    "DiTTransformer2DModel": DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, num_layers=2, sample_size=8,
        patch_size=2, num_embeds_ada_norm=10,
    ),
    "FluxControlNetModel": FluxControlNetModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=2, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=16, pooled_projection_dim=8, axes_dims_rope=[2, 2, 4],
    ),
    "CogVideoXTransformer3DModel": CogVideoXTransformer3DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, num_layers=2, sample_width=8,
        sample_height=8, sample_frames=9, patch_size=2, text_embed_dim=16, time_embed_dim=8,
    ),
    "ControlNetModel": ControlNetModel(
        block_out_channels=(8, 16), layers_per_block=1, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        cross_attention_dim=16, norm_num_groups=4, attention_head_dim=2, conditioning_embedding_out_channels=(4, 8),
    ),
    "UNetSpatioTemporalConditionModel": UNetSpatioTemporalConditionModel(
        sample_size=8, in_channels=8, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), cross_attention_dim=16,
        num_attention_heads=(2, 4), addition_time_embed_dim=4, projection_class_embeddings_input_dim=12,
    ),
    "UNetMotionModel": UNetMotionModel(
        block_out_channels=(8, 16), layers_per_block=1, down_block_types=("CrossAttnDownBlockMotion", "DownBlockMotion"),
        up_block_types=("UpBlockMotion", "CrossAttnUpBlockMotion"), cross_attention_dim=16, num_attention_heads=2,
        norm_num_groups=4, motion_num_attention_heads=2,
    ),
}
compiled = []
torch.nn.Module.compile = lambda module, *args, **kwargs: compiled.append(type(module).__name__)
report = {}
for name, model in models.items():
    compiled.clear()
    try:
        model.compile_repeated_blocks(fullgraph=True)
    except ValueError as error:
        report[name] = {"error": str(error)}
        continue
    report[name] = {"listed": list(model._repeated_blocks), "compiled": list(compiled)}
print(json.dumps(report))
"""

EXPECTED_COMPILED = {
    "SanaTransformer2DModel": ["SanaTransformerBlock"] * 2,
    "DiTTransformer2DModel": ["BasicTransformerBlock"] * 2,
    "FluxControlNetModel": ["FluxTransformerBlock", "FluxSingleTransformerBlock", "FluxSingleTransformerBlock"],
    "CogVideoXTransformer3DModel": ["CogVideoXBlock"] * 2,
    # One cross-attention down block and the mid block: a `Transformer2DModel` each.
    "ControlNetModel": ["BasicTransformerBlock"] * 2,
    # A spatial and a temporal block in each `TransformerSpatioTemporalModel` (down, mid, two up).
    "UNetSpatioTemporalConditionModel": ["BasicTransformerBlock", "TemporalBasicTransformerBlock"] * 4,
    # Blocks appended to `nn.ModuleList([])`s: their spatial and motion transformers' blocks, and the mid block's.
    "UNetMotionModel": ["BasicTransformerBlock"] * 11,
}


def test_tiny_models_compile_every_block_they_stack(rewritten_reports: list) -> None:
    report = rewritten_reports[1]
    for name, compiled in EXPECTED_COMPILED.items():
        assert report[name]["compiled"] == compiled
        assert set(report[name]["listed"]) == set(compiled)  # every listed class occurs in the model


def test_the_same_tiny_models_cannot_compile_regionally_before_the_fix(diffusers_trees: DiffusersTrees) -> None:
    (report,) = run_scripts_in_tree(diffusers_trees.original, [TINY_MODELS])
    assert set(report) == set(EXPECTED_COMPILED)
    assert all("`_repeated_blocks` attribute is empty" in entry["error"] for entry in report.values())
