"""What a place is: on the accelerator, on the host, or not a tensor at all; and how places combine.

The vocabulary `FunctionPlaces` (codemods.analysis.placement) answers in. The answer is
deliberately one-sided: `DEVICE` only where the code shows it; anything else is `UNKNOWN` and
reported by nobody.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator

from codemods.source import dotted_name


class Place(str, enum.Enum):
    DEVICE = "device"  # a tensor on the accelerator
    HOST = "host"  # a tensor on the CPU
    TENSOR = "tensor"  # a tensor; where it lives is not known
    MODULE = "module"  # an nn.Module or pipeline component: what it returns lives on the device
    PYTHON = "python"  # not a tensor: a number, a string, a list, a device...
    UNKNOWN = "unknown"
    # A name whose place is being worked out (a cycle such as `x = x * 2`): adds nothing to a join.
    PENDING = "pending"

    @property
    def is_tensor(self) -> bool:
        return self in (Place.DEVICE, Place.HOST, Place.TENSOR)


def join(first: Place | None, second: Place | None) -> Place | None:
    """What a name bound to both may hold (None: nothing known yet)."""
    if first is None or first is Place.PENDING or first == second:
        return second
    if second is None or second is Place.PENDING:
        return first
    if first.is_tensor and second.is_tensor:
        return Place.TENSOR
    return Place.UNKNOWN


TENSOR_TYPES = {
    "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "HalfTensor", "DoubleTensor",
    "BFloat16Tensor", "ByteTensor", "ShortTensor", "CharTensor",
}  # fmt: skip
PYTHON_TYPES = {"int", "float", "bool", "str", "bytes", "dict", "list", "tuple", "set", "Dict", "List", "Tuple"}


def combine(places: list[Place], python_if_none: bool = False, tensor_if_none: bool = False) -> Place:
    """An op on these operands: on the device if one is, on the host if all tensors are."""
    places = [p for p in places if p is not Place.PENDING]
    tensors = [p for p in places if p.is_tensor]
    if Place.DEVICE in tensors:
        return Place.DEVICE
    if tensors and all(p is Place.HOST for p in tensors):
        return Place.HOST if all(p.is_tensor or p is Place.PYTHON for p in places) else Place.TENSOR
    if tensors:
        return Place.TENSOR
    if all(p is Place.PYTHON for p in places):
        return Place.PYTHON if places or python_if_none else Place.UNKNOWN
    return Place.TENSOR if tensor_if_none else Place.UNKNOWN


def parameter_place(argument: ast.arg) -> Place:
    """A parameter annotated as a tensor is an input of hot code: it lives on the device."""
    leaves = list(annotation_leaves(argument.annotation)) if argument.annotation is not None else []
    if not leaves:
        return Place.UNKNOWN
    if all(leaf in TENSOR_TYPES or leaf == "None" for leaf in leaves) and any(leaf in TENSOR_TYPES for leaf in leaves):
        return Place.DEVICE
    if all(leaf in PYTHON_TYPES or leaf == "None" for leaf in leaves):
        return Place.PYTHON
    return Place.UNKNOWN


def annotation_leaves(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant):
        if node.value is None:
            yield "None"
        elif isinstance(node.value, str):
            try:
                yield from annotation_leaves(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                yield "?"
        else:
            yield "?"
    elif isinstance(node, ast.Name | ast.Attribute):
        yield (dotted_name(node) or "?").rsplit(".", 1)[-1]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        yield from annotation_leaves(node.left)
        yield from annotation_leaves(node.right)
    elif isinstance(node, ast.Subscript):
        wrapper = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        if wrapper in ("Optional", "Union"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for member in members:
                yield from annotation_leaves(member)
        else:
            yield wrapper  # list[...], tuple[...]: a container
    else:
        yield "?"
