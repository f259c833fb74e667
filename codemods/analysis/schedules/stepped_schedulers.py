"""Which schedulers a pipeline's denoising loop steps, and which classes each may be.

`self.scheduler` (and any other `self.<name>scheduler` component) has the classes the pipeline's
`__init__` annotates. A local copy made before the loop (`audio_scheduler =
copy.deepcopy(self.scheduler)`, as LTX2 and Kandinsky 6 step their audio latents) has the classes
of what it copies. Anything else stepped in the loop (a parameter, a copy made inside the loop)
is not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from codemods.analysis.models.hot_paths import is_denoising_loop, is_scheduler, own_loops
from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.module_calls import module_calls
from codemods.analysis.placement.place import Place
from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.analysis.values.types import Types, class_attribute_types
from codemods.line_walk import spans_a_line
from codemods.node_index import method_calls_within, names_within, nodes_within
from codemods.source import SourceFile, dotted_name
from codemods.triggers import Trigger

STEP_CALL = Trigger(r"scheduler\.step\(", "scheduler.step(")
_DEEPCOPY = ("copy.deepcopy", "deepcopy")


@dataclass(frozen=True, eq=False)
class SteppedScheduler:
    """A scheduler a denoising loop calls, and what the pipeline says about it."""

    expression: str  # "self.scheduler", "audio_scheduler"
    types: Types  # the classes it may be
    calls: tuple[ast.Call, ...]  # its method calls inside the loop, in order
    copied_from: str | None = None  # "self.scheduler" for a local bound once, before the loop, to a deep copy
    bindings: tuple[ast.Assign, ...] = ()  # a local's assignments
    nullable: bool = False  # the copy is `copy.deepcopy(...) if ... else None`

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(call.func.attr for call in self.calls))  # type: ignore[attr-defined]

    @property
    def steps(self) -> list[ast.Call]:
        return [call for call in self.calls if call.func.attr == "step"]  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class SchedulerLoop:
    """A pipeline's denoising loop, with the schedule on the device, and the typed schedulers it steps."""

    owner: ast.ClassDef
    method: ast.FunctionDef | ast.AsyncFunctionDef
    loop: ast.For
    schedulers: list[SteppedScheduler]
    elsewhere: frozenset[str]  # schedulers that another loop of the method steps too


def scheduler_loops(source: SourceFile) -> tuple[SchedulerLoop, ...]:
    """Every pipeline loop that steps a typed scheduler whose timesteps the method put on the device (a lookup in
    a CPU schedule costs no sync); found once per file, for DIF005 and DIF007 alike."""
    return source.memo("scheduler_loops", lambda: tuple(_scheduler_loops(source)))


def _scheduler_loops(source: SourceFile) -> Iterator[SchedulerLoop]:
    lines = source.lines_matching(STEP_CALL)
    for owner in (cls for cls in source.classes if spans_a_line(cls, lines)):
        if is_scheduler(owner):
            continue
        components = class_attribute_types(source, owner)
        for method in (n for n in owner.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            step_lines = [line for line in lines if method.lineno <= line <= (method.end_lineno or 0)]
            loops = stepping_loops(method, step_lines) if step_lines else []
            if not loops or not schedule_on_device(method, source):
                continue
            stepped = [stepped_schedulers(components, method, loop) for loop in loops]
            for loop, schedulers in zip(loops, stepped):
                elsewhere = frozenset(s.expression for other in stepped if other is not schedulers for s in other)
                if schedulers:
                    yield SchedulerLoop(owner, method, loop, schedulers, elsewhere)


def stepping_loops(method: ast.FunctionDef | ast.AsyncFunctionDef, step_lines: list[int]) -> list[ast.For]:
    """Denoising loops that step a scheduler, innermost only (Marigold loops over batches outside).

    `step_lines`: the lines of the method where the text `scheduler.step(` stands; loops without one are skipped.
    """
    loops = [
        n
        for n in own_loops(method)
        if spans_a_line(n, step_lines) and is_denoising_loop(n) and any(map(_is_step, method_calls_within(n, "step")))
    ]
    return [loop for loop in loops if not any(other is not loop and _inside_lines(other, loop) for other in loops)]


def stepped_schedulers(
    components: dict[str, Types | None], method: ast.FunctionDef | ast.AsyncFunctionDef, loop: ast.For
) -> list[SteppedScheduler]:
    """The typed schedulers `loop` steps, in the order of their first `step()`; `components`: the pipeline's
    attribute types (`class_attribute_types`)."""
    calls: dict[str, list[ast.Call]] = {}
    for node in nodes_within(loop, ast.Call):
        receiver = _scheduler_receiver(node)
        if receiver is not None:
            calls.setdefault(receiver, []).append(node)  # type: ignore[arg-type]
    found = []
    for expression, made in calls.items():
        made.sort(key=lambda call: (call.lineno, call.col_offset))
        scheduler = _typed(expression, tuple(made), components, method, loop)
        if scheduler is not None and scheduler.steps:
            found.append(scheduler)
    return sorted(found, key=lambda s: (s.steps[0].lineno, s.steps[0].col_offset))


def schedule_on_device(method: ast.FunctionDef | ast.AsyncFunctionDef, source: SourceFile) -> bool:
    """The method sets a schedule on the device: `<scheduler>.set_timesteps(..., device=...)` or
    `retrieve_timesteps(<scheduler>, n, device)` with a device that is not the CPU (a lookup on the CPU
    costs no sync). `source`: the method's file, whose bindings of the method DIF006/DIF007 share."""
    places = FunctionPlaces(method, bindings=module_calls(source).bindings(method))
    for node in nodes_within(method, ast.Call):
        schedule = schedule_call(node)
        if (
            schedule is not None
            and schedule.device is not None
            and _names_a_scheduler(schedule.scheduler)
            and places.device_place(schedule.device) is Place.DEVICE
        ):
            return True
    return False


def tested_schedulers(cls: ast.ClassDef) -> set[str]:
    """Schedulers whose type or attributes the class tests: `isinstance(self.scheduler, ...)`,
    `hasattr(self.scheduler, ...)` (EasyAnimate branches so on FlowMatch and on `scale_model_input`)."""
    return {
        receiver
        for node in nodes_within(cls, ast.Call)
        if dotted_name(node.func) in ("isinstance", "hasattr")
        and node.args
        and (receiver := dotted_name(node.args[0])) is not None
        and receiver.endswith("scheduler")
    }


def _typed(
    expression: str,
    calls: tuple[ast.Call, ...],
    components: dict[str, Types | None],
    method: ast.FunctionDef | ast.AsyncFunctionDef,
    loop: ast.For,
) -> SteppedScheduler | None:
    if expression.startswith("self."):
        types = components.get(expression.removeprefix("self."))
        return SteppedScheduler(expression, types, calls) if types else None
    bindings = _bindings(method, expression, loop)
    sources = [_source(binding.value) for binding in bindings]
    if not bindings or any(source is None for source in sources):
        return None
    types: Types = ()
    for component, _, _ in sources:  # type: ignore[misc]
        found = components.get(component.removeprefix("self."))
        if not found:
            return None
        types += tuple(t for t in found if t not in types)
    component, copied, nullable = sources[0]  # type: ignore[misc]
    single_copy = len(bindings) == 1 and copied and any(bindings[0] in b for b in _blocks_holding(method, loop))
    return SteppedScheduler(expression, types, calls, component if single_copy else None, tuple(bindings), nullable)


def _bindings(method: ast.AST, name: str, loop: ast.For) -> list[ast.Assign]:
    """The assignments `name = ...` before the loop, if nothing else in the method binds `name`."""
    stores = [n for n in names_within(method, name) if not isinstance(n.ctx, ast.Load)]
    bindings = [
        n
        for n in nodes_within(method, ast.Assign)
        if len(n.targets) == 1 and any(n.targets[0] is store for store in stores)
    ]
    if len(bindings) != len(stores) or any(b.lineno >= loop.lineno for b in bindings):
        return []
    return sorted(bindings, key=lambda b: b.lineno)


def _blocks_holding(node: ast.AST, target: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists from `node`'s body down to the one that holds `target`."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for statement in block:
            if statement is target:
                return [block]
            if _inside_lines(target, statement):
                inner = _blocks_holding(statement, target)
                return [block, *inner] if inner else []
    for handler in getattr(node, "handlers", ()):
        inner = _blocks_holding(handler, target)
        if inner:
            return inner
    return []


def _source(value: ast.expr) -> tuple[str, bool, bool] | None:
    """What a local scheduler is bound to: (the component, whether a deep copy of it, whether it may be None).

    `copy.deepcopy(self.scheduler)` -> ("self.scheduler", True, False); `self.audio_scheduler` -> (..., False,
    False); `copy.deepcopy(self.scheduler) if c else None` -> ("self.scheduler", True, True).
    """
    nullable = False
    if isinstance(value, ast.IfExp):
        branches = [value.body, value.orelse]
        nones = [b for b in branches if isinstance(b, ast.Constant) and b.value is None]
        if len(nones) != 1:
            return None
        value = next(b for b in branches if b is not nones[0])
        nullable = True
    copied = isinstance(value, ast.Call) and dotted_name(value.func) in _DEEPCOPY
    if copied:
        if len(value.args) != 1 or value.keywords:  # type: ignore[union-attr]
            return None
        value = value.args[0]  # type: ignore[union-attr]
    component = dotted_name(value) or ""
    if component.startswith("self.") and component.count(".") == 1 and _names_a_scheduler(value):
        return component, copied, nullable
    return None


def _scheduler_receiver(node: ast.AST) -> str | None:
    """`self.scheduler` for `self.scheduler.step(...)`, `audio_scheduler` for `audio_scheduler.step(...)`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    receiver = dotted_name(node.func.value)
    return receiver if receiver is not None and _names_a_scheduler(node.func.value) else None


def _names_a_scheduler(node: ast.expr) -> bool:
    name = dotted_name(node) or ""
    parts = name.split(".")
    return name.endswith("scheduler") and (len(parts) == 1 or (len(parts) == 2 and parts[0] == "self"))


def _is_step(node: ast.AST) -> bool:
    return _scheduler_receiver(node) is not None and node.func.attr == "step"  # type: ignore[attr-defined]


def _inside_lines(inner: ast.AST, outer: ast.AST) -> bool:
    return outer.lineno <= inner.lineno and inner.end_lineno <= outer.end_lineno  # type: ignore[attr-defined,operator]
