"""The ``emu`` device's tensors and how each op on them runs on the CPU.

``EmulatedTensor`` holds its values in a CPU tensor; ``run_observed`` runs an op
on those host tensors, places the result on the device and tells the observers.
``bot.verify.census.emulated_device`` registers the backend that routes ops here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from bot.verify.census.op_arguments import leaves, map_leaves

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+; annotations are postponed, so 3.10 never imports it

DEVICE_TYPE = "emu"

aten = torch.ops.aten

OpObserver = Callable[[torch._ops.OpOverload, tuple, dict, Any], None]
"""Called after each op the device runs: (op, args, kwargs, result), args as the caller passed them."""

_observers: list[OpObserver] = []

COPY_OPS = {
    aten._to_copy.default,
    aten.copy_.default,
    aten._copy_from.default,
    aten._copy_from_and_resize.default,
}
"""Ops that move data between devices; the only ones that may mix CPU and device tensors."""

INDEXING_OPS = {
    aten.index.Tensor,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
}
"""Advanced indexing: ``self, indices, ...``; CUDA moves CPU index tensors to the device itself."""


_METADATA_QUERIES = {
    aten.size.default,
    aten.sym_size.default,
    aten.stride.default,
    aten.sym_stride.default,
    aten.dim.default,
    aten.numel.default,
    aten.sym_numel.default,
    aten.sym_storage_offset.default,
    aten.is_contiguous.default,
    aten.is_contiguous.memory_format,
    aten.sym_is_contiguous.default,
    aten.is_strides_like_format.default,
    aten.is_non_overlapping_and_dense.default,
}
"""Questions about shape and layout, answered by the host tensor; no data moves."""


def emulated_device() -> torch.device:
    return torch.device(DEVICE_TYPE, 0)


class EmulatedTensor(torch.Tensor):
    """A tensor on the ``emu`` device; ``host`` holds its values on the CPU."""

    host: torch.Tensor

    @staticmethod
    def __new__(cls, host: torch.Tensor) -> Self:
        return torch.Tensor._make_wrapper_subclass(
            cls,
            host.shape,
            strides=host.stride(),
            storage_offset=host.storage_offset(),
            dtype=host.dtype,
            layout=host.layout,
            device=emulated_device(),
            requires_grad=False,
            # Out= and in-place ops (``arange(out=)``, ``resize_``, ``t_``)
            # reshape the host tensor; asking it for sizes and strides keeps
            # the wrapper truthful without mirroring every such op.
            dispatch_sizes_strides_policy="sizes",
        )

    def __init__(self, host: torch.Tensor) -> None:
        self.host = host

    # Results are placed by the dispatch level below, never re-wrapped here.
    __torch_function__ = torch._C._disabled_torch_function_impl

    def tolist(self) -> Any:
        # torch refuses tolist() on subclasses; on CUDA it is a copy to the
        # host followed by the conversion, which is what this does.
        return self.cpu().tolist()

    def numpy(self, *, force: bool = False) -> Any:
        # As on CUDA: only ``force=True`` may copy to the host on the way.
        if force:
            return self.detach().cpu().numpy(force=True)
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. "
            "Use Tensor.cpu() to copy the tensor to host memory first."
        )

    def __format__(self, format_spec: str) -> str:
        # torch formats only plain 0-dim tensors through .item(); CUDA tensors
        # take that path, so the emulated ones must too.
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return super().__format__(format_spec)

    @classmethod
    def __torch_dispatch__(
        cls,
        func: torch._ops.OpOverload,
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if func in _METADATA_QUERIES:
            return func(args[0].host, *args[1:], **(kwargs or {}))
        return run_observed(func, args, kwargs or {})


@contextmanager
def observe_device_ops(observer: OpObserver) -> Iterator[None]:
    """Call ``observer`` for every op run on the emulated device inside the block."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def run_observed(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    result = _run_on_host(func, args, kwargs)
    for observer in _observers:
        observer(func, args, kwargs, result)
    return result


def _to_host(value: Any) -> Any:
    if isinstance(value, EmulatedTensor):
        return value.host
    if isinstance(value, torch.device) and value.type == DEVICE_TYPE:
        return torch.device("cpu")
    return value


def _to_device(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and not isinstance(value, EmulatedTensor):
        return EmulatedTensor(value)
    return value


def _check_same_device(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    """Refuse a CPU tensor next to a device tensor, as CUDA does.

    Without this check the emulation would quietly compute what a GPU run
    rejects. Zero-dim CPU tensors pass: CUDA kernels read them as scalars.
    """
    if func in COPY_OPS:
        return
    checked = (args[0], *args[2:]) if func in INDEXING_OPS else args
    for value in leaves((checked, kwargs)):
        if isinstance(value, torch.Tensor) and not isinstance(value, EmulatedTensor) and value.dim() > 0:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{emulated_device()} and {value.device}! (when running {func})"
            )


@functools.cache
def _returned_argument_names(func: torch._ops.OpOverload) -> tuple[str, ...] | None:
    """Arguments an in-place or out= op returns, in return order; None for other ops."""
    arguments = func._schema.arguments
    if not func._schema.returns:
        return None
    names = []
    for returned in func._schema.returns:
        alias = returned.alias_info
        if alias is None or not alias.is_write:
            return None
        names.append(
            next(a.name for a in arguments if a.alias_info is not None and a.alias_info.before_set == alias.before_set)
        )
    return tuple(names)


def _run_on_host(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    _check_same_device(func, args, kwargs)
    host_args, host_kwargs = map_leaves(_to_host, (args, kwargs))
    result = func(*host_args, **host_kwargs)
    returned_names = _returned_argument_names(func)
    if returned_names is not None:
        # In-place and out= ops return their mutated inputs: the very objects,
        # whichever device they live on.
        by_name = dict(zip((a.name for a in func._schema.arguments), args)) | kwargs
        returned = tuple(by_name[name] for name in returned_names)
        return returned[0] if len(returned) == 1 else returned
    target = kwargs.get("device")
    if target is not None and torch.device(target).type != DEVICE_TYPE:
        return result
    return map_leaves(_to_device, result)
