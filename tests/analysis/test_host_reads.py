"""What makes the host read a tensor: the shapes DIF002 and DIF007 look for."""

from __future__ import annotations

import ast

from codemods.analysis.placement.host_reads import host_reads


def _reads(statement: str) -> list[tuple[str, str]]:
    tree = ast.parse(statement)
    return [(read.kind, ast.unparse(read.operand)) for node in ast.walk(tree) for read in host_reads(node)]


def test_a_comparison_in_an_if_reads_both_sides() -> None:
    assert _reads("if t < boundary:\n    pass\n") == [("compare", "t"), ("compare", "boundary")]


def test_a_comparison_outside_a_condition_reads_nothing() -> None:
    assert _reads("mask = t < boundary\n") == []


def test_identity_and_membership_tests_read_nothing() -> None:
    assert _reads("if x is None or key in d:\n    pass\n") == []


def test_a_truth_test_reads_its_value() -> None:
    assert _reads("if mask.any():\n    pass\n") == [("truth", "mask.any()")]


def test_item_tolist_cpu_and_conversions_read_their_operand() -> None:
    assert _reads("a = x.item()") == [("item", "x")]
    assert _reads("a = x.tolist()") == [("tolist", "x")]
    assert _reads("a = x.to('cpu')") == [("cpu", "x")]
    assert _reads("a = int(t)") == [("int", "t")]


def test_numpy_after_cpu_counts_once() -> None:
    assert _reads("a = x.cpu().numpy()") == [("cpu", "x")]


def test_nonzero_and_a_mask_index_have_data_dependent_sizes() -> None:
    assert _reads("i = torch.nonzero(m)") == [("nonzero", "m")]
    assert _reads("y = x[mask]") == [("mask", "mask")]


def test_a_masked_fill_reads_nothing() -> None:
    assert _reads("x[mask] = 0.0") == []


def test_torch_tensor_reads_the_values_inside_its_literal() -> None:
    assert _reads("x = torch.tensor([t] * n, device=device)") == [("tensor", "t")]


def test_a_slice_bound_that_is_a_name_is_read() -> None:
    # `key[b, :valid_len]`: Python turns the bound into an int (`__index__`), a sync for a device tensor.
    assert _reads("key[b, :valid_len]\n") == [("bound", "valid_len")]


def test_literal_slice_bounds_and_a_plain_index_read_nothing() -> None:
    assert _reads("x[:, 1:-1]\ny = x[i]\n") == []
