"""Where a `device=` argument sends a tensor, where `set_timesteps` put a schedule, and whether a value may be on the device.

Part of `FunctionPlaces` (codemods.analysis.placement), kept apart because these questions are
about the device expressions of a function (`device`, `x.device`, `self._execution_device`)
rather than about the values themselves; `may_be_on_device` is the "may" question beside
`place`'s "must" one.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.analysis.placement.call_places import moved_place
from codemods.analysis.placement.place import Place, join
from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.node_index import nodes_within
from codemods.source import call_argument, dotted_name

if TYPE_CHECKING:
    from codemods.analysis.placement.placer import Placer


def device_place(places: Placer, device: ast.expr) -> Place:
    """Where a tensor created or moved with `device=<device>` lives."""
    if isinstance(device, ast.Constant):
        if isinstance(device.value, str):
            return Place.HOST if device.value.split(":")[0] == "cpu" else Place.DEVICE
        return Place.UNKNOWN
    if isinstance(device, ast.Call) and dotted_name(device.func) == "torch.device" and device.args:
        return device_place(places, device.args[0])
    if isinstance(device, ast.Call) and dotted_name(device.func) == "self._get_execution_device":
        return Place.DEVICE  # Cosmos 3's own `_execution_device`: the device its models compute on
    if isinstance(device, ast.Attribute) and device.attr in ("device", "_execution_device"):
        owner = places.place(device.value)
        if owner.is_tensor:
            return owner
        if (
            owner is Place.MODULE
            or device.attr == "_execution_device"
            or _unannotated_input(places, device.value)
            or _pipeline_itself(places, device.value)
        ):
            return Place.DEVICE
        return Place.UNKNOWN
    if isinstance(device, ast.Name):
        return _device_name_place(places, device)
    given = _given_device(device)
    if given is not None:
        return device_place(places, given)
    return Place.UNKNOWN


def _given_device(device: ast.expr) -> ast.expr | None:
    """`device if device is not None else "cpu"`: the device the caller passed. A CUDA run passes one
    (LLaDA2 calls the scheduler's `set_timesteps(..., device=device)`), as for a bare `device` parameter."""
    if not isinstance(device, ast.IfExp) or not isinstance(device.test, ast.Compare):
        return None
    test = device.test
    if len(test.ops) != 1 or not (isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return None
    given = (
        device.body
        if isinstance(test.ops[0], ast.IsNot)
        else device.orelse
        if isinstance(test.ops[0], ast.Is)
        else None
    )
    if given is None or ast.unparse(given) != ast.unparse(test.left):  # not ast.dump: a cycle per call
        return None
    return given


def _unannotated_input(places: Placer, owner: ast.expr) -> bool:
    """`hidden_states.device` with `hidden_states` an unannotated parameter, never rebound: the device of
    the input the caller passed, as a parameter named `device` is (only a tensor or a module has `.device`)."""
    if not isinstance(owner, ast.Name) or places.cls is None or not places.cls.is_module:
        return False  # a model's method: what it is handed comes from the model's own inputs
    bindings = places.bindings.reaching(owner.id, owner)
    return bool(bindings) and all(
        b.kind == "parameter" and b.argument is not None and b.argument.annotation is None for b in bindings
    )


def _pipeline_itself(places: Placer, owner: ast.expr) -> bool:
    """`self` in a pipeline (a class that registers its models): `pipe.device` is the accelerator any of them is on,
    the one the denoiser runs on in a CUDA run (`DiffusionPipeline.device` prefers a non-CPU component)."""
    return isinstance(owner, ast.Name) and owner.id == "self" and places.cls is not None and bool(places.cls.components)


def _device_name_place(places: Placer, device: ast.Name) -> Place:
    name = device.id
    found: Place | None = None
    for binding in places.bindings.reaching(name, device):
        if binding.kind == "value" and binding.value is not None:
            place = device_place(places, binding.value)
        elif binding.kind == "parameter" and "device" in name:
            place = Place.DEVICE  # the device the caller runs on
        else:
            place = Place.UNKNOWN
        found = join(found, place)
    if found is None and "device" in name:
        return Place.DEVICE
    return found if found in (Place.DEVICE, Place.HOST) else Place.UNKNOWN


def set_timesteps_place(places: Placer, receiver: str) -> Place:
    """Where the function put `<receiver>.timesteps`: the device it passed to `set_timesteps` (or `retrieve_timesteps`)."""
    for node in nodes_within(places.function, ast.Call, breadth_first=True):
        schedule = schedule_call(node)
        if schedule is not None and schedule.device is not None and ast.unparse(schedule.scheduler) == receiver:
            return device_place(places, schedule.device)
    return Place.UNKNOWN


def may_be_on_device(places: Placer, node: ast.expr, depth: int = 0) -> bool:
    """Whether some path puts `node`'s value on the device (`.to(device)`, `device=device`), and no
    later `.to("cpu")` takes it back: a "may" question, where `place` answers a "must" one."""
    if places.place(node) is Place.DEVICE:
        return True
    if depth > 8:
        return False
    if isinstance(node, ast.Name):
        return any(
            binding.kind == "value" and binding.value is not None and may_be_on_device(places, binding.value, depth + 1)
            for binding in places.bindings.reaching(node.id, node)
        )
    if isinstance(node, ast.Subscript):
        return may_be_on_device(places, node.value, depth + 1)
    if isinstance(node, ast.BinOp):
        return may_be_on_device(places, node.left, depth + 1) or may_be_on_device(places, node.right, depth + 1)
    if isinstance(node, ast.IfExp):
        return may_be_on_device(places, node.body, depth + 1) or may_be_on_device(places, node.orelse, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = dotted_name(func) or ""
    device = call_argument(node, "device", None)
    if device is not None:
        return device_place(places, device) is Place.DEVICE
    if name.startswith("torch."):
        elements = [e for a in node.args for e in (a.elts if isinstance(a, ast.List | ast.Tuple) else [a])]
        return any(may_be_on_device(places, e, depth + 1) for e in elements)
    if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
        if func.attr in ("cpu", "numpy", "item", "tolist"):
            return False
        if func.attr == "to" and node.args:
            moved = moved_place(places, node, Place.UNKNOWN)
            if moved in (Place.DEVICE, Place.HOST):
                return moved is Place.DEVICE
        return may_be_on_device(places, func.value, depth + 1)
    return False
