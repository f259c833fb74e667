"""Which modules a model builds, across the files of its tree: the graph behind a UNet's repeated blocks.

A UNet builds its down, mid and up blocks with factories (`get_down_block("CrossAttnDownBlock2D", ...)`
returns one of a dozen classes); those blocks build `Transformer2DModel`s, and each of those stacks
`BasicTransformerBlock`s (`nn.ModuleList([BasicTransformerBlock(...) for d in range(num_layers)])`).
The class that repeats is the last one, which is what diffusers lists on `UNet2DConditionModel`.

Each file contributes a `ModuleGraph` when it is scanned (cached with the scan): per class, what its
`__init__` (and the methods `__init__` calls, as `Transformer2DModel._init_continuous_input`) builds
and stacks, and which factories it calls; per factory, the classes it returns. `factory_blocks` walks
that graph across the tree; `builders` answers which classes build a given one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from codemods.analysis.models.block_lists import appended_classes
from codemods.analysis.models.block_stacks import (
    ClassNames,
    Stacks,
    class_names,
    collect,
    is_block_factory,
    is_block_name,
    is_module_list,
)
from codemods.analysis.models.denoisers import PIPELINE_TEXT, Denoising, PipelineComponents, pipeline_components
from codemods.analysis.models.function_nodes import FunctionNodes, function_nodes
from codemods.analysis.values.types import constructed_type
from codemods.project.frozen import is_deprecated_pipeline
from codemods.project.index import ProjectIndex
from codemods.source import SourceFile, statements

_DEPTH = 6  # model -> factory block -> transformer -> stacked block is 3; deeper nesting is left unproven


@dataclass(frozen=True)
class ClassParts:
    """What one class's `__init__` makes."""

    builds: tuple[str, ...]  # classes it constructs (`Foo(...)`, `nn.Linear(...)` as "Linear")
    factories: tuple[tuple[str, str | None], ...]  # (block factory it calls, the module it comes from; None: here)
    stacks: tuple[str, ...]  # block classes it stacks in `nn.ModuleList`s, bound under their own names
    unclear: str | None = None  # why a stack of it cannot be named (a class held in a variable, an alias...)
    # The strings its `__init__` defaults to (`down_block_types=("CrossAttnDownBlock2D", ...)`): the block
    # types its default configuration asks the factories for.
    defaults: tuple[str, ...] = ()
    # The classes it appends to block lists filled one block at a time (a UNet's down and up blocks).
    appended: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModuleGraph:
    """One file's part of the graph, and the pipelines it defines (see `codemods.analysis.models.denoisers`)."""

    classes: dict[str, ClassParts] = field(default_factory=dict)
    factories: dict[str, tuple[str, ...] | None] = field(default_factory=dict)  # None: returns something else
    pipelines: tuple[PipelineComponents, ...] = ()


def module_graph(source: SourceFile) -> ModuleGraph:
    """The file's part of the graph (computed once per file: the rule's check and its facts share it)."""
    return source.memo("module_graph", lambda: _module_graph(source))


def _module_graph(source: SourceFile) -> ModuleGraph:
    names = class_names(source.tree)
    imports = _imported_from(source)
    classes = {}
    for cls in source.classes:
        if cls.name in classes:
            continue  # a second class of the name: the first one's parts stand
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        if "__init__" in methods:
            init = _init_methods(source, methods)
            parts = _class_parts(init, names, imports)
            parts = replace(parts, defaults=_default_strings(methods["__init__"]), appended=appended_classes(init))
            classes[cls.name] = parts
    factories = {
        node.name: _returned_classes(node)
        for node in source.tree.body
        if isinstance(node, ast.FunctionDef) and is_block_factory(node.name)
    }
    return ModuleGraph(classes, factories, pipeline_components(source))


def _init_methods(source: SourceFile, methods: dict[str, ast.FunctionDef]) -> list[FunctionNodes]:
    """`__init__` and the methods it calls through `self.m(...)`, transitively."""
    found = [function_nodes(source, methods["__init__"])]
    for method in found:
        for node in method.calls:
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and func.attr in methods
                and all(methods[func.attr] is not f.function for f in found)
            ):
                found.append(function_nodes(source, methods[func.attr]))
    return found


def _class_parts(methods: list[FunctionNodes], names: ClassNames, imports: dict[str, str | None]) -> ClassParts:
    builds: list[str] = []
    factories: list[tuple[str, str | None]] = []
    stacks = Stacks()
    for node in (n for method in methods for n in method.calls):
        built = constructed_type(node)
        if built is not None:
            builds.extend(built)
        elif isinstance(node.func, ast.Name) and is_block_factory(node.func.id):
            factories.append((node.func.id, imports.get(node.func.id)))
        if is_module_list(node):
            collect(node.args[0], stacks)
    unclear = stacks.problem() or next((names.why_unclear(b) for b in stacks.blocks if names.why_unclear(b)), None)
    blocks = [b for b in stacks.blocks if b not in names.models]  # a stack of whole models is not one of blocks
    return ClassParts(
        tuple(dict.fromkeys(builds)), tuple(dict.fromkeys(factories)), tuple(dict.fromkeys(blocks)), unclear
    )


def _default_strings(init: ast.FunctionDef) -> tuple[str, ...]:
    defaults = [*init.args.defaults, *(d for d in init.args.kw_defaults if d is not None)]
    # Most defaults are constants, which hold no other node: no walk for them.
    nodes = [n for d in defaults for n in ((d,) if isinstance(d, ast.Constant) else ast.walk(d))]
    return tuple(dict.fromkeys(n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)))


def _returned_classes(function: ast.FunctionDef) -> tuple[str, ...] | None:
    """The classes a factory returns (`return CrossAttnDownBlock2D(...)`); None if it may return anything else."""
    found: list[str] = []
    for node in statements(function.body):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            continue  # `mid_block_type=None`: no block at all
        built = constructed_type(node.value)
        if built is None:
            return None
        found.extend(built)
    return tuple(dict.fromkeys(found))


def _imported_from(source: SourceFile) -> dict[str, str | None]:
    """Block factories the file imports -> their module as the index names it (`models.unets.unet_2d_blocks`)."""
    found: dict[str, str | None] = {}
    parts = source.module.split(".")
    for node in source.tree.body:
        if not isinstance(node, ast.ImportFrom) or not any(is_block_factory(a.asname or a.name) for a in node.names):
            continue
        if node.level:
            base = parts[: len(parts) - node.level]
            dotted = ".".join([*base, *(node.module.split(".") if node.module else [])])
        else:
            dotted = node.module or ""
        inside = dotted.split(".", 1)[1] if "." in dotted and dotted.split(".")[0] == parts[0] else None
        for alias in node.names:
            if is_block_factory(alias.asname or alias.name) and alias.asname is None:
                found[alias.name] = inside
    return found


@dataclass(frozen=True)
class FactoryBlocks:
    """What a model's block factories build, followed through the tree."""

    blocks: tuple[str, ...]  # the stacked block classes found, in the order first met
    holders: tuple[str, ...]  # the classes stacking them (`Transformer2DModel`)
    problem: str | None  # why the list cannot be proven (a factory not found, a stack that cannot be named)

    def message(
        self,
        model: str,
        factories: tuple[tuple[str, str | None], ...],
        blocks: tuple[str, ...],
        appended: tuple[str, ...] = (),
    ) -> str:
        if factories:
            called = "with " + ", ".join(f"`{name}(...)`" for name, _ in factories)
        else:
            called = "as " + ", ".join(f"`{name}`" for name in appended) + " appended to its block lists"
        if self.problem is not None:
            return f"`{model}` builds its blocks {called} but defines no `_repeated_blocks`"
        holders = ", ".join(f"`{h}`" for h in self.holders)
        listed = ", ".join(f"`{b}`" for b in blocks)
        verb = "stacks" if len(self.holders) == 1 else "stack"
        return (
            f"`{model}` builds its blocks {called}; inside them, {holders} {verb} {listed}, but the model "
            "defines no `_repeated_blocks`, so `compile_repeated_blocks()` cannot find them"
        )


def graph_of(index: ProjectIndex, path: str, code: str) -> ModuleGraph | None:
    facts = index.facts(path)
    graph = facts.by_rule.get(code) if facts is not None else None
    return graph if isinstance(graph, ModuleGraph) else None


def _parts(index: ProjectIndex, name: str, code: str, context: str) -> list[tuple[ClassParts, str]]:
    """The class `name` as the file `context` means it: its own class of that name, else every one of the tree."""
    graph = graph_of(index, context, code)
    if graph is not None and name in graph.classes:
        return [(graph.classes[name], context)]
    found = []
    for cls in index.classes(name):
        graph = graph_of(index, cls.path, code)
        if graph is not None and name in graph.classes:
            found.append((graph.classes[name], cls.path))
    return found


def factory_blocks(index: ProjectIndex, code: str, path: str, model: str) -> FactoryBlocks:
    """Follow the factories the `__init__` of `model` (in `path`) calls, for the block types its defaults name,
    down to the block classes stacked inside what they return."""
    parts = graph_of(index, path, code).classes[model]  # type: ignore[union-attr]
    pending: list[tuple[str, str, int]] = []
    for factory, module in parts.factories:
        where = (index.module_path(module) if module else path) or ""
        graph = graph_of(index, where, code) if where else None
        returned = graph.factories.get(factory) if graph is not None else None
        if returned is None:
            return FactoryBlocks((), (), f"cannot tell which classes `{factory}(...)` returns")
        # The factories pick a class by its name: the default configuration builds those its defaults name.
        pending.extend((name, where, 1) for name in returned if name in parts.defaults)
    if not parts.factories:
        # Blocks built in place and appended, one per configured block type: look inside each class appended.
        pending.extend((name, path, 1) for name in parts.appended)
    blocks: list[str] = []
    holders: list[str] = []
    seen: set[tuple[str, str]] = set()
    while pending:
        name, context, depth = pending.pop(0)
        if (name, context) in seen or depth > _DEPTH:
            continue
        seen.add((name, context))
        for found, defined_in in _parts(index, name, code, context):
            if found.unclear:
                return FactoryBlocks((), (), f"in `{name}`: {found.unclear}")
            if found.stacks and is_block_name(name):
                # A stack inside a block that is itself repeated (`Kandinsky3ResNetBlock`'s `Kandinsky3Block`s):
                # the outer block or the inner one, which to compile is a choice.
                listed = ", ".join(f"`{b}`" for b in found.stacks)
                return FactoryBlocks((), (), f"{listed} is stacked inside `{name}`, itself a block; choose by hand")
            if found.stacks:
                blocks.extend(b for b in found.stacks if b not in blocks)
                holders.append(name)
            pending.extend((built, defined_in, depth + 1) for built in found.builds if built not in found.stacks)
    return FactoryBlocks(tuple(blocks), tuple(dict.fromkeys(holders)), None)


def builders(index: ProjectIndex, code: str, name: str) -> list[str]:
    """Classes of the tree whose `__init__` builds a `name` (other than `name` itself)."""
    called = name + "("
    found = []
    for path, _ in index.facts_holding(called):
        graph = graph_of(index, path, code)
        for owner, parts in graph.classes.items() if graph is not None else ():
            if owner != name and name in parts.builds and called in (index.text(path) or ""):
                found.append(owner)
    return found


def denoising(index: ProjectIndex, code: str) -> Denoising:
    """What the tree's pipelines call per step (gathered from every file that registers components, once per index:
    each model's finding asks)."""
    return index.tree_fact(("denoising", code), lambda: _gathered_denoising(index, code))


def _gathered_denoising(index: ProjectIndex, code: str) -> Denoising:
    found: list[tuple[PipelineComponents, bool]] = []
    for path, facts in index.facts_holding(PIPELINE_TEXT):  # a graph holds pipelines only where the text does
        graph = graph_of(index, path, code)
        if graph is not None and graph.pipelines:
            found.extend((pipeline, is_deprecated_pipeline(facts.module)) for pipeline in graph.pipelines)
    return Denoising.of(found)


def lineage(index: ProjectIndex, name: str) -> list[str]:
    """`name` and the classes it derives from, as far as the tree defines them."""
    found = [name]
    for current in found:
        for cls in index.classes(current):
            found.extend(base for base in cls.bases if base not in found)
    return found
