"""Pipelines with no fast test of their own, run with the configuration of a tested sibling.

Diffusers often adds a variant of a pipeline (audio-to-audio, inpainting, a ControlNet) without
a fast test: on main, `StableAudio3AudioToAudioPipeline` and `StableAudio3InpaintPipeline` take
exactly `StableAudio3Pipeline`'s components, and `ZImageControlNetPipeline` takes
`ZImagePipeline`'s plus a ControlNet. Without a target their rewrites stay unverified. A sibling
borrows the tested pipeline's `get_dummy_components()` and `get_dummy_inputs()` from the
checkout's own test and adds what the variant needs (written here: a reference waveform, a mask
span, a tiny ControlNet matched to the test's transformer, a control image, a SigLIP image
encoder as wide as the transformer's image embedding). It is a target like any test-derived one,
named `<test>::<TestClass> as <Variant>`, and it is used only when the test class exists in the
checkout and still configures the pipeline named here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

AS = " as "


@dataclass(frozen=True)
class Sibling:
    variant: str  # the pipeline class without a test
    test: str  # `tests/<path>.py::<TestClass>` whose components and inputs it starts from
    configures: str  # the pipeline that test configures
    builds: tuple[str, ...] = ()  # diffusers classes the additions build
    # The test's components -> the variant's components; its inputs -> the variant's inputs.
    components: Callable[[dict[str, Any]], dict[str, Any]] = dict
    inputs: Callable[[dict[str, Any]], dict[str, Any]] = dict


def _waveform(inputs: dict[str, Any]) -> Any:
    """A reference of the length the test asks for: stereo at the test VAE's 16 Hz, `duration` seconds."""
    import torch

    return torch.randn(1, 2, int(16 * inputs["duration"]), generator=torch.Generator().manual_seed(1))


def _audio_to_audio(inputs: dict[str, Any]) -> dict[str, Any]:
    return {**inputs, "audio": _waveform(inputs), "init_noise_level": 0.7}


def _with_rebuilt_transformer(components: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The test's transformer rebuilt (seed 0) with `changes` to its configuration."""
    import torch

    transformer = components["transformer"]
    torch.manual_seed(0)
    return {**components, "transformer": type(transformer).from_config({**transformer.config, **changes})}


def _with_inpainting_transformer(components: dict[str, Any]) -> dict[str, Any]:
    """The test's DiT rebuilt to take the inpainting condition: a mask channel and the masked latents."""
    return _with_rebuilt_transformer(components, local_add_cond_dim=1 + components["vae"].config.latent_dim)


def _with_control_channels(components: dict[str, Any]) -> dict[str, Any]:
    """The test's transformer rebuilt to take the control latents beside the noisy ones (twice the channels)."""
    return _with_rebuilt_transformer(components, in_channels=2 * components["transformer"].config.in_channels)


def _audio_inpaint(inputs: dict[str, Any]) -> dict[str, Any]:
    span = {"mask_start_seconds": 0.25 * inputs["duration"], "mask_end_seconds": 0.75 * inputs["duration"]}
    return {**inputs, "audio": _waveform(inputs), **span}


# What a Z-Image ControlNet must share with the transformer it is attached to (`from_transformer`).
_Z_IMAGE_SHARED = (
    "all_patch_size",
    "all_f_patch_size",
    "dim",
    "n_refiner_layers",
    "n_heads",
    "n_kv_heads",
    "norm_eps",
    "qk_norm",
)


def _with_z_image_controlnet(components: dict[str, Any], inpainting: bool = False) -> dict[str, Any]:
    """A one-block ControlNet shaped like the test's transformer (the pipeline shares the rest with it).

    The inpainting one (Union 2.0) takes the control latents, the mask and the masked image's latents.
    """
    import torch
    from diffusers import ZImageControlNetModel

    transformer = components["transformer"].config
    torch.manual_seed(0)
    controlnet = ZImageControlNetModel(
        control_layers_places=[0],
        control_in_dim=2 * transformer.in_channels + 1 if inpainting else transformer.in_channels,
        **{key: transformer[key] for key in _Z_IMAGE_SHARED},
    )
    return {**components, "controlnet": controlnet}


def _control_image(inputs: dict[str, Any]) -> dict[str, Any]:
    from PIL import Image

    return {**inputs, "control_image": Image.new("RGB", (inputs["width"], inputs["height"]), (128, 64, 32))}


def _inpaint_images(inputs: dict[str, Any]) -> dict[str, Any]:
    """A control image, an image and a mask over its left half."""
    from PIL import Image

    size = (inputs["width"], inputs["height"])
    mask = Image.new("L", size, 0)
    mask.paste(255, (0, 0, size[0] // 2, size[1]))
    return {**_control_image(inputs), "image": Image.new("RGB", size, (32, 96, 160)), "mask_image": mask}


def _with_siglip_image_encoder(components: dict[str, Any]) -> dict[str, Any]:
    """A one-layer SigLIP vision tower as wide as the transformer's image embedding, and its processor."""
    import torch
    from transformers import SiglipImageProcessor, SiglipVisionConfig, SiglipVisionModel

    width = components["transformer"].config.image_embed_dim
    torch.manual_seed(0)
    encoder = SiglipVisionModel(
        SiglipVisionConfig(
            hidden_size=width,
            intermediate_size=2 * width,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=16,
            patch_size=8,
        )
    )
    processor = SiglipImageProcessor(size={"height": 16, "width": 16})
    return {**components, "image_encoder": encoder.eval(), "feature_extractor": processor}


def _first_frame(inputs: dict[str, Any]) -> dict[str, Any]:
    """The test's size as a first frame: the image-to-video pipeline takes its size from the image."""
    from PIL import Image

    kept = {key: value for key, value in inputs.items() if key not in ("height", "width")}
    return {**kept, "image": Image.new("RGB", (inputs["width"], inputs["height"]), (32, 96, 160))}


def _with_union_controlnet(components: dict[str, Any]) -> dict[str, Any]:
    """The test's ControlNet replaced by a ControlNet-Union shaped by its UNet (as `from_unet` shapes one).

    The union's control-type transformer defaults to SDXL's 320 channels; it must match the UNet's first block.
    """
    import torch
    from diffusers import ControlNetUnionModel

    unet, controlnet = components["unet"], components["controlnet"]
    width = unet.config.block_out_channels[0]
    shaped = ControlNetUnionModel.from_unet(
        unet,
        conditioning_embedding_out_channels=controlnet.config.conditioning_embedding_out_channels,
        load_weights_from_unet=False,
    ).config
    torch.manual_seed(0)
    # As keyword arguments: values the config holds as defaults (`_use_default_values`) are not read from it.
    union = ControlNetUnionModel.from_config(shaped, num_trans_channel=width, num_proj_channel=width, num_trans_head=2)
    return {**components, "controlnet": union}


def _union_control(inputs: dict[str, Any]) -> dict[str, Any]:
    """The test's control image as the one control of type 0 that a union pipeline takes."""
    kept = {key: value for key, value in inputs.items() if key != "image"}
    return {**kept, "control_image": [inputs["image"]], "control_mode": [0]}


SIBLINGS = (
    Sibling(
        "StableAudio3AudioToAudioPipeline",
        "tests/pipelines/stable_audio_3/test_stable_audio_3.py::StableAudio3PipelineFastTests",
        "StableAudio3Pipeline",
        inputs=_audio_to_audio,
    ),
    Sibling(
        "StableAudio3InpaintPipeline",
        "tests/pipelines/stable_audio_3/test_stable_audio_3.py::StableAudio3PipelineFastTests",
        "StableAudio3Pipeline",
        components=_with_inpainting_transformer,
        inputs=_audio_inpaint,
    ),
    Sibling(
        "ZImageControlNetPipeline",
        "tests/pipelines/z_image/test_z_image.py::ZImagePipelineFastTests",
        "ZImagePipeline",
        builds=("ZImageControlNetModel",),
        components=_with_z_image_controlnet,
        inputs=_control_image,
    ),
    Sibling(
        "CogView4ControlPipeline",
        "tests/pipelines/cogview4/test_cogview4.py::CogView4PipelineFastTests",
        "CogView4Pipeline",
        components=_with_control_channels,
        inputs=_control_image,
    ),
    Sibling(
        "ZImageControlNetInpaintPipeline",
        "tests/pipelines/z_image/test_z_image.py::ZImagePipelineFastTests",
        "ZImagePipeline",
        builds=("ZImageControlNetModel",),
        components=partial(_with_z_image_controlnet, inpainting=True),
        inputs=_inpaint_images,
    ),
    Sibling(
        "HunyuanVideo15ImageToVideoPipeline",
        "tests/pipelines/hunyuan_video1_5/test_hunyuan_1_5.py::HunyuanVideo15PipelineFastTests",
        "HunyuanVideo15Pipeline",
        components=_with_siglip_image_encoder,
        inputs=_first_frame,
    ),
    Sibling(
        "StableDiffusionXLControlNetUnionPipeline",
        "tests/pipelines/controlnet/test_controlnet_sdxl.py::StableDiffusionXLControlNetPipelineFastTests",
        "StableDiffusionXLControlNetPipeline",
        builds=("ControlNetUnionModel",),
        components=_with_union_controlnet,
        inputs=_union_control,
    ),
)


def sibling_named(target: str) -> Sibling | None:
    """The sibling a target name `<test> as <Variant>` stands for."""
    test, _, variant = target.partition(AS)
    return next((s for s in SIBLINGS if s.variant == variant and s.test == test), None)
