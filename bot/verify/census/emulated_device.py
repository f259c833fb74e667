"""An emulated accelerator: a device that is not the CPU, computed on the CPU.

The verifier must see host/device traffic (copies, syncs) without owning a GPU.
We rename torch's PrivateUse1 backend to ``emu`` and implement it in Python:
every tensor on ``emu`` is an ``EmulatedTensor`` whose values live in a CPU
tensor (``host``; ``bot.verify.census.emulated_tensor`` holds it and runs each op
there). Each op runs the very CPU kernel a CPU run would, so numbers
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
from typing import Any

import torch

from bot.verify.census.emulated_tensor import DEVICE_TYPE, aten, emulated_device, run_observed
from bot.verify.census.op_arguments import leaves


def _backend_kernel(func: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    return run_observed(func, args, kwargs)


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
    return run_observed(attention, args, kwargs)


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
