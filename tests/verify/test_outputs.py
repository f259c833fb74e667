"""Outputs flatten to named CPU tensors; parity is their max and mean abs difference."""

from __future__ import annotations

import numpy
import torch

from bot.verify.running.outputs import compare, flatten_outputs


def test_nested_outputs_flatten_to_named_tensors() -> None:
    flat = flatten_outputs((torch.ones(2), [numpy.zeros(3, dtype=numpy.float32)], {"scale": 0.5}, None))
    assert sorted(flat) == ["output[0]", "output[1][0]", "output[2].scale"]
    assert flat["output[1][0]"].dtype == torch.float32


def test_equal_outputs_are_exact_even_with_nans() -> None:
    values = {"output": torch.tensor([1.0, float("nan")])}
    parity = compare(values, {"output": values["output"].clone()}, tolerance=0.0)
    assert (parity.exact, parity.passed, parity.max_abs_diff, parity.mean_abs_diff) == (True, True, 0.0, 0.0)


def test_bit_identity_fails_on_the_last_bit() -> None:
    before = {"output": torch.tensor([1.0, 2.0])}
    after = {"output": torch.tensor([1.0, torch.nextafter(torch.tensor(2.0), torch.tensor(3.0)).item()])}
    parity = compare(before, after, tolerance=0.0)
    assert (parity.exact, parity.passed, parity.detail) == (False, False, "differs in output")
    assert compare(before, after, tolerance=1e-4).passed


def test_max_and_mean_abs_diff_cover_every_tensor() -> None:
    parity = compare(
        {"a": torch.zeros(2), "b": torch.zeros(2)}, {"a": torch.tensor([0.0, 0.5]), "b": torch.zeros(2)}, 1.0
    )
    assert (parity.max_abs_diff, parity.mean_abs_diff, parity.passed) == (0.5, 0.125, True)


def test_a_different_structure_never_passes() -> None:
    parity = compare({"a": torch.zeros(2)}, {"a": torch.zeros(3)}, tolerance=1.0)
    assert (parity.passed, parity.detail) == (False, "a: torch.float32[2] vs torch.float32[3]")


def test_complex_outputs_compare_by_real_and_imaginary_parts() -> None:
    before = {"freqs": torch.polar(torch.ones(3), torch.tensor([0.0, 1.0, 2.0]))}
    assert compare(before, {"freqs": before["freqs"].clone()}, tolerance=0.0).exact
