from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from codemods.analysis.block_stacks import REPEATED_BLOCKS, UNREADABLE, existing_list, is_model_class
from codemods.analysis.model_graph import ModuleGraph, builders, denoising, factory_blocks, lineage, module_graph
from codemods.findings import Edit, Finding, FixSafety, NodeRef
from codemods.gated_tests import tests_turned_on
from codemods.lazy import libcst as cst
from codemods.project import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile

if TYPE_CHECKING:
    import libcst

_AFTER = "_no_split_modules"
TURNED_ON_TESTS = "turned-on-tests"


class MissingRepeatedBlocks(Rule):
    """
    ## What it does
    Finds a denoiser, a `ModelMixin` subclass that a pipeline of the tree registers as a component
    and calls inside its denoising loop (`self.transformer(...)`, `self.unet(...)`,
    `self.controlnet(...)`), that defines no `_repeated_blocks` though it repeats blocks, and adds
    `_repeated_blocks = [...]` naming them: the classes its `__init__` stacks
    (`nn.ModuleList([FooBlock(...) for _ in range(n)])`), or, for a UNet or ControlNet whose
    blocks come from `get_down_block(...)`-like factories, the class those blocks stack inside
    (`BasicTransformerBlock`, found by following the factories to `Transformer2DModel`). Also
    reports an existing `_repeated_blocks` that leaves out a block class the model stacks.

    ## Why is this bad?
    `model.compile_repeated_blocks()` (regional compilation) compiles each submodule whose class
    name is listed in `_repeated_blocks`; without the list it raises, and users fall back to
    compiling the whole model, whose cold-start compile time is far longer for the same speed-up.
    Only a model that runs once per denoising step repays the compile: one that runs once per
    call (a text or condition encoder, a latent upsampler) gains nothing, and an autoregressive one
    whose input grows every call recompiles each time.

    ## Example
    ```python
    class SanaTransformer2DModel(ModelMixin, ConfigMixin):
        _supports_gradient_checkpointing = True
        _no_split_modules = ["SanaTransformerBlock", "PatchEmbed", "SanaModulatedNorm"]

        @register_to_config
        def __init__(self, num_layers: int = 20, ...):
            self.transformer_blocks = nn.ModuleList([SanaTransformerBlock(...) for _ in range(num_layers)])
    ```
    (`SanaPipeline` calls `self.transformer(...)` in its denoising loop.)

    ## Use instead
    ```python
    class SanaTransformer2DModel(ModelMixin, ConfigMixin):
        _supports_gradient_checkpointing = True
        _no_split_modules = ["SanaTransformerBlock", "PatchEmbed", "SanaModulatedNorm"]
        _repeated_blocks = ["SanaTransformerBlock"]
    ```
    The attribute goes right after `_no_split_modules` when there is one, else at the end of the
    class attributes, just before `__init__`. A UNet gets what diffusers gives `UNet2DConditionModel`:
    `_repeated_blocks = ["BasicTransformerBlock"]`.

    ## Fix safety
    Safe: in the library only `compile_repeated_blocks` reads `_repeated_blocks`, and every name listed is a block
    class the model really builds (classes are matched by name, so the name is the one the class
    is defined or imported under in its file). Only denoisers are fixed, as the tree's pipelines
    show them: a model no pipeline calls in its loop but some registers (encoders, latent
    upsamplers, condition embedders) or that is only built inside another model
    (`TransformerTemporalModel`, the children of `AceStepConditionEncoder`) gets nothing; where the
    tree has no pipeline that says (a single file, a fork with only models), or none uses the model
    (one used only by modular pipelines), it is reported without a fix. Stacks of `nn.Linear`/torch
    modules and of whole models (`Multi*ControlNetModel.nets`) are left alone. Reported without a
    fix: stacks of a wrapper around several block classes, of a class held in a variable, or of a
    class whose name cannot be resolved in the file; a factory whose returned classes cannot be read;
    a model that stacks blocks itself and also builds some with factories (which to list is a choice);
    and an existing `_repeated_blocks` that leaves a stacked class out (maybe on purpose). A model
    that already lists its blocks (diffusers' `UNet2DConditionModel`) gets nothing.

    Tests read it too: in a checkout, diffusers' compile mixin runs `test_torch_compile_repeated_blocks`
    (`fullgraph=True`, `recompile_limit=1`) only for a model that sets it, so the fix turns that test
    on for the model's test classes, and it fails where the stacked blocks are not all built alike
    (SD3's last block, SD3.5's dual-attention blocks need limits 2 and 3). Where the checkout's
    `tests/` has such a test for the model, the finding is reported without a fix unless the run opts
    in (`[tool.codemod] opt-in = ["DIF003-turned-on-tests"]`, or `--opt-in DIF003-turned-on-tests`):
    `codemod verify` and the bot opt in, run those tests on the CPU, and carry the maintainers'
    `recompile_limit` override where one is needed.

    ## Evidence
    diffusers PR #11705 added `compile_repeated_blocks`, driven by `_repeated_blocks`, because
    regional compilation suits diffusion models (PyTorch's "Reducing torch.compile cold start
    compilation time with regional compilation" recipe); it listed `BasicTransformerBlock` on
    `UNet2DConditionModel`. PRs #12736 (Z-Image), #13019 (LongCat-Image) and #13496 (ERNIE-Image)
    each added exactly this one line to a model.
    """

    code = "DIF003"
    name = "missing-repeated-blocks"
    summary = "a model stacks blocks but defines no `_repeated_blocks`; regional compilation cannot find them"
    fix_safeties = (FixSafety.SAFE,)
    # Fix a model even where the checkout has tests the attribute turns on (`codemod verify` and the bot run them).
    opt_ins = (TURNED_ON_TESTS,)
    trigger = re.compile(r"ModuleList\(")
    # Pipelines (what runs per step) and the graph of what models build, for findings in other files.
    facts_trigger = re.compile(r"ModuleList\(|register_modules\(")

    def collect_facts(self, source: SourceFile) -> ModuleGraph:
        return module_graph(source)

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        graph = module_graph(source)
        for cls in source.classes:
            parts = graph.classes.get(cls.name)
            if parts is None or not is_model_class(cls) or not (parts.stacks or parts.unclear or parts.factories):
                continue
            blocks = list(parts.stacks)
            existing = existing_list(cls)
            if existing is not None:
                missing = [b for b in blocks if b not in existing]
                if missing and existing is not UNREADABLE:
                    yield self._leaves_out(source, cls, missing)
                continue
            reason = parts.unclear
            if parts.factories and (blocks or reason):
                factory = parts.factories[0][0]
                reason = (
                    reason or f"the model also builds blocks with `{factory}(...)`; choose the repeated classes by hand"
                )
            listed = ", ".join(f"`{b}`" for b in blocks) or "blocks"
            yield self.finding(
                source,
                cls,
                f"`{cls.name}` stacks {listed} but defines no `{REPEATED_BLOCKS}`; `compile_repeated_blocks()` "
                "cannot find them",
                not_fixed_reason=reason,
                requires=tuple(("block_class", b) for b in blocks),
                model=cls.name,
                blocks=tuple(blocks),
                factories=parts.factories,
                placement=_Placement.of(source, tree, cls),
                tests_opted_in=self.opted_in(tree, TURNED_ON_TESTS),
            )

    def _leaves_out(self, source: SourceFile, cls: ast.ClassDef, missing: list[str]) -> Finding:
        listed = ", ".join(f"`{b}`" for b in missing)
        return self.finding(
            source,
            cls,
            f"`{cls.name}.{REPEATED_BLOCKS}` leaves out {listed}, which it stacks; `compile_repeated_blocks()` "
            "will not compile them",
            not_fixed_reason="an existing list is the maintainers' choice; add the classes by hand if they were missed",
            requires=tuple(("block_class", b) for b in missing),
            model=cls.name,
            blocks=(),
            placement=None,
        )

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        """Keep denoisers only, follow a UNet's factories to the blocks they stack, and fix what is proven."""
        if any(_is_model(index, name) for _, name in finding.requires):
            return None  # a stacked class defined in another file is a whole model
        model: str = finding.extra["model"]
        verdict = self._per_step(index, model)
        placement: _Placement | None = finding.extra["placement"]
        if verdict is None or placement is None:  # not a denoiser, or a report on an existing list
            return finding if verdict is not None else None
        pipeline, unproven = verdict
        blocks: tuple[str, ...] = finding.extra["blocks"]
        message, reason = finding.message, finding.not_fixed_reason
        if not blocks and reason is None:
            found = factory_blocks(index, self.code, finding.path, model)
            blocks = tuple(b for b in found.blocks if not _is_model(index, b))
            if not blocks and (found.problem is None or pipeline is None):
                return None  # nothing repeats, or nothing is known of a model that may not even run per step
            message, reason = found.message(model, finding.extra["factories"], blocks), found.problem
        if pipeline is not None:
            message += f" (`{pipeline}` calls it in its denoising loop)"
        reason = reason or unproven
        if reason is None and blocks and not finding.extra["tests_opted_in"]:
            reason = _turns_on_tests(tests_turned_on(index, finding.path, model, REPEATED_BLOCKS), self.code)
        fix = self.fix(*placement.edit(blocks)) if reason is None and blocks else finding.fix
        return replace(finding, message=message, not_fixed_reason=reason, fix=fix)

    def _per_step(self, index: ProjectIndex, model: str) -> tuple[str | None, str | None] | None:
        """(the pipeline that calls `model`, or a class it derives from, in its denoising loop; why the tree
        cannot say), or None when the tree shows the model never runs per step."""
        tree = denoising(index, self.code)
        names = lineage(index, model)
        pipeline = next((tree.per_step[n] for n in names if n in tree.per_step), None)
        if pipeline is not None:
            return pipeline, None
        if not tree.pipelines:
            return None, f"no pipeline in the tree shows that `{model}` runs once per denoising step"
        if any(n in tree.registered for n in names) or builders(index, self.code, model):
            return None  # called once per call (an encoder, an upsampler), or a part of another model
        return None, f"none of the tree's {tree.pipelines} pipelines calls `{model}` in its denoising loop"

    def edit_add_class_attribute(
        self, node: libcst.ClassDef, text: str, after: str | None, before: str, blank_before: bool
    ) -> libcst.ClassDef:
        body = list(node.body.body)
        if after is not None:
            position = 1 + next(i for i, s in enumerate(body) if _assigns(s, after))
        else:
            position = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == before)
        statement = cst.parse_statement(text)
        if blank_before:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        following = body[position] if position < len(body) else None
        if isinstance(following, cst.FunctionDef) and not any(
            line.comment is None for line in following.leading_lines[:1]
        ):
            # A method right after the new attribute needs its blank line (ruff format puts one there).
            body[position] = following.with_changes(
                leading_lines=[cst.EmptyLine(indent=False), *following.leading_lines]
            )
        body.insert(position, statement)
        return node.with_changes(body=node.body.with_changes(body=body))

    valid = (
        # Already there.
        (
            'class FooModel(ModelMixin, ConfigMixin):\n    _repeated_blocks = ["FooBlock"]\n\n'
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n"
        ),
        # A list of torch layers, not of blocks.
        (
            "class FooControlNet(ModelMixin, ConfigMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.controlnet_blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])\n"
        ),
        # Run once per call: the pipeline upsamples outside its denoising loop.
        (
            "class FooUpsampler(ModelMixin, ConfigMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([ResBlock() for _ in range(n)])\n\n\n"
            "class FooPipeline(DiffusionPipeline):\n    def __init__(self, upsampler: FooUpsampler):\n"
            "        super().__init__()\n        self.register_modules(upsampler=upsampler)\n\n"
            "    def __call__(self, latents):\n        return self.upsampler(latents)\n"
        ),
    )
    invalid = (
        Example(
            "class FooBlock(nn.Module):\n    pass\n\n\n"
            "class FooModel(ModelMixin, ConfigMixin):\n    _supports_gradient_checkpointing = True\n\n"
            "    @register_to_config\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n\n\n"
            "class FooPipeline(DiffusionPipeline):\n    def __init__(self, transformer: FooModel, scheduler):\n"
            "        super().__init__()\n        self.register_modules(transformer=transformer, scheduler=scheduler)\n\n"
            "    def __call__(self, latents, timesteps):\n        for t in timesteps:\n"
            "            latents = self.scheduler.step(self.transformer(latents, t), t, latents).prev_sample\n",
            "class FooBlock(nn.Module):\n    pass\n\n\n"
            "class FooModel(ModelMixin, ConfigMixin):\n    _supports_gradient_checkpointing = True\n"
            '    _repeated_blocks = ["FooBlock"]\n\n'
            "    @register_to_config\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n\n\n"
            "class FooPipeline(DiffusionPipeline):\n    def __init__(self, transformer: FooModel, scheduler):\n"
            "        super().__init__()\n        self.register_modules(transformer=transformer, scheduler=scheduler)\n\n"
            "    def __call__(self, latents, timesteps):\n        for t in timesteps:\n"
            "            latents = self.scheduler.step(self.transformer(latents, t), t, latents).prev_sample\n",
        ),
        # No pipeline in the tree shows that the model runs per step: reported only.
        Example(
            "class FooBlock(nn.Module):\n    pass\n\n\n"
            "class FooModel(ModelMixin, ConfigMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n"
        ),
    )


@dataclass(frozen=True)
class _Placement:
    """Where the new attribute goes in the class, and how wide it may be written."""

    target: NodeRef
    indent: int
    line_length: int
    after: str | None  # the attribute it follows, else it goes before `before`
    before: str
    blank_before: bool

    @classmethod
    def of(cls, source: SourceFile, tree: TreeInfo, node: ast.ClassDef) -> _Placement:
        """In a class with an `__init__` (the only ones the graph describes)."""
        init = next(i for i, s in enumerate(node.body) if isinstance(s, ast.FunctionDef) and s.name == "__init__")
        indent = node.body[0].col_offset if node.body else node.col_offset + 4
        target = source.ref(node, "ClassDef")
        if any(isinstance(s, ast.Assign | ast.AnnAssign) and _target_is(s, _AFTER) for s in node.body):
            return cls(target, indent, tree.line_length, _AFTER, "__init__", False)
        previous = node.body[init - 1] if init > 0 else None
        after_docstring = isinstance(previous, ast.Expr) and isinstance(previous.value, ast.Constant)
        return cls(target, indent, tree.line_length, None, "__init__", after_docstring)

    def edit(self, blocks: tuple[str, ...]) -> tuple[str, Edit]:
        quoted = [f'"{b}"' for b in blocks]
        text = f"{REPEATED_BLOCKS} = [{', '.join(quoted)}]\n"
        if self.indent + len(text) - 1 > self.line_length:
            text = f"{REPEATED_BLOCKS} = [\n" + "".join(f"    {q},\n" for q in quoted) + "]\n"
        params = (("text", text), ("after", self.after), ("before", self.before), ("blank_before", self.blank_before))
        edit = Edit(self.target, "add_class_attribute", params, inserts=True)
        return f"add `{REPEATED_BLOCKS} = [{', '.join(quoted)}]`", edit


def _is_model(index: ProjectIndex, name: str) -> bool:
    return any("ModelMixin" in c.bases for c in index.classes(name))


def _target_is(statement: ast.Assign | ast.AnnAssign, name: str) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _assigns(statement: libcst.CSTNode, name: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
        ):
            return True
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == name:
            return True
    return False


def _turns_on_tests(node_ids: list[str], code: str) -> str | None:
    """Why the fix waits for a verifier: the checkout's tests it turns on, which only running them can judge."""
    if not node_ids:
        return None
    more = f" and {len(node_ids) - 1} more" if len(node_ids) > 1 else ""
    return (
        f"it turns on tests that never ran for this model ({node_ids[0]}{more}), which may need a test override "
        f"(`recompile_limit`); `codemod verify` runs them and carries it, or opt in: `--opt-in {code}-{TURNED_ON_TESTS}`"
    )
