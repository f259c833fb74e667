"""Device tensors the host filled from its own Python values, and what a read of them gives back.

`lens = torch.tensor([x.shape[0] for x in xs], device=d)` ... `lens.max().item()`: the host waits
for the device to hand back numbers it had itself. Where the tensor is `torch.full(size, n,
dtype=<int dtype>)` with `n` an `int` parameter that nothing rebinds, and nothing writes into the
tensor, `x.max().item()` (or `.min()`) is `n` itself (`attention_dispatch.py`'s query lengths).
"""

from __future__ import annotations

import ast

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.host_reads import HostRead
from codemods.node_index import nodes_within
from codemods.source import dotted_name

# Reads that bring a value back: where the host made the tensor from its own numbers, it already had them.
VALUE_READS = {"item", "tolist", "int", "float"}
_FROM_HOST_VALUES = {"torch.tensor", "torch.as_tensor", "torch.full", "torch.LongTensor", "torch.IntTensor"}
_INT_DTYPES = {"int", "int8", "int16", "int32", "int64", "long", "short", "uint8"}
_REDUCTIONS = {"max", "min"}


def host_built(read: HostRead, places: FunctionPlaces) -> ast.Call | None:
    """`lens = torch.tensor([t.shape[0] for t in xs], device=d)` ... `lens.max().item()`: the call that built it."""
    root = read.operand
    while isinstance(root, ast.Call | ast.Attribute | ast.Subscript):
        root = root.func if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name):
        return None
    bindings = places.bindings.reaching(root.id, root)
    values = [b.value for b in bindings if b.kind == "value"]
    if not values or len(values) != len(bindings):
        return None
    built = [v for v in values if isinstance(v, ast.Call) and dotted_name(v.func) in _FROM_HOST_VALUES]
    if len(built) != len(values) or any(places.place(v.args[0]).is_tensor for v in built if v.args):
        return None  # some path may hold device data
    return built[0]


def fill_value(read: HostRead, built: ast.Call, places: FunctionPlaces) -> ast.Name | str | None:
    """What `read`, `x.max().item()` (or `.min()`) of `x = torch.full(size, n, dtype=<int>)`, gives back: the
    name `n`; a reason (a string) where it may give back something else; None for any other read."""
    reduction = read.operand
    if not (
        read.kind == "item"
        and dotted_name(built.func) == "torch.full"
        and isinstance(reduction, ast.Call)
        and isinstance(reduction.func, ast.Attribute)
        and reduction.func.attr in _REDUCTIONS
        and not reduction.args
        and not reduction.keywords
        and isinstance(reduction.func.value, ast.Name)
    ):
        return None
    tensor = reduction.func.value.id
    fill = built.args[1] if len(built.args) > 1 else None
    dtype = next((k.value for k in built.keywords if k.arg == "dtype"), None)
    if dtype is None or (dotted_name(dtype) or "").removeprefix("torch.") not in _INT_DTYPES:
        return "without an integer `dtype=`, `.item()` need not give back the fill value itself"
    if not (isinstance(fill, ast.Name) and _int_parameter(fill.id, places)):
        return "the fill value is not an `int` parameter that the function leaves alone"
    if len(places.bindings.of(tensor)) != 1 or _written(tensor, places.function):
        return f"`{tensor}` is rebound, or something may write into it"
    return fill


def _int_parameter(name: str, places: FunctionPlaces) -> bool:
    bindings = places.bindings.of(name)
    if len(bindings) != 1 or bindings[0].kind != "parameter":
        return False
    annotation = bindings[0].argument.annotation if bindings[0].argument is not None else None
    return isinstance(annotation, ast.Name) and annotation.id == "int"


def _written(name: str, function: ast.AST) -> bool:
    """Whether anything may change `name`'s elements: a store into it, an in-place method, or a call
    it is passed to other than a torch function without `out=` (those return new tensors)."""
    for node in nodes_within(function, ast.Subscript | ast.Call):
        if isinstance(node, ast.Subscript) and _is(node.value, name) and not isinstance(node.ctx, ast.Load):
            return True
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and _is(func.value, name) and func.attr.endswith("_"):
            return True
        passed = any(_is(argument, name) for argument in (*node.args, *(k.value for k in node.keywords)))
        called = dotted_name(func) or ""
        pure_torch = called.startswith("torch.") and not called.endswith("_")
        if passed and not (pure_torch and all(k.arg != "out" for k in node.keywords)):
            return True
    return False


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
