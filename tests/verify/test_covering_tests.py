"""Which test modules of a checkout cover a changed file: by layout, by configured class, by import."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.verify.planning.covering_tests import CheckoutTests
from codemods.project.test_modules import CheckoutTestModules

# package-relative file -> its source (only the class lines matter)
PACKAGE = {
    "schedulers/scheduling_ddim.py": "class DDIMScheduler:\n    pass\n",
    "models/autoencoders/autoencoder_asym_kl.py": "class AsymmetricAutoencoderKL:\n    pass\n",
    "models/unets/unet_2d.py": "class UNet2DModel:\n    pass\n",
    "pipelines/flux/pipeline_flux.py": "class FluxPipeline:\n    pass\n",
    "pipelines/stable_diffusion/pipeline_stable_diffusion.py": "def retrieve_timesteps():\n    pass\n",
}

# test file -> its source, in diffusers' naming and style
TESTS = {
    "schedulers/test_scheduler_ddim.py": "from diffusers import DDIMScheduler\n",
    "schedulers/test_scheduler_pndm.py": "from diffusers import PNDMScheduler\n",
    "models/autoencoders/test_models_asymmetric_autoencoder_kl.py": (
        "from diffusers import AsymmetricAutoencoderKL\n\n\n"
        "class AsymmetricAutoencoderKLTests:\n    model_class = AsymmetricAutoencoderKL\n"
    ),
    "pipelines/ddpm/test_ddpm.py": (
        "from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel\n\n\n"
        "class DDPMPipelineFastTests:\n    pipeline_class = DDPMPipeline\n"
    ),
    "pipelines/test_pipelines_common.py": "from diffusers import DDIMScheduler, UNet2DModel, FluxPipeline, PNDMScheduler\n",
    "pipelines/flux/test_pipeline_flux.py": "from diffusers import FluxPipeline\n",
    "quantization/flux/test_flux_quantized.py": "from diffusers import FluxPipeline\n",
    "pipelines/stable_diffusion/test_stable_diffusion.py": "from diffusers import DDIMScheduler\n",
}


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[CheckoutTests, Path]:
    for relative, text in PACKAGE.items():
        (tmp_path / "src" / "diffusers" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / "diffusers" / relative).write_text(text)
    for relative, text in TESTS.items():
        (tmp_path / "tests" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / relative).write_text(text)
    return CheckoutTests(CheckoutTestModules(tmp_path / "tests")), tmp_path / "src" / "diffusers"


def test_a_module_is_covered_by_the_test_named_after_it_in_the_mirrored_folder(checkout) -> None:
    tests, package = checkout
    assert tests.covering(package, ["schedulers/scheduling_ddim.py"]) == ["tests/schedulers/test_scheduler_ddim.py"]


def test_a_pipeline_module_is_covered_by_the_test_named_without_the_pipeline_prefix(checkout) -> None:
    tests, package = checkout
    assert tests.covering(package, ["pipelines/stable_diffusion/pipeline_stable_diffusion.py"]) == [
        "tests/pipelines/stable_diffusion/test_stable_diffusion.py"
    ]


def test_a_class_is_covered_by_the_tests_that_configure_it_whatever_their_name(checkout) -> None:
    tests, package = checkout
    assert tests.covering(package, ["models/autoencoders/autoencoder_asym_kl.py"]) == [
        "tests/models/autoencoders/test_models_asymmetric_autoencoder_kl.py"
    ]


def test_without_a_closer_test_the_most_specific_importer_covers_the_file(checkout) -> None:
    tests, package = checkout
    assert tests.covering(package, ["models/unets/unet_2d.py"]) == ["tests/pipelines/ddpm/test_ddpm.py"]


def test_tests_of_areas_that_need_the_hub_or_a_gpu_are_never_chosen(checkout) -> None:
    tests, package = checkout
    assert tests.covering(package, ["pipelines/flux/pipeline_flux.py"]) == [
        "tests/pipelines/flux/test_pipeline_flux.py"
    ]


def test_the_closest_test_of_every_file_comes_before_any_weaker_match(checkout) -> None:
    tests, package = checkout
    changed = ["models/unets/unet_2d.py", "schedulers/scheduling_ddim.py", "pipelines/flux/pipeline_flux.py"]
    assert tests.covering(package, changed) == [
        "tests/schedulers/test_scheduler_ddim.py",
        "tests/pipelines/flux/test_pipeline_flux.py",
        "tests/pipelines/ddpm/test_ddpm.py",
    ]
