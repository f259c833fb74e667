from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from codemods.analysis.models.block_stacks import REPEATED_BLOCKS, UNREADABLE, existing_list, is_model_class
from codemods.analysis.models.model_graph import ModuleGraph, builders, denoising, factory_blocks, lineage, module_graph
from codemods.edits.class_attributes import ClassAttributeEdits, ClassAttributePlacement
from codemods.findings import Finding, FixSafety
from codemods.project.files import FileMemo
from codemods.project.frozen import DEPRECATED_REASON
from codemods.project.gated_tests import read_gates_ahead, tests_turned_on
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile
from codemods.triggers import Trigger

TURNED_ON_TESTS = "turned-on-tests"


class MissingRepeatedBlocks(ClassAttributeEdits, Rule):
    """
    ## What it does
    Finds a denoiser, a `ModelMixin` subclass that a pipeline of the tree registers as a component
    and calls inside its denoising loop (`self.transformer(...)`, `self.unet(...)`,
    `self.controlnet(...)`), that defines no `_repeated_blocks` though it repeats blocks, and adds
    `_repeated_blocks = [...]` naming them: the classes its `__init__` stacks
    (`nn.ModuleList([FooBlock(...) for _ in range(n)])`), or, for a UNet or ControlNet whose
    blocks come from `get_down_block(...)`-like factories or are built in place and appended to
    `nn.ModuleList([])`s (`UNetMotionModel`, `UNetControlNetXSModel`), the class those blocks stack inside
    (`BasicTransformerBlock`, found by following the blocks to `Transformer2DModel` or `AnimateDiffTransformer3D`).
    A model's stacks are read in `__init__` and the helpers it calls; a base like `LegacyModelMixin` counts
    when the tree shows it derives from `ModelMixin` (`Transformer2DModel`). Also
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
    (one used only by modular pipelines), it is reported without a fix. So is a model only pipelines
    under `pipelines/deprecated/` call per step (ControlNet-XS, UNet3D, I2VGenXL, UVit2D,
    `Transformer2DModel` in VQ-Diffusion): the tool leaves those pipelines alone, and no maintained
    code shows the model runs per step. Stacks of `nn.Linear`/torch
    modules and of whole models (`Multi*ControlNetModel.nets`) are left alone. Reported without a
    fix: stacks of a wrapper around several block classes, of a class held in a variable, or of a
    class whose name cannot be resolved in the file; a factory whose returned classes cannot be read;
    a model that stacks blocks itself and also builds some with factories (which to list is a choice);
    a class stacked only inside a block that is itself repeated (`Kandinsky3ResNetBlock`'s `Kandinsky3Block`s);
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
    trigger = Trigger(r"ModuleList\(", "ModuleList(")
    # Pipelines (what runs per step) and the graph of what models build, for findings in other files.
    facts_trigger = Trigger(r"ModuleList\(|register_modules\(", "ModuleList(", "register_modules(")

    def collect_facts(self, source: SourceFile) -> ModuleGraph:
        return module_graph(source)

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        graph = module_graph(source)
        for cls in source.classes:
            parts = graph.classes.get(cls.name)
            if parts is None or not is_model_class(cls):
                continue
            if not (parts.stacks or parts.unclear or parts.factories or parts.appended):
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
                appended=parts.appended,
                placement=ClassAttributePlacement.of(source, tree, cls),
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
        if "ModelMixin" not in lineage(index, finding.extra["model"]):
            return None  # a base named like a model mixin that is not one (`FromOriginalModelMixin` alone)
        if any(_is_model(index, name) for _, name in finding.requires):
            return None  # a stacked class defined in another file is a whole model
        model: str = finding.extra["model"]
        verdict = self._per_step(index, model)
        placement: ClassAttributePlacement | None = finding.extra["placement"]
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
            message, reason = (
                found.message(model, finding.extra["factories"], blocks, finding.extra["appended"]),
                found.problem,
            )
        if pipeline is not None:
            message += f" (`{pipeline}` calls it in its denoising loop)"
        reason = reason or unproven
        if reason is None and blocks and not finding.extra["tests_opted_in"]:
            reason = _turns_on_tests(tests_turned_on(index, finding.path, model, REPEATED_BLOCKS), self.code)
        fix = self.fix(*placement.edit(blocks)) if reason is None and blocks else finding.fix
        return replace(finding, message=message, not_fixed_reason=reason, fix=fix)

    def read_ahead(self, finding: Finding, memo: FileMemo) -> bool:
        """The checkout's tests that `resolve` asks of before it offers a new list (`tests_turned_on`)."""
        asks = finding.extra["placement"] is not None and not finding.extra["tests_opted_in"]
        return asks and read_gates_ahead(finding.path, REPEATED_BLOCKS, memo)

    def _per_step(self, index: ProjectIndex, model: str) -> tuple[str | None, str | None] | None:
        """(the pipeline that calls `model`, or a class it derives from, in its denoising loop; why the tree
        cannot say), or None when the tree shows the model never runs per step."""
        tree = denoising(index, self.code)
        names = lineage(index, model)
        pipeline = next((tree.per_step[n] for n in names if n in tree.per_step), None)
        if pipeline is not None:
            return pipeline, None
        deprecated = next((tree.deprecated_per_step[n] for n in names if n in tree.deprecated_per_step), None)
        if deprecated is not None:
            return None, (
                f"the only pipelines that call `{model}` in their denoising loop (`{deprecated}`) are under "
                f"pipelines/deprecated/, which the tool leaves alone ({DEPRECATED_REASON}): no maintained "
                "pipeline shows that it runs once per denoising step"
            )
        if not tree.pipelines:
            return None, f"no pipeline in the tree shows that `{model}` runs once per denoising step"
        if any(n in tree.registered for n in names) or builders(index, self.code, model):
            return None  # called once per call (an encoder, an upsampler), or a part of another model
        return None, f"none of the tree's {tree.pipelines} pipelines calls `{model}` in its denoising loop"

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
        # A block list filled by appending torch layers: nothing inside repeats.
        (
            "class FooControlNet(ModelMixin, ConfigMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.down_blocks = nn.ModuleList([])\n        for _ in range(n):\n"
            "            self.down_blocks.append(nn.Conv2d(8, 8, 1))\n"
        ),
        # A base named like a model mixin that is not `ModelMixin` (a loader): not a model.
        (
            "class FooLoader(FromOriginalModelMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n"
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


def _is_model(index: ProjectIndex, name: str) -> bool:
    return any("ModelMixin" in c.bases for c in index.classes(name))


def _turns_on_tests(node_ids: list[str], code: str) -> str | None:
    """Why the fix waits for a verifier: the checkout's tests it turns on, which only running them can judge."""
    if not node_ids:
        return None
    more = f" and {len(node_ids) - 1} more" if len(node_ids) > 1 else ""
    return (
        f"it turns on tests that never ran for this model ({node_ids[0]}{more}), which may need a test override "
        f"(`recompile_limit`); `codemod verify` runs them and carries it, or opt in: `--opt-in {code}-{TURNED_ON_TESTS}`"
    )
