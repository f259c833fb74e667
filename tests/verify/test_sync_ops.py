"""Every op that hands a device value to Python counts on the emulated device as it counts on CUDA.

One row per op: what it does on device tensors, the counts a CUDA run gives, and where that count
comes from. Sources: torch's CUDA kernels (aten/src/ATen/native/cuda/...: a value read on the host
is a `.item()`/`.cpu()` inside the kernel, one `cudaMemcpyAsync` device-to-host followed by
`cudaStreamSynchronize`), the example of torch's sync-debug mode (pytorch PR #62092, the one that
added `torch.cuda.set_sync_debug_mode`: `x.nonzero()`, `if y:` warn; `x[mask] = 1.` does not), and
torch/_tensor_str.py for printing (the same Python runs on both devices).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch

from bot.verify.census.emulated import SyncCensus


class Row(NamedTuple):
    op: str
    run: Callable[..., Any]  # called with the device tensors `inputs` made
    cuda: dict[str, int]
    source: str
    inputs: str = "values"


def _inputs(kind: str, device: torch.device) -> tuple[torch.Tensor, ...]:
    """A row's device tensors, made before the census looks."""
    values = torch.tensor([3.0, 1.0, 3.0, 0.0]).to(device)
    return {
        "values": (values,),
        "scalar": (torch.tensor(2).to(device),),
        "values, scalar": (values, torch.tensor(2).to(device)),
        "mask": (values, values > 1),
        "repeats": (values, torch.tensor([1, 2, 3, 4]).to(device)),
        "counts": (torch.tensor([1, 3]).to(device),),
        "one integer": (torch.tensor([7]).to(device),),
    }[kind]


def _branch(values: torch.Tensor) -> None:
    if values.sum() > 0:
        pass


SYNC = {"h2d": 0, "d2h": 0, "sync": 1}
FREE = {"h2d": 0, "d2h": 0, "sync": 0}
D2H = {"h2d": 0, "d2h": 1, "sync": 0}

ROWS = [
    Row("item", lambda t: t.item(), SYNC, "_local_scalar_dense_cuda: memcpy and sync", "scalar"),
    Row("__bool__ (an if)", _branch, SYNC, "is_nonzero -> item; PR #62092: `if y:` warns"),
    Row("__int__", int, SYNC, "item", "scalar"),
    Row("__float__", float, SYNC, "item", "scalar"),
    Row("__index__", operator.index, SYNC, "item", "scalar"),
    Row("tolist", lambda t: t.tolist(), D2H, "tensor_to_list copies the tensor to the CPU"),
    Row("cpu", lambda t: t.cpu(), D2H, "copy_ device-to-host"),
    Row("equal", lambda t: torch.equal(t, t + 0), SYNC, "cuda_equal: eq(self, src).all().item()"),
    Row("equal, sizes differ", lambda t: torch.equal(t, t[:2]), FREE, "cuda_equal compares sizes on the host"),
    Row("equal, empty", lambda t: torch.equal(t[:0], t[:0]), FREE, "cuda_equal: numel() == 0 is true"),
    Row("allclose", lambda t: torch.allclose(t, t + 0), SYNC, "allclose: isclose(...).all().item()"),
    Row("nonzero", lambda t: t.nonzero(), SYNC, "nonzero_cuda reads the count; PR #62092"),
    Row("where(cond)", lambda t: torch.where(t > 1), SYNC, "nonzero(as_tuple=True)"),
    Row("argwhere", torch.argwhere, SYNC, "nonzero"),
    Row("masked_select", torch.masked_select, SYNC, "the mask's nonzero", "mask"),
    Row("x[mask]", lambda t, mask: t[mask], SYNC, "index with a bool mask: nonzero", "mask"),
    Row("x[mask] = 0.0", lambda t, mask: t.__setitem__(mask, 0.0), FREE, "masked_fill; PR #62092", "mask"),
    Row("unique", torch.unique, SYNC, "_unique2_cuda reads the number of uniques"),
    Row("unique_consecutive", torch.unique_consecutive, SYNC, "reads the number of runs"),
    Row(
        "repeat_interleave(tensor repeats)",
        torch.repeat_interleave,
        {"h2d": 0, "d2h": 0, "sync": 2},
        "repeat_interleave_common: cumsum[-1].item() and (repeats >= 0).all().item()",
        "repeats",
    ),
    Row(
        "repeat_interleave(tensor repeats, output_size=)",
        lambda t, repeats: t.repeat_interleave(repeats, output_size=10),
        FREE,
        "repeat_interleave_common: output_size given",
        "repeats",
    ),
    Row("repeat_interleave(int)", lambda t: t.repeat_interleave(2), FREE, "expand and flatten"),
    Row("bincount", torch.bincount, {"h2d": 0, "d2h": 0, "sync": 2}, "reads min (sign check) and max", "counts"),
    Row("shape from data: zeros(t)", torch.zeros, SYNC, "__index__ -> item", "scalar"),
    Row("shape from data: arange(t)", torch.arange, SYNC, "the end's item", "scalar"),
    Row("shape from data: view(n, -1)", lambda t, n: t.view(n, -1), SYNC, "__index__ -> item", "values, scalar"),
    Row(
        "repr of a one-element integer tensor",
        repr,
        {"h2d": 0, "d2h": 1, "sync": 1},
        "_tensor_str: the width from f'{element}' (item), the text from tolist()",
        "one integer",
    ),
    Row(
        "tensor(data, device=)", lambda t: torch.tensor([1.0], device=t.device), {"h2d": 1, "d2h": 0, "sync": 0}, "copy"
    ),
    Row("tensor([], device=)", lambda t: torch.tensor([], device=t.device), FREE, "copy_ of no element: no memcpy"),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.op for row in ROWS])
def test_each_op_counts_what_cuda_counts(row: Row, emu: torch.device) -> None:
    inputs = _inputs(row.inputs, emu)
    with SyncCensus() as census:
        row.run(*inputs)
    assert census.result().counts == row.cuda, row.source


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("row", ROWS, ids=[row.op for row in ROWS])
def test_each_op_counts_the_same_in_a_cuda_profile(row: Row, tmp_path: Path) -> None:
    from bot.verify.census.cuda import run_cuda_census

    inputs = _inputs(row.inputs, torch.device("cuda"))
    census = run_cuda_census(lambda: row.run(*inputs), [Path(__file__).parent], tmp_path / "trace.json")
    assert census.counts == row.cuda, row.source
