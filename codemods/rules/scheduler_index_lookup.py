from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from codemods.analysis.hot_paths import is_denoising_loop, is_scheduler
from codemods.analysis.place import Place
from codemods.analysis.placement import FunctionPlaces
from codemods.analysis.types import attribute_types
from codemods.findings import Edit, Finding, Fix, FixSafety
from codemods.lazy import libcst as cst
from codemods.project import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, call_argument, dotted_name, spans_a_line, statements

if TYPE_CHECKING:
    import libcst

_SCHEDULER = "self.scheduler"
_COMMENT = (
    "# We set the index here to remove DtoH sync, helpful especially during compilation.",
    "# Check out more details here: https://github.com/huggingface/diffusers/pull/11696",
)
# Scheduler methods that read `begin_index` other than through the first step's index lookup.
_READS_BEGIN_INDEX = {"add_noise", "scale_noise", "set_timesteps", "set_begin_index"}
# Loop-invariant rebindings of the timesteps that keep the first one first (`timesteps[:n]`).
_TIMESTEP_SOURCES = ("retrieve_timesteps",)


class SchedulerIndexLookup(Rule):
    """
    ## What it does
    Finds a pipeline's denoising loop that calls `self.scheduler.step()` while the scheduler's
    begin index is unset, where the scheduler (every class its annotation allows) finds its first
    step index with `index_for_timestep`. Where the loop provably starts at the first timestep
    (the timesteps come from `retrieve_timesteps(self.scheduler, ...)` or
    `self.scheduler.timesteps`, at most cut short with `timesteps[:n]`), the fix sets the begin
    index just before the loop, with the comment diffusers uses:
    ```python
    # We set the index here to remove DtoH sync, helpful especially during compilation.
    # Check out more details here: https://github.com/huggingface/diffusers/pull/11696
    self.scheduler.set_begin_index(0)
    ```
    guarded by `if hasattr(self.scheduler, "set_begin_index"):` (as PixArt and Sana do) when a
    scheduler the annotation allows has no such method. Loops that start later (img2img and
    inpainting with `strength`), that call `add_noise`/`scale_noise`/`set_timesteps` (which read
    the begin index too), or that share the method with another loop, are reported only.

    ## Why is this bad?
    Without a begin index the first `step()` (or `scale_model_input()`) calls
    `(timesteps == t).nonzero()` and `.item()`: a device-to-host sync that drains the GPU queue
    and breaks `torch.compile(fullgraph=True)` graphs, once per generation.

    ## Example
    ```python
    timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)
    with self.progress_bar(total=num_inference_steps) as progress_bar:
        for i, t in enumerate(timesteps):
            latents = self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]
    ```

    ## Use instead
    ```python
    timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)
    # We set the index here to remove DtoH sync, helpful especially during compilation.
    # Check out more details here: https://github.com/huggingface/diffusers/pull/11696
    self.scheduler.set_begin_index(0)
    with self.progress_bar(total=num_inference_steps) as progress_bar:
        ...
    ```

    ## Fix safety
    Unsafe. `index_for_timestep` returns the *second* position of a timestep that occurs twice
    (so that img2img does not skip a sigma); `set_begin_index(0)` starts at position 0. The two
    agree whenever the schedule's first timestep occurs once. That holds for the schedules
    diffusers' schedulers build in ordinary settings (checked on 0.42.1 for the Karras and
    flow-match schedulers that need neither scipy nor torchsde, at 1-5, 10, 20, 25, 30, 50, 100
    and 250 steps, every `timestep_spacing`), but not always: DPM-Solver++, DEIS,
    UniPC and SA-Solver with `timestep_spacing="leading"` and 1000 steps repeat their first
    timestep, as may a user's custom `timesteps=`/`sigmas=`; there the fix starts one step earlier
    than before (arguably what was meant). The scheduler class and its configuration are runtime
    choices, so the fix needs verification with the pipeline's real scheduler.

    ## Evidence
    diffusers #11696 ("Avoid DtoH sync from access of nonzero() item in scheduler") added the
    call to Flux; Wan, Chroma, QwenImage and PixArt have it since.
    """

    code = "DIF005"
    name = "scheduler-index-lookup"
    summary = "first `scheduler.step()` looks up its index with `nonzero().item()`; call `set_begin_index(0)`"
    fix_safety = FixSafety.UNSAFE
    trigger = re.compile(r"scheduler\.step\(")  # no leading \b: a literal prefix searches fast

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        lines = source.lines_matching(self.trigger)
        classes = [n for n, _ in source.walk_lines(lines) if isinstance(n, ast.ClassDef)]
        for cls in classes:
            if is_scheduler(cls) or ("set_begin_index" in source.text and _sets_begin_index(cls)):
                continue
            types = attribute_types(cls).get("scheduler")
            if not types:
                continue  # no annotation: which scheduler runs, and whether it looks anything up, is unknown
            for method in (n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
                step_lines = [line for line in lines if method.lineno <= line <= (method.end_lineno or 0)]
                loops = _stepping_loops(method, step_lines) if step_lines else []
                if not loops or not _schedule_on_device(method):
                    continue  # no stepping loop, or timesteps on the CPU (the lookup is a CPU op, no sync)
                for loop in loops:
                    yield self._finding(source, method, loop, loops, types)

    def _finding(self, source: SourceFile, method, loop: ast.For, loops: list, types) -> Finding:
        step = next(n for n in ast.walk(loop) if _is_scheduler_call(n, "step"))
        blocker = _why_no_fix(method, loop, loops)
        anchor = _anchor(method, loop)
        fix = None
        if blocker is None and anchor is not None:
            fix = Fix(
                self.fix_safety,
                "set the begin index before the loop: `self.scheduler.set_begin_index(0)`",
                (Edit(source.statement_ref(anchor), "set_begin_index", (("guarded", True),), inserts=True),),
            )
        elif blocker is None:
            blocker = "the loop is not a statement of the method's own block; set the begin index by hand"
        return self.finding(
            source,
            step,
            "the first `self.scheduler.step()` looks up its step index with `index_for_timestep` "
            "(`nonzero().item()`: a device-to-host sync) because no begin index is set; "
            "call `self.scheduler.set_begin_index(0)` before the loop",
            fix,
            requires=(("index_lookup", *types),),
            not_fixed_reason=blocker,
        )

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        classes = [c for name in finding.requires[0][1:] for c in index.expand_types(name)]
        lookups = [
            c for c in classes if index.methods(c, "_init_step_index") and index.methods(c, "index_for_timestep")
        ]
        if not lookups:
            return None
        finding.message += f" ({_names(sorted(set(lookups)))} look{'s' if len(set(lookups)) == 1 else ''} it up)"
        if finding.fix is not None and all(index.methods(c, "set_begin_index") for c in classes):
            (edit,) = finding.fix.edits
            unguarded = Edit(edit.target, edit.op, (("guarded", False),), inserts=True)
            finding.fix = Fix(finding.fix.safety, finding.fix.description, (unguarded,))
        return finding

    def edit_set_begin_index(self, node: libcst.BaseStatement, guarded: bool) -> libcst.FlattenSentinel:
        call = "self.scheduler.set_begin_index(0)\n"
        if guarded:
            call = 'if hasattr(self.scheduler, "set_begin_index"):\n    ' + call
        comments = [cst.EmptyLine(comment=cst.Comment(text)) for text in _COMMENT]
        statement = cst.parse_statement(call).with_changes(leading_lines=[*node.leading_lines, *comments])
        return cst.FlattenSentinel([statement, node.with_changes(leading_lines=[])])

    valid = (
        # The begin index is set (here by an img2img helper): nothing to look up.
        (
            "class Pipe(DiffusionPipeline):\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def get_timesteps(self, t_start):\n"
            "        self.scheduler.set_begin_index(t_start)\n\n"
            "    def __call__(self, timesteps, latents):\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n"
        ),
    )
    invalid = (
        Example(
            "from diffusers.schedulers import EulerDiscreteScheduler\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def __call__(self, num_inference_steps, device, latents):\n"
            "        timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)\n"
            "        # Denoising loop\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n",
            "from diffusers.schedulers import EulerDiscreteScheduler\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def __call__(self, num_inference_steps, device, latents):\n"
            "        timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)\n"
            "        # Denoising loop\n"
            "        # We set the index here to remove DtoH sync, helpful especially during compilation.\n"
            "        # Check out more details here: https://github.com/huggingface/diffusers/pull/11696\n"
            "        self.scheduler.set_begin_index(0)\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n",
        ),
    )


def _names(classes: list[str]) -> str:
    return ", ".join(classes) if len(classes) <= 3 else f"{', '.join(classes[:3])} and {len(classes) - 3} more"


def _scheduler_method(node: ast.AST) -> str | None:
    """`step` for `self.scheduler.step(...)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and dotted_name(node.func.value) == _SCHEDULER
    ):
        return node.func.attr
    return None


def _is_scheduler_call(node: ast.AST, method: str) -> bool:
    return _scheduler_method(node) == method


def _steps_scheduler(loop: ast.AST) -> bool:
    return any(_is_scheduler_call(n, "step") for n in ast.walk(loop))


def _stepping_loops(method, step_lines: list[int]) -> list[ast.For]:
    """Denoising loops that call `self.scheduler.step()`, innermost only (Marigold loops over batches outside).

    `step_lines`: the lines of the method where the text `scheduler.step(` stands; loops without one are skipped.
    """
    loops = [
        n
        for n in statements(method.body)
        if is_denoising_loop(n) and spans_a_line(n, step_lines) and _steps_scheduler(n)
    ]
    return [loop for loop in loops if not any(other is not loop and _inside_lines(other, loop) for other in loops)]


def _inside_lines(inner: ast.AST, outer: ast.AST) -> bool:
    return outer.lineno <= inner.lineno and inner.end_lineno <= outer.end_lineno


def _schedule_on_device(method) -> bool:
    """`self.scheduler.set_timesteps(..., device=...)` or `retrieve_timesteps(self.scheduler, n, device)` here."""
    places = FunctionPlaces(method)
    for node in ast.walk(method):
        if not isinstance(node, ast.Call):
            continue
        if _is_scheduler_call(node, "set_timesteps"):
            device = call_argument(node, "device", 1)
        elif (
            (dotted_name(node.func) or "").endswith(_TIMESTEP_SOURCES)
            and node.args
            and (dotted_name(node.args[0]) == _SCHEDULER)
        ):
            device = call_argument(node, "device", 2)
        else:
            continue
        if device is not None and places.device_place(device) is Place.DEVICE:
            return True
    return False


def _sets_begin_index(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "set_begin_index"
        for n in ast.walk(cls)
    )


def _why_no_fix(method, loop: ast.For, loops: list) -> str | None:
    if len(loops) > 1:
        return "the method has more than one denoising loop; where each one starts cannot be told apart"
    called = sorted({_scheduler_method(n) for n in ast.walk(loop)} & _READS_BEGIN_INDEX)
    if called:
        return f"the loop calls `self.scheduler.{called[0]}()`, which reads the begin index too"
    iterated = _iterated(loop.iter)
    if dotted_name(iterated) == f"{_SCHEDULER}.timesteps":
        return None
    if not isinstance(iterated, ast.Name):
        return f"the loop iterates `{ast.unparse(iterated)}`, which may not start at the first timestep"
    unproven = _unproven_binding(method, iterated.id, loop)
    if unproven is not None:
        text, line = unproven
        return (
            f"`{iterated.id}` is bound by `{text}` (line {line}), so the loop may not start at the first "
            "timestep (img2img/inpainting start later); set the begin index where the start is known"
        )
    return None


def _iterated(iterable: ast.expr) -> ast.expr:
    """`timesteps` of `enumerate(timesteps)` or `self.progress_bar(timesteps)`."""
    while (
        isinstance(iterable, ast.Call)
        and iterable.args
        and (
            dotted_name(iterable.func) in ("enumerate", "reversed")
            or (dotted_name(iterable.func) or "").endswith("progress_bar")
        )
    ):
        if dotted_name(iterable.func) == "reversed":
            return iterable
        iterable = iterable.args[0]
    if _is_prefix(iterable):
        return _iterated(iterable.value)  # type: ignore[attr-defined]
    return iterable


def _is_prefix(node: ast.expr) -> bool:
    """`x[:n]`: keeps the first element first."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Slice)
        and node.slice.lower is None
        and node.slice.step is None
    )


def _unproven_binding(method, name: str, loop: ast.For) -> tuple[str, int] | None:
    """Why the value of `name` the loop starts with may not begin at the scheduler's first timestep.

    The last binding before the loop that is not a prefix (`timesteps[:n]`) must be
    `retrieve_timesteps(self.scheduler, ...)` or `self.scheduler.timesteps`.
    """
    bindings: list[tuple[ast.stmt, int, ast.expr | None]] = []
    for node in statements(method.body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith) and node is not loop:
            targets = (
                [node.target]
                if isinstance(node, ast.For | ast.AsyncFor)
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
            )
            value = None
        else:
            continue
        for target in targets:
            position = _position(target, name)
            if position is not None and node.lineno < loop.lineno:
                bindings.append((node, position, value))
    bindings.sort(key=lambda binding: binding[0].lineno)
    while bindings and _is_prefix_of(bindings[-1][2], name) and bindings[-1][1] == -1:
        bindings.pop()
    if not bindings:
        return (f"a parameter or an outer name `{name}`", method.lineno)
    node, position, value = bindings[-1]
    if _keeps_first(value, position):
        return None
    return ast.unparse(node).splitlines()[0], node.lineno


def _position(target: ast.expr, name: str) -> int | None:
    if isinstance(target, ast.Name):
        return -1 if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List):
        for position, element in enumerate(target.elts):
            if isinstance(element, ast.Name) and element.id == name:
                return position
    return None


def _keeps_first(value: ast.expr | None, position: int) -> bool:
    if value is None:
        return False
    if position == 0 and isinstance(value, ast.Call):
        function = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        return function in _TIMESTEP_SOURCES and bool(value.args) and dotted_name(value.args[0]) == _SCHEDULER
    return position == -1 and dotted_name(value) == f"{_SCHEDULER}.timesteps"


def _is_prefix_of(value: ast.expr | None, name: str) -> bool:
    """`name[:n]` (SDXL's `denoising_end` cuts the end of the schedule, never its start)."""
    return value is not None and _is_prefix(value) and isinstance(value.value, ast.Name) and value.value.id == name  # type: ignore[attr-defined]


def _anchor(method, loop: ast.For) -> ast.stmt | None:
    """The statement to insert before: the loop, or the `with self.progress_bar(...)` it opens."""
    for node in ast.walk(method):
        for block in _blocks(node):
            for statement in block:
                if statement is loop:
                    return statement
                if isinstance(statement, ast.With | ast.AsyncWith) and statement.body and statement.body[0] is loop:
                    return statement
    return None


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    return [
        getattr(node, field)
        for field in ("body", "orelse", "finalbody")
        if isinstance(getattr(node, field, None), list)
    ]
