from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codemods.analysis.class_places import ClassPlaces, attribute_assignments, class_places
from codemods.analysis.hot_paths import hot_paths, is_scheduler
from codemods.analysis.place import Place
from codemods.analysis.placement import FunctionPlaces
from codemods.analysis.sigma_flow import SigmaFlowAnalysis, SigmaUse, Taint
from codemods.analysis.types import attribute_types
from codemods.findings import Edit, Finding, FixSafety
from codemods.lazy import libcst as cst
from codemods.project import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, dotted_name, spans_a_line

if TYPE_CHECKING:
    import libcst

_MOVE = 'self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n'
_SETTER = "set_timesteps"
# What the scheduler's siblings reset just before keeping their sigmas on the CPU.
_RESETS = {"_step_index", "_begin_index"}
_CONSUMER_TEXT = "scheduler.sigmas"
_CONSUMER_PATTERN = re.compile(re.escape(_CONSUMER_TEXT))


class SchedulerSigmasOnDevice(Rule):
    """
    ## What it does
    Finds a scheduler whose `set_timesteps` leaves `self.sigmas` on the target device while its
    per-step code (`step()`, `step_*()`, `scale_model_input()` and what they call) reads a sigma on
    the host: compares it with Python floats (`if s_tmin <= sigma <= s_tmax:`), takes a builtin
    `min`/`max`, calls `.item()`/`float()`, or builds a `torch.tensor([...])` from it. The fix keeps
    the sigmas on the CPU as diffusers' other schedulers do, right after `set_timesteps` resets
    its step index:
    ```python
    self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication
    ```
    It also reports `torch.tensor(<python values>, device=...)` rebuilt in a scheduler's step.

    ## Why is this bad?
    Each host read of a device tensor waits for the GPU queue to drain. A scheduler's step runs
    20-50 times per image, so the sigmas are read back 20-50 times, for values the host computed in
    the first place. A single CPU sigma costs nothing next to device tensors: CUDA kernels take a
    0-dim CPU tensor as a scalar argument.

    ## Example
    ```python
    sigmas = torch.cat([sigmas, torch.zeros(1, device=sigmas.device)])
    self.sigmas = torch.cat([sigmas[:1], sigmas[1:-1].repeat_interleave(2), sigmas[-1:]])
    self._step_index = None
    self._begin_index = None
    ...
    gamma = min(s_churn / (len(self.sigmas) - 1), 2**0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0
    ```

    ## Use instead
    ```python
    self._step_index = None
    self._begin_index = None
    self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication
    ```

    ## Fix safety
    Unsafe, and offered only where every use of the sigmas works from the CPU: single sigmas in
    arithmetic, elementwise torch ops and host reads. It is not offered (the finding says why)
    where the vector or a slice of it meets device tensors (`self.sigmas[:, None, None]` against
    per-token timesteps), where a sigma is given dimensions (`sigma.view(1)`), where the code moves
    sigmas to the device itself every call (`add_noise`/`scale_noise`, or `step()`: with CPU
    sigmas each becomes a copy), where `set_timesteps` returns early, or where a pipeline class
    in the tree annotated to hold this scheduler uses `scheduler.sigmas` in one of those ways
    (the finding says what it checked). Untyped code reading `scheduler.sigmas` (helpers taking a
    `scheduler`, modular blocks) already runs with the schedulers that keep CPU sigmas, so it is
    counted, not followed. Values and dtypes are unchanged; the fix is unsafe because code outside the tree
    (a user's callback given `scheduler.sigmas[i]`) may still expect device sigmas.

    ## Evidence
    diffusers #6173 ("Keep sigmas on CPU") and #6708 ("Correct sigmas cpu settings") moved the
    sigmas of 13 schedulers to the CPU after `set_timesteps`; the comment is theirs.
    """

    code = "DIF002"
    name = "scheduler-sigmas-on-device"
    summary = "scheduler keeps its sigmas on the device but reads them on the host every step"
    fix_safety = FixSafety.UNSAFE
    trigger = re.compile(r"self\.sigmas\b|torch\.(?:tensor|as_tensor)\(")
    trigger_text = ("self.sigmas", "torch.tensor(", "torch.as_tensor(")

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        lines = source.lines_matching(self.trigger)
        for cls in (n for n, _ in source.walk_lines(lines) if isinstance(n, ast.ClassDef) and is_scheduler(n)):
            hot = hot_paths(source)  # memoized; only files with a scheduler pay for it
            places = class_places(source, cls)
            yield from self._rebuilt(source, cls, places, hot)
            finding = self._sigmas_finding(source, cls, places, hot)
            if finding is not None:
                yield finding

    def _sigmas_finding(self, source: SourceFile, cls: ast.ClassDef, places: ClassPlaces, hot) -> Finding | None:
        setter = places.methods.get(_SETTER)
        if setter is None or not places.may_exit_on_device(setter, "sigmas"):
            return None
        users = [
            m for m in places.methods.values() if m not in (setter, places.methods.get("__init__")) and _reads_sigmas(m)
        ]
        flow = SigmaFlowAnalysis(cls, _self_sigmas, hot.hot_function, places.function).run([m.name for m in users])
        if not flow.host_reads:
            return None  # nothing reads them on the host: on the device they cost nothing per step
        assignment = _final_assignment(setter)
        reads = _describe(flow.host_reads)
        message = (
            f"`{_SETTER}` leaves `self.sigmas` on the device (line {assignment.lineno}) and the per-step code reads "
            f"them on the host, a sync every step: {reads}; keep them on the CPU "
            '(`self.sigmas = self.sigmas.to("cpu")`)'
        )
        blocker = _why_no_fix(setter, flow.device_needs)
        anchor = _anchor(setter)
        fix = None
        if blocker is None and anchor is not None:
            fix = self.fix(
                'keep the sigmas on the CPU after `set_timesteps`: `self.sigmas = self.sigmas.to("cpu")`',
                Edit(source.statement_ref(anchor), "keep_sigmas_on_cpu", inserts=True),
            )
        return self.finding(
            source, assignment, message, fix,
            requires=(("sigma_consumers", cls.name),) if fix else (),
            not_fixed_reason=blocker,
        )  # fmt: skip

    def _rebuilt(self, source: SourceFile, cls: ast.ClassDef, places: ClassPlaces, hot) -> Iterator[Finding]:
        """`torch.tensor(<python values>, device=...)` in per-step code: a host-to-device copy every step."""
        for method in places.methods.values():
            if not hot.hot_function(method):
                continue
            function = places.function(method)
            for node in ast.walk(method):
                if not _builds_on_device(node, function):
                    continue
                data = node.args[0]
                reads = _device_elements(data, function)
                also = f", after reading `{reads}` back from the device" if reads else ""
                yield self.finding(
                    source, node,
                    f"`{_short(source.segment(node))}` builds a tensor from Python values and copies it to the device "
                    f"every step (in `{method.name}`){also}; compute it with torch ops on the device "
                    "(e.g. `torch.stack`) or keep the values on the CPU",
                )  # fmt: skip

    facts_trigger = _CONSUMER_PATTERN

    def collect_facts(self, source: SourceFile) -> list[SigmaConsumer]:
        return _consumers(source)

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        if finding.fix is None or not finding.requires:
            return finding
        scheduler = finding.requires[0][1]
        holders, needs = _consumer_needs(scheduler, finding.path, index)
        if needs:
            path, use = needs[0]
            finding.not_fixed_reason = (
                f"{path}:{use.line} holds a {scheduler} and {use.why} (`{use.text}`), "
                "a use this rule cannot show to work with CPU sigmas"
            )
            finding.fix = None
        elif holders:
            finding.message += (
                f"; {holders} class(es) in the tree typed to hold a {scheduler} read `scheduler.sigmas`, "
                "none in a way that needs them on the device"
            )
        else:
            finding.message += f"; no class in the tree typed to hold a {scheduler} reads `scheduler.sigmas`"
        return finding

    def edit_keep_sigmas_on_cpu(self, node: libcst.BaseStatement) -> libcst.FlattenSentinel:
        return cst.FlattenSentinel([node, cst.parse_statement(_MOVE)])

    valid = (
        # Already on the CPU after `set_timesteps`.
        (
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n"
        ),
        # On the device, but only used in device arithmetic: no host read, nothing to win.
        (
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n\n"
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output\n"
        ),
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n\n"
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
        ),
    )


def _self_sigmas(node: ast.expr) -> Taint | None:
    if isinstance(node, ast.Attribute) and node.attr == "sigmas" and dotted_name(node.value) == "self":
        return "vector" if isinstance(node.ctx, ast.Load) else None
    return None


def _scheduler_sigmas(node: ast.expr) -> Taint | None:
    """`self.scheduler.sigmas`, `scheduler.sigmas`, `components.scheduler.sigmas`: a pipeline's read."""
    if isinstance(node, ast.Attribute) and node.attr == "sigmas" and isinstance(node.ctx, ast.Load):
        return "vector" if (dotted_name(node.value) or "").endswith("scheduler") else None
    return None


def _reads_sigmas(method: ast.AST) -> bool:
    return any(_self_sigmas(n) for n in ast.walk(method) if isinstance(n, ast.Attribute))


def _final_assignment(setter: ast.FunctionDef) -> ast.stmt:
    return attribute_assignments(setter, "sigmas")[-1][0]


def _why_no_fix(setter: ast.FunctionDef, needs: list[SigmaUse]) -> str | None:
    if needs:
        return (
            f"line {needs[0].line} {needs[0].why} (`{needs[0].text}`), a use this rule cannot show to work with "
            "CPU sigmas"
        )
    early = [n for n in ast.walk(setter) if isinstance(n, ast.Return) and n is not setter.body[-1]]
    if early:
        return f"`{_SETTER}` returns early (line {early[0].lineno}); the sigmas must move on every path, by hand"
    return None


def _anchor(setter: ast.FunctionDef) -> ast.stmt | None:
    """The last top-level statement of `set_timesteps` that touches the sigmas or resets the step index."""
    found = None
    for statement in setter.body:
        touches = any(
            _self_sigmas(n) or _is_self_store(n, "sigmas") for n in ast.walk(statement) if isinstance(n, ast.Attribute)
        )
        resets = isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr in _RESETS and dotted_name(t.value) == "self"
            for t in statement.targets
        )
        if touches or resets:
            found = statement
    if found is not None and isinstance(found, ast.Return | ast.Raise):
        return None
    return found


def _is_self_store(node: ast.Attribute, name: str) -> bool:
    return node.attr == name and dotted_name(node.value) == "self" and isinstance(node.ctx, ast.Store)


def _builds_on_device(node: ast.AST, function: FunctionPlaces) -> bool:
    if not (isinstance(node, ast.Call) and dotted_name(node.func) in ("torch.tensor", "torch.as_tensor") and node.args):
        return False
    device = next((k.value for k in node.keywords if k.arg == "device"), None)
    if device is None or function.device_place(device) is not Place.DEVICE:
        return False
    data = node.args[0]
    return not (isinstance(data, ast.List | ast.Tuple) and not data.elts) and not function.place(data).is_tensor


def _device_elements(data: ast.expr, function: FunctionPlaces) -> str | None:
    elements = data.elts if isinstance(data, ast.List | ast.Tuple) else []
    for element in elements:
        if function.place(element) is Place.DEVICE:
            return ast.unparse(element)
    return None


def _describe(uses: list[SigmaUse]) -> str:
    shown = "; ".join(f"`{u.text}` (line {u.line}) {u.why}" for u in uses[:2])
    return shown + (f"; {len(uses) - 2} more" if len(uses) > 2 else "")


@dataclass(frozen=True)
class SigmaConsumer:
    """A class in another file that holds a scheduler and reads `scheduler.sigmas` (gathered at scan time)."""

    path: str
    scheduler_types: tuple[str, ...]  # what its `self.scheduler` is annotated to be
    device_needs: tuple[SigmaUse, ...]  # its uses that need the sigmas on the device


def _consumers(source: SourceFile) -> list[SigmaConsumer]:
    found = []
    lines = source.lines_matching(_CONSUMER_PATTERN)
    for owner in source.classes:
        if not spans_a_line(owner, lines):
            continue
        types = attribute_types(owner).get("scheduler")
        if not types:
            continue  # untyped holders are not followed (see `_consumer_needs`)
        methods = [
            n
            for n in owner.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and spans_a_line(n, lines)
        ]
        names = [
            m.name for m in methods if any(_scheduler_sigmas(n) for n in ast.walk(m) if isinstance(n, ast.Attribute))
        ]
        if names:
            flow = SigmaFlowAnalysis(owner, _scheduler_sigmas, lambda function: False, ClassPlaces(owner, source).function)
            found.append(SigmaConsumer(source.path, types, tuple(flow.run(names).device_needs)))
    return found


def _consumer_needs(scheduler: str, own_path: str, index: ProjectIndex) -> tuple[int, list[tuple[str, SigmaUse]]]:
    """Classes in the tree typed to hold `scheduler` that read `scheduler.sigmas`: (how many, and the uses
    among theirs that need the sigmas on the device).

    Untyped code (a helper taking `scheduler`, a modular block's `components.scheduler`) is not
    followed: it already runs with the schedulers that keep their sigmas on the CPU (Euler,
    DPM-Solver, UniPC and ten more), so it cannot need them on the device.
    """
    holders = 0
    needs: list[tuple[str, SigmaUse]] = []
    for path in index.paths_containing(_CONSUMER_TEXT):
        facts = index.facts(path)
        if path == own_path or facts is None:
            continue
        for consumer in facts.by_rule.get(SchedulerSigmasOnDevice.code) or ():
            if any(t == scheduler or scheduler in index.expand_types(t) for t in consumer.scheduler_types):
                holders += 1
                needs.extend((path, use) for use in consumer.device_needs)
    return holders, needs


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
