"""A checkout's own tests supply targets for classes the built-in specs do not cover.

The checkout here is made on the spot: installed diffusers 0.42.1 as `src/diffusers`, and a
`tests/` with one model configuration class (new style: `get_init_dict`/`get_dummy_inputs`)
and one pipeline test class (`get_dummy_components`/`get_dummy_inputs`), written like
diffusers' own tests.
"""

from __future__ import annotations

import ast
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bot.verify import verify
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.zygote import Zygote
from bot.verify.targets.from_tests import discover
from codemods.project.index import installed_diffusers
from codemods.project.test_modules import CheckoutTestModules

LATTE = "models/transformers/latte_transformer_3d.py"
SUPER_RESOLUTION = "pipelines/latent_diffusion/pipeline_latent_diffusion_superresolution.py"

MODEL_TEST = """
import torch

from diffusers import LatteTransformer3DModel


class LatteTransformerTesterConfig:
    @property
    def model_class(self):
        return LatteTransformer3DModel

    def get_init_dict(self):
        return {
            "sample_size": 8,
            "num_layers": 2,
            "patch_size": 2,
            "attention_head_dim": 4,
            "num_attention_heads": 2,
            "caption_channels": 8,
            "in_channels": 4,
            "cross_attention_dim": 8,
            "out_channels": 8,
            "attention_bias": True,
            "activation_fn": "gelu-approximate",
            "num_embeds_ada_norm": 1000,
            "norm_type": "ada_norm_single",
            "norm_elementwise_affine": False,
            "norm_eps": 1e-6,
        }

    def get_dummy_inputs(self):
        generator = torch.Generator("cpu").manual_seed(0)
        return {
            "hidden_states": torch.randn(1, 4, 1, 8, 8, generator=generator),
            "encoder_hidden_states": torch.randn(1, 8, 8, generator=generator),
            "timestep": torch.tensor([500]),
            "enable_temporal_attentions": True,
        }
"""

PIPELINE_TEST = """
import unittest

import torch

from diffusers import DDIMScheduler, LDMSuperResolutionPipeline, UNet2DModel, VQModel


class LDMSuperResolutionPipelineFastTests(unittest.TestCase):
    pipeline_class = LDMSuperResolutionPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        unet = UNet2DModel(
            block_out_channels=(4, 8),
            layers_per_block=1,
            norm_num_groups=4,
            sample_size=8,
            in_channels=6,
            out_channels=3,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        )
        vqvae = VQModel(
            in_channels=3,
            out_channels=3,
            latent_channels=3,
            block_out_channels=(4, 8),
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            norm_num_groups=4,
            num_vq_embeddings=32,
        )
        return {"vqvae": vqvae, "unet": unet, "scheduler": DDIMScheduler()}

    def get_dummy_inputs(self, device, seed=0):
        generator = torch.Generator(device="cpu").manual_seed(seed)
        image = torch.rand(1, 3, 8, 8, generator=generator)
        return {"image": image, "generator": generator, "num_inference_steps": 2, "output_type": "np", "return_dict": False}
"""


def _checkout(root: Path) -> Path:
    shutil.copytree(installed_diffusers(), root / "src" / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("tests", "tests/models", "tests/models/transformers", "tests/pipelines"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "tests/models/transformers/test_models_transformer_latte.py").write_text(MODEL_TEST)
    (root / "tests/pipelines/test_latent_diffusion_superresolution.py").write_text(PIPELINE_TEST)
    return root / "src" / "diffusers"


def test_test_classes_that_configure_a_class_become_targets(tmp_path: Path) -> None:
    _checkout(tmp_path)
    specs = discover(CheckoutTestModules(tmp_path / "tests"), tmp_path / "tests", covered={"DDPMPipeline"})
    assert [(s.name, s.kind, s.classes, s.best_effort) for s in specs] == [
        (
            "tests/models/transformers/test_models_transformer_latte.py::LatteTransformerTesterConfig",
            "model",
            ("LatteTransformer3DModel",),
            True,
        ),
        (
            "tests/pipelines/test_latent_diffusion_superresolution.py::LDMSuperResolutionPipelineFastTests",
            "pipeline",
            ("LDMSuperResolutionPipeline", "DDIMScheduler", "UNet2DModel", "VQModel"),
            True,
        ),
    ]


@pytest.fixture(scope="module")
def verified(
    tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote
) -> tuple[VerifyReport, Counter[str]]:
    """A verify run over the checkout, and how many times it parsed each of the checkout's test modules."""
    src = _checkout(tmp_path_factory.mktemp("checkout"))
    modules = {path.read_text(): path.name for path in (src.parent.parent / "tests").rglob("test_*.py")}
    parses: Counter[str] = Counter()
    parse = ast.parse

    def counting_parse(source: Any, *args: Any, **kwargs: Any) -> ast.AST:
        if isinstance(source, str) and source in modules:
            parses[modules[source]] += 1
        return parse(source, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ast, "parse", counting_parse)
        paths = (src / LATTE, src / SUPER_RESOLUTION)
        report = verify(src, select=("DIF003", "DIF004"), paths=paths, cache_dir=scan_cache, zygote=zygote)
    return report, parses


@pytest.fixture(scope="module")
def report(verified: tuple[VerifyReport, Counter[str]]) -> VerifyReport:
    return verified[0]


def test_a_model_configured_by_a_checkout_test_is_verified(report: VerifyReport) -> None:
    latte = next(t for t in report.targets if t.target.endswith("::LatteTransformerTesterConfig"))
    assert (latte.verdict, latte.rules, latte.kind) == ("verified", ["DIF003"], "model")
    assert (latte.repeated_blocks["before"]["found"], latte.repeated_blocks["after"]["found"]) == (0, 4)
    assert latte.parity["exact"]


def test_a_pipeline_configured_by_a_checkout_test_is_verified(report: VerifyReport) -> None:
    super_resolution = next(t for t in report.targets if t.target.endswith("::LDMSuperResolutionPipelineFastTests"))
    assert (super_resolution.verdict, super_resolution.rules, super_resolution.unit) == ("verified", ["DIF004"], "step")
    assert super_resolution.after["outputs"] < super_resolution.before["outputs"]
    assert super_resolution.parity["exact"]


def test_the_report_says_where_the_time_went(report: VerifyReport) -> None:
    assert report.own_tests is not None
    assert list(report.phases) == ["rewrite", "targets", "own tests"]
    assert all(seconds > 0 for seconds in report.phases.values())
    assert sum(report.phases.values()) <= report.seconds
    assert report.to_json()["phases"] == {phase: round(seconds, 1) for phase, seconds in report.phases.items()}


def test_a_verify_parses_each_test_module_once_for_its_targets_covering_tests_and_turned_on_tests(
    verified: tuple[VerifyReport, Counter[str]],
) -> None:
    report, parses = verified
    assert report.own_tests is not None and report.own_tests.modules  # the covering tests were planned
    assert parses == {"test_models_transformer_latte.py": 1, "test_latent_diffusion_superresolution.py": 1}
