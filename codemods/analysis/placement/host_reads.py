"""Expressions that make the host read a tensor's value: where a device tensor means a sync.

`host_reads(node)` says what a node forces onto the host, by shape alone (`x.item()`, `int(x)`,
`if a < b:`, `torch.nonzero(x)`, `x[mask]`, `x[:n]`, `torch.tensor([t])`); whether the operand is on
the device is for the caller to decide (`codemods.analysis.placement`). A comparison builds a
tensor and costs nothing until Python needs its truth: only comparisons in an `if`, `while`,
`assert`, conditional expression or comprehension filter count, and `is`/`in` never do.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from codemods.source import dotted_name

_READING_METHODS = {
    "item": "item",
    "tolist": "tolist",
    "numpy": "numpy",
    "cpu": "cpu",
    "nonzero": "nonzero",
    "unique": "unique",
    "unique_consecutive": "unique",
    "argwhere": "nonzero",
}
_READING_TORCH = {
    "nonzero": "nonzero",
    "argwhere": "nonzero",
    "unique": "unique",
    "unique_consecutive": "unique",
    "masked_select": "mask",
    "equal": "compare",
    "allclose": "compare",
}
_CONVERSIONS = {"int", "float", "bool"}
# The last part of every `<...>.<attribute>(...)` call below that reads: a method, `.to`, or a `torch.` function.
_READING_ATTRIBUTES = {*_READING_METHODS, "to", *_READING_TORCH, "where", "tensor", "as_tensor", "Tensor"}
_IDENTITY = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


@dataclass(frozen=True)
class HostRead:
    """`node` makes the host read `operand` (a sync if it is on the device); `kind` says how."""

    node: ast.AST
    operand: ast.expr
    kind: str  # item, tolist, numpy, cpu, nonzero, unique, mask, bound (`x[:n]`), int, float, bool, compare...


_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)  # a tuple: `A | B` would build a union on every call
# The only kinds of node `host_reads` finds anything in: a walk for reads need not hand it any other.
READING_NODES = (*_TESTS, ast.comprehension, ast.Call, ast.Subscript)


def host_reads(node: ast.AST) -> Iterator[HostRead]:
    if isinstance(node, _TESTS):
        yield from _truth_reads(node.test, node)
    elif isinstance(node, ast.comprehension):
        for condition in node.ifs:
            yield from _truth_reads(condition, condition)
    elif isinstance(node, ast.Call):
        yield from _call_reads(node)
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        if _may_be_mask(node.slice):
            yield HostRead(node, node.slice, "mask")
        else:
            for bound in _slice_bounds(node.slice):
                yield HostRead(node, bound, "bound")  # `key[b, :valid_len]`: Python reads the bound (`__index__`)


def _truth_reads(test: ast.expr, owner: ast.AST) -> Iterator[HostRead]:
    if isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _truth_reads(value, owner)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _truth_reads(test.operand, owner)
    elif isinstance(test, ast.Compare):
        if all(isinstance(op, _IDENTITY) for op in test.ops):
            return
        for operand in (test.left, *test.comparators):
            yield HostRead(test, operand, "compare")
    elif not isinstance(test, ast.Constant):
        yield HostRead(test, test, "truth")  # `if mask.any():`; for a Python value, a plain truth test


def _call_reads(call: ast.Call) -> Iterator[HostRead]:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr not in _READING_ATTRIBUTES:
        return  # most calls of all: a method or `torch.<f>` that reads nothing (no dotted name to work out)
    name = dotted_name(func) or ""
    if isinstance(func, ast.Attribute) and not name.startswith("torch."):
        if func.attr in _READING_METHODS and not (func.attr == "numpy" and _is_method(func.value, ("cpu",))):
            yield HostRead(call, func.value, _READING_METHODS[func.attr])
        elif func.attr == "to" and _moves_to_cpu(call):
            yield HostRead(call, func.value, "cpu")
        return
    if name in _CONVERSIONS and len(call.args) == 1 and not call.keywords:
        yield HostRead(call, call.args[0], name)
    elif name in ("min", "max") and (len(call.args) >= 2 or len(call.args) == 1 and not call.keywords):
        for argument in call.args:
            yield HostRead(call, argument, "minmax")
    elif name.startswith("torch."):
        short = name.rsplit(".", 1)[-1]
        if short in _READING_TORCH:
            for argument in call.args[:2]:
                yield HostRead(call, argument, _READING_TORCH[short])
        elif short == "where" and len(call.args) == 1:
            yield HostRead(call, call.args[0], "nonzero")
        elif short in ("tensor", "as_tensor", "Tensor") and call.args:
            for element in _elements(call.args[0]):
                yield HostRead(call, element, "tensor")


def _elements(data: ast.expr) -> Iterator[ast.expr]:
    """The values inside a Python literal handed to `torch.tensor` (`[t] * n` holds `t`)."""
    if isinstance(data, ast.List | ast.Tuple):
        for element in data.elts:
            yield from _elements(element)
    elif isinstance(data, ast.BinOp) and isinstance(data.op, ast.Mult):
        for side in (data.left, data.right):  # `[t] * n`: the list holds the values, `n` repeats them
            if isinstance(side, ast.List | ast.Tuple):
                yield from _elements(side)
    elif isinstance(data, ast.Starred):
        yield from _elements(data.value)
    elif not isinstance(data, ast.Constant):
        yield data


def _moves_to_cpu(call: ast.Call) -> bool:
    targets = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    for target in targets:
        if isinstance(target, ast.Call) and dotted_name(target.func) == "torch.device" and target.args:
            target = target.args[0]
        if isinstance(target, ast.Constant) and isinstance(target.value, str) and target.value.split(":")[0] == "cpu":
            return True
    return False


def _is_method(node: ast.expr, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names


def _slice_bounds(index: ast.expr) -> Iterator[ast.expr]:
    """The bounds and steps of the slices in an index (`:n`, `a:b`, `b, :n`) that are not literals."""
    for part in index.elts if isinstance(index, ast.Tuple) else [index]:
        if isinstance(part, ast.Slice):
            for bound in (part.lower, part.upper, part.step):
                if bound is not None and not isinstance(bound, ast.Constant | ast.UnaryOp):
                    yield bound


def _may_be_mask(index: ast.expr) -> bool:
    """An index that may be a boolean mask: a name or attribute saying so, a comparison, `~m`."""
    if isinstance(index, ast.Compare):
        return not all(isinstance(op, _IDENTITY) for op in index.ops)
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
        return True
    name = dotted_name(index) or ""
    return "mask" in name.rsplit(".", 1)[-1].lower()
