"""Whether a scheduler's first `step()` in a denoising loop is at the first timestep of its schedule.

`scheduler.set_begin_index(0)` before the loop makes the first `step()` that runs use index 0.
Without it, that step looks its timestep up in the schedule. The two agree only when:
- the loop iterates the scheduler's own timesteps from the first one (`retrieve_timesteps(self.scheduler,
  ...)` or `self.scheduler.timesteps`, cut at most at the end: `timesteps[:n]`);
- every iteration reaches `step()`: an iteration that `continue`s before it (LTX's
  `skip_steps_sigma_threshold`) makes the first step that runs a later one; only the pipeline's
  `interrupt` exit, which skips every iteration after it, and conditions that hold or fail for the
  whole loop (`if sample_audio:`) are allowed;
- a second scheduler stepped with the loop's timesteps (`audio_scheduler`) has the same schedule: a
  deep copy of the first made after its schedule was set, or one given the same schedule arguments.
Each function returns why not, as a sentence for the report, or None.
"""

from __future__ import annotations

import ast

from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.analysis.schedules.second_schedule import shared_schedule_blocker
from codemods.analysis.schedules.stepped_schedulers import SteppedScheduler
from codemods.node_index import nodes_within
from codemods.source import dotted_name, shortened, statements

_INTERRUPT = ("self.interrupt", "self._interrupt")
# Scheduler methods that read or reset the begin index besides the first step's lookup.
_READS_BEGIN_INDEX = ("add_noise", "scale_noise", "set_timesteps", "set_begin_index")


def iterated_schedule(method: ast.AST, loop: ast.For) -> tuple[str | None, str | None]:
    """(the scheduler whose timesteps the loop iterates from the first, why that is not proven)."""
    iterated = _iterated(loop.iter)
    owner = _timesteps_owner(iterated)
    if owner is not None:
        return owner, None
    if not isinstance(iterated, ast.Name):
        return None, f"the loop iterates `{ast.unparse(iterated)}`, which may not start at the first timestep"
    binding, value, position = _last_binding(method, iterated.id, loop)
    owner = _schedule_of(value, position) if binding is not None else None
    if owner is not None:
        return owner, None
    if binding is None:
        return None, f"`{iterated.id}` is a parameter or an outer name, which may not start at the first timestep"
    return None, (
        f"`{iterated.id}` is bound by `{ast.unparse(binding).splitlines()[0]}` (line {binding.lineno}), so the loop "
        "may not start at the first timestep (img2img/inpainting start later); set the begin index where the start "
        "is known"
    )


def step_blocker(scheduler: SteppedScheduler, loop: ast.For, schedule_owner: str, method: ast.AST) -> str | None:
    """Why setting `scheduler`'s begin index to 0 before `loop` may change what its steps compute."""
    name = scheduler.expression
    reads = [m for m in scheduler.methods if m in _READS_BEGIN_INDEX]
    if reads:
        return f"the loop calls `{name}.{reads[0]}()`, which reads the begin index too"
    skipped = _skipped(loop.body, set(map(id, scheduler.steps)), _assigned_in(loop))
    if skipped is not None:
        return (
            f"an iteration may skip `{name}.step()` before a later one steps ({skipped}), so the first step may not "
            "be at the first timestep"
        )
    if name == schedule_owner:
        return None
    return shared_schedule_blocker(scheduler, method, loop, schedule_owner)


def _skipped(body: list[ast.stmt], targets: set[int], assigned: set[str]) -> str | None:
    """Why an iteration may not reach one of `targets` (ids of calls) although a later one does; None when each
    iteration reaches one, or none does."""
    for statement in body:
        holds = _holds([statement], targets)
        if isinstance(statement, ast.If) and not _is_interrupt(statement.test):  # interrupted: no later step either
            if not (holds or _continues(statement)):
                continue
            if _invariant(statement.test, assigned):
                branches = [b for b in (statement.body, statement.orelse) if _holds(b, targets)]
                reason = next((r for r in (_skipped(b, targets, assigned) for b in branches) if r), None)
                if reason is not None or holds:
                    return reason
                continue  # `if flag: continue`: every iteration or none
            if holds:
                return (
                    f"it runs only under `if {shortened(ast.unparse(statement.test), 50)}:` on line {statement.lineno}"
                )
            return f"`continue` on line {_continue_line(statement)}"
        if isinstance(statement, ast.With | ast.AsyncWith) and holds:
            return _skipped(statement.body, targets, assigned)
        if holds:
            if isinstance(statement, ast.For | ast.AsyncFor | ast.While | ast.Try | ast.Match):
                return f"it runs inside the `{type(statement).__name__.lower()}` on line {statement.lineno}"
            if _conditional_within(statement, targets):
                return f"it runs under a condition on line {statement.lineno}"
            return None
        if not isinstance(statement, ast.For | ast.AsyncFor | ast.While | ast.If) and _continues(statement):
            return f"`continue` on line {_continue_line(statement)}"
        if isinstance(statement, ast.Break | ast.Return | ast.Raise):
            return None  # no later iteration
    return None


def _continue_line(statement: ast.stmt) -> int:
    return next(n.lineno for n in _loop_statements(statement) if isinstance(n, ast.Continue))


# Where a call may not run: a conditional expression, a short-circuit, a lambda or a comprehension.
_CONDITIONAL = ast.IfExp | ast.BoolOp | ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp


def _holds(block: list[ast.stmt], targets: set[int]) -> bool:
    """`targets`: the ids of the loop's `step()` calls."""
    return any(id(node) in targets for statement in block for node in nodes_within(statement, ast.Call))


def _conditional_within(statement: ast.stmt, targets: set[int]) -> bool:
    """`target` sits in a branch of a conditional expression, a short-circuit, a lambda or a comprehension."""
    for node in nodes_within(statement, _CONDITIONAL):
        if isinstance(node, ast.IfExp):
            branches = [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            branches = node.values[1:]
        else:
            branches = [node]
        if any(id(inner) in targets for branch in branches for inner in nodes_within(branch, ast.Call)):
            return True
    return False


def _continues(statement: ast.stmt) -> bool:
    """`statement` holds a `continue` of the enclosing loop (not of a loop nested in it)."""
    return any(isinstance(node, ast.Continue) for node in _loop_statements(statement))


def _loop_statements(statement: ast.stmt) -> list[ast.stmt]:
    """`statement` and the statements nested in it that belong to the same loop iteration."""
    found = [statement]
    if isinstance(
        statement, ast.For | ast.AsyncFor | ast.While | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ):
        return found
    for field in ("body", "orelse", "finalbody"):
        for inner in getattr(statement, field, ()):
            found.extend(_loop_statements(inner))
    for handler in getattr(statement, "handlers", ()):
        for inner in handler.body:
            found.extend(_loop_statements(inner))
    return found


def _is_interrupt(test: ast.expr) -> bool:
    return dotted_name(test) in _INTERRUPT


def _invariant(test: ast.expr, assigned: set[str]) -> bool:
    """`test` has the same value on every iteration: plain names the loop never rebinds, and constants.

    Pipeline attributes (`self.do_classifier_free_guidance`) are not: a step-end callback may change them.
    """
    allowed = (ast.Name, ast.Constant, ast.BoolOp, ast.UnaryOp, ast.Compare)
    nodes = nodes_within(test, ast.AST)  # without operators and contexts: those of allowed nodes are all allowed
    if not all(isinstance(node, allowed) for node in nodes):
        return False
    return not any(isinstance(node, ast.Name) and node.id in assigned for node in nodes)


def _assigned_in(scope: ast.AST) -> set[str]:
    return {node.id for node in nodes_within(scope, ast.Name) if not isinstance(node.ctx, ast.Load)}


def _iterated(iterable: ast.expr) -> ast.expr:
    """`timesteps` of `enumerate(timesteps)`, `self.progress_bar(timesteps)` or `timesteps[:n]`."""
    while (
        isinstance(iterable, ast.Call)
        and iterable.args
        and (dotted_name(iterable.func) == "enumerate" or (dotted_name(iterable.func) or "").endswith("progress_bar"))
    ):
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


def _timesteps_owner(node: ast.expr) -> str | None:
    """`self.scheduler` for `self.scheduler.timesteps`."""
    name = dotted_name(node) or ""
    owner = name.removesuffix(".timesteps")
    return owner if owner != name and owner.endswith("scheduler") else None


def _last_binding(method: ast.AST, name: str, loop: ast.For) -> tuple[ast.stmt | None, ast.expr | None, int]:
    """The last statement before the loop that binds `name` other than as its own prefix (`timesteps[:n]`).

    Returns (statement, value, position in a tuple target or -1 for a plain name); (None, None, -1) if there is none.
    """
    bindings: list[tuple[ast.stmt, ast.expr | None, int]] = []
    for node in statements(method.body):  # type: ignore[attr-defined]
        if node.lineno >= loop.lineno:
            continue
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
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
            if position is not None:
                bindings.append((node, value, position))
    bindings.sort(key=lambda binding: binding[0].lineno)
    while bindings and bindings[-1][2] == -1 and _is_prefix_of(bindings[-1][1], name):
        bindings.pop()
    return bindings[-1] if bindings else (None, None, -1)


def _position(target: ast.expr, name: str) -> int | None:
    if isinstance(target, ast.Name):
        return -1 if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List):
        for position, element in enumerate(target.elts):
            if isinstance(element, ast.Name) and element.id == name:
                return position
    return None


def _schedule_of(value: ast.expr | None, position: int) -> str | None:
    """The scheduler whose timesteps `value` (at `position` of a tuple target) is, from the first."""
    if value is None:
        return None
    if position == 0 and isinstance(value, ast.Call):
        schedule = schedule_call(value)
        if schedule is not None and schedule.by_helper:
            owner = dotted_name(schedule.scheduler) or ""
            return owner if owner.endswith("scheduler") else None
        return None
    return _timesteps_owner(value) if position == -1 else None


def _is_prefix_of(value: ast.expr | None, name: str) -> bool:
    """`name[:n]` (SDXL's `denoising_end` cuts the end of the schedule, never its start)."""
    return value is not None and _is_prefix(value) and isinstance(value.value, ast.Name) and value.value.id == name  # type: ignore[attr-defined]
