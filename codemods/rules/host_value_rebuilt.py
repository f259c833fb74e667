from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from codemods.analysis.models.hot_paths import STEP_LOOPS, hot_paths
from codemods.analysis.models.model_call_loops import host_data_per_denoiser_pass
from codemods.analysis.placement.class_places import PLACEMENT_UNKNOWN, places_at, traced_places_at
from codemods.analysis.placement.factory_moves import (
    device_values,
    host_built_move,
    is_empty_data,
    is_move,
    move_target,
    moved_by,
    why_no_device_fix,
)
from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.host_factories import (
    EXACT_FACTORIES,
    FROM_DATA,
    RANGE_FACTORIES,
    ROUNDING_FACTORIES,
    exact,
    keyword,
    met_on_device,
)
from codemods.analysis.placement.place import Place
from codemods.edits.call_layout import add_keyword_argument, device_keyword_fix
from codemods.edits.getters.builds import cached_build
from codemods.edits.getters.plan import GetterPlan
from codemods.edits.getters.rewrites import DeviceGetterEdits
from codemods.findings import Finding, FixSafety, Placement
from codemods.lazy import libcst as cst
from codemods.project.index import TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import Ancestors, SourceFile, dotted_name, shortened
from codemods.triggers import Trigger

if TYPE_CHECKING:
    import libcst


class HostValueRebuilt(DeviceGetterEdits, Rule):
    """
    ## What it does
    Finds tensors built from host data and put on the device inside a denoising loop or a hot
    forward: `torch.tensor(<python values>, device=device)`, `torch.tensor([t] * batch, ...)`,
    `torch.tensor(...).to(device)`, factories (`torch.arange`, `torch.linspace`, `torch.ones`, ...)
    created on the CPU and then moved with `.to(x.device)`, and values computed on the host from
    such a factory and then moved (`torch.exp(exponent).to(t.device)`, `exponent` an `arange`).
    A scheduler's `step()` and what it calls are hot too (UniPC's `torch.tensor(rks, device=device)`
    ), and so is a pipeline loop that runs a denoiser on every pass without stepping the scheduler
    (GLM-Image's per-condition-image `target_size`; `analysis/models/model_call_loops.py`).
    `if not torch.is_tensor(t):` fallbacks are cold and left alone; random
    draws (`randn_tensor(...).to(device)`) are never flagged: drawing on the device would give
    other numbers. So is `torch.tensor(self.long_factor, ...)` of a list set in `__init__` (OmniGen).

    ## Why is this bad?
    Each one is a host-to-device copy per step or per call: the host builds the values, then
    queues a copy the device must wait for. `torch.tensor([t] * batch)` with a device `t` is
    worse: the host first reads `t` back (a sync), then copies it out again.

    ## Example
    ```python
    freqs = torch.arange(0, dim, 2, dtype=torch.float32).to(pos.device)
    timestep = torch.tensor([t] * latents.shape[0], device=device)
    ext_factors = torch.tensor(self.long_factor, dtype=torch.float32, device=hidden_states.device)
    ```

    ## Use instead
    ```python
    freqs = torch.arange(0, dim, 2, dtype=torch.float32, device=pos.device)
    timestep = t.expand(latents.shape[0])

    @lru_cache_unless_export(maxsize=None)  # one getter per attribute, before `forward` (as DIF001's)
    def _get_device_long_factor(self, device: torch.device) -> torch.Tensor:
        \"\"\"Return long_factor as a tensor on the given device.\"\"\"
        return torch.tensor(self.long_factor, dtype=torch.float32, device=device)

    def forward(self, hidden_states, position_ids):
        ext_factors = self._get_device_long_factor(hidden_states.device)
    ```

    ## Fix safety
    Safe or unsafe, by factory. The factory-then-`.to(device)` form is fixed by creating the
    tensor on that device: safe for `ones`, `zeros`, `full`, `eye`, `empty` and an `arange` of
    integer literals, whose values do not depend on where they are computed; unsafe for
    `linspace`, `logspace` and other `arange`s: the accelerator's kernels may round the last bits
    differently, so the fix needs verification. Random factories (`randn`, ...) are never moved:
    the device draws from another generator.
    `torch.tensor(self.<attr>, ...)` cached per device is unsafe, as DIF001's getters are: same
    values, but one tensor for every call, so a change to the list from outside the class, or to the
    tensor by a caller, would persist. It is offered only where the module proves the rest
    (`analysis/models/init_constants.py`: an `nn.Module`; only a constant `dtype=` and a device; the
    attribute set once in `__init__` from a literal or `__init__`'s arguments, and only ever copied;
    the result not changed in place; the getter's name free); otherwise the finding says why.
    The rest is reported (the remedy, a tensor built once or `t.expand(...)`, changes the code's shape).

    ## Evidence
    diffusers #371 ("avoid memcpy op in `get_timestep_embedding`"), #3313
    (`torch.logspace(..., device=sample.device)` in ControlNet, for torch.compile) and #9354
    (`torch.arange(..., device=pos.device)` in `get_1d_rotary_pos_embed`) made this change by hand;
    #13406 cached QwenImage's RoPE tables per device with the getter the OmniGen fix copies.
    """

    code = "DIF006"
    name = "host-value-rebuilt"
    summary = "tensor rebuilt from host values and copied to the device every step/call"
    fix_safeties = (FixSafety.SAFE, FixSafety.UNSAFE)
    trigger = Trigger(
        r"torch\.(?:tensor|as_tensor|Tensor|FloatTensor|LongTensor|IntTensor|BoolTensor|arange"
        r"|linspace|logspace|ones|zeros|full|eye|empty)\(|\.to\(",
        "torch.",
        ".to(",
    )

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        hot = hot_paths(source)
        lines = source.lines_matching(self.trigger, within=hot.run_ranges)
        for node, ancestors in source.walk_lines(lines, kinds=ast.Call):
            if is_move(node):
                finding = self._moved_host_value(source, node, ancestors, hot)
                if finding is not None:
                    yield finding
                continue
            if not isinstance(node, ast.Call) or not (dotted_name(node.func) or "").startswith("torch."):
                continue
            factory = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
            if factory not in FROM_DATA | EXACT_FACTORIES | RANGE_FACTORIES | ROUNDING_FACTORIES:
                continue
            scope = hot.hot_scope(ancestors, node)
            if scope is None:
                continue
            places = places_at(source, ancestors)
            if places is None:
                continue
            finding = self._finding(source, tree, node, ancestors, factory, places, scope)
            if finding is not None:
                yield finding
        for built in host_data_per_denoiser_pass(source):
            changing = f"it reads `{built.changing}`, which changes every pass" if built.changing else None
            yield self.finding(
                source, built.call,
                f"`{shortened(source.segment(built.call))}` builds a tensor from Python values and copies it to the "
                f"device on every pass of the loop at line {built.loop.lineno}, which runs `self.{built.component}` "
                "each pass; build it once before the loop",
                not_fixed_reason=f"{changing or 'hoisting it is not planned'}; move it by hand",
            )  # fmt: skip

    def _moved_host_value(self, source: SourceFile, move: ast.Call, ancestors: Ancestors, hot) -> Finding | None:
        """`emb = torch.exp(exponent).to(device=t.device)` with `exponent` from `torch.arange(...)`: built on the
        host from a factory, copied every call (the factory-then-`.to` form itself is handled apart)."""
        scope = hot.hot_scope(ancestors, move)
        places = places_at(source, ancestors) if scope is not None else None
        factory = host_built_move(move, places) if places is not None else None
        if factory is None:
            return None
        when = "every denoising step" if isinstance(scope, STEP_LOOPS) else f"every call of `{scope.name}`"
        return self.finding(
            source, move,
            f"`{shortened(source.segment(move))}` copies a tensor built on the host (from `{shortened(source.segment(factory))}`, "
            f"line {factory.lineno}) to the device {when}; create it on the device (`device=` on the factory)",
        )  # fmt: skip

    def _finding(self, source, tree, call, ancestors, factory, places: FunctionPlaces, scope) -> Finding | None:
        when = "every denoising step" if isinstance(scope, STEP_LOOPS) else f"every call of `{scope.name}`"
        text = shortened(source.segment(call))
        moved = moved_by(call, ancestors, places)
        device = keyword(call, "device")
        on_device = device is not None and places.device_place(device) is Place.DEVICE
        if factory in FROM_DATA:
            read = device_values(call, places)
            if read is not None:
                # A sync only where the value is on the device as the code shows, not as an annotation says.
                traced = traced_places_at(source, ancestors)
                placed = traced is not None and device_values(call, traced) is not None
                unknown = "" if placed else PLACEMENT_UNKNOWN.format(value=shortened(source.segment(read)))
                finding = self.finding(
                    source, call,
                    f"`{text}` reads `{shortened(source.segment(read))}` back from the device (a sync) and copies it "
                    f"out again, {when}; use `{shortened(source.segment(read))}.expand(...)`/`.repeat(...)` "
                    f"or `torch.stack`, which stay on the device{unknown}",
                )  # fmt: skip
                return replace(finding, placement=Placement.DEVICE if placed else Placement.UNKNOWN)
            if not (on_device or moved is not None) or not call.args or is_empty_data(call.args[0]):
                return None
            if places.place(call.args[0]).is_tensor:
                return None  # a tensor already: `torch.as_tensor(x, device=...)` of a device tensor copies nothing
            plan = cached_build(source, tree, call, ancestors)  # `torch.tensor(self.<attr>, ...)`: cached per device
            fix = None
            if isinstance(plan, GetterPlan):
                fix = self.fix(plan.description, *plan.edits, imports=plan.imports)
            return self.finding(
                source, call,
                f"`{text}` builds a tensor from Python values and copies it to the device {when}; build it once "
                "(before the loop, or cached per device) or compute it on the device",
                fix, not_fixed_reason=plan if isinstance(plan, str) else None,
            )  # fmt: skip
        if device is not None:
            return None
        if moved is None:
            return self._met_on_device(source, tree, call, ancestors, factory, places, when)
        target = move_target(moved)
        message = (
            f"`{text}` is created on the host and copied to the device {when}; "
            f"create it there: `device={shortened(source.segment(target)) if target is not None else '...'}`"
        )
        blocker = why_no_device_fix(moved, target, factory)
        if blocker is not None:
            return self.finding(source, moved, message, not_fixed_reason=blocker)
        device = source.segment(target)
        return self._created_on_device(source, tree, call, ancestors, moved, message, device, factory)

    def _met_on_device(self, source, tree, call, ancestors, factory, places: FunctionPlaces, when) -> Finding | None:
        """`scales = torch.logspace(-1, 0, n)` then `mid_block_res_sample *= scales[-1]`: created on the host,
        combined with device tensors (ControlNet's guess mode before diffusers #3313)."""
        met = met_on_device(call, factory, places)
        if met is None:
            return None
        meeting, target = met
        text = shortened(source.segment(call))
        message = (
            f"`{text}` is created on the host {when} and then combined with device tensors "
            f"(`{shortened(source.segment(meeting))}`, line {meeting.lineno}): each use crosses from the host, and "
            f"`torch.compile` keeps it out of the graph as a CPU input; create it there: `device={target or '...'}`"
        )
        if target is None:
            reason = f"no tensor parameter of `{places.function.name}` names the device at line {call.lineno}; add it by hand"
            return self.finding(source, call, message, not_fixed_reason=reason)
        return self._created_on_device(source, tree, call, ancestors, call, message, target, factory)

    def _created_on_device(
        self, source, tree, call: ast.Call, ancestors, anchor: ast.Call, message: str, device: str, factory: str
    ) -> Finding:
        """The finding on `anchor` (the factory, or the `.to()` that moves it), fixed by `device=` on the factory."""
        safety = FixSafety.SAFE if exact(call, factory) else FixSafety.UNSAFE
        fix = device_keyword_fix(source, call, anchor, ancestors, device, tree.line_length, safety)
        if fix is None:
            return self.finding(source, anchor, message, not_fixed_reason="the line must be re-wrapped; fix by hand")
        return self.finding(source, anchor, message, fix)

    def edit_add_device(self, node: libcst.Call, wrap: str, indent: str, device: str) -> libcst.Call:
        return add_keyword_argument(node, "device", cst.parse_expression(device), wrap=wrap, indent=indent)

    def edit_create_on_device(self, node: libcst.Call, wrap: str, indent: str, device: str) -> libcst.Call:
        factory = node.func.value  # `torch.arange(...)` of `torch.arange(...).to(x.device)`
        return add_keyword_argument(factory, "device", cst.parse_expression(device), wrap=wrap, indent=indent)

    valid = (
        # Set-up code, before the loop: runs once.
        (
            "import torch\n\n\n"
            "class Pipe:\n"
            "    def __call__(self, timesteps, device):\n"
            "        scale = torch.tensor([1.0, 2.0], device=device)\n"
            "        for t in timesteps:\n"
            "            pass\n"
        ),
        # A non-tensor fallback is cold.
        (
            "import torch\n\n\n"
            "class Embed(torch.nn.Module):\n"
            "    def forward(self, timesteps, sample: torch.Tensor):\n"
            "        if not torch.is_tensor(timesteps):\n"
            "            timesteps = torch.tensor([timesteps], device=sample.device)\n"
            "        return timesteps\n"
        ),
        # Random factories draw from another generator on the device: never moved.
        (
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n"
            "        return x + torch.randn(4).to(x.device)\n"
        ),
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n"
            "        scales = torch.ones(4).to(x.device)\n"
            "        return x * scales\n",
            "import torch\n\n\n"
            "class Block(torch.nn.Module):\n"
            "    def forward(self, x: torch.Tensor):\n"
            "        scales = torch.ones(4, device=x.device)\n"
            "        return x * scales\n",
        ),
        Example(
            "import torch\n\n\n"
            "class Pipe:\n"
            "    def __call__(self, timesteps, latents: torch.Tensor):\n"
            "        device = self._execution_device\n"
            "        for t in self.progress_bar(timesteps):\n"
            "            guidance = torch.tensor([3.5], device=device)\n"
        ),
    )
