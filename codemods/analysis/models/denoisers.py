"""Which models a pipeline runs once per denoising step, read from the pipeline's own code.

A model is a denoiser when a pipeline registers it as a component (`self.register_modules(unet=unet)`,
with `unet: UNet2DConditionModel` in its `__init__`) and calls that component inside its denoising
loop: `self.unet(...)` in a `for ... in timesteps` or progress-bar loop or in a method that loop calls
(`codemods.analysis.models.hot_paths`), or through a local bound to the component (`current_model =
self.transformer_2`, `unet = self.super_res_first`). What a pipeline calls before or after its loop
(text and condition encoders, latent upsamplers, decoders) runs once per call.

Each file's pipelines are gathered when it is scanned (`pipeline_components`, cached with the scan);
`Denoising` sums them up for the tree.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from codemods.analysis.models.hot_paths import Function, HotPaths, hot_paths
from codemods.analysis.values.types import Types, class_attribute_types, registered_components
from codemods.line_walk import spans_a_line
from codemods.node_index import in_walk_order, names_within, nodes_within, parent_of
from codemods.source import Ancestors, SourceFile

PIPELINE_TEXT = "register_modules("
# A call: `(` after a word character, on its line. The `(` opens it so that `re` scans for it; `\w\(` made it try
# every word character (searching all of diffusers' src: 0.59 s against 0.10 s).
_CALL = re.compile(r"\((?<=\w\()")
_ORIGINAL = "_orig_mod"  # `self.unet._orig_mod`: the module under `torch.compile`'s wrapper, the same class


@dataclass(frozen=True)
class PipelineComponents:
    """A class that registers components (a pipeline), and the classes of those it calls per step."""

    pipeline: str
    registered: tuple[str, ...]  # the classes its components may be
    per_step: tuple[str, ...]  # the classes of the components it calls inside its denoising loop


def pipeline_components(source: SourceFile) -> tuple[PipelineComponents, ...]:
    if PIPELINE_TEXT not in source.text:
        return ()
    found = []
    for cls in source.classes:
        components = registered_components(cls)
        if components:  # the file's hot paths only where some class registers components
            types = class_attribute_types(source, cls, elements=True)
            called = called_per_step(source, hot_paths(source), cls, set(components))
            found.append(PipelineComponents(cls.name, _classes(components, types), _classes(called, types)))
    return tuple(found)


def called_per_step(source: SourceFile, hot: HotPaths, cls: ast.ClassDef, components: set[str]) -> list[str]:
    aliases = _aliases(cls, components)
    lines: list[int] | None = None  # the hot lines that call something, searched for once a component call is met
    called: list[str] = []
    attributes = components | {_ORIGINAL}
    # Only calls of a component or of a local bound to one can count; where each lies is looked up for those alone.
    for node in nodes_within(cls, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr not in attributes:
            continue  # a method of anything else (nearly every call of a pipeline): named by no component
        if isinstance(func, ast.Name) and func.id not in aliases:
            continue  # a function, no local bound to a component
        names = component_named(func, components)
        if names is None and isinstance(func, ast.Name):
            method = _enclosing_function(node, cls)
            names = _alias(method, func.id, components) if method is not None else None
        if names is None:
            continue
        if lines is None:
            ranges = [
                (first, last) for first, last in hot.ranges if cls.lineno <= first and last <= (cls.end_lineno or 0)
            ]
            lines = source.lines_matching(_CALL, within=ranges)
        if spans_a_line(node, lines) and hot.hot_scope(_ancestors(node, cls), node) is not None:
            called.extend(names)
    return list(dict.fromkeys(called))


def component_named(node: ast.expr, components: set[str]) -> tuple[str, ...] | None:
    """`self.unet`, `self.unet._orig_mod`, `self.a if c else self.b` -> the components it names."""
    if isinstance(node, ast.IfExp):
        body, orelse = component_named(node.body, components), component_named(node.orelse, components)
        return body + orelse if body is not None and orelse is not None else None
    if isinstance(node, ast.Attribute) and node.attr == _ORIGINAL:
        node = node.value
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in components
    ):
        return (node.attr,)
    return None


def _aliases(cls: ast.ClassDef, components: set[str]) -> set[str]:
    """The names some assignment in `cls` binds to components alone (`current_model = self.transformer`): the only
    locals `_alias` can find components in."""
    return {
        node.targets[0].id
        for node in nodes_within(cls, ast.Assign)
        if len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Attribute | ast.IfExp)  # what `component_named` may name; mostly a call
        and component_named(node.value, components) is not None
    }


def _ancestors(node: ast.AST, root: ast.AST) -> Ancestors:
    """The nodes from `root` down to `node`'s parent."""
    found: list[ast.AST] = []
    current = parent_of(node)
    while current is not None:
        found.append(current)
        if current is root:
            break
        current = parent_of(current)
    found.reverse()
    return tuple(found)


def _enclosing_function(node: ast.AST, root: ast.AST) -> Function | None:
    """The innermost function holding `node` inside `root`."""
    current = parent_of(node)
    while current is not None and current is not root:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            return current
        current = parent_of(current)
    return None


def _alias(method: Function, name: str, components: set[str]) -> tuple[str, ...] | None:
    """The components the local `name` of `method` holds, when every binding of it (nested scopes included)
    sets it alone to a component (`current_model = self.transformer`); None if some binding may set anything else
    (a parameter, a loop target, `a, b = ...`, `with ... as`)."""
    arguments = method.args
    if any(a.arg == name for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)):
        return None
    held: tuple[str, ...] = ()
    stores = [n for n in names_within(method, name) if not isinstance(n.ctx, ast.Load)]
    for store in in_walk_order(stores):  # `ast.walk`'s order: the order the components were first listed in
        binding = parent_of(store)
        if not (isinstance(binding, ast.Assign) and len(binding.targets) == 1 and binding.targets[0] is store):
            return None
        value = component_named(binding.value, components)
        if value is None:
            return None
        held += value
    return tuple(dict.fromkeys(held)) or None


def _classes(components: Iterable[str], types: dict[str, Types | None]) -> tuple[str, ...]:
    """The classes the components may be, leaving out the generic ones (`nn.Module`, a `*Mixin`)."""
    found = [t for name in components for t in types.get(name) or () if t != "Module" and not t.endswith("Mixin")]
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Denoising:
    """The tree's pipelines, summed up: which classes some pipeline calls per step, and which it only registers.

    A pipeline under `pipelines/deprecated/` is evidence of its own kind: diffusers accepts no changes
    there and the tool leaves those files alone, so a model only such pipelines call per step is a
    denoiser of code nobody maintains (ControlNet-XS, UNet3D, I2VGenXL, UVit2D, `Transformer2DModel`
    in VQ-Diffusion on diffusers main).
    """

    per_step: dict[str, str]  # class -> a maintained pipeline that calls it inside its denoising loop
    registered: dict[str, str]  # class -> a pipeline that registers it
    pipelines: int
    deprecated_per_step: dict[str, str]  # class -> a pipeline under pipelines/deprecated/ that calls it per step

    @classmethod
    def of(cls, pipelines: Iterable[tuple[PipelineComponents, bool]]) -> Denoising:
        """From each pipeline and whether it lives under `pipelines/deprecated/`."""
        per_step: dict[str, str] = {}
        deprecated_per_step: dict[str, str] = {}
        registered: dict[str, str] = {}
        count = 0
        for pipeline, deprecated in pipelines:
            count += 1
            for name in pipeline.per_step:
                (deprecated_per_step if deprecated else per_step).setdefault(name, pipeline.pipeline)
            for name in pipeline.registered:
                registered.setdefault(name, pipeline.pipeline)
        return cls(per_step, registered, count, deprecated_per_step)
