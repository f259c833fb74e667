"""Which arguments of a pipeline method decide whether its denoising loop reaches `scheduler.step()`.

DIF005 sets the scheduler's begin index before the loop, which is right only if every
iteration steps the scheduler once. A loop that skips the step while a documented argument
says so (LTX's long multi-prompt pipeline `continue`s while the sigma is above
`skip_steps_sigma_threshold`) integrates from the wrong sigma after the fix, and a verifier
run that never sets the argument cannot see it. This module finds those places statically;
the verifier then asks that a target's run went through each of them.

A *loop-shaping* place, inside a loop that calls `<...>scheduler.step(...)`, under `if` tests
that read an argument of the method (directly, or through locals computed from arguments):
- a `continue` of that loop that stands before one of its `step()` calls (the iteration skips
  the step and the next one steps: the index the scheduler counts shifts);
- a `break` of that loop when an outer loop steps too (the outer loop goes on stepping);
- an `if` that calls `step()` in one branch and not in the other: the other branch is the place
  (none to observe when that branch is empty).
A `return`, or a `break` of the outermost stepping loop, ends the stepping: the steps taken are
the first ones of the schedule, as with the lookup, so neither shapes it. Nor do interrupt exits
(tests reading `interrupt`/`_interrupt`). No torch import here.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass

from codemods.source import dotted_name, statements, walk

Function = ast.FunctionDef | ast.AsyncFunctionDef
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_INTERRUPT = {"interrupt", "_interrupt"}


@dataclass(frozen=True)
class LoopShaping:
    """One place where arguments of `function` make a stepping loop skip a step or leave early."""

    function: str  # qualified name: "LTXI2VLongMultiPromptPipeline.__call__"
    loop_line: int  # first line of the outermost stepping loop around the place
    arguments: tuple[str, ...]  # the method's parameters its tests read (through locals too)
    test_line: int  # the innermost `if` that decides
    line: int | None  # a line that runs only when the arguments shape the loop; None: an empty branch

    def describe(self) -> str:
        """`skip_steps_sigma_threshold (line 1276)`; long lists (values computed from many arguments) cut short."""
        names = ", ".join(self.arguments[:4]) + (
            f" and {len(self.arguments) - 4} more" if len(self.arguments) > 4 else ""
        )
        where = f"line {self.line}" if self.line else f"the branch of line {self.test_line} that skips the step"
        return f"{names} ({where})"


def loop_shaping(text: str) -> list[LoopShaping]:
    """Every loop-shaping place in the module `text`; [] for a file that does not parse."""
    if ".step(" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    steps = _Steps(sorted({node.lineno for node in walk(tree) if is_scheduler_step(node)}))
    found: list[LoopShaping] = []
    for qualname, function in _functions(tree.body, ""):
        if steps.within([function]):
            found.extend(_in_function(qualname, function, steps))
    return found


def _functions(body: list[ast.stmt], prefix: str) -> list[tuple[str, Function]]:
    found = []
    for node in body:
        if isinstance(node, ast.ClassDef):
            found.extend(_functions(node.body, f"{prefix}{node.name}."))
        elif isinstance(node, Function):
            found.append((f"{prefix}{node.name}", node))
    return found


def is_scheduler_step(node: ast.AST) -> bool:
    """A call of `<...>scheduler.step(...)`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "step"
        and (dotted_name(node.func.value) or "").rsplit(".", 1)[-1].endswith("scheduler")
    )


class _Steps:
    """Whether statements call a scheduler's `step()`: by the lines the calls start on (one walk per module)."""

    def __init__(self, lines: list[int]) -> None:
        self.lines = lines

    def within(self, body: list[ast.stmt]) -> bool:
        if not body:
            return False
        first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
        index = bisect.bisect_left(self.lines, first)
        return index < len(self.lines) and self.lines[index] <= last

    def last_within(self, node: ast.stmt) -> int:
        """The line of the last step call inside `node` (0 if none)."""
        index = bisect.bisect_right(self.lines, node.end_lineno or node.lineno)
        return self.lines[index - 1] if index and self.lines[index - 1] >= node.lineno else 0


def _in_function(qualname: str, function: Function, steps: _Steps) -> list[LoopShaping]:
    flow = _argument_flow(function)
    found = []
    for loop in _outermost_stepping_loops(function.body, steps):
        for guards, statement in _guarded(loop.body, (), loop, False, steps):
            if isinstance(statement, ast.If):
                guards = (*guards, statement.test)
                branch = statement.orelse if steps.within(statement.body) else statement.body
                line = branch[0].lineno if branch else None
            else:
                line = statement.lineno
            arguments = _arguments(guards, flow)
            if arguments and not any(_is_interrupt(test) for test in guards):
                found.append(LoopShaping(qualname, loop.lineno, arguments, guards[-1].lineno, line))
    return found


def _outermost_stepping_loops(body: list[ast.stmt], steps: _Steps) -> list[ast.stmt]:
    found = []
    for statement in body:
        if not steps.within([statement]) or isinstance(statement, _SCOPES):
            continue
        if isinstance(statement, _LOOPS):
            found.append(statement)
            continue
        for block in _blocks(statement):
            found.extend(_outermost_stepping_loops(block, steps))
    return found


def _guarded(
    body: list[ast.stmt], guards: tuple[ast.expr, ...], loop: ast.stmt, nested: bool, steps: _Steps
) -> list[tuple[tuple[ast.expr, ...], ast.stmt]]:
    """(the `if` tests around it, statement) for each place in `body` that can make an iteration skip a step.

    `loop`: the innermost loop around `body`; `nested`: whether a stepping loop holds that loop.
    """
    found: list[tuple[tuple[ast.expr, ...], ast.stmt]] = []
    stepping = steps.within([loop])
    for statement in body:
        if _leaves_before_a_step(statement, loop, nested, steps):
            found.append((guards, statement))
        elif isinstance(statement, ast.If):
            if steps.within(statement.body) != steps.within(statement.orelse):
                found.append((guards, statement))
            for branch in (statement.body, statement.orelse):
                found.extend(_guarded(branch, (*guards, statement.test), loop, nested, steps))
        elif isinstance(statement, _LOOPS):
            found.extend(_guarded(statement.body, guards, statement, nested or stepping, steps))
        elif not isinstance(statement, _SCOPES):
            for block in _blocks(statement):
                found.extend(_guarded(block, guards, loop, nested, steps))
    return found


def _leaves_before_a_step(statement: ast.stmt, loop: ast.stmt, nested: bool, steps: _Steps) -> bool:
    """A `continue` that can skip a step of its loop, or a `break` of a stepping loop an outer one repeats."""
    if not steps.within([loop]):
        return False
    if isinstance(statement, ast.Continue):
        return statement.lineno < steps.last_within(loop)
    return isinstance(statement, ast.Break) and nested


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(statement, field, []) for field in ("body", "orelse", "finalbody")]
    return blocks + [handler.body for handler in getattr(statement, "handlers", ())]


def _argument_flow(function: Function) -> dict[str, set[str]]:
    """Each name of the method -> the parameters its value is computed from (parameters map to themselves)."""
    arguments = function.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    parameters += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
    flow = {name: {name} for name in parameters if name not in ("self", "cls")}
    assignments = [
        (targets, {node.id for node in walk(value) if isinstance(node, ast.Name)})
        for statement in statements(function.body)
        for targets, value in _assignments(statement)
    ]
    changed = True
    while changed:
        changed = False
        for targets, read in assignments:
            sources = {parameter for name in read for parameter in flow.get(name, ())}
            for target in targets:
                if not sources <= flow.setdefault(target, set()):
                    flow[target] |= sources
                    changed = True
    return flow


def _assignments(statement: ast.stmt) -> list[tuple[list[str], ast.AST]]:
    if isinstance(statement, ast.Assign):
        return [(_names(statement.targets), statement.value)]
    if isinstance(statement, ast.AnnAssign | ast.AugAssign) and statement.value is not None:
        return [(_names([statement.target]), statement.value)]
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [(_names([statement.target]), statement.iter)]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [(_names([i.optional_vars]), i.context_expr) for i in statement.items if i.optional_vars is not None]
    return []


def _names(targets: list[ast.expr]) -> list[str]:
    """Local names a store changes: `a`, `a, *b`, `a[i]` (not `self.x`: attributes are not followed)."""
    found = []
    for target in targets:
        if isinstance(target, ast.Name):
            found.append(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            found.extend(_names(target.elts))
        elif isinstance(target, ast.Starred | ast.Subscript):
            found.extend(_names([target.value]))
    return found


def _arguments(tests: tuple[ast.expr, ...], flow: dict[str, set[str]]) -> tuple[str, ...]:
    """The parameters the tests read by name or, when they read none, through locals computed from them."""
    read = {node.id for test in tests for node in walk(test) if isinstance(node, ast.Name)}
    direct = {name for name in read if flow.get(name) == {name}}
    return tuple(sorted(direct or {parameter for name in read for parameter in flow.get(name, ())}))


def _is_interrupt(test: ast.expr) -> bool:
    for node in walk(test):
        if isinstance(node, ast.Attribute) and node.attr in _INTERRUPT:
            return True
        if isinstance(node, ast.Constant) and node.value in _INTERRUPT:
            return True  # getattr(self, "_interrupt", False)
    return False
