"""What a checkout's test file configures, read from its source (no import): test classes and the hub ids they load.

A test class configures a pipeline when it has `pipeline_class = SomePipeline` and a
`get_dummy_components()` that needs no argument, and a model when it has `model_class` with
`get_init_dict` + `get_dummy_inputs` (or the older `prepare_init_args_and_inputs_for_common`).
Either may come from a base class in the same file (`class FullAdapterTests(AdapterTests, ...)`).
The hub ids are the repositories the configuration methods (and the methods they call on
`self`) pass to `from_pretrained`, as far as a literal, a constant or a class attribute tells.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from codemods.project.test_walk import MethodReading

_CONFIGURING = ("get_dummy_components", "get_dummy_inputs", "get_init_dict", "prepare_init_args_and_inputs_for_common")
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class CheckoutTest:
    name: str
    kind: str  # "pipeline" or "model"
    configures: str  # the diffusers class
    hub_ids: tuple[str, ...]
    builds: tuple[str, ...] = ()  # the other diffusers classes its configuration builds (a pipeline's components)


def configured_classes(tree: ast.Module, readings: dict[ast.FunctionDef, MethodReading]) -> list[CheckoutTest]:
    """The module's test classes that configure a model or a pipeline (`test_modules` parses and walks it:
    `readings` are what its walk read of each method of its classes)."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    constants = _string_constants(tree.body)
    from_diffusers = _imported_from_diffusers(tree)
    found = []
    for node in classes.values():
        lineage = _lineage(node, classes)
        methods = {k: v for cls in reversed(lineage) for k, v in _methods(cls).items()}
        attributes = {k: v for cls in reversed(lineage) for k, v in _attributes(cls).items()}
        configured = _configures(methods, attributes, classes, readings)
        if configured is not None:
            reached = [readings[f] for f in _configuring_functions(lineage, methods, readings)]
            hub_ids = _hub_ids(reached, {**constants, **_string_constants_of(attributes)})
            built = sorted(set().union(*(reading.called for reading in reached)) & from_diffusers)
            builds = tuple(name for name in built if name != configured[1])
            found.append(CheckoutTest(node.name, *configured, hub_ids, builds))
    return found


def _imported_from_diffusers(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "diffusers"
        for alias in node.names
    }


def _configures(
    methods: dict[str, ast.FunctionDef],
    attributes: dict[str, ast.expr],
    classes: dict[str, ast.ClassDef],
    readings: dict[ast.FunctionDef, MethodReading],
) -> tuple[str, str] | None:
    pipeline, model = attributes.get("pipeline_class"), attributes.get("model_class")
    components = methods.get("get_dummy_components")
    if components is not None and isinstance(pipeline, ast.Name) and _needs_no_argument(components):
        return "pipeline", _wrapped(pipeline.id, classes)
    if {"get_init_dict", "get_dummy_inputs", "model_class"} <= methods.keys():
        returned = readings[methods["model_class"]].returned
        if returned and isinstance(returned[0], ast.Name):
            return "model", returned[0].id
    if "prepare_init_args_and_inputs_for_common" in methods and isinstance(model, ast.Name):
        return "model", model.id
    return None


def _wrapped(name: str, classes: dict[str, ast.ClassDef]) -> str:
    """The diffusers class behind a test's own subclass of it (`class CosmosPipelineWrapper(CosmosPipeline)`)."""
    while name in classes:
        bases = [b.id for b in classes[name].bases if isinstance(b, ast.Name)]
        if not bases:
            break
        name = bases[0]
    return name


def _lineage(node: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The class and its bases defined in the same file, nearest first (a depth-first MRO is close enough here)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop(0)
        if current in found:
            continue
        found.append(current)
        stack[:0] = [classes[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
    return found


def _methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}


def _attributes(node: ast.ClassDef) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for item in node.body:
        if isinstance(item, ast.Assign):
            for target in item.targets:
                found.update(_bound(target, item.value))
    return found


def _bound(target: ast.expr, value: ast.expr) -> dict[str, ast.expr]:
    """`name -> value` for `a = v` and `a, b = v, w` (the form the LoRA tests use for class attributes)."""
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return {k: v for t, e in zip(target.elts, value.elts, strict=True) for k, v in _bound(t, e).items()}
    return {}


def _needs_no_argument(function: ast.FunctionDef) -> bool:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args][1:]  # without self
    required_keywords = [d for d in arguments.kw_defaults if d is None]
    return len(positional) <= len(arguments.defaults) and not required_keywords


def _string_constants(nodes: Iterable[ast.AST]) -> dict[str, str]:
    found: dict[str, ast.expr] = {}
    for statement in nodes:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                found.update(_bound(target, statement.value))
    return _string_constants_of(found)


def _string_constants_of(bound: dict[str, ast.expr]) -> dict[str, str]:
    return {k: v.value for k, v in bound.items() if isinstance(v, ast.Constant) and isinstance(v.value, str)}


def _configuring_functions(
    lineage: list[ast.ClassDef], methods: dict[str, ast.FunctionDef], readings: dict[ast.FunctionDef, MethodReading]
) -> list[ast.FunctionDef]:
    """The configuration methods (each class's own, since an override may call `super()`'s) and the methods
    and properties they use on `self`, transitively."""
    pending = [f for cls in lineage for name, f in _methods(cls).items() if name in _CONFIGURING]
    reached: list[ast.FunctionDef] = []
    while pending:
        function = pending.pop()
        if any(function is seen for seen in reached):
            continue
        reached.append(function)
        pending += [methods[name] for name in readings[function].used_on_self if name in methods]
    return reached


def _hub_ids(functions: list[MethodReading], constants: dict[str, str]) -> tuple[str, ...]:
    """Repositories passed to `from_pretrained` in `functions`."""
    ids: set[str] = set()
    for function in functions:
        local = {**constants, **_string_constants(function.assignments)}
        for loaded in function.loaded:
            value = _string(loaded, local)
            if value is not None and _HUB_ID.match(value):
                ids.add(value)
    return tuple(sorted(ids))


def _string(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return constants.get(node.attr)
    return None
