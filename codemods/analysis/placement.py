"""Where a value lives: on the accelerator, on the host, or not a tensor at all, as far as one function shows.

A host sync (`.item()`, `if t < x:`) or a host-to-device copy costs something only when the
tensor involved is on the accelerator. Rules that report them must tell a device tensor from a
CPU tensor (`timesteps_cpu`, a scheduler's CPU sigmas) and both from Python numbers, which the
same expressions handle all over diffusers. The answer is deliberately one-sided: `DEVICE` only
where the code shows it (a torch op on a device tensor, a parameter annotated as a tensor, a
model's output, a registered buffer, `.to(device)`, `device=x.device` with `x` an input of a model's
method); anything else is `UNKNOWN` and reported by
nobody.

Names are flow-insensitive: a local's place is the join of everything assigned to it in the
function, so a name that is sometimes a tensor and sometimes a number is `UNKNOWN`. Bindings
made only for another backend (`if XLA_AVAILABLE: timestep_device = "cpu"`) are left out: the
places are those of a CUDA run.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.analysis.bindings import Binding, FunctionBindings
from codemods.analysis.call_places import call_place, moved_place, splits
from codemods.analysis.hot_paths import is_other_backend_test
from codemods.analysis.place import Place, combine, join, parameter_place
from codemods.analysis.schedule_slices import timesteps_slice_receiver
from codemods.source import call_argument, dotted_name

if TYPE_CHECKING:
    from codemods.analysis.class_places import ClassPlaces


_NO_CYCLE = 1 << 30

_TENSOR_SAME_PLACE_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag", "data", "grad"}
_PYTHON_ATTRIBUTES = {
    "shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "config", "training",
    "itemsize", "nbytes", "is_leaf", "in_features", "out_features", "num_heads", "dim",
}  # fmt: skip
_MODULE_TENSOR_ATTRIBUTES = {"weight", "bias"}


class FunctionPlaces:
    """The places of the values in one function (`cls`: the class it is a method of, if any)."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, cls: ClassPlaces | None = None):
        self.function = function
        self.cls = cls
        self.bindings = FunctionBindings(function, skip_branch=lambda branch: is_other_backend_test(branch.test))
        self._memo: dict[int, Place] = {}
        self._binding_memo: dict[int, Place] = {}
        # Bindings being worked out, innermost last; `_lowest` is the lowest position in this stack
        # that the current computation ran into (a cycle): results that depend on a binding still in
        # progress further out are not memoized, those whose cycles closed inside them are.
        self._stack: list[int] = []
        self._lowest = _NO_CYCLE
        self._timesteps_places: dict[str, Place] = {}

    def place(self, node: ast.expr) -> Place:
        """Where `node`'s value lives."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        outer, self._lowest = self._lowest, _NO_CYCLE
        place = self._place(node)
        if self._lowest >= len(self._stack):
            self._memo[key] = place
        self._lowest = min(outer, self._lowest)
        return place

    def name_place(self, name: str, use: ast.AST | None = None) -> Place:
        """The join of the bindings of `name` that reach `use` (`self.x` included, when this function assigns it)."""
        found: Place | None = None
        for binding in self.bindings.reaching(name, use):
            found = join(found, self._binding_place(binding))
            if found is Place.UNKNOWN:
                break
        return Place.UNKNOWN if found is None else found

    def assigns(self, name: str) -> bool:
        return bool(self.bindings.of(name))

    def is_device(self, node: ast.expr) -> bool:
        return self.place(node) is Place.DEVICE

    def may_be_on_device(self, node: ast.expr, depth: int = 0) -> bool:
        """Whether some path puts `node`'s value on the device (`.to(device)`, `device=device`), and no
        later `.to("cpu")` takes it back: a "may" question, where `place` answers a "must" one."""
        if self.place(node) is Place.DEVICE:
            return True
        if depth > 8:
            return False
        if isinstance(node, ast.Name):
            return any(
                binding.kind == "value"
                and binding.value is not None
                and self.may_be_on_device(binding.value, depth + 1)
                for binding in self.bindings.reaching(node.id, node)
            )
        if isinstance(node, ast.Subscript):
            return self.may_be_on_device(node.value, depth + 1)
        if isinstance(node, ast.BinOp):
            return self.may_be_on_device(node.left, depth + 1) or self.may_be_on_device(node.right, depth + 1)
        if isinstance(node, ast.IfExp):
            return self.may_be_on_device(node.body, depth + 1) or self.may_be_on_device(node.orelse, depth + 1)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        name = dotted_name(func) or ""
        device = call_argument(node, "device", None)
        if device is not None:
            return self.device_place(device) is Place.DEVICE
        if name.startswith("torch."):
            elements = [e for a in node.args for e in (a.elts if isinstance(a, ast.List | ast.Tuple) else [a])]
            return any(self.may_be_on_device(e, depth + 1) for e in elements)
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
            if func.attr in ("cpu", "numpy", "item", "tolist"):
                return False
            if func.attr == "to" and node.args:
                moved = moved_place(self, node, Place.UNKNOWN)
                if moved in (Place.DEVICE, Place.HOST):
                    return moved is Place.DEVICE
            return self.may_be_on_device(func.value, depth + 1)
        return False

    # -- bindings -------------------------------------------------------------------------------

    def _binding_place(self, binding: Binding) -> Place:
        key = id(binding)
        if key in self._binding_memo:
            return self._binding_memo[key]
        if key in self._stack:
            self._lowest = min(self._lowest, self._stack.index(key))
            return Place.PENDING
        depth = len(self._stack)
        self._stack.append(key)
        outer, self._lowest = self._lowest, _NO_CYCLE
        place = self._compute_binding_place(binding)
        self._stack.pop()
        if self._lowest >= depth:  # every cycle it ran into closed on this binding or inside it
            self._binding_memo[key] = place
            self._lowest = _NO_CYCLE
        self._lowest = min(outer, self._lowest)
        return place

    def _compute_binding_place(self, binding: Binding) -> Place:
        if binding.kind == "value" and binding.value is not None:
            return self.place(binding.value)
        if binding.kind == "element" and binding.value is not None:
            return self.element_place(binding.value)
        if binding.kind == "item" and binding.value is not None:
            return self._item_place(binding.value, binding.position)
        if binding.kind == "augmented" and binding.value is not None:
            target = binding.owner.target  # type: ignore[attr-defined]
            before = self.name_place(binding.name, target)
            return combine([before, self.place(binding.value)])
        if binding.kind == "parameter" and binding.argument is not None:
            return parameter_place(binding.argument)
        if binding.kind == "python":
            return Place.PYTHON
        return Place.UNKNOWN

    def element_place(self, iterable: ast.expr) -> Place:
        """What `for x in iterable` binds `x` to."""
        if isinstance(iterable, ast.Call):
            name = dotted_name(iterable.func) or ""
            if name in ("range", "len"):
                return Place.PYTHON
            if name.endswith("progress_bar") and iterable.args:
                return self.element_place(iterable.args[0])
            if name == "reversed" and iterable.args:
                return self.element_place(iterable.args[0])
        if isinstance(iterable, ast.List | ast.Tuple) and iterable.elts:
            found: Place | None = None
            for element in iterable.elts:
                found = join(found, self.place(element))
            return found or Place.UNKNOWN
        place = self.place(iterable)
        return place if place.is_tensor or place is Place.MODULE else Place.UNKNOWN

    def _item_place(self, value: ast.expr, position: int) -> Place:
        """The `position`-th name of `a, b = value`."""
        if isinstance(value, ast.Call) and (dotted_name(value.func) or "").endswith("retrieve_timesteps"):
            # diffusers' helper: (the scheduler's timesteps on `device`, the number of steps).
            if position == 1:
                return Place.PYTHON
            device = call_argument(value, "device", 2)
            return self.device_place(device) if device is not None else Place.UNKNOWN
        if position == 0 and self.cls is not None and _is_self_method_call(value):
            # `timesteps, n = self.get_timesteps(...)`: a slice of the schedule this function set.
            receiver = timesteps_slice_receiver(self.cls.methods.get(value.func.attr))  # type: ignore[union-attr]
            if receiver is not None:
                return self._scheduler_timesteps_place(receiver)
        if self.cls is not None and _is_self_method_call(value):
            # `latents, target_mask, shapes = self.prepare_latents(...)`: what the method's returns hold there.
            return self.cls.returned_item_place(value.func.attr, position)  # type: ignore[union-attr]
        place = self.place(value)
        if place.is_tensor and splits(value):
            return place  # `a, b = x.chunk(2)`
        return Place.UNKNOWN

    # -- expressions ------------------------------------------------------------------------------

    def _place(self, node: ast.expr) -> Place:
        if isinstance(node, ast.Constant | ast.JoinedStr | ast.Dict | ast.Set | ast.ListComp | ast.DictComp
                      | ast.SetComp | ast.GeneratorExp | ast.Lambda):  # fmt: skip
            return Place.PYTHON
        if isinstance(node, ast.List | ast.Tuple):
            return Place.PYTHON
        if isinstance(node, ast.Name):
            if node.id == "self" and self.cls is not None:
                return Place.MODULE if self.cls.is_module else Place.UNKNOWN
            return self.name_place(node.id, node)
        if isinstance(node, ast.Attribute):
            return self._attribute_place(node)
        if isinstance(node, ast.Subscript):
            base = self.place(node.value)
            if base.is_tensor or base is Place.MODULE:
                return base
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                return Place.PYTHON
            return Place.UNKNOWN
        if isinstance(node, ast.BinOp):
            return combine([self.place(node.left), self.place(node.right)])
        if isinstance(node, ast.UnaryOp):
            operand = self.place(node.operand)
            return Place.PYTHON if isinstance(node.op, ast.Not) and not operand.is_tensor else operand
        if isinstance(node, ast.Compare):
            if all(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
                return Place.PYTHON
            return combine([self.place(node.left), *(self.place(c) for c in node.comparators)], python_if_none=True)
        if isinstance(node, ast.BoolOp):
            return Place.UNKNOWN
        if isinstance(node, ast.IfExp):
            return join(self.place(node.body), self.place(node.orelse)) or Place.UNKNOWN
        if isinstance(node, ast.Call):
            return call_place(self, node)
        if isinstance(node, ast.Starred):
            return Place.UNKNOWN
        return Place.UNKNOWN

    def _attribute_place(self, node: ast.Attribute) -> Place:
        if node.attr in ("config", "_execution_device", "device", "dtype"):
            return Place.PYTHON
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if self.assigns(f"self.{node.attr}"):
                return self.name_place(f"self.{node.attr}", node)
            return self.cls.attribute_place(node.attr) if self.cls is not None else Place.UNKNOWN
        if _is_scheduler_timesteps(node):
            return self._scheduler_timesteps_attribute_place(node)
        if isinstance(node.value, ast.Attribute) and node.value.attr == "config":
            return Place.PYTHON
        base = self.place(node.value)
        if node.attr in _PYTHON_ATTRIBUTES and (base.is_tensor or base is Place.MODULE):
            return Place.PYTHON
        if base.is_tensor:
            return base if node.attr in _TENSOR_SAME_PLACE_ATTRIBUTES else Place.UNKNOWN
        if base is Place.MODULE and node.attr in _MODULE_TENSOR_ATTRIBUTES:
            return Place.DEVICE
        if base is Place.DEVICE and node.attr in ("sample", "prev_sample"):
            return Place.DEVICE
        return Place.UNKNOWN

    def _scheduler_timesteps_attribute_place(self, node: ast.Attribute) -> Place:
        """`self.scheduler.timesteps`: on the device where this function set them with a device."""
        return self._scheduler_timesteps_place(ast.unparse(node.value))  # not ast.dump: a cycle per call

    def _scheduler_timesteps_place(self, receiver: str) -> Place:
        if receiver not in self._timesteps_places:
            self._timesteps_places[receiver] = self._set_timesteps_place(receiver)
        return self._timesteps_places[receiver]

    def _set_timesteps_place(self, receiver: str) -> Place:
        for call in ast.walk(self.function):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "set_timesteps"
                and ast.unparse(call.func.value) == receiver
            ):
                device = call_argument(call, "device", 1)
                if device is not None:
                    return self.device_place(device)
            if (
                isinstance(call, ast.Call)
                and (dotted_name(call.func) or "").endswith("retrieve_timesteps")
                and call.args
                and ast.unparse(call.args[0]) == receiver
            ):
                device = call_argument(call, "device", 2)  # diffusers' helper calls `set_timesteps(..., device=device)`
                if device is not None:
                    return self.device_place(device)
        return Place.UNKNOWN

    def device_place(self, device: ast.expr) -> Place:
        """Where a tensor created or moved with `device=<device>` lives."""
        if isinstance(device, ast.Constant):
            if isinstance(device.value, str):
                return Place.HOST if device.value.split(":")[0] == "cpu" else Place.DEVICE
            return Place.UNKNOWN
        if isinstance(device, ast.Call) and dotted_name(device.func) == "torch.device" and device.args:
            return self.device_place(device.args[0])
        if isinstance(device, ast.Attribute) and device.attr in ("device", "_execution_device"):
            owner = self.place(device.value)
            if owner.is_tensor:
                return owner
            if owner is Place.MODULE or device.attr == "_execution_device" or self._unannotated_input(device.value):
                return Place.DEVICE
            return Place.UNKNOWN
        if isinstance(device, ast.Name):
            return self._device_name_place(device)
        return Place.UNKNOWN

    def _unannotated_input(self, owner: ast.expr) -> bool:
        """`hidden_states.device` with `hidden_states` an unannotated parameter, never rebound: the device of
        the input the caller passed, as a parameter named `device` is (only a tensor or a module has `.device`)."""
        if not isinstance(owner, ast.Name) or self.cls is None or not self.cls.is_module:
            return False  # a model's method: what it is handed comes from the model's own inputs
        bindings = self.bindings.reaching(owner.id, owner)
        return bool(bindings) and all(
            b.kind == "parameter" and b.argument is not None and b.argument.annotation is None for b in bindings
        )

    def _device_name_place(self, device: ast.Name) -> Place:
        name = device.id
        found: Place | None = None
        for binding in self.bindings.reaching(name, device):
            if binding.kind == "value" and binding.value is not None:
                place = self.device_place(binding.value)
            elif binding.kind == "parameter" and "device" in name:
                place = Place.DEVICE  # the device the caller runs on
            else:
                place = Place.UNKNOWN
            found = join(found, place)
        if found is None and "device" in name:
            return Place.DEVICE
        return found if found in (Place.DEVICE, Place.HOST) else Place.UNKNOWN


def _is_self_method_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )


def _is_scheduler_timesteps(node: ast.Attribute) -> bool:
    return (
        node.attr == "timesteps"
        and isinstance(node.value, ast.Attribute | ast.Name)
        and ((dotted_name(node.value) or "").rsplit(".", 1)[-1].endswith("scheduler"))
    )
