"""A pipeline with no fast test of its own is run with the configuration of its tested sibling.

The checkout is made on the spot: installed diffusers as `src/diffusers`, and a `tests/` holding
one pipeline test written for this project in the style of diffusers' own: the text-to-audio
Stable Audio 3 pipeline, tiny. Its audio-to-audio and inpainting variants have no test; their
rewrites are verified with the borrowed components and the inputs `siblings.py` adds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.verify import verify
from bot.verify.judging.coverage import coverage_of
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.zygote import Zygote
from bot.verify.targets.from_tests import discover
from bot.verify.targets.siblings import SIBLINGS
from codemods.project.index import installed_diffusers
from codemods.project.test_modules import CheckoutTestModules

AUDIO_TO_AUDIO = "pipelines/stable_audio_3/pipeline_stable_audio_3_audio2audio.py"
TEST_FILE = "tests/pipelines/stable_audio_3/test_stable_audio_3.py"

STABLE_AUDIO_3_TEST = """
import unittest

import torch
from transformers import AutoTokenizer, T5GemmaConfig, T5GemmaEncoderModel
from transformers.models.t5gemma.configuration_t5gemma import T5GemmaModuleConfig

from diffusers import AutoencoderSAME, FlowMatchEulerDiscreteScheduler, StableAudio3DiTModel, StableAudio3Pipeline
from diffusers.pipelines.stable_audio_3.modeling_stable_audio_3 import StableAudio3DurationEmbedder

WIDTH = 8  # text encoder, cross-attention and duration embedding share it


class StableAudio3PipelineFastTests(unittest.TestCase):
    pipeline_class = StableAudio3Pipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        transformer = StableAudio3DiTModel(
            io_channels=4, patch_size=1, embed_dim=16, depth=1, num_heads=2, cond_token_dim=WIDTH,
            global_cond_dim=WIDTH, local_add_cond_dim=3, timestep_features_dim=8, ff_mult=2,
            num_memory_tokens=1, use_differential_attention=False,
        )
        vae = AutoencoderSAME(
            audio_channels=2, patch_size=2, encoder_channels=4, encoder_c_mults=(2,), encoder_strides=(2,),
            encoder_transformer_depths=(1,), latent_dim=4, use_differential_attention=False, dim_heads=4,
            ff_mult=2, sampling_rate=16,
        )
        tokenizer = AutoTokenizer.from_pretrained("hf-internal-testing/tiny-random-Gemma3ForCausalLM")
        module = T5GemmaModuleConfig(
            vocab_size=tokenizer.vocab_size, hidden_size=WIDTH, intermediate_size=16, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=4, max_position_embeddings=32,
            sliding_window=32, layer_types=["full_attention"],
        )
        config = T5GemmaConfig(encoder=module.to_dict(), decoder=module.to_dict(), is_encoder_decoder=False)
        return {
            "transformer": transformer,
            "scheduler": FlowMatchEulerDiscreteScheduler(num_train_timesteps=1, shift=1.0, stochastic_sampling=False),
            "vae": vae,
            "text_encoder": T5GemmaEncoderModel(config),
            "tokenizer": tokenizer,
            "duration_embedder": StableAudio3DurationEmbedder(output_dim=WIDTH, fourier_dim=8),
        }

    def get_dummy_inputs(self, device, seed=0):
        generator = torch.Generator(device="cpu").manual_seed(seed)
        return {"prompt": "rain on a tin roof", "generator": generator, "duration": 1.0, "num_inference_steps": 2}
"""


def _checkout(root: Path, test_source: str = STABLE_AUDIO_3_TEST) -> Path:
    shutil.copytree(installed_diffusers(), root / "src" / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("tests", "tests/pipelines", "tests/pipelines/stable_audio_3"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / TEST_FILE).write_text(test_source)
    return root / "src" / "diffusers"


def _sibling_names(tests: Path, covered: set[str]) -> list[str]:
    return [
        spec.name.partition(" as ")[2]
        for spec in discover(CheckoutTestModules(tests), tests, covered)
        if " as " in spec.name
    ]


def test_variants_of_a_tested_pipeline_become_targets_named_after_the_test(tmp_path: Path) -> None:
    _checkout(tmp_path)
    specs = {
        spec.name: spec for spec in discover(CheckoutTestModules(tmp_path / "tests"), tmp_path / "tests", covered=set())
    }
    inpaint = specs[f"{TEST_FILE}::StableAudio3PipelineFastTests as StableAudio3InpaintPipeline"]
    assert (inpaint.kind, inpaint.classes[0], inpaint.best_effort) == ("pipeline", "StableAudio3InpaintPipeline", True)
    assert inpaint.hub_ids == ("hf-internal-testing/tiny-random-Gemma3ForCausalLM",)
    assert _sibling_names(tmp_path / "tests", set()) == [
        "StableAudio3AudioToAudioPipeline",
        "StableAudio3InpaintPipeline",
    ]


def test_a_variant_with_its_own_target_or_a_test_that_moved_on_gets_no_sibling(tmp_path: Path) -> None:
    _checkout(tmp_path, STABLE_AUDIO_3_TEST.replace("pipeline_class = StableAudio3Pipeline", "pipeline_class = Other"))
    assert _sibling_names(tmp_path / "tests", set()) == []
    _checkout(tmp_path / "again")
    assert _sibling_names(tmp_path / "again" / "tests", {"StableAudio3InpaintPipeline"}) == [
        "StableAudio3AudioToAudioPipeline"
    ]


def test_every_sibling_names_a_test_class_and_the_pipeline_it_configures() -> None:
    assert all("::" in s.test and s.test.startswith("tests/") and s.configures != s.variant for s in SIBLINGS)
    assert len({s.variant for s in SIBLINGS}) == len(SIBLINGS)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    src = _checkout(tmp_path_factory.mktemp("checkout"))
    return verify(src, select=("DIF004", "DIF005"), paths=(src / AUDIO_TO_AUDIO,), cache_dir=scan_cache, zygote=zygote)


def test_the_audio_to_audio_variant_is_verified_with_the_borrowed_configuration(report: VerifyReport) -> None:
    variant = next(t for t in report.targets if t.target.endswith(" as StableAudio3AudioToAudioPipeline"))
    assert variant.verdict == "verified", variant.error
    assert sorted(variant.rules) == ["DIF004", "DIF005"]
    assert variant.after["outputs"] < variant.before["outputs"]
    assert variant.parity["exact"]
    assert coverage_of(report.to_json()).changes == {"verified": 3}  # the insertion and both reads
