"""Count host<->device copies and host waits on the emulated device.

``SyncCensus`` watches every op the emulated device runs (see
``emulated_device``) and keeps those a CUDA run would pay for in host time:

* ``h2d``: data from the host lands on the device (``x.to(device)``,
  ``torch.tensor(data, device=...)``, ``dst.copy_(cpu)``, CPU index tensors);
* ``d2h``: device data lands on the host (``.cpu()``, ``.to("cpu")``,
  ``.tolist()``, and ``.numpy()`` after them);
* ``sync``: the host needs a value only the device has (``.item()``,
  ``int(t)``, ``if t < x:``, ``nonzero``, ``x[mask]``, ``unique``...).

Ops are seen once, at the level users write them: ``x[mask]`` is one
``aten::index`` (its inner ``nonzero`` runs on the host copy, unobserved), so
it counts one sync. An op counts as many host reads as ATen's CUDA kernel
makes for its inputs: ``torch.equal`` none for tensors of different sizes or
no element, ``repeat_interleave`` two without ``output_size``; a copy of no
element moves nothing. tests/verify/test_sync_ops.py holds one row per op with
its source. The same ops on CPU tensors never reach the device and count nothing.

Usage::

    with SyncCensus(site_roots=[diffusers_src]) as census:
        pipeline(...)
    census.result().to_dict()
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from bot.verify.census import statement_sites
from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.census.emulated_tensor import COPY_OPS, INDEXING_OPS, EmulatedTensor, observe_device_ops
from bot.verify.census.result import CensusEvent, CensusResult, summarize

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+; annotations are postponed, so 3.10 never imports it

aten = torch.ops.aten

_SYNCING_OPS = {
    aten._local_scalar_dense.default,
    aten.nonzero.default,
    aten.masked_select.default,
    aten._unique.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
    aten.unique_dim_consecutive.default,
    aten.allclose.default,  # isclose(...).all().item()
    # Raises on the host if the device reported a failed factorization.
    aten._linalg_check_errors.default,
}
"""Ops whose result size or value the host must read once before going on, whatever their inputs."""


def _equal_syncs(args: tuple, kwargs: dict) -> int:
    """ATen's cuda_equal answers different sizes and empty tensors on the host, else reads eq().all()."""
    first, second = args[0], args[1]
    return int(first.shape == second.shape and first.numel() > 0)


def _repeat_interleave_syncs(args: tuple, kwargs: dict) -> int:
    """repeat_interleave_common without output_size reads the total and checks no repeat is negative: two reads."""
    return 0 if kwargs.get("output_size") is not None or args[0].numel() == 0 else 2


def _bincount_syncs(args: tuple, kwargs: dict) -> int:
    """_bincount_cuda_template reads the input's max (the bins) and, unless it is uint8, its min (the sign check)."""
    values = args[0]
    return 0 if values.numel() == 0 else 1 if values.dtype == torch.uint8 else 2


_SYNCS_BY_INPUT: dict[Any, Callable[[tuple, dict], int]] = {
    aten.equal.default: _equal_syncs,
    aten.repeat_interleave.Tensor: _repeat_interleave_syncs,
    aten.bincount.default: _bincount_syncs,
}
"""Ops whose host reads on CUDA depend on their inputs: how many, from ATen's CUDA kernels."""


def _on_device(value: Any) -> bool:
    return isinstance(value, EmulatedTensor)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


class SyncCensus:
    """Records copies and syncs on the emulated device while active."""

    def __init__(self, site_roots: Sequence[str | Path] = ()) -> None:
        self.site_roots = statement_sites.site_roots(site_roots)
        self.events: list[CensusEvent] = []
        # Tensor setitem makes Python scalars into device tensors where CUDA
        # keeps them on the host; values made that way count as host data.
        self._python_scalars: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._watch = observe_device_ops(self._observe)

    def __enter__(self) -> Self:
        install_emulated_device()
        self._watch.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._watch.__exit__(exc_type, exc, traceback)

    def result(self) -> CensusResult:
        return summarize(self.events)

    def _observe(self, op: torch._ops.OpOverload, args: tuple, kwargs: dict, result: Any) -> None:
        if op is aten.scalar_tensor.default:
            self._python_scalars[result] = True
            return
        found = self._classify(op, args, kwargs, result)
        if found:
            site = self._call_site()
            name = op._schema.name
            self.events.extend(CensusEvent(kind, name, site, size) for kind, size in found)

    def _is_host_data(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and (not _on_device(value) or value in self._python_scalars)

    def _classify(self, op: torch._ops.OpOverload, args: tuple, kwargs: dict, result: Any) -> list[tuple[str, int]]:
        """The (kind, bytes) events one device op costs."""
        if op is aten._to_copy.default:
            return self._copy_events(source=args[0], destination=result)
        if op is aten.copy_.default:
            return self._copy_events(source=args[1], destination=args[0])
        if op in COPY_OPS:
            return self._copy_events(source=args[0], destination=args[1])
        if op in _SYNCING_OPS:
            return [("sync", 0)]
        if op in _SYNCS_BY_INPUT:
            return [("sync", 0)] * _SYNCS_BY_INPUT[op](args, kwargs)
        if op in INDEXING_OPS:
            return self._indexing_events(op, args, kwargs)
        return []

    def _copy_events(self, source: torch.Tensor, destination: torch.Tensor) -> list[tuple[str, int]]:
        # CUDA converts dtype on the side that has the data, then moves the
        # destination's bytes; with no element it moves nothing (copy_ returns
        # before any memcpy: `torch.tensor([], device=...)`, transformers' empty caches).
        if destination.numel() == 0:
            return []
        if _on_device(destination) and self._is_host_data(source):
            return [("h2d", _nbytes(destination))]
        if _on_device(source) and not _on_device(destination):
            return [("d2h", _nbytes(destination))]
        return []

    def _indexing_events(self, op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> list[tuple[str, int]]:
        indices = [index for index in args[1] if index is not None]
        events = [("h2d", _nbytes(index)) for index in indices if not _on_device(index)]
        masks = [index for index in indices if _on_device(index) and index.dtype in (torch.bool, torch.uint8)]
        fills_a_host_scalar = op is not aten.index.Tensor and self._becomes_masked_fill(args, kwargs, indices)
        if masks and not fills_a_host_scalar:
            # Where the mask is true decides which elements move: a nonzero.
            events.append(("sync", 0))
        return events

    def _becomes_masked_fill(self, args: tuple, kwargs: dict, indices: list[torch.Tensor]) -> bool:
        """Whether ``index_put_`` takes the masked_fill path, as ATen decides on CUDA.

        One device mask and a one-element host value, not accumulating:
        ``x[mask] = 0.0`` costs nothing.
        """
        value = args[2]
        accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        return not accumulate and len(indices) == 1 and value.numel() == 1 and self._is_host_data(value)

    def _call_site(self) -> str:
        return statement_sites.call_site(self.site_roots, sys._getframe(1))
