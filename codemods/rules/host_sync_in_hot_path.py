from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from codemods.analysis.models.hot_paths import STEP_LOOPS, hot_paths
from codemods.analysis.placement.class_places import PLACEMENT_UNKNOWN, places_at, traced_places_at
from codemods.analysis.placement.host_built import VALUE_READS, fill_value, host_built
from codemods.analysis.placement.host_reads import READING_NODES, HostRead, host_reads
from codemods.analysis.placement.host_value_uses import host_read_message, path_to
from codemods.analysis.placement.mask_guards import empty_mask_guard
from codemods.analysis.schedules.precomputed_schedule import PRECOMPUTED, is_first_element_item, schedule_replay
from codemods.analysis.schedules.scheduler_lookups import every_call_lookup
from codemods.analysis.schedules.stepped_schedulers import scheduler_loops
from codemods.edits.statement_inserts import inserted_before
from codemods.findings import Edit, Finding, FixSafety, Placement
from codemods.lazy import libcst as cst
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import Ancestors, SourceFile, shortened

if TYPE_CHECKING:
    import libcst

_PRECOMPUTE_COMMENT = "# The normalized timesteps, read to the host once instead of every step"


class HostSyncInHotPath(Rule):
    """
    ## What it does
    Finds code in a hot path (a pipeline's denoising loop, or a `while` loop that steps the
    scheduler, an `nn.Module.forward`, an attention processor or registered attention backend, a
    scheduler's `step`, and what they call) that makes the host wait for the
    accelerator: `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `int(t)`/`float(t)`,
    `torch.nonzero`/`.nonzero()`, `torch.unique`, boolean-mask reads (`x[mask]`), slices at a tensor
    length (`key[b, :valid_len]`), builtin `min`/`max` of tensors, and Python comparisons or truth tests of
    tensors (`if t < boundary:`).
    Only values the code shows to be tensors on the device count: parameters annotated as tensors,
    torch ops on device tensors, model outputs, registered buffers, the timesteps a pipeline set
    on its device (with `set_timesteps(..., device=...)` or `retrieve_timesteps(scheduler, n, device)`),
    the slice of them an img2img pipeline's `get_timesteps` keeps, and the `t` its loop takes from
    them, and the items of a method's tuple that every `return` of it builds on the device
    (`latents, target_mask, shapes = self.prepare_latents(...)`) or that a submodule of a class of the same
    file returns (HiDream's `topk_idx, topk_weight, aux_loss = self.gate(x)`), a helper's unannotated
    parameters where every call of it in its class passes a device value (`self.moe_infer(x, flat_topk_idx,
    ...)`), what a function of the same file returns given its arguments (`attn_mask =
    _normalize_attn_mask(attn_mask, ...)`, nested tuples too), and tensors made on a pipeline's own
    `self.device` (the accelerator its models run on). Python numbers, CPU tensors (a
    `timesteps_cpu` copy, a scheduler's CPU sigmas), set-up code, first-step-only branches and
    non-tensor fallbacks (`if not torch.is_tensor(t):`) are left alone, as is `x[mask] = value`
    (a masked fill, no sync). A scheduler call in a denoising loop is reported where the
    scheduler's own source (followed across files) looks its step index up in the schedule on
    every call (`FlowMapEulerDiscreteScheduler.step`), which no `set_begin_index` avoids.

    ## Why is this bad?
    The host cannot run ahead of the GPU past a sync: the queue drains, the GPU idles while
    Python catches up, and CUDA graphs and `torch.compile(fullgraph=True)` break at the read. In
    a denoising loop this happens 20-50 times per image; in a forward, once per block.

    ## Example
    ```python
    for i, t in enumerate(timesteps):
        if t >= boundary_timestep:
            current_model = self.transformer
        else:
            current_model = self.transformer_2
    ```

    ## Use instead
    ```python
    timesteps_cpu = timesteps.cpu()  # one copy before the loop
    for i, t in enumerate(timesteps):
        if timesteps_cpu[i] >= boundary_timestep:
            current_model = self.transformer
        else:
            current_model = self.transformer_2
    ```

    ## Fix safety
    Safe, for one shape: `timestep[0].item()` in `for i, t in enumerate(timesteps)`, with `timestep`
    made right before it from `t.expand(n)` and `+ - * /` with number literals (Z-Image's
    `(1000 - t.expand(b)) / 1000`). The fix makes `_precomputed_t_norms = ((1000 - timesteps) /
    1000).tolist()` before the loop's `with` (`pipeline_z_image.py`'s idiom, without its `.float()`,
    which would change other dtypes) and reads `_precomputed_t_norms[i]`: the same elementwise
    arithmetic on the same dtype and device gives each element the same value, and `.tolist()` the
    same numbers as `.item()`. Declined, with the reason, where the loop rebinds or changes `i`, `t`
    or `timesteps` in place, anything else makes `timestep`, `timesteps` is rebound between the new
    line and the loop, or the name is taken. It assumes (as for every diffusers scheduler) a 1-D
    schedule that nothing called in the loop writes into; an empty batch no longer raises there.
    Safe too: `x.max().item()` (or `.min()`) of `x = torch.full(size, n, dtype=<integer dtype>)`,
    with `n` an `int`-annotated parameter that the function never rebinds and nothing writing into
    `x` (no store, in-place method, or call other than a torch function without `out=`), becomes
    `n` (the varlen attention helpers' query lengths; 0.42.1 made that change by hand). The filled
    tensor is still built, so what `torch.full` rejects still raises; a `size` with no elements no
    longer does at the read. Every other read: no fix, as each remedy (a CPU copy, `torch.where`, moving the read out of
    the loop) changes the code's structure; the message says what syncs and the usual way out.

    ## Evidence
    diffusers #11696 removed the `nonzero().item()` of the scheduler's first step for this reason;
    the Wan 2.2 and QwenImage compile work removed per-step `.item()` and tensor comparisons from
    their loops; `torch.cuda.set_sync_debug_mode("warn")` reports each of these lines.
    """

    code = "DIF007"
    name = "host-sync-in-hot-path"
    summary = "host waits for the device (`.item()`, `if t < x`, `nonzero`...) in a denoising loop or forward"
    fix_safeties = (FixSafety.SAFE,)
    # Each alternative opens with a literal (a word's leading `\b` is the lookbehind after it), so `re` tries the
    # regex only where one of their first characters is; a `\b` first would make it try every offset.
    trigger = re.compile(
        r"\.(?:item|tolist|numpy|cpu|nonzero|unique)\(|if\b(?<!\wif)|while\b(?<!\wwhile)|assert\b(?<!\wassert)"
        r"|int\((?<!\wint\()|float\((?<!\wfloat\()|bool\((?<!\wbool\()|min\((?<!\wmin\()|max\((?<!\wmax\()"
        r"|torch\.(?:nonzero|argwhere|unique|masked_select|equal|allclose|where)\(|\.to\([^)]*cpu|mask\w*\s*\]"
        r"|:\s*[A-Za-z_][\w.]*\s*[\],]"
    )
    # Every alternative above holds one of these; the regex itself then runs on hot lines only.
    trigger_text = ("(", "if", "while", "assert", "mask", ":")

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        hot = hot_paths(source)
        seen: set[tuple[int, int]] = set()
        lines = source.lines_matching(self.trigger, within=hot.run_ranges)
        for node, ancestors in source.walk_lines(lines, kinds=READING_NODES):
            # DIF006 reports values rebuilt with `torch.tensor`: a node reading nothing else is not placed.
            reads = [read for read in host_reads(node) if read.kind != "tensor"]
            if not reads:
                continue
            scope = hot.hot_scope(ancestors, node)
            places = places_at(source, ancestors) if scope is not None else None
            if places is None:
                continue
            for read in reads:
                if not places.is_device(read.operand):
                    continue
                if read.kind == "mask" and not places.is_device(node.value):  # type: ignore[attr-defined]
                    continue
                key = (read.node.lineno, read.node.col_offset)  # type: ignore[attr-defined]
                if key in seen:
                    continue
                seen.add(key)
                chain = [*ancestors, *path_to(node, read.node)]
                message = host_read_message(source, read, scope, chain)
                traced = traced_places_at(source, ancestors)
                operands = (read.operand, node.value) if read.kind == "mask" else (read.operand,)  # type: ignore[attr-defined]
                placement = (
                    Placement.DEVICE if traced and all(traced.is_device(o) for o in operands) else Placement.UNKNOWN
                )
                if placement is Placement.UNKNOWN:
                    message += PLACEMENT_UNKNOWN.format(value=shortened(source.segment(read.operand)))
                message += empty_mask_guard(source, node, read.node, places) or ""
                known = host_built(read, places) if read.kind in VALUE_READS else None
                filled = fill_value(read, known, places) if known is not None else None
                if known is not None:
                    message += (
                        f"; the host built these values itself (line {known.lineno}: "
                        f"`{shortened(source.segment(known))}`): use the Python values instead"
                    )
                if filled is not None:
                    found = self._with_fill_fix(source, read, filled, message)
                else:
                    found = self._with_schedule_fix(source, read, ancestors, scope, message)
                yield replace(found, placement=placement)
        if "scheduler.step(" in source.text:
            yield from self._scheduler_lookups(source)

    def _with_schedule_fix(
        self, source: SourceFile, read: HostRead, ancestors: Ancestors, scope: ast.AST, message: str
    ) -> Finding:
        """The finding, with the precomputed-schedule fix where `timestep[0].item()` provably replays."""
        if read.kind != "item" or not isinstance(scope, STEP_LOOPS) or not is_first_element_item(read.node):
            return self.finding(source, read.node, message)
        replay = schedule_replay(read.node, ancestors, scope)  # type: ignore[arg-type]
        if isinstance(replay, str):
            return self.finding(source, read.node, message, not_fixed_reason=replay)
        expression = (("expression", replay.expression),)
        made = Edit(source.statement_ref(replay.anchor), "precompute_schedule", expression, inserts=True)
        read_edit = Edit(source.ref(read.node, "Call"), "read_precomputed", (("index", replay.index),))
        fix = self.fix(f"read `{PRECOMPUTED}[{replay.index}]`, made once before the loop", made, read_edit)
        return self.finding(source, read.node, message, fix)

    def _with_fill_fix(self, source: SourceFile, read: HostRead, filled: ast.Name | str, message: str) -> Finding:
        """`x.max().item()` of `x = torch.full(size, n, dtype=<int>)`: the finding, with the fix that reads `n`."""
        if isinstance(filled, str):
            return self.finding(source, read.node, message, not_fixed_reason=filled)
        edit = Edit(source.ref(read.node, "Call"), "read_fill_value", (("name", filled.id),))
        fix = self.fix(f"read `{filled.id}`, the value it was filled with", edit)
        return self.finding(source, read.node, message, fix)

    def edit_read_fill_value(self, node: libcst.Call, name: str) -> libcst.BaseExpression:
        return cst.Name(name)

    def edit_precompute_schedule(self, node: libcst.BaseStatement, expression: str) -> libcst.FlattenSentinel:
        # Blank lines stay above the new line; the anchor's own comments (`# 8. Denoising loop`) stay on it.
        earlier, node = inserted_before(node)
        leading = list(node.leading_lines)
        split = next((i for i, line in enumerate(leading) if line.comment is not None), len(leading))
        comment = cst.EmptyLine(comment=cst.Comment(_PRECOMPUTE_COMMENT))
        new = cst.parse_statement(f"{PRECOMPUTED} = ({expression}).tolist()\n")
        new = new.with_changes(leading_lines=[*leading[:split], comment])
        kept = [cst.EmptyLine(indent=False), *leading[split:]] if split < len(leading) else []
        return cst.FlattenSentinel([*earlier, new, node.with_changes(leading_lines=kept)])

    def edit_read_precomputed(self, node: libcst.Call, index: str) -> libcst.BaseExpression:
        return cst.parse_expression(f"{PRECOMPUTED}[{index}]")

    def _scheduler_lookups(self, source: SourceFile) -> Iterator[Finding]:
        """A loop's scheduler calls; `resolve` keeps those whose scheduler looks its index up on every call."""
        for found in scheduler_loops(source):
            for scheduler in found.schedulers:
                for call in scheduler.calls:
                    method = call.func.attr  # type: ignore[attr-defined]
                    if method in ("step", "scale_model_input"):
                        question = ("every_call_lookup", method, *scheduler.types)
                        yield self.finding(source, call, f"`{scheduler.expression}.{method}()`", requires=(question,))

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        if not finding.requires:
            return finding
        (_, method, *types) = finding.requires[0]
        where = every_call_lookup(index, tuple(types), method)
        if where is None:
            return None
        return replace(
            finding,
            message=f"{finding.message} looks its step index up in the schedule on every call ({where}): the host waits "
            "for the device every denoising step, and `set_begin_index` cannot remove it; the scheduler should "
            "advance its `step_index` instead, as FlowMatchEuler does",
        )

    valid = (
        # A Python number compared in the loop: no tensor, no sync.
        (
            "class Pipe:\n"
            "    def __call__(self, timesteps, num_warmup_steps: int):\n"
            "        for i, t in enumerate(timesteps):\n"
            "            if i > num_warmup_steps:\n"
            "                pass\n"
        ),
        # A CPU tensor: `.item()` costs no device round trip.
        (
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n"
            "        scale = torch.tensor([0.5])\n"
            "        return x * scale.item()\n"
        ),
        # A masked fill of a scalar is no sync.
        (
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor, mask: torch.Tensor):\n"
            "        x[mask] = 0.0\n"
            "        return x\n"
        ),
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "class Pipe:\n"
            "    def __call__(self, num_inference_steps: int, boundary: float):\n"
            "        device = self._execution_device\n"
            "        self.scheduler.set_timesteps(num_inference_steps, device=device)\n"
            "        timesteps = self.scheduler.timesteps\n"
            "        for i, t in enumerate(timesteps):\n"
            "            if t >= boundary:\n"
            "                pass\n"
        ),
        Example(
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n"
            "        return x.max().item()\n"
        ),
    )
