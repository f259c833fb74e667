"""An emulated accelerator: a device that is not the CPU, computed on the CPU.

The verifier must see host/device traffic (copies, syncs) without owning a GPU.
We rename torch's PrivateUse1 backend to ``emu`` and implement it in Python:
every tensor on ``emu`` is an ``EmulatedTensor`` whose values live in a CPU
tensor (``host``). Each op runs the very CPU kernel a CPU run would, so numbers
are bit-identical to CPU, while devices, copies and syncs reach the dispatcher
exactly as they would for a real accelerator.

How ops reach this module (observers see each one once, at this level):

* ops with an ``emu`` tensor argument: the wrapper's ``__torch_dispatch__``,
  after autograd and CompositeImplicit decompositions (``x[mask]`` arrives as
  one ``aten::index``, ``.item()`` as one ``aten::_local_scalar_dense``);
* factory ops with ``device=emu`` and no tensor argument (``empty``,
  ``arange``, ``randn``...): a boxed fallback on the PrivateUse1 key;
* ``aten::_to_copy`` to ``emu`` (``x.to(emu)``, ``torch.tensor(data,
  device=emu)``), ``aten::scalar_tensor`` and ``scaled_dot_product_attention``:
  kernels of their own, see ``_register_kernels`` for why each.

Generators: torch has no Python hook for a PrivateUse1 generator (its hooks
cannot make one), so ``torch.Generator("emu")`` is given a CPU generator:
``torch.Generator`` becomes a subclass that makes one for ``emu`` (torchsde's
Brownian trees ask for a generator on their tensors' device). Factory ops with
``device=emu`` draw from the CPU default generator, or from that explicit CPU
generator, and the result lives on the device, as a CUDA draw would. Diffusers'
``randn_tensor`` given a CPU generator draws on the CPU and copies to the
device, as it does on CUDA: one host-to-device copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from bot.verify.op_arguments import leaves, map_leaves

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
        return _run_observed(func, args, kwargs or {})


@contextmanager
def observe_device_ops(observer: OpObserver) -> Iterator[None]:
    """Call ``observer`` for every op run on the emulated device inside the block."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)


def _run_observed(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
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


def _backend_kernel(func: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    return _run_observed(func, args, kwargs)


class _BackendModule:
    """The ``torch.emu`` module torch consults for a PrivateUse1 backend."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def get_amp_supported_dtype() -> list[torch.dtype]:
        # `torch.autocast("emu", dtype)` asks which dtypes it may cast to (see the
        # AutocastPrivateUse1 fallthrough in `_register_kernels`). The CUDA set.
        return [torch.float16, torch.bfloat16, torch.float32]

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        # Values are drawn by the CPU generator, which torch.manual_seed seeds.
        pass


_libraries: list[torch.library.Library] = []


def _register_kernels() -> None:
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(_backend_kernel, "PrivateUse1")
    # `torch.autocast("emu", ...)` (Mochi's RoPE opens `torch.autocast(x.device.type, torch.float32)`)
    # passes ops through uncast: exact for float32 regions; half-precision regions stay float32 here.
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    # ``torch.tensor(data, device=emu)`` runs ``_to_copy`` with the Python key
    # excluded. Its composite kernel would then reach our fallback with an
    # ``EmulatedTensor`` argument, and torch refuses a Python fallback there
    # (it can only route per-op Python kernels). A kernel of its own keeps the
    # copy one observable op on every path.
    kernels = torch.library.Library("aten", "IMPL")
    kernels.impl("_to_copy", functools.partial(_backend_kernel, aten._to_copy.default), "PrivateUse1")
    # Tensor setitem turns a Python scalar into ``scalar_tensor(v, device=emu)``
    # (for CUDA it stays on the CPU). Seen whole, the census can tell such a
    # value from a tensor the user put on the device.
    kernels.impl("scalar_tensor", functools.partial(_backend_kernel, aten.scalar_tensor.default), "PrivateUse1")
    # ``torch.tensor([t])`` with a device scalar ``t`` (AuraFlow's ``torch.tensor([t / 1000])``)
    # reads each element with the Python key excluded, as ``torch.tensor(data, device=emu)``
    # copies: the fallback cannot take it, a kernel of its own can. On CUDA it is a sync per element.
    kernels.impl(
        "_local_scalar_dense", functools.partial(_backend_kernel, aten._local_scalar_dense.default), "PrivateUse1"
    )
    # Attention picks its algorithm per device type in C++ (a dispatch stub
    # Python cannot extend); for ``emu`` it would fall back to the math path
    # and differ from CPU in the last bits. Intercepting before the
    # composite decomposes (at the autograd key) runs the CPU choice instead.
    autograd_kernels = torch.library.Library("aten", "IMPL")
    autograd_kernels.impl("scaled_dot_product_attention", _attention_as_on_cpu, "AutogradPrivateUse1")
    _libraries.extend([fallback, kernels, autograd_kernels])


def _attention_as_on_cpu(*args: Any, **kwargs: Any) -> Any:
    attention = aten.scaled_dot_product_attention.default
    needs_grad = torch.is_grad_enabled() and any(
        isinstance(value, torch.Tensor) and value.requires_grad for value in leaves((args, kwargs))
    )
    if needs_grad:
        # The CPU kernel records no autograd graph here; the math path does.
        return attention.decompose(*args, **kwargs)
    return _run_observed(attention, args, kwargs)


def install_emulated_device() -> torch.device:
    """Make ``torch.device("emu")`` usable in this process; calling again is harmless."""
    if not _libraries:
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        _setup_privateuseone_for_python_backend(DEVICE_TYPE, backend_module=_BackendModule())
        _register_kernels()
        torch.Generator = _generator_class(torch.Generator)
    return emulated_device()


def _generator_class(base: type[torch.Generator]) -> type[torch.Generator]:
    class Generator(base):  # type: ignore[misc, valid-type]
        """``torch.Generator``, with a CPU generator for ``emu`` (see the module's docstring)."""

        def __new__(cls, device: Any = "cpu") -> torch.Generator:
            return base.__new__(cls, "cpu" if torch.device(device).type == DEVICE_TYPE else device)

        def __init__(self, device: Any = "cpu") -> None:
            pass  # the base made it in __new__; its __init__ would ask for the emu generator again

    return Generator
