"""Targets taken from a diffusers checkout's own tests: their tiny configurations and inputs.

When the tree is `<checkout>/src/diffusers` and `<checkout>/tests` exists, every test class
that defines a model's configuration (`get_init_dict` + `get_dummy_inputs`, or the older
`prepare_init_args_and_inputs_for_common`) or a pipeline's (`get_dummy_components` +
`get_dummy_inputs`) becomes a target named `tests/<path>.py::<Class>`, for classes no built-in
spec covers. The parent finds them by parsing the test files (no import); a worker imports the
test module from a copy of tests/ against its own tree (tests/conftest.py, which would put the
checkout's src first on sys.path, is never run) with `DIFFUSERS_TEST_DEVICE=cpu`, so inputs
are made on the CPU and moved to the device like every other target's.

These targets are best effort: one that fails on both trees (a test helper this environment
lacks) proves nothing either way, and its rewrites are reported unverified, not failed.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from bot.verify.targets import TargetSpec

SEPARATOR = "::"
_SCANNED = ("models", "pipelines")


def tests_dir_of(src: Path) -> Path | None:
    """`<checkout>/tests` for a tree at `<checkout>/src/<package>`, if there is one."""
    if src.parent.name == "src" and (src.parent.parent / "tests" / "__init__.py").is_file():
        return src.parent.parent / "tests"
    return None


def discover(tests_dir: Path, covered: set[str]) -> list[TargetSpec]:
    """One target per test class that configures a model or pipeline class not in `covered`."""
    specs: dict[str, TargetSpec] = {}
    for area in _SCANNED:
        for path in sorted((tests_dir / area).rglob("test_*.py")):
            for test_class, kind, diffusers_class in _configured_classes(path):
                if diffusers_class in covered or diffusers_class in {s.classes[0] for s in specs.values()}:
                    continue
                name = f"{path.relative_to(tests_dir.parent).as_posix()}{SEPARATOR}{test_class}"
                specs[name] = spec_for(name, tests_dir, kind, diffusers_class)
    return list(specs.values())


def spec_for(name: str, tests_dir: Path, kind: str = "", diffusers_class: str = "") -> TargetSpec:
    def build(device: Any) -> Any:
        return _build(name, tests_dir, device)

    exercises = f"the configuration and inputs of {name}"
    return TargetSpec(name, kind or "model", (diffusers_class,) if diffusers_class else (), exercises, build, True)


def _configured_classes(path: Path) -> list[tuple[str, str, str]]:
    """(test class, "model"/"pipeline", diffusers class) for the test classes of one file."""
    try:
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
        attributes = {
            target.id: item.value
            for item in node.body
            if isinstance(item, ast.Assign)
            for target in item.targets
            if isinstance(target, ast.Name)
        }
        if "get_dummy_components" in methods and isinstance(attributes.get("pipeline_class"), ast.Name):
            found.append((node.name, "pipeline", attributes["pipeline_class"].id))
        elif {"get_init_dict", "get_dummy_inputs", "model_class"} <= methods.keys():
            returned = [n.value for n in ast.walk(methods["model_class"]) if isinstance(n, ast.Return)]
            if returned and isinstance(returned[0], ast.Name):
                found.append((node.name, "model", returned[0].id))
        elif "prepare_init_args_and_inputs_for_common" in methods and isinstance(
            attributes.get("model_class"), ast.Name
        ):
            found.append((node.name, "model", attributes["model_class"].id))
    return found


def _build(name: str, tests_dir: Path, device: Any) -> Any:
    from bot.verify.workload import model_workload, pipeline_workload, to_device

    relative, _, class_name = name.partition(SEPARATOR)
    os.environ["DIFFUSERS_TEST_DEVICE"] = "cpu"
    if str(tests_dir.parent) not in sys.path:
        sys.path.insert(0, str(tests_dir.parent))  # a folder holding `tests/` only, never a diffusers
    module = importlib.import_module(relative.removesuffix(".py").replace("/", "."))
    test = getattr(module, class_name)()
    if hasattr(test, "get_dummy_components"):
        pipeline = test.pipeline_class(**test.get_dummy_components()).to(device)
        inputs = to_device(test.get_dummy_inputs("cpu"), device)
        inputs.pop("generator", None)  # the workload seeds a fresh CPU generator for every call
        denoiser = next((n for n in ("transformer", "unet", "prior") if hasattr(pipeline, n)), None)
        return pipeline_workload(pipeline, inputs, denoiser)
    if hasattr(test, "get_init_dict"):
        init, inputs = test.get_init_dict(), test.get_dummy_inputs()
    else:
        init, inputs = test.prepare_init_args_and_inputs_for_common()
    model = test.model_class(**init).eval().to(device)
    return model_workload(model, model, {**to_device(inputs, device), "return_dict": False})
