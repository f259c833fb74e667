"""Where a value lives: on the accelerator, on the host, or not a tensor at all, as far as one function shows.

A host sync (`.item()`, `if t < x:`) or a host-to-device copy costs something only when the
tensor involved is on the accelerator. Rules that report them must tell a device tensor from a
CPU tensor (`timesteps_cpu`, a scheduler's CPU sigmas) and both from Python numbers, which the
same expressions handle all over diffusers. The answer is deliberately one-sided: `DEVICE` only
where the code shows it (a torch op on a device tensor, a parameter annotated as a tensor, a
model's output, a registered buffer, `.to(device)`); anything else is `UNKNOWN` and reported by
nobody.

Names are flow-insensitive: a local's place is the join of everything assigned to it in the
function, so a name that is sometimes a tensor and sometimes a number is `UNKNOWN`. Bindings
made only for another backend (`if XLA_AVAILABLE: timestep_device = "cpu"`) are left out: the
places are those of a CUDA run.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING

from codemods.analysis.bindings import Binding, FunctionBindings
from codemods.analysis.hot_paths import is_other_backend_test
from codemods.source import dotted_name

if TYPE_CHECKING:
    from codemods.analysis.class_places import ClassPlaces


_NO_CYCLE = 1 << 30


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
_PYTHON_TYPES = {"int", "float", "bool", "str", "bytes", "dict", "list", "tuple", "set", "Dict", "List", "Tuple"}
_FACTORIES = {
    "tensor", "as_tensor", "from_numpy", "arange", "linspace", "logspace", "zeros", "ones", "full", "empty",
    "eye", "rand", "randn", "randint", "randperm", "tril_indices", "triu_indices", "hann_window",
    "scalar_tensor", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "empty_strided",
}  # fmt: skip
_LIKE_FACTORIES = {"zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like"}
# torch.* calls that return no tensor.
_TORCH_NON_TENSORS = {
    "device", "dtype", "Generator", "finfo", "iinfo", "Size", "get_default_dtype", "is_tensor", "no_grad",
    "is_floating_point", "is_complex", "numel", "is_grad_enabled", "equal", "allclose", "manual_seed",
    "promote_types", "result_type", "can_cast", "is_inference_mode_enabled", "inference_mode", "enable_grad",
    "autocast", "get_autocast_dtype", "is_autocast_enabled", "set_grad_enabled", "broadcast_shapes",
}  # fmt: skip
_TORCH_NON_TENSOR_MODULES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.compiler.",
    "torch.jit.",
    "torch.distributed.",
    "torch.utils.",
    "torch.nn.init.",
    "torch._dynamo.",
    "torch.fx.",
    "torch.mps.",
    "torch.npu.",
)
_TENSOR_NON_TENSOR_METHODS = {
    "item", "tolist", "numpy", "size", "dim", "numel", "element_size", "stride", "data_ptr", "get_device",
    "is_floating_point", "is_complex", "is_contiguous", "equal", "allclose", "nelement", "ndimension",
    "storage_offset", "untyped_storage", "__len__", "type_as_string", "__repr__",
}  # fmt: skip
_TENSOR_SAME_PLACE_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag", "data", "grad"}
_PYTHON_ATTRIBUTES = {
    "shape",
    "dtype",
    "device",
    "ndim",
    "is_cuda",
    "requires_grad",
    "layout",
    "config",
    "training",
    "itemsize",
    "nbytes",
    "is_leaf",
    "in_features",
    "out_features",
    "num_heads",
    "dim",
}
_MODULE_TENSOR_ATTRIBUTES = {"weight", "bias"}
_BUILTIN_PYTHON = {
    "len",
    "int",
    "float",
    "bool",
    "str",
    "range",
    "isinstance",
    "round",
    "list",
    "tuple",
    "dict",
    "set",
    "zip",
    "enumerate",
    "sorted",
    "getattr",
    "hasattr",
    "print",
    "type",
    "repr",
    "divmod",
    "any",
    "all",
    "id",
    "hash",
    "callable",
    "reversed",
    "iter",
    "next",
    "map",
    "filter",
    "format",
}
_BUILTIN_TENSOR_PRESERVING = {"abs", "min", "max", "sum"}


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
        device = _argument(node, "device", None)
        if device is not None:
            return self.device_place(device) is Place.DEVICE
        if name.startswith("torch."):
            elements = [e for a in node.args for e in (a.elts if isinstance(a, ast.List | ast.Tuple) else [a])]
            return any(self.may_be_on_device(e, depth + 1) for e in elements)
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
            if func.attr in ("cpu", "numpy", "item", "tolist"):
                return False
            if func.attr == "to" and node.args:
                moved = self._moved_place(node, Place.UNKNOWN)
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
            return _combine([before, self.place(binding.value)])
        if binding.kind == "parameter" and binding.argument is not None:
            return _parameter_place(binding.argument)
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
            device = _argument(value, "device", 2)
            return self.device_place(device) if device is not None else Place.UNKNOWN
        place = self.place(value)
        if place.is_tensor and _splits(value):
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
            return _combine([self.place(node.left), self.place(node.right)])
        if isinstance(node, ast.UnaryOp):
            operand = self.place(node.operand)
            return Place.PYTHON if isinstance(node.op, ast.Not) and not operand.is_tensor else operand
        if isinstance(node, ast.Compare):
            if all(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
                return Place.PYTHON
            return _combine([self.place(node.left), *(self.place(c) for c in node.comparators)], python_if_none=True)
        if isinstance(node, ast.BoolOp):
            return Place.UNKNOWN
        if isinstance(node, ast.IfExp):
            return join(self.place(node.body), self.place(node.orelse)) or Place.UNKNOWN
        if isinstance(node, ast.Call):
            return self._call_place(node)
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
            return self._scheduler_timesteps_place(node)
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

    def _scheduler_timesteps_place(self, node: ast.Attribute) -> Place:
        """`self.scheduler.timesteps`: on the device where this function set them with a device."""
        receiver = ast.unparse(node.value)  # not ast.dump: its recursive closure is a cycle per call
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
                device = _argument(call, "device", 1)
                if device is not None:
                    return self.device_place(device)
        return Place.UNKNOWN

    def _call_place(self, call: ast.Call) -> Place:
        func = call.func
        name = dotted_name(func) or ""
        if name.startswith(("torch.", "F.", "nn.functional.")):
            return self._torch_call_place(call, name)
        if name in _BUILTIN_PYTHON or name.startswith(("math.", "np.", "numpy.", "logger.", "os.", "warnings.")):
            return Place.PYTHON
        if name in _BUILTIN_TENSOR_PRESERVING:
            places = [self.place(a) for a in call.args]
            if any(p.is_tensor for p in places):
                return _combine([p for p in places if p.is_tensor])
            return Place.PYTHON if places and all(p is Place.PYTHON for p in places) else Place.UNKNOWN
        if name.endswith("randn_tensor"):
            device = _argument(call, "device", None)
            return self.device_place(device) if device is not None else Place.HOST
        if self.place(func) is Place.MODULE:
            return Place.DEVICE  # a model's (or a component's) output
        if isinstance(func, ast.Attribute):
            receiver = self.place(func.value)
            if receiver.is_tensor:
                return self._tensor_method_place(call, receiver)
            if receiver is Place.MODULE:
                if func.attr in ("forward", "decode", "encode"):
                    return Place.DEVICE
                arguments = [self.place(a) for a in (*call.args, *(k.value for k in call.keywords))]
                return Place.DEVICE if Place.DEVICE in arguments else Place.UNKNOWN
            return Place.UNKNOWN
        return Place.UNKNOWN

    def _torch_call_place(self, call: ast.Call, name: str) -> Place:
        short = name.rsplit(".", 1)[-1]
        if (
            short in _TORCH_NON_TENSORS
            or name.startswith(_TORCH_NON_TENSOR_MODULES)
            or short[:1].isupper()
            and short not in _FACTORIES
        ):
            return Place.PYTHON
        device = _argument(call, "device", None)
        if device is not None and not (isinstance(device, ast.Constant) and device.value is None):
            return self.device_place(device)
        if short in _LIKE_FACTORIES:
            return self._tensor_or_unknown(call.args[0]) if call.args else Place.UNKNOWN
        if short in _FACTORIES:
            if short in ("tensor", "as_tensor") and call.args:
                data = self.place(call.args[0])
                if data.is_tensor:
                    return data
            return Place.HOST
        arguments = list(call.args) + [k.value for k in call.keywords]
        elements: list[ast.expr] = []
        for argument in arguments:
            if isinstance(argument, ast.List | ast.Tuple):
                elements.extend(argument.elts)
            else:
                elements.append(argument)
        return _combine([self.place(e) for e in elements], tensor_if_none=True)

    def _tensor_method_place(self, call: ast.Call, receiver: Place) -> Place:
        method = call.func.attr  # type: ignore[attr-defined]
        if method in _TENSOR_NON_TENSOR_METHODS:
            return Place.PYTHON
        if method == "cpu":
            return Place.HOST
        if method == "cuda":
            return Place.DEVICE
        if method == "to":
            return self._moved_place(call, receiver)
        if method in ("type_as", "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty"):
            device = _argument(call, "device", None)
            if device is not None:
                return self.device_place(device)
            if method == "type_as" and call.args:
                return self._tensor_or_unknown(call.args[0])
        return receiver

    def _moved_place(self, call: ast.Call, receiver: Place) -> Place:
        """`x.to(...)`: where it lands (a dtype alone leaves it where it is)."""
        device = _argument(call, "device", None)
        if device is not None:
            return self.device_place(device)
        if not call.args:
            return receiver
        first = call.args[0]
        text = (dotted_name(first) or "").rsplit(".", 1)[-1]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return self.device_place(first)
        if "dtype" in text or (dotted_name(first) or "").startswith("torch.") and text != "device":
            return receiver
        if "device" in text or (isinstance(first, ast.Call) and dotted_name(first.func) == "torch.device"):
            return self.device_place(first)
        place = self.place(first)
        return place if place.is_tensor else Place.UNKNOWN

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
            if owner is Place.MODULE or device.attr == "_execution_device":
                return Place.DEVICE
            return Place.UNKNOWN
        if isinstance(device, ast.Name):
            return self._device_name_place(device)
        return Place.UNKNOWN

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

    def _tensor_or_unknown(self, node: ast.expr) -> Place:
        place = self.place(node)
        return place if place.is_tensor else Place.UNKNOWN


def _combine(places: list[Place], python_if_none: bool = False, tensor_if_none: bool = False) -> Place:
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


def _parameter_place(argument: ast.arg) -> Place:
    """A parameter annotated as a tensor is an input of hot code: it lives on the device."""
    leaves = list(_annotation_leaves(argument.annotation)) if argument.annotation is not None else []
    if not leaves:
        return Place.UNKNOWN
    if all(leaf in TENSOR_TYPES or leaf == "None" for leaf in leaves) and any(leaf in TENSOR_TYPES for leaf in leaves):
        return Place.DEVICE
    if all(leaf in _PYTHON_TYPES or leaf == "None" for leaf in leaves):
        return Place.PYTHON
    return Place.UNKNOWN


def _annotation_leaves(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant):
        if node.value is None:
            yield "None"
        elif isinstance(node.value, str):
            try:
                yield from _annotation_leaves(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                yield "?"
        else:
            yield "?"
    elif isinstance(node, ast.Name | ast.Attribute):
        yield (dotted_name(node) or "?").rsplit(".", 1)[-1]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        yield from _annotation_leaves(node.left)
        yield from _annotation_leaves(node.right)
    elif isinstance(node, ast.Subscript):
        wrapper = (dotted_name(node.value) or "").rsplit(".", 1)[-1]
        if wrapper in ("Optional", "Union"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for member in members:
                yield from _annotation_leaves(member)
        else:
            yield wrapper  # list[...], tuple[...]: a container
    else:
        yield "?"


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if position is not None and len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[position]
    return None


def _splits(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("chunk", "split", "unbind", "tensor_split", "split_with_sizes")
    )


def _is_scheduler_timesteps(node: ast.Attribute) -> bool:
    return (
        node.attr == "timesteps"
        and isinstance(node.value, ast.Attribute | ast.Name)
        and ((dotted_name(node.value) or "").rsplit(".", 1)[-1].endswith("scheduler"))
    )
