"""Which test classes of a checkout configure a class, and which hub repositories they load, read from source."""

from __future__ import annotations

from pathlib import Path

from bot.verify.targets.from_tests import cannot_run, spec_for
from bot.verify.targets.offline_hub import missing_stand_ins
from codemods.project.test_modules import read_test_module
from codemods.project.test_sources import CheckoutTest

ADAPTER_STYLE = """
TOKENIZER = "hf-internal-testing/tiny-random-clip"


class AdapterTests:
    pipeline_class = AdapterPipeline

    def get_dummy_components(self, adapter_type):
        return {"tokenizer": CLIPTokenizer.from_pretrained(TOKENIZER), "adapter": self.adapter(adapter_type)}

    def adapter(self, adapter_type):
        return Adapter.from_pretrained("someone/tiny-adapter")


class FullAdapterFastTests(AdapterTests, unittest.TestCase):
    def get_dummy_components(self):
        return super().get_dummy_components("full")
"""

TESTER_CONFIG_STYLE = """
class FluxTesterConfig(BasePipelineTesterConfig):
    pipeline_class = FluxPipeline
    text_encoder_cls, text_encoder_id = T5EncoderModel, "hf-internal-testing/tiny-random-t5"

    def get_dummy_components(self, num_layers: int = 1):
        return {"text_encoder": self.text_encoder_cls.from_pretrained(self.text_encoder_id)}

    def get_dummy_inputs(self):
        return {"prompt": "a cat"}

    def test_slow(self):
        FluxPipeline.from_pretrained("black-forest-labs/FLUX.1-dev")


class TestFlux(FluxTesterConfig, PipelineTesterMixin):
    pass
"""

WRAPPER_STYLE = """
class CosmosPipelineWrapper(CosmosTextToWorldPipeline):
    pass


class CosmosFastTests(PipelineTesterMixin, unittest.TestCase):
    pipeline_class = CosmosPipelineWrapper

    def get_dummy_components(self):
        return {}
"""

MODEL_STYLE = """
class LatteConfig:
    @property
    def model_class(self):
        return LatteTransformer3DModel

    def get_init_dict(self):
        return {}

    def get_dummy_inputs(self):
        return {}
"""


def _classes(source: str) -> list[CheckoutTest]:
    module = read_test_module(source)
    assert module is not None
    return list(module.configurations)


def test_a_base_whose_components_need_an_argument_is_not_a_configuration() -> None:
    assert [c.name for c in _classes(ADAPTER_STYLE)] == ["FullAdapterFastTests"]


def test_the_pipeline_class_comes_from_a_base_in_the_same_file() -> None:
    (full,) = _classes(ADAPTER_STYLE)
    assert (full.kind, full.configures) == ("pipeline", "AdapterPipeline")


def test_hub_ids_are_followed_through_constants_super_and_self_methods() -> None:
    (full,) = _classes(ADAPTER_STYLE)
    assert full.hub_ids == ("hf-internal-testing/tiny-random-clip", "someone/tiny-adapter")


def test_the_diffusers_classes_a_configuration_builds_are_named() -> None:
    source = (
        "from diffusers import AutoencoderKL, ControlNetModel, FluxPipeline\n"
        "from transformers import T5EncoderModel\n\n\n"
        "class FluxControlTests:\n"
        "    pipeline_class = FluxPipeline\n\n"
        "    def get_dummy_components(self):\n"
        "        return {'vae': AutoencoderKL(), 'controlnet': self.controlnet, 'text_encoder': T5EncoderModel(c)}\n\n"
        "    @property\n"
        "    def controlnet(self):\n"
        "        return ControlNetModel()\n"
    )
    (flux,) = _classes(source)
    assert (flux.configures, flux.builds) == ("FluxPipeline", ("AutoencoderKL", "ControlNetModel"))


def test_hub_ids_in_class_attributes_count_and_test_methods_do_not() -> None:
    config, subclass = _classes(TESTER_CONFIG_STYLE)
    assert (config.name, config.hub_ids) == ("FluxTesterConfig", ("hf-internal-testing/tiny-random-t5",))
    assert (subclass.name, subclass.configures) == ("TestFlux", "FluxPipeline")


def test_a_tests_own_subclass_of_a_pipeline_configures_the_pipeline() -> None:
    (cosmos,) = _classes(WRAPPER_STYLE)
    assert (cosmos.name, cosmos.configures) == ("CosmosFastTests", "CosmosTextToWorldPipeline")


def test_a_model_configuration_names_its_model_class() -> None:
    assert _classes(MODEL_STYLE) == [CheckoutTest("LatteConfig", "model", "LatteTransformer3DModel", ())]


def test_only_ids_without_a_stand_in_are_missing() -> None:
    assert missing_stand_ins(("hf-internal-testing/tiny-random-t5", "someone/tiny-adapter")) == ["someone/tiny-adapter"]


def test_an_offline_failure_of_a_test_that_loads_an_unknown_repository_needs_the_hub(tmp_path: Path) -> None:
    spec = spec_for("tests/x.py::T", tmp_path, "pipeline", ("P",), ("someone/tiny-adapter",))
    error = "OSError: We couldn't connect to 'https://huggingface.co' to load the files"
    assert cannot_run(spec, error) == (
        "needs the Hub: its target tests/x.py::T loads someone/tiny-adapter (no offline stand-in)"
    )


def test_any_other_failure_is_this_environment(tmp_path: Path) -> None:
    spec = spec_for("tests/x.py::T", tmp_path, "pipeline", ("P",), ("hf-internal-testing/tiny-random-t5",))
    assert cannot_run(spec, "ImportError: needs torchvision\nmore") == (
        "its target tests/x.py::T cannot run here: ImportError: needs torchvision"
    )


def test_a_message_that_starts_on_the_next_line_is_kept(tmp_path: Path) -> None:
    spec = spec_for("tests/x.py::T", tmp_path, "pipeline", ("P",), ())
    error = "ImportError: \nQwen2VLVideoProcessor requires the Torchvision library but it was not found\nCheck out"
    assert cannot_run(spec, error) == (
        "its target tests/x.py::T cannot run here: "
        "ImportError: Qwen2VLVideoProcessor requires the Torchvision library but it was not found"
    )
