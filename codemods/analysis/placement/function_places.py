"""Where a value lives: on the accelerator, on the host, or not a tensor at all, as far as one function shows.

A host sync (`.item()`, `if t < x:`) or a host-to-device copy costs something only when the
tensor involved is on the accelerator. Rules that report them must tell a device tensor from a
CPU tensor (`timesteps_cpu`, a scheduler's CPU sigmas) and both from Python numbers, which the
same expressions handle all over diffusers. The answer is deliberately one-sided: `DEVICE` only
where the code shows it (a torch op on a device tensor, a parameter annotated as a tensor, a
model's output, a registered buffer, `.to(device)`, `device=x.device` with `x` an input of a model's
method); anything else is `UNKNOWN` and reported by nobody.

Names are flow-insensitive: a local's place is the join of everything assigned to it in the
function, so a name that is sometimes a tensor and sometimes a number is `UNKNOWN`. Bindings
made only for another backend (`if XLA_AVAILABLE: timestep_device = "cpu"`) are left out: the
places are those of a CUDA run.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.analysis.models.cold_branches import is_other_backend_test
from codemods.analysis.placement.call_places import call_place, is_step_output, splits
from codemods.analysis.placement.cycle_memo import CycleMemo
from codemods.analysis.placement.device_places import device_place, may_be_on_device, set_timesteps_place
from codemods.analysis.placement.place import Place, combine, join, parameter_place
from codemods.analysis.schedules.schedule_calls import is_scheduler_timesteps, names_scheduler, schedule_call
from codemods.analysis.schedules.schedule_slices import sliced_argument, timesteps_slice_receiver
from codemods.analysis.values.binding_sites import Binding
from codemods.analysis.values.bindings import FunctionBindings
from codemods.source import dotted_name, self_attribute

if TYPE_CHECKING:
    from collections.abc import Mapping

    from codemods.analysis.placement.placer import MethodOwner, ModuleScope


_TENSOR_SAME_PLACE_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag", "data", "grad"}
_PYTHON_ATTRIBUTES = {
    "shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "config", "training",
    "itemsize", "nbytes", "is_leaf", "in_features", "out_features", "num_heads", "dim",
}  # fmt: skip
_MODULE_TENSOR_ATTRIBUTES = {"weight", "bias"}
# Expressions that build a Python value, never a tensor (tested by class: `ast.parse` makes no subclass of these).
_PYTHON_VALUES = frozenset({
    ast.Constant, ast.JoinedStr, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp,
    ast.Lambda, ast.List, ast.Tuple,
})  # fmt: skip
_IDENTITY_TESTS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


class FunctionPlaces(CycleMemo):
    """The places of the values in one function (`cls`: the class it is a method of, if any)."""

    def __init__(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        cls: MethodOwner | None = None,
        annotations: bool = True,
        given: Mapping[str, Place] | None = None,
        module: ModuleScope | None = None,
        bindings: FunctionBindings | None = None,
    ):
        """`annotations=False`: a parameter annotated as a tensor is `UNKNOWN`, not `DEVICE`, so that `DEVICE`
        means the function shows where the value was made or moved (what a finding's placement must rest on).
        `given`: where one call's arguments put the parameters; `module`: the file's functions, to place calls of them;
        `bindings`: the function's `function_bindings`, shared by all its places (they depend on it alone)."""
        super().__init__()
        self.function = function
        self.cls = cls
        self.annotations = annotations
        self.given = given
        self.module = module
        self.bindings = bindings if bindings is not None else function_bindings(function)
        self._timesteps_places: dict[str, Place] = {}

    def name_place(self, name: str, use: ast.AST | None = None) -> Place:
        """The join of the bindings of `name` that reach `use` (`self.x` included, when this function assigns it)."""
        found: Place | None = None
        for binding in self.bindings.reaching(name, use):
            found = join(found, self._binding_place(binding))
            if found is Place.UNKNOWN:
                break
        return Place.UNKNOWN if found is None else found

    def assigns(self, name: str) -> bool:
        return self.bindings.binds(name)

    def without_annotations(self) -> FunctionPlaces:
        """These places where a tensor annotation alone places nothing on the device (the same bindings)."""
        return FunctionPlaces(self.function, self.cls, False, self.given, self.module, self.bindings)

    def is_device(self, node: ast.expr) -> bool:
        return self.place(node) is Place.DEVICE

    def may_be_on_device(self, node: ast.expr) -> bool:
        """Whether some path puts `node`'s value on the device (codemods.analysis.placement.device_places)."""
        return may_be_on_device(self, node)

    def _binding_value(self, binding: Binding) -> Place:
        if binding.kind == "value" and binding.value is not None:
            return self.place(binding.value)
        if binding.kind == "element" and binding.value is not None:
            return self.element_place(binding.value)
        if binding.kind == "item" and binding.value is not None:
            return self._item_place(binding.value, binding.position, binding.path)
        if binding.kind == "augmented" and binding.value is not None:
            target = binding.owner.target  # type: ignore[attr-defined]
            before = self.name_place(binding.name, target)
            return combine([before, self.place(binding.value)])
        if binding.kind == "parameter" and binding.argument is not None:
            if self.given is not None:
                return self.given.get(binding.name, Place.UNKNOWN)
            place = parameter_place(binding.argument)
            if (
                binding.argument.annotation is None
                and self.cls is not None
                and not isinstance(self.function, ast.Lambda)
            ):
                return self.cls.passed_place(self.function, binding.argument, self.annotations)
            return place if self.annotations or place is not Place.DEVICE else Place.UNKNOWN
        if binding.kind == "python":
            return Place.PYTHON
        return Place.UNKNOWN

    def element_place(self, iterable: ast.expr) -> Place:
        """What `for x in iterable` binds `x` to."""
        if isinstance(iterable, ast.Call):
            name = dotted_name(iterable.func) or ""
            if name in ("range", "len"):
                return Place.PYTHON
            if (name.endswith("progress_bar") or name in ("tqdm", "tqdm.tqdm")) and iterable.args:  # same elements
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

    def _item_place(self, value: ast.expr, position: int, path: tuple[int, ...] = ()) -> Place:
        """The `position`-th name of `a, b = value` (`path`: the positions inside it, `(_, b), c = value`)."""
        schedule = schedule_call(value)
        if schedule is not None and schedule.by_helper:
            # diffusers' helper: (the scheduler's timesteps on `device`, the number of steps).
            if position == 1:
                return Place.PYTHON
            return self.device_place(schedule.device) if schedule.device is not None else Place.UNKNOWN
        found = (
            self.module.call_place(self, value, (position, *path))
            if self.module and isinstance(value, ast.Call)
            else None
        )
        if found in (Place.DEVICE, Place.HOST) or path:
            return found or Place.UNKNOWN  # `(_, seqlens_k), ... = _prepare_for_flash_attn_or_sage_varlen(...)`
        method = self_attribute(value.func) if isinstance(value, ast.Call) else None
        if method is not None and self.cls is not None and method not in self.cls.methods:
            return self.cls.submodule_item_place(method, position)  # `topk_idx, weight, loss = self.gate(x)`
        if method is not None and self.cls is not None:
            # `timesteps, n = self.get_timesteps(...)`: a slice of the schedule this function set.
            receiver = timesteps_slice_receiver(self.cls.methods.get(method)) if position == 0 else None
            if receiver is not None:
                return self._scheduler_timesteps_place(receiver)
            # `timesteps, n = self.get_timesteps(n, timesteps, strength, device)`: a slice of the schedule handed in.
            argument = sliced_argument(self.cls.methods.get(method), value) if position == 0 else None
            if argument is not None:
                return self.place(argument)
            # `latents, target_mask, shapes = self.prepare_latents(...)`: what the method's returns hold there.
            return self.cls.returned_item_place(method, position)
        place = self.place(value)
        if place.is_tensor and splits(value):
            return place  # `a, b = x.chunk(2)`
        return Place.UNKNOWN

    # -- expressions ------------------------------------------------------------------------------

    def _place(self, node: ast.expr) -> Place:
        # The commonest kinds first, each tested alone: asked for every expression placed, a chain of tests of
        # `A | B` unions (each built again on every call) cost more than most answers.
        if isinstance(node, ast.Name):
            if node.id == "self" and self.cls is not None:
                return Place.MODULE if self.cls.is_module else Place.UNKNOWN
            return self.name_place(node.id, node)
        if isinstance(node, ast.Attribute):
            return self._attribute_place(node)
        if isinstance(node, ast.Call):
            return call_place(self, node)
        if node.__class__ in _PYTHON_VALUES:
            return Place.PYTHON
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
            if all(isinstance(op, _IDENTITY_TESTS) for op in node.ops):
                return Place.PYTHON
            return combine([self.place(node.left), *(self.place(c) for c in node.comparators)], python_if_none=True)
        if isinstance(node, ast.IfExp):
            return join(self.place(node.body), self.place(node.orelse)) or Place.UNKNOWN
        return Place.UNKNOWN  # a `BoolOp`, a `Starred`

    def _attribute_place(self, node: ast.Attribute) -> Place:
        if node.attr in ("config", "_execution_device", "device", "dtype"):
            return Place.PYTHON
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if self.assigns(f"self.{node.attr}"):
                return self.name_place(f"self.{node.attr}", node)
            return self.cls.attribute_place(node.attr) if self.cls is not None else Place.UNKNOWN
        if is_scheduler_timesteps(node):  # on the device where this function set them with a device
            return self._scheduler_timesteps_place(ast.unparse(node.value))  # not ast.dump: a cycle per call
        if node.attr == "sigmas" and names_scheduler(node.value):
            # A tensor wherever `set_timesteps` left it: `.to(device=...)` of it lands on that device (LTX's
            # long multi-prompt loop reads `sigmas_current[i]` from such a copy).
            return Place.TENSOR
        if isinstance(node.value, ast.Attribute) and node.value.attr == "config":
            return Place.PYTHON
        base = self.place(node.value)
        if node.attr in _PYTHON_ATTRIBUTES and (base.is_tensor or base is Place.MODULE):
            return Place.PYTHON
        if base is Place.DEVICE and (node.attr in ("sample", "prev_sample") or is_step_output(self, node.value)):
            return Place.DEVICE  # a model's (or a scheduler's) output read for its tensor: before the test below
        if base.is_tensor:
            return base if node.attr in _TENSOR_SAME_PLACE_ATTRIBUTES else Place.UNKNOWN
        if base is Place.MODULE and node.attr in _MODULE_TENSOR_ATTRIBUTES:
            return Place.DEVICE
        return Place.UNKNOWN

    def _scheduler_timesteps_place(self, receiver: str) -> Place:
        if receiver not in self._timesteps_places:
            ran_into = self._ran_into
            self._timesteps_places[receiver] = set_timesteps_place(self, receiver)
            self._new_epoch_if_ran_into(ran_into)
        return self._timesteps_places[receiver]

    def device_place(self, device: ast.expr) -> Place:
        """Where a tensor created or moved with `device=<device>` lives (codemods.analysis.placement.device_places)."""
        return device_place(self, device)


def function_bindings(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> FunctionBindings:
    """The bindings `FunctionPlaces` follows in `function`: those of a CUDA run (no other backend's branch)."""
    return FunctionBindings(function, skip_branch=lambda branch: is_other_backend_test(branch.test))
