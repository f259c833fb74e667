"""Whether a second scheduler stepped in a denoising loop holds the schedule of the one whose timesteps
the loop iterates, so that a begin index of 0 starts both at the loop's first timestep.

A deep copy of the loop's scheduler made after its schedule was set holds it; so does one given the
same schedule arguments. Another component, or a local that may be one (LTX2's `audio_scheduler =
self.audio_scheduler` or a deep copy of `self.scheduler`), holds it where the pipeline pairs the two
itself: the other gets its own schedule with the same arguments, and the loop reads that schedule at
the iteration's index (`audio_timesteps[i]`).
"""

from __future__ import annotations

import ast

from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.analysis.schedules.stepped_schedulers import SteppedScheduler
from codemods.node_index import names_within, nodes_within
from codemods.source import dotted_name, statements


def shared_schedule_blocker(scheduler: SteppedScheduler, method: ast.AST, loop: ast.For, owner: str) -> str | None:
    """Why `scheduler` may not hold `owner`'s schedule when `loop` starts; None when it does."""
    name = scheduler.expression
    if scheduler.copied_from == owner:
        return _copy_blocker(scheduler, method, loop, owner)
    if _paired_schedule(scheduler, method, loop, owner):
        return None
    if len(scheduler.bindings) > 1:
        lines = ", ".join(str(b.lineno) for b in scheduler.bindings)
        return f"`{name}` is bound on lines {lines}; whether it shares the schedule of `{owner}` cannot be told"
    return f"`{name}` is stepped with the timesteps of `{owner}`, whose schedule it may not share"


def _copy_blocker(scheduler: SteppedScheduler, method: ast.AST, loop: ast.For, owner: str) -> str | None:
    """Why the copy `scheduler` may not hold `owner`'s schedule when the loop starts."""
    name, (binding,) = scheduler.expression, scheduler.bindings
    between = [
        node
        for node in nodes_within(method, ast.Call, breadth_first=True)
        if binding.end_lineno < node.lineno < loop.lineno  # type: ignore[operator]
    ]
    own = [_sets_schedule(call, name) for call in between if _sets_schedule(call, name) is not None]
    owners = [_sets_schedule(call, owner) for call in nodes_within(method, ast.Call, breadth_first=True)]
    owners = [call for call in owners if call is not None and call.lineno < loop.lineno]
    if not own:
        if owners and all(call.lineno < binding.lineno for call in owners):
            return None  # copied with the schedule already set
        return f"`{name}` is copied from `{owner}` before the schedule of `{owner}` is set"
    if len(own) == 1 and len(owners) == 1 and _same_arguments(own[0], owners[0]):
        return None
    return f"`{name}` gets its own schedule (line {own[0].lineno}), which may differ from `{owner}`'s"


def _paired_schedule(scheduler: SteppedScheduler, method: ast.AST, loop: ast.For, owner: str) -> bool:
    """`scheduler` (another component, or a local that may be one: LTX2's `audio_scheduler = self.audio_scheduler`
    or a deep copy of `self.scheduler`) gets its own schedule once, after it is bound, with the arguments of
    `owner`'s, and the loop reads that schedule at the iteration's index (`audio_timesteps[i]`): the pipeline
    itself pairs the i-th iteration with the i-th entry of that schedule, which is what a begin index of 0
    makes its i-th `step()` use."""
    name = scheduler.expression
    bound = max((b.end_lineno or b.lineno for b in scheduler.bindings), default=0)
    calls = [node for node in nodes_within(method, ast.Call, breadth_first=True) if node.lineno < loop.lineno]
    own = [call for call in calls if call.lineno > bound and _sets_schedule(call, name) is not None]
    owners = [call for call in calls if _sets_schedule(call, owner) is not None]
    if not (len(own) == 1 and len(owners) == 1 and _same_arguments(own[0], owners[0])):
        return False
    counter = _iteration_counter(loop)
    return counter is not None and any(
        isinstance(node, ast.Subscript)
        and dotted_name(node.value) == _schedule_name(method, own[0], name)
        and isinstance(node.slice, ast.Name)
        and node.slice.id == counter
        for node in nodes_within(loop, ast.Subscript)
    )


def _schedule_name(method: ast.AST, call: ast.Call, scheduler: str) -> str:
    """Where the schedule `call` sets is read: `audio_timesteps` of `audio_timesteps, _ = retrieve_timesteps(...)`
    (a name bound nowhere else), else `<scheduler>.timesteps`."""
    for node in statements(method.body):  # type: ignore[attr-defined]
        if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1:
            target = node.targets[0]
            first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else None
            if isinstance(first, ast.Name) and _bound_once(method, first.id):
                return first.id
    return f"{scheduler}.timesteps"


def _iteration_counter(loop: ast.For) -> str | None:
    """`i` of `for i, t in enumerate(...)` (counting from 0), if the body never rebinds it."""
    target, iterable = loop.target, loop.iter
    if not (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)):
        return None
    counts = isinstance(iterable, ast.Call) and dotted_name(iterable.func) == "enumerate" and len(iterable.args) == 1
    if not counts or iterable.keywords:  # type: ignore[union-attr]
        return None
    counter = target.elts[0].id
    stores = (n for n in names_within(loop, counter) if not isinstance(n.ctx, ast.Load))
    return counter if sum(1 for _ in stores) == 1 else None  # the loop's own target only


def _bound_once(method: ast.AST, name: str) -> bool:
    return (
        sum(not isinstance(n.ctx, ast.Load) for n in names_within(method, name)) == 1
    )


def _sets_schedule(call: ast.Call, scheduler: str) -> ast.Call | None:
    """`call` if it is `<scheduler>.set_timesteps(...)` or `retrieve_timesteps(<scheduler>, ...)`."""
    schedule = schedule_call(call)
    return call if schedule is not None and dotted_name(schedule.scheduler) == scheduler else None


def _same_arguments(first: ast.Call, second: ast.Call) -> bool:
    """The two calls pass the same schedule arguments (the scheduler itself aside), as written."""
    return type(first.func) is type(second.func) and _arguments(first) == _arguments(second)


def _arguments(call: ast.Call) -> list[tuple[str | None, str]]:
    # `ast.unparse`, not `ast.dump`: dump's recursive closure leaves a reference cycle per call, and the
    # scan workers run with the cycle collector off.
    positional = call.args if isinstance(call.func, ast.Attribute) else call.args[1:]
    return [(None, ast.unparse(a)) for a in positional] + [(k.arg, ast.unparse(k.value)) for k in call.keywords]
