"""A torch factory's tensor on its way to the device: the `.to()` that moves it, and what it holds.

DIF006 asks these: whether `torch.ones(4).to(x.device)` is moved by a `.to()` that lands on the
device, what that `.to()` names as its target, whether `device=` on the factory can replace it, and
whether the Python values handed to `torch.tensor` read a device tensor back (`[t] * n`).
"""

from __future__ import annotations

import ast

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.host_factories import calls_a_factory, factory_name, host_factory, keyword
from codemods.analysis.placement.host_reads import host_reads
from codemods.analysis.placement.place import Place
from codemods.source import Ancestors


def is_move(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"


def moved_by(call: ast.Call, ancestors: Ancestors, places: FunctionPlaces) -> ast.Call | None:
    """`call.to(<device>)`, when `call` is the receiver of a `.to` that lands on the device."""
    parent = ancestors[-1] if ancestors else None
    outer = ancestors[-2] if len(ancestors) >= 2 else None
    if (
        isinstance(parent, ast.Attribute)
        and parent.value is call
        and parent.attr == "to"
        and isinstance(outer, ast.Call)
        and outer.func is parent
        and places.place(outer) is Place.DEVICE
    ):
        return outer
    return None


def move_target(moved: ast.Call) -> ast.expr | None:
    device = keyword(moved, "device")
    if device is not None:
        return device
    return moved.args[0] if moved.args else None


def why_no_device_fix(moved: ast.Call, target: ast.expr | None, factory: str) -> str | None:
    extra = len(moved.args) + len(moved.keywords) - 1
    if target is None or extra:
        return "the `.to()` also changes the dtype or other options; create the tensor with `device=` by hand"
    if target in moved.args and not (
        isinstance(target, ast.Attribute)
        and target.attr in ("device", "_execution_device")
        or isinstance(target, ast.Name)
        and "device" in target.id
    ):
        return "the `.to()` argument may be a dtype or a tensor as well as a device"
    return None


def host_built_move(move: ast.Call, places: FunctionPlaces) -> ast.Call | None:
    """The torch factory behind `move` when it copies to the device a tensor computed on the host from that
    factory (`torch.exp(torch.arange(...)).to(device)`); None when `move`'s receiver is the factory itself
    (the factory-then-`.to` form, which `moved_by` answers)."""
    receiver = move.func.value  # type: ignore[attr-defined]
    if factory_name(receiver) is not None:
        return None
    # The factory first: a walk of the receiver's syntax and bindings, where placing the move and its receiver
    # places every value they come from (and most `.to()` receivers come from no factory).
    factory = host_factory(receiver, places, 0) if calls_a_factory(places.function) else None
    if factory is None or places.place(move) is not Place.DEVICE or places.place(receiver) is not Place.HOST:
        return None
    return factory


def device_values(call: ast.Call, places: FunctionPlaces) -> ast.expr | None:
    """A device tensor among the Python values handed to `torch.tensor` (`[t] * n`)."""
    for read in host_reads(call):
        if read.kind == "tensor" and places.is_device(read.operand):
            return read.operand
    return None


def is_empty_data(data: ast.expr) -> bool:
    return isinstance(data, ast.List | ast.Tuple) and not data.elts
