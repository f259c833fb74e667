"""When a per-step `timestep[0].item()` can read a host list made once before the loop instead.

Z-Image's img2img/inpaint/controlnet/omni loops do, every step,

    timestep = t.expand(latents.shape[0])
    timestep = (1000 - timestep) / 1000
    t_norm = timestep[0].item()

while `pipeline_z_image.py` reads `_precomputed_t_norms[i]`, a list made once before the loop. The
rewrite replays the same arithmetic on the whole schedule (`((1000 - timesteps) / 1000).tolist()`):
elementwise operations on the same dtype and device give each element the value the per-step
tensor had, and `.tolist()` gives the same Python numbers as `.item()`. That holds only where the
per-step value is provably that arithmetic on `timesteps[i]`, which `schedule_replay` checks.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from codemods.node_index import names_within, nodes_within

PRECOMPUTED = "_precomputed_t_norms"
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)


@dataclass(frozen=True)
class ScheduleReplay:
    """Insert `PRECOMPUTED = (<expression>).tolist()` before `anchor`; read `PRECOMPUTED[<index>]` instead."""

    anchor: ast.stmt  # the `with self.progress_bar(...)` holding the loop, or the loop itself
    expression: str  # the per-step arithmetic, replayed on the whole schedule
    index: str


def is_first_element_item(call: ast.AST) -> bool:
    """`name[0].item()`: the reads this module knows how to move out of the loop."""
    return (
        isinstance(call, ast.Call)
        and not call.args
        and not call.keywords
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "item"
        and isinstance(call.func.value, ast.Subscript)
        and isinstance(call.func.value.value, ast.Name)
        and _is_int(call.func.value.slice, 0)
    )


def schedule_replay(call: ast.Call, ancestors: Sequence[ast.AST], loop: ast.AST) -> ScheduleReplay | str:
    """The replay of `call` (a `name[0].item()` in `loop`), or why it cannot be proven equal."""
    if not isinstance(loop, ast.For):
        return "the loop is not a `for`"
    header = _enumerate_header(loop)
    if header is None:
        return "the loop is not `for i, t in enumerate(timesteps)`"
    index, step, schedule = header
    function = next((a for a in reversed(ancestors) if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if function is None or PRECOMPUTED in _names_in(function):
        return f"the name `{PRECOMPUTED}` is taken in the function"
    changed = _changed_names(loop.body + loop.orelse) & {index, step, schedule}
    if changed:
        return f"the loop rebinds or changes `{min(changed)}` in place"
    anchor, before = _anchor(loop, ancestors)
    if schedule in _changed_names(before):
        return f"`{schedule}` is rebound between the loop and the statement it would be computed before"
    expression = _per_step_expression(call, ancestors, loop, step, schedule)
    if isinstance(expression, str):
        return expression
    return ScheduleReplay(anchor, ast.unparse(expression), index)


def _enumerate_header(loop: ast.For) -> tuple[str, str, str] | None:
    target, iterable = loop.target, loop.iter
    if not (
        isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)
    ):
        return None
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "enumerate"):
        return None
    if len(iterable.args) != 1 or iterable.keywords or not isinstance(iterable.args[0], ast.Name):
        return None  # a `start=` would shift the index
    index, step = (e.id for e in target.elts)  # type: ignore[attr-defined]
    if index == step:
        return None
    return index, step, iterable.args[0].id


def _anchor(loop: ast.For, ancestors: Sequence[ast.AST]) -> tuple[ast.stmt, list[ast.AST]]:
    """Where the list is made (before the `with` whose body holds the loop, as pipeline_z_image.py does),
    and what runs between there and the loop."""
    position = next((i for i, a in enumerate(ancestors) if a is loop), 0)
    parent = ancestors[position - 1] if position > 0 else None
    if isinstance(parent, ast.With) and any(s is loop for s in parent.body):
        position = next(i for i, s in enumerate(parent.body) if s is loop)
        return parent, [*parent.items, *parent.body[:position]]
    return loop, []


def _per_step_expression(
    call: ast.Call, ancestors: Sequence[ast.AST], loop: ast.For, step: str, schedule: str
) -> ast.expr | str:
    """The arithmetic that made `name` from `step`, written on `schedule`: a chain of `name = ...`
    statements right before the read's statement, each a direct statement of the loop body."""
    name = call.func.value.value.id  # type: ignore[attr-defined]
    statement = next((a for a in ancestors if any(a is s for s in loop.body)), None)
    if statement is None:
        return f"`{name}[0].item()` is not in a statement of the loop's own body"
    position = next(i for i, s in enumerate(loop.body) if s is statement)
    if name in _changed_names([statement]):
        return f"the statement that reads `{name}` also binds it"
    chain: list[ast.Assign] = []
    for earlier in reversed(loop.body[:position]):
        if not _assigns(earlier, name):
            break
        chain.insert(0, earlier)  # type: ignore[arg-type]
    if not chain:
        return f"`{name}` is not computed right before the read (from `{step}`, with `.expand` and arithmetic)"
    value: ast.expr | None = None
    for assign in chain:
        value = _replayed(assign.value, name, value, step, schedule)
        if value is None:
            return f"`{name}` is not made from `{step}` only by `.expand(n)` and `+ - * /` with number literals"
    if not _has_schedule(value, schedule):  # type: ignore[arg-type]
        return f"`{name}` is not made from `{step}`"
    return value  # type: ignore[return-value]


def _assigns(statement: ast.stmt, name: str) -> bool:
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    )


def _replayed(node: ast.expr, name: str, previous: ast.expr | None, step: str, schedule: str) -> ast.expr | None:
    """`node` with `step.expand(n)` turned into `schedule` and `name` into its previous value; None if
    `node` is anything else than that arithmetic. `.expand` changes the shape only (one dimension: the
    batch), so element `0` of the per-step value is element `i` of the replayed one."""
    if isinstance(node, ast.Name) and node.id == name:
        return previous
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "expand"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == step
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
        and not node.keywords
    ):
        return ast.Name(schedule, ast.Load())
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        if _is_number(node.left):
            right = _replayed(node.right, name, previous, step, schedule)
            return ast.BinOp(node.left, node.op, right) if right is not None else None
        if _is_number(node.right):
            left = _replayed(node.left, name, previous, step, schedule)
            return ast.BinOp(left, node.op, node.right) if left is not None else None
    return None


def _has_schedule(node: ast.expr, schedule: str) -> bool:
    return bool(names_within(node, schedule))


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _is_int(node: ast.expr, value: int) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == value


# What may rebind a name or change it in place.
_CHANGING = ast.Name | ast.Subscript | ast.Attribute | ast.Global | ast.Nonlocal | ast.arg | ast.Call


def _changed_names(nodes: Sequence[ast.AST]) -> set[str]:
    """Names these nodes rebind, or change in place (`x[...] = `, `x += `, `x.add_(...)`, `out=x`)."""
    changed: set[str] = set()
    for root in nodes:
        # A comprehension's `for t in ...` binds its own `t` (Python 3 scopes); a walrus in it does not.
        own = {id(n) for c in nodes_within(root, ast.comprehension) for n in nodes_within(c.target, ast.Name)}
        for node in nodes_within(root, _CHANGING):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                if id(node) not in own:
                    changed.add(node.id)
            elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                changed.update(_root_names(node))
            elif isinstance(node, ast.Global | ast.Nonlocal):
                changed.update(node.names)
            elif isinstance(node, ast.arg):
                changed.add(node.arg)
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.endswith("__"):
                    changed.update(_root_names(func.value))
                for keyword in node.keywords:
                    if keyword.arg == "out":
                        changed.update(_root_names(keyword.value))
    return changed


def _root_names(node: ast.AST) -> set[str]:
    """`a` of `a[...]`, `a.b`, `a[...].c`, and every name of a tuple of them."""
    if isinstance(node, ast.Tuple | ast.List):
        return {n for element in node.elts for n in _root_names(element)}
    while isinstance(node, ast.Subscript | ast.Attribute | ast.Starred):
        node = node.value
    return {node.id} if isinstance(node, ast.Name) else set()


def _names_in(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for child in nodes_within(node, ast.Name | ast.arg | ast.Global | ast.Nonlocal | ast.Attribute):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.arg):
            names.add(child.arg)
        elif isinstance(child, ast.Global | ast.Nonlocal):
            names.update(child.names)
        elif isinstance(child, ast.Attribute) and child.attr == PRECOMPUTED:
            names.add(child.attr)
    return names
