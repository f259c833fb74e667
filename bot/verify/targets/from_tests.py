"""Targets taken from a diffusers checkout's own tests: their tiny configurations and inputs.

When the tree is `<checkout>/src/diffusers` and `<checkout>/tests` exists, every test class
that defines a model's configuration (`get_init_dict` + `get_dummy_inputs`, or the older
`prepare_init_args_and_inputs_for_common`) or a pipeline's (`get_dummy_components` +
`get_dummy_inputs`) becomes a target named `tests/<path>.py::<Class>`, for classes no built-in
spec covers. The parent finds them in what the test files say (`codemods.project.test_modules`, read
once per run, no import); a worker imports the test module from a copy of tests/ against its own tree (tests/conftest.py, which would put the
checkout's src first on sys.path, is never run) with `DIFFUSERS_TEST_DEVICE=cpu`, so inputs
are made on the CPU and moved to the device like every other target's.

These targets are best effort: one that fails on both trees (a test helper this environment
lacks) proves nothing either way, and its rewrites are reported unverified, not failed.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.verify.targets import TargetSpec
from bot.verify.targets.offline_hub import missing_stand_ins
from bot.verify.targets.siblings import AS, SIBLINGS, sibling_named

if TYPE_CHECKING:  # a worker imports this module for `spec_for` alone: it need not load the test readers
    from codemods.project.test_modules import CheckoutTestModules
    from codemods.project.test_sources import CheckoutTest

SEPARATOR = "::"
_SCANNED = ("models", "pipelines")
# What a load from the Hub says when the Hub is offline and the repository is not in the cache.
_OFFLINE_SIGNS = ("huggingface.co", "offline mode", "local cache", "disk cache", "does not appear to have a file")


def replaced_by(built_in: list[TargetSpec]) -> set[str]:
    """The classes whose checkout test targets `built_in` replace: each spec's first class, but for the
    specs that run beside those targets."""
    return {spec.classes[0] for spec in built_in if not spec.beside_checkout_tests}


def discover(tests: CheckoutTestModules, tests_copy: Path, covered: set[str]) -> list[TargetSpec]:
    """One target per model or pipeline class not in `covered`, from the first test class of `tests` that configures
    it (built by importing it from `tests_copy`, a copy of `tests`).

    A test class whose hub ids all have offline stand-ins is preferred to one that needs the Hub.
    Then one target per untested sibling pipeline (`siblings.py`) whose tested pipeline is here.
    """
    candidates: dict[str, list[TargetSpec]] = {}
    found: dict[str, CheckoutTest] = {}
    for path, module in tests.modules.items():
        if path.relative_to(tests.tests_dir).parts[0] not in _SCANNED or not path.name.startswith("test_"):
            continue
        for test in module.configurations:
            name = f"{path.relative_to(tests.tests_dir.parent).as_posix()}{SEPARATOR}{test.name}"
            found[name] = test
            if test.configures in covered:
                continue
            spec = spec_for(name, tests_copy, test.kind, (test.configures, *test.builds), test.hub_ids)
            candidates.setdefault(test.configures, []).append(spec)
    specs = [min(specs, key=lambda spec: bool(missing_stand_ins(spec.hub_ids))) for specs in candidates.values()]
    for sibling in SIBLINGS:
        test = found.get(sibling.test)
        if test is None or test.configures != sibling.configures or sibling.variant in covered | candidates.keys():
            continue
        classes = (sibling.variant, *test.builds, *sibling.builds)
        specs.append(spec_for(f"{sibling.test}{AS}{sibling.variant}", tests_copy, "pipeline", classes, test.hub_ids))
    return specs


def spec_for(
    name: str, tests_dir: Path, kind: str = "", classes: tuple[str, ...] = (), hub_ids: tuple[str, ...] = ()
) -> TargetSpec:
    """`classes`: the class the test configures first, then the other diffusers classes it builds."""

    def build(device: Any) -> Any:
        return _build(name, tests_dir, device)

    exercises = f"the configuration and inputs of {name}"
    return TargetSpec(name, kind or "model", classes, exercises, build, best_effort=True, hub_ids=hub_ids)


def cannot_run(spec: TargetSpec, error: str) -> str:
    """Why a test-derived target that fails on both trees proves nothing: the Hub, or this environment."""
    missing = missing_stand_ins(spec.hub_ids)
    if missing and any(sign in error for sign in _OFFLINE_SIGNS):
        return f"needs the Hub: its target {spec.name} loads {', '.join(missing)} (no offline stand-in)"
    return f"its target {spec.name} cannot run here: {_headline(error)}"


def _headline(error: str) -> str:
    """`Type: message` on one line, also when the message starts on the next line (transformers' ImportErrors)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return "no error message"
    headline = lines[0]
    if headline.endswith(":") and len(lines) > 1:
        headline = f"{headline} {lines[1]}"
    return headline[:200]


def _inversion(test: Any, pipeline: Any) -> Callable[[], Any] | None:
    """LEdits++ edits the image it last inverted: its tests invert first (`get_dummy_inversion_inputs`).

    With at most 4 inversion steps (the tests ask for 20): the inversion is set-up, not the rewritten loop.
    """
    if not (hasattr(pipeline, "invert") and hasattr(test, "get_dummy_inversion_inputs")):
        return None
    import torch

    inputs = test.get_dummy_inversion_inputs("cpu")
    inputs["num_inversion_steps"] = min(inputs.get("num_inversion_steps", 4), 4)
    return lambda: pipeline.invert(**{**inputs, "generator": torch.Generator().manual_seed(0)})


def _build(name: str, tests_dir: Path, device: Any) -> Any:
    from bot.verify.targets.autoencoders import sliced_forward_workload
    from bot.verify.targets.workload import model_workload, pipeline_workload, to_device

    relative, _, class_name = name.partition(SEPARATOR)
    class_name = class_name.partition(AS)[0]
    os.environ["DIFFUSERS_TEST_DEVICE"] = "cpu"
    if str(tests_dir.parent) not in sys.path:
        sys.path.insert(0, str(tests_dir.parent))  # a folder holding `tests/` only, never a diffusers
    module = importlib.import_module(relative.removesuffix(".py").replace("/", "."))
    test = getattr(module, class_name)()
    if hasattr(test, "get_dummy_components"):
        pipeline_class, components, sibling = test.pipeline_class, test.get_dummy_components(), sibling_named(name)
        # Older tests take the device their inputs are made on; BasePipelineTesterConfig's take none.
        takes_device = len(inspect.signature(test.get_dummy_inputs).parameters) > 0
        inputs = test.get_dummy_inputs("cpu") if takes_device else test.get_dummy_inputs()
        inputs.pop("generator", None)  # the workload seeds a fresh CPU generator for every call
        if sibling is not None:
            import diffusers

            pipeline_class, components, inputs = (
                getattr(diffusers, sibling.variant),
                sibling.components(components),
                sibling.inputs(inputs),
            )
        pipeline = pipeline_class(**components).to(device)
        inputs = to_device(inputs, device)
        denoiser = next((n for n in ("transformer", "unet", "prior") if hasattr(pipeline, n)), None)
        return pipeline_workload(pipeline, inputs, denoiser, _inversion(test, pipeline))
    if hasattr(test, "get_init_dict"):
        init, inputs = test.get_init_dict(), test.get_dummy_inputs()
    else:
        init, inputs = test.prepare_init_args_and_inputs_for_common()
    model = test.model_class(**init).eval().to(device)
    if hasattr(model, "use_slicing"):
        return sliced_forward_workload(model, to_device(inputs, device))
    return model_workload(model, model, {**to_device(inputs, device), "return_dict": False})
