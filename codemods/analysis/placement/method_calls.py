"""How a class's methods hand values to each other: what each `self.<method>(...)` call passes for a parameter,
and which class of the same file a `self.<name>` submodule or helper object is built from.

`ClassPlaces` (class_places) asks these questions to place a helper's unannotated parameter from its callers
(HiDream's `moe_infer(x, flat_topk_idx, ...)`, called from `forward` with the gate's device indices) and the
items of the tuple a submodule returns (`topk_idx, topk_weight, aux_loss = self.gate(x)`). Only the syntax lives
here: which calls and which values (and which `self.<name> = ...` statements); their places are for the caller to
work out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from codemods.node_index import in_walk_order, method_calls_within, nodes_within, parent_of
from codemods.source import self_attribute

Function = ast.FunctionDef | ast.AsyncFunctionDef
# Called by whoever holds the object (a module's caller, Python itself): no call in the class shows all its inputs.
_ENTRY_POINTS = {"forward", "__call__", "__init__"}


def callers(methods: Iterable[Function], method: Function) -> list[tuple[Function, ast.Call]] | None:
    """Every `self.<method>(...)` call in `methods`, with the method making it; None where the class may call it
    otherwise (as a value, `*args`/`**kwargs`, a static or class method, an entry point) or never calls it."""
    if (
        method.name in _ENTRY_POINTS
        or method.decorator_list
        and not all(_keeps_arguments(d) for d in method.decorator_list)
    ):
        return None
    found: list[tuple[Function, ast.Call]] = []
    for caller in methods:
        called = set()
        # The calls of a method of this name (from the index, not a walk of every call), in `ast.walk`'s order.
        for node in in_walk_order(method_calls_within(caller, method.name)):
            if self_attribute(node.func) == method.name:
                if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    return None
                found.append((caller, node))
                called.add(id(node.func))
        for node in nodes_within(caller, ast.Attribute):
            if node.attr == method.name and self_attribute(node) == method.name and id(node) not in called:
                return None  # `self.<method>` handed on as a value: called where this class does not show
    return found or None


def _keeps_arguments(decorator: ast.expr) -> bool:
    """`@torch.no_grad()`, `@torch.inference_mode()`: the call's arguments reach the method unchanged."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr in ("no_grad", "inference_mode")


def passed_argument(method: Function, call: ast.Call, parameter: ast.arg) -> ast.expr | None:
    """What `call` (a `self.<method>(...)`) passes for `parameter`, by position or keyword; None: the default."""
    keyword = next((k.value for k in call.keywords if k.arg == parameter.arg), None)
    if keyword is not None:
        return keyword
    positional = [*method.args.posonlyargs, *method.args.args][1:]  # `self` is the receiver
    position = next((i for i, a in enumerate(positional) if a is parameter), None)
    return call.args[position] if position is not None and position < len(call.args) else None


def built_class(classes: Iterable[ast.ClassDef], methods: Iterable[Function], name: str) -> ast.ClassDef | None:
    """The class of this file every `self.<name> = <Class>(...)` of `methods` builds (none other assigns it)."""
    built = {
        value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
        for method in methods
        for _, value in attribute_assignments(method, name)
    }
    if len(built) != 1 or None in built:
        return None
    (class_name,) = built
    matching = [c for c in classes if c.name == class_name]
    return matching[0] if len(matching) == 1 else None


def attribute_assignments(method: Function, name: str) -> list[tuple[ast.stmt, ast.expr]]:
    """`self.<name> = value` statements of `method` (not of functions inside it), in source order."""
    found = []
    for node in nodes_within(method, ast.Assign | ast.AnnAssign, breadth_first=True):
        if node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(self_attribute(t) == name for t in targets):
                found.append((node, node.value))
    return sorted(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))


def is_own_statement(method: Function, node: ast.AST | None) -> bool:
    """Whether `node` is an expression statement of `method`'s own (not of a function or class inside it)."""
    if not isinstance(node, ast.Expr):
        return False
    current = parent_of(node)
    while current is not None and current is not method:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return False
        current = parent_of(current)
    return current is method
