"""Which models a pipeline calls per denoising step, read from installed diffusers' own pipelines."""

from __future__ import annotations

from codemods.analysis.models.denoisers import Denoising, PipelineComponents, pipeline_components
from codemods.project.index import installed_diffusers
from codemods.source import SourceFile


def _components(module: str) -> dict[str, PipelineComponents]:
    path = installed_diffusers() / module
    found = pipeline_components(SourceFile(str(path), path.read_text(encoding="utf-8")))
    return {pipeline.pipeline: pipeline for pipeline in found}


def test_the_unet_called_in_the_loop_is_per_step_and_the_encoders_are_not() -> None:
    sd = _components("pipelines/stable_diffusion/pipeline_stable_diffusion.py")["StableDiffusionPipeline"]
    assert sd.per_step == ("UNet2DConditionModel",)
    assert {"AutoencoderKL", "CLIPTextModel", "UNet2DConditionModel"} <= set(sd.registered)


def test_a_component_annotated_as_a_list_or_a_multi_model_stands_for_its_classes() -> None:
    # `controlnet: ControlNetModel | list[ControlNetModel] | tuple[ControlNetModel] | MultiControlNetModel`
    pipeline = _components("pipelines/controlnet/pipeline_controlnet.py")["StableDiffusionControlNetPipeline"]
    assert pipeline.per_step == ("ControlNetModel", "MultiControlNetModel", "UNet2DConditionModel")


def test_a_local_bound_to_either_transformer_is_followed() -> None:
    # Wan 2.2: `current_model = self.transformer` / `current_model = self.transformer_2` inside the loop.
    wan = _components("pipelines/wan/pipeline_wan.py")["WanPipeline"]
    assert wan.per_step == ("WanTransformer3DModel",)  # both components are Wan transformers


def test_a_pipeline_without_a_denoising_loop_calls_nothing_per_step() -> None:
    upsample = _components("pipelines/ltx/pipeline_ltx_latent_upsample.py")["LTXLatentUpsamplePipeline"]
    assert (upsample.registered, upsample.per_step) == (("AutoencoderKLLTXVideo", "LTXLatentUpsamplerModel"), ())


def test_what_runs_before_the_loop_is_registered_but_not_per_step() -> None:
    ace = _components("pipelines/ace_step/pipeline_ace_step.py")["AceStepPipeline"]
    assert ace.per_step == ("AceStepTransformer1DModel",)
    assert {"AceStepConditionEncoder", "AceStepAudioTokenDetokenizer"} <= set(ace.registered)


def test_the_tree_summary_names_a_pipeline_for_each_per_step_class() -> None:
    pipelines = [
        (PipelineComponents("A", ("Unet", "Vae"), ("Unet",)), False),
        (PipelineComponents("B", ("Upsampler",), ()), False),
    ]
    summary = Denoising.of(pipelines)
    assert (summary.per_step, summary.registered, summary.pipelines) == (
        {"Unet": "A"},
        {"Unet": "A", "Vae": "A", "Upsampler": "B"},
        2,
    )


def test_a_class_only_deprecated_pipelines_call_per_step_is_kept_apart() -> None:
    pipelines = [
        (PipelineComponents("Maintained", ("Unet",), ("Unet",)), False),
        (PipelineComponents("Deprecated", ("Unet", "Unet3D"), ("Unet", "Unet3D")), True),
    ]
    summary = Denoising.of(pipelines)
    assert (summary.per_step, summary.deprecated_per_step) == (
        {"Unet": "Maintained"},
        {"Unet": "Deprecated", "Unet3D": "Deprecated"},
    )
