"""Where the value of a call lives: torch factories and ops, tensor methods, `.to(...)`, builtins, models.

Part of `FunctionPlaces` (codemods.analysis.placement), kept apart because it is mostly a
vocabulary: which torch functions and tensor methods return tensors, and where those land.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.analysis.models.loop_arguments import is_scheduler_step
from codemods.analysis.placement.place import Place, combine
from codemods.source import call_argument, dotted_name

if TYPE_CHECKING:
    from codemods.analysis.placement.placer import Placer

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
_BUILTIN_PYTHON = {
    "len", "int", "float", "bool", "str", "range", "isinstance", "round", "list", "tuple", "dict", "set",
    "zip", "enumerate", "sorted", "getattr", "hasattr", "print", "type", "repr", "divmod", "any", "all", "id",
    "hash", "callable", "reversed", "iter", "next", "map", "filter", "format",
}  # fmt: skip
_BUILTIN_TENSOR_PRESERVING = {"abs", "min", "max", "sum"}


def call_place(places: Placer, call: ast.Call) -> Place:
    func = call.func
    name = dotted_name(func) or ""
    if name.startswith(("torch.", "F.", "nn.functional.")):
        return _torch_call_place(places, call, name)
    if name in _BUILTIN_PYTHON or name.startswith(("math.", "np.", "numpy.", "logger.", "os.", "warnings.")):
        return Place.PYTHON
    if name in _BUILTIN_TENSOR_PRESERVING:
        arguments = [places.place(a) for a in call.args]
        if any(p.is_tensor for p in arguments):
            return combine([p for p in arguments if p.is_tensor])
        return Place.PYTHON if arguments and all(p is Place.PYTHON for p in arguments) else Place.UNKNOWN
    if name.endswith("randn_tensor"):
        device = call_argument(call, "device", None)
        return places.device_place(device) if device is not None else Place.HOST
    if places.place(func) is Place.MODULE or _submodule_call(places, func):
        return Place.DEVICE  # a model's (or a component's) output
    if _callback_replacement(places, call):
        return places.place(call.args[1])
    own = _own_method(places, func)
    if own is not None:
        return _own_method_call_place(places, call, own)
    if isinstance(func, ast.Attribute):
        if dotted_name(func.value) == "self" and places.cls is not None and not places.cls.is_module:
            return places.cls.instance_call_place(func.attr, places.annotations)  # `self.smoothing(attn_map)`
        receiver = places.place(func.value)
        if receiver.is_tensor:
            return _tensor_method_place(places, call, receiver)
        if receiver is Place.MODULE:
            if func.attr in ("forward", "decode", "encode"):
                return Place.DEVICE
            arguments = [places.place(a) for a in (*call.args, *(k.value for k in call.keywords))]
            return Place.DEVICE if Place.DEVICE in arguments else Place.UNKNOWN
        return Place.UNKNOWN
    found = places.module.call_place(places, call) if places.module is not None else None
    return found if found is not None else Place.UNKNOWN


def torch_returns_tensor(name: str) -> bool:
    """Whether `torch.<f>(...)` (or `F.<f>`) returns a tensor, wherever it lands."""
    short = name.rsplit(".", 1)[-1]
    return not (
        short in _TORCH_NON_TENSORS
        or name.startswith(_TORCH_NON_TENSOR_MODULES)
        or short[:1].isupper()
        and short not in _FACTORIES
    )


def _submodule_call(places: Placer, func: ast.expr) -> bool:
    """`self.block(x)` in a module, `block` not a method nor a tensor: a submodule the analysis could not see
    registered (assigned from a local: `block = zero_module(nn.Conv2d(...)); self.block = block`)."""
    cls = places.cls
    if cls is None or not cls.is_module or not isinstance(func, ast.Attribute) or dotted_name(func.value) != "self":
        return False
    return func.attr not in cls.methods and cls.attribute_place(func.attr) in (Place.UNKNOWN, Place.MODULE)


def _own_method(places: Placer, func: ast.expr) -> str | None:
    """`self.m` or `<ThisClass>.m` (a static method called by its class's name), `m` a method of the class."""
    cls = places.cls
    if cls is None or not isinstance(func, ast.Attribute) or func.attr not in cls.methods:
        return None
    owner = dotted_name(func.value)
    return func.attr if owner in ("self", cls.cls.name) else None


def _own_method_call_place(places: Placer, call: ast.Call, method: str) -> Place:
    """A method of the same class handed device tensors (and no CPU ones): on the device where every return of
    it is, worked out as for any method (BlockRefinementScheduler's `_top_k_filtering(logits, ...)`); on the
    host where every return builds a CPU tensor (its `get_num_transfer_tokens(block_length, steps)`)."""
    arguments = [places.place(a) for a in (*call.args, *(k.value for k in call.keywords))]
    if any(p in (Place.HOST, Place.TENSOR) for p in arguments):
        return Place.UNKNOWN
    returned = places.cls.returned_place(method)  # type: ignore[union-attr]
    return returned if returned is Place.HOST or Place.DEVICE in arguments else Place.UNKNOWN


def _callback_replacement(places: Placer, call: ast.Call) -> bool:
    """`latents = callback_outputs.pop("latents", latents)` after `callback_outputs = callback_on_step_end(...)`:
    the step-end callback hands back the loop's own tensors, changed or not, for the next model call to take,
    so the value lives where the default does."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "pop" and len(call.args) == 2 and not call.keywords):
        return False
    if not isinstance(func.value, ast.Name):
        return False
    bindings = places.bindings.reaching(func.value.id, func.value)
    return bool(bindings) and all(
        b.kind == "value" and isinstance(b.value, ast.Call) and dotted_name(b.value.func) == "callback_on_step_end"
        for b in bindings
    )


def _torch_call_place(places: Placer, call: ast.Call, name: str) -> Place:
    short = name.rsplit(".", 1)[-1]
    if not torch_returns_tensor(name):
        return Place.PYTHON
    device = call_argument(call, "device", None)
    if device is not None and not (isinstance(device, ast.Constant) and device.value is None):
        return places.device_place(device)
    if short in _LIKE_FACTORIES:
        return _tensor_or_unknown(places, call.args[0]) if call.args else Place.UNKNOWN
    if short in _FACTORIES:
        if short in ("tensor", "as_tensor") and call.args:
            data = places.place(call.args[0])
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
    return combine([places.place(e) for e in elements], tensor_if_none=True)


def _tensor_method_place(places: Placer, call: ast.Call, receiver: Place) -> Place:
    method = call.func.attr  # type: ignore[attr-defined]
    if method in _TENSOR_NON_TENSOR_METHODS:
        return Place.PYTHON
    if method == "cpu":
        return Place.HOST
    if method == "cuda":
        return Place.DEVICE
    if method == "to":
        return moved_place(places, call, receiver)
    if method in ("type_as", "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty"):
        device = call_argument(call, "device", None)
        if device is not None:
            return places.device_place(device)
        if method == "type_as" and call.args:
            return _tensor_or_unknown(places, call.args[0])
    return receiver


def moved_place(places: Placer, call: ast.Call, receiver: Place) -> Place:
    """`x.to(...)`: where it lands (a dtype alone leaves it where it is)."""
    device = call_argument(call, "device", None)
    if device is not None:
        return places.device_place(device)
    if not call.args:
        return receiver
    first = call.args[0]
    text = (dotted_name(first) or "").rsplit(".", 1)[-1]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return places.device_place(first)
    if "dtype" in text or (dotted_name(first) or "").startswith("torch.") and text != "device":
        return receiver
    if "device" in text or (isinstance(first, ast.Call) and dotted_name(first.func) == "torch.device"):
        return places.device_place(first)
    place = places.place(first)
    return place if place.is_tensor else Place.UNKNOWN


def _tensor_or_unknown(places: Placer, node: ast.expr) -> Place:
    place = places.place(node)
    return place if place.is_tensor else Place.UNKNOWN


def splits(value: ast.expr) -> bool:
    """A tensor op (or method) whose tuple's items are tensors where its input is: the parts of a split, and the
    values and indices of `topk`/`sort`."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("chunk", "split", "unbind", "tensor_split", "split_with_sizes", "topk", "sort")
    )


def is_step_output(places: Placer, node: ast.expr) -> bool:
    """`<...>scheduler.step(...)`'s result, or a name only ever bound to one: its fields (`prev_sample`,
    LLaDA2's `transfer_index`) are the tensors the step computed from its device inputs."""
    if isinstance(node, ast.Name):
        bindings = places.bindings.reaching(node.id, node)
        return bool(bindings) and all(b.kind == "value" and is_scheduler_step(b.value) for b in bindings)
    return is_scheduler_step(node)
