"""Outputs as named CPU tensors, and their parity between the two trees."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch


def flatten_outputs(value: Any, name: str = "output") -> dict[str, torch.Tensor]:
    """Every tensor in `value` (tensors, arrays, images, scalars; nested in tuples, lists, dicts, outputs)."""
    found: dict[str, torch.Tensor] = {}
    _collect(value, name, found)
    return found


def _collect(value: Any, name: str, found: dict[str, torch.Tensor]) -> None:
    if isinstance(value, torch.Tensor):
        found[name] = value.detach().cpu().clone()
    elif isinstance(value, dict):  # BaseOutput is an OrderedDict
        for key, item in value.items():
            _collect(item, f"{name}.{key}", found)
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _collect(item, f"{name}[{position}]", found)
    elif isinstance(value, (bool, int, float)):
        found[name] = torch.tensor(value)
    elif type(value).__module__ == "numpy" or hasattr(value, "__array_interface__"):
        import numpy

        found[name] = torch.from_numpy(numpy.array(value))


@dataclass(frozen=True)
class Parity:
    max_abs_diff: float | None  # None: nothing comparable
    mean_abs_diff: float | None
    exact: bool  # every tensor equal, element for element, NaN where NaN
    tolerance: float  # 0.0 (and no ulps): exactly equal required
    passed: bool
    detail: str  # what differed, if anything
    ulps: int = 0  # > 0: each output within this many ulp of its dtype, relative to its largest magnitude
    rule: str = ""  # the parity required, and why (see verdict.parity_rule)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_abs_diff": self.max_abs_diff,
            "mean_abs_diff": self.mean_abs_diff,
            "exact": self.exact,
            "tolerance": self.tolerance,
            "ulps": self.ulps,
            "rule": self.rule,
            "passed": self.passed,
            "detail": self.detail,
        }


def compare(
    before: dict[str, torch.Tensor], after: dict[str, torch.Tensor], tolerance: float, ulps: int = 0, rule: str = ""
) -> Parity:
    """Max and mean abs difference over every output tensor; `tolerance` 0 asks for equality.

    With `ulps`, each output may differ by that many ulp of its dtype at its largest magnitude
    (integers and booleans must be equal).
    """
    parity = _compare(before, after, tolerance, ulps)
    return replace(parity, ulps=ulps, rule=rule)


def _compare(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor], tolerance: float, ulps: int) -> Parity:
    if before.keys() != after.keys():
        missing = sorted(set(before) ^ set(after))
        return Parity(None, None, False, tolerance, False, f"outputs differ in structure: {', '.join(missing[:5])}")
    if not before:
        return Parity(None, None, False, tolerance, False, "the target returned no tensor to compare")
    worst, total, count, exact, details, within_ulps = 0.0, 0.0, 0, True, [], True
    for name in before:
        a, b = before[name], after[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return Parity(
                None, None, False, tolerance, False, f"{name}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
            )
        if not torch.equal(a, b) and not _equal_with_nans(a, b):
            exact = False
            details.append(name)
        if a.numel() == 0:
            continue
        a_values, b_values = _as_float(a), _as_float(b)
        difference = torch.where(a_values.isnan() & b_values.isnan(), 0.0, (a_values - b_values).abs())
        largest = difference.max().item()
        worst = max(worst, largest)
        total += difference.sum().item()
        count += difference.numel()
        if ulps:
            within_ulps = within_ulps and largest <= _ulps_at(a, a_values, ulps)
    mean = total / count if count else 0.0
    if ulps:
        passed = exact or within_ulps  # a NaN difference fails the comparison
    else:
        passed = exact if tolerance == 0 else (worst <= tolerance)
    detail = "" if exact else f"differs in {', '.join(details[:5])}"
    return Parity(worst, mean, exact, tolerance, passed, detail)


def _ulps_at(tensor: torch.Tensor, values: torch.Tensor, ulps: int) -> float:
    """`ulps` units in the last place of `tensor`'s dtype at its largest finite magnitude; 0 for integers."""
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return 0.0
    dtype = tensor.real.dtype if tensor.is_complex() else tensor.dtype
    finite = values[values.isfinite()].abs()
    largest = max(finite.max().item() if finite.numel() else 0.0, torch.finfo(dtype).tiny)
    return ulps * torch.finfo(dtype).eps * 2.0 ** (math.frexp(largest)[1] - 1)  # the spacing of floats there


def _as_float(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_complex():
        return torch.view_as_real(tensor).double()
    return tensor.double()


def _equal_with_nans(a: torch.Tensor, b: torch.Tensor) -> bool:
    if not (a.is_floating_point() or a.is_complex()):
        return False
    return bool(torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(), b.nan_to_num()))
