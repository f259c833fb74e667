"""Tensor conversions written as statements of their own: `x.to("cpu")`, `x.float()`, their result thrown away.

`Tensor.to`, `.cpu()`, `.cuda()`, `.float()`, `.half()`... return a new tensor (or the same one,
when nothing changes) and never change `x`: as a statement, the line does nothing but maybe a
wasted copy. diffusers 0.25 carried `self.sigmas.to("cpu")` so in 13 schedulers (fixed by #6708).
The same methods of an `nn.Module` *do* work in place (`self.vae.to(dtype)`), as does a tokenizer's
`BatchEncoding.to`, so the shape alone proves nothing: `provably_tensor` says when the receiver is
a tensor on every path.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codemods.analysis.placement.call_places import torch_returns_tensor
from codemods.analysis.placement.place import Place, parameter_place
from codemods.analysis.values.binding_sites import Binding
from codemods.source import dotted_name

if TYPE_CHECKING:
    from codemods.analysis.placement.placer import Placer

# Methods a tensor and a module share, in place on a module only, plus tensor-only casts.
CONVERSIONS = {"to", "cpu", "cuda", "float", "double", "half", "bfloat16", "int", "long", "bool"}


@dataclass(frozen=True)
class DiscardedConversion:
    statement: ast.Expr
    call: ast.Call
    receiver: ast.expr

    @property
    def method(self) -> str:
        return self.call.func.attr  # type: ignore[attr-defined]


def discarded_conversion(statement: ast.AST) -> DiscardedConversion | None:
    """`statement` is `<receiver>.<conversion>(...)` and nothing else."""
    if not isinstance(statement, ast.Expr):
        return None
    call = statement.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in CONVERSIONS):
        return None
    return DiscardedConversion(statement, call, call.func.value)


def discarded_conversions(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[DiscardedConversion]:
    """Every such statement in `function`'s body and blocks (not in functions nested in it)."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop(0)
        found = discarded_conversion(node)
        if found is not None:
            yield found
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt | ast.excepthandler))


# Methods only a tensor has (not a NumPy array, a list, a tokenizer's output or a module): their
# result is a tensor. `.to`, `.float()`, `.cpu()`... are not among them: modules have them too.
_TENSOR_ONLY_METHODS = {
    "repeat_interleave", "unsqueeze", "permute", "contiguous", "expand", "expand_as", "masked_fill", "detach",
    "softmax", "log_softmax", "narrow", "unflatten", "type_as", "new_zeros", "new_ones", "new_full", "new_empty",
    "new_tensor", "clamp", "clamp_min", "clamp_max", "view_as", "reshape_as", "index_select", "masked_select",
}  # fmt: skip


def provably_tensor(node: ast.expr, places: Placer, depth: int = 0) -> bool:
    """Whether `node` is a tensor on every path: a torch function's result, a tensor-only method's, an
    operation on one, a parameter annotated as a tensor, or a name bound only to those.

    Stricter than `FunctionPlaces.place(...).is_tensor`, which takes any pipeline component's output
    for a device tensor (a tokenizer's `BatchEncoding` is not one, and its `.to()` works in place).
    """
    if depth > 8:
        return False
    if isinstance(node, ast.Name) or dotted_name(node) == f"self.{getattr(node, 'attr', '')}":
        name = node.id if isinstance(node, ast.Name) else dotted_name(node)
        bindings = places.bindings.reaching(name, node)  # type: ignore[arg-type]
        return bool(bindings) and all(_bound_to_tensor(b, places, depth + 1) for b in bindings)
    if isinstance(node, ast.Subscript):
        return provably_tensor(node.value, places, depth + 1)
    if isinstance(node, ast.BinOp):
        return provably_tensor(node.left, places, depth + 1) or provably_tensor(node.right, places, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    name = dotted_name(node.func) or ""
    if name.startswith(("torch.", "F.", "nn.functional.")):
        return torch_returns_tensor(name)
    if isinstance(node.func, ast.Attribute):
        return node.func.attr in _TENSOR_ONLY_METHODS
    return False


def _bound_to_tensor(binding: Binding, places: Placer, depth: int) -> bool:
    if binding.kind == "parameter" and binding.argument is not None:
        return parameter_place(binding.argument) is Place.DEVICE
    if binding.kind in ("value", "augmented") and binding.value is not None:
        return provably_tensor(binding.value, places, depth)
    return False
