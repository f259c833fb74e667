"""Placement across calls in one file: a submodule's returned tuple, a helper's parameters placed from its callers,
a same-file function's returns (nested tuples too), a pipeline's `self.device`, and what an object of a same-file
class returns when called."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.placement.class_places import places_at, traced_places_at
from codemods.analysis.placement.place import Place
from codemods.source import SourceFile


def _placed(code: str, expression: str, line_text: str, traced: bool = False) -> Place:
    """The place of `expression` on the line holding `line_text`; `traced`: as a finding's placement field sees it."""
    source = SourceFile("snippet.py", textwrap.dedent(code))
    for node, ancestors in source.walk_lines(range(1, len(source.lines) + 1)):
        on_line = line_text in source.lines[getattr(node, "lineno", 1) - 1]
        if isinstance(node, ast.expr) and ast.unparse(node) == expression and on_line:
            places = (traced_places_at if traced else places_at)(source, ancestors)
            assert places is not None
            return places.place(node)
    raise AssertionError(f"{expression} not found")


MOE = """
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, dim))

    def forward(self, hidden_states):
        scores = torch.nn.functional.linear(hidden_states, self.weight).softmax(dim=-1)
        topk_weight, topk_idx = torch.topk(scores, k=2, dim=-1)
        return topk_idx, topk_weight, None


class MoE(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = Gate(dim)

    def forward(self, x):
        topk_idx, topk_weight, aux_loss = self.gate(x)
        return self.dispatch(x, topk_idx.view(-1))

    def dispatch(self, x, flat_indices):
        counts = flat_indices.bincount().cpu()
        return counts
"""


def test_topk_gives_its_indices_where_its_input_lives() -> None:
    assert _placed(MOE, "topk_idx", "return topk_idx", traced=True) is Place.DEVICE


def test_the_items_of_a_submodules_returned_tuple_live_where_its_forward_makes_them() -> None:
    assert _placed(MOE, "topk_idx", "self.dispatch(", traced=True) is Place.DEVICE


def test_an_item_the_submodule_returns_as_none_is_not_placed() -> None:
    assert _placed(MOE.replace("self.dispatch(x, topk_idx", "self.dispatch(x, aux_loss"), "aux_loss", "dispatch(x, aux") is (
        Place.UNKNOWN
    )


def test_a_helpers_parameter_lives_where_every_caller_in_the_class_puts_it() -> None:
    assert _placed(MOE, "flat_indices.bincount()", "counts =", traced=True) is Place.DEVICE


def test_a_helper_handed_on_as_a_value_is_not_placed_from_its_callers() -> None:
    handed_on = MOE.replace("        return counts\n", "        return counts\n\n    def hooks(self):\n        return [self.dispatch]\n")
    assert _placed(handed_on, "flat_indices.bincount()", "counts =") is Place.UNKNOWN


def test_a_helper_with_one_caller_passing_a_python_value_is_not_placed() -> None:
    mixed = MOE.replace("        return counts\n", "        return counts\n\n    def warm(self, x):\n        return self.dispatch(x, [0])\n")
    assert _placed(mixed, "flat_indices.bincount()", "counts =") is Place.UNKNOWN


VARLEN = """
import torch


def _normalize(mask: torch.Tensor, batch_size: int):
    if mask.ndim == 1:
        mask = mask.unsqueeze(0).expand(batch_size, -1)
    return mask


def _lengths(batch_size: int, mask: torch.Tensor, device: torch.device | None = None):
    query_lengths = torch.full((batch_size,), 4, dtype=torch.int32, device=device)
    key_lengths = mask.sum(dim=1, dtype=torch.int32)
    return (query_lengths, key_lengths), batch_size


def attend(key: torch.Tensor, mask: torch.Tensor, device: torch.device):
    mask = _normalize(mask, key.shape[0])
    (_, key_lengths), n = _lengths(key.shape[0], mask, device)
    kept = mask.flatten().nonzero()
    first = key[0, : key_lengths[0]]
"""


def test_a_same_file_function_returns_its_argument_where_the_caller_has_it() -> None:
    assert _placed(VARLEN, "mask", "kept =") is Place.DEVICE


def test_a_name_unpacked_from_a_nested_returned_tuple_is_placed() -> None:
    assert _placed(VARLEN, "key_lengths", "first =") is Place.DEVICE


def test_a_python_item_of_a_returned_tuple_is_not_a_device_value() -> None:
    assert _placed(VARLEN, "n", "(_, key_lengths), n") is not Place.DEVICE


def test_an_annotated_mask_handed_through_a_helper_stays_placed_by_its_annotation_only() -> None:
    assert _placed(VARLEN, "mask", "kept =", traced=True) is Place.UNKNOWN


PIPELINE = """
import torch


class Pipe(DiffusionPipeline):
    def __init__(self, unet, scheduler):
        self.register_modules(unet=unet, scheduler=scheduler)

    def __call__(self, shape):
        guidance = torch.zeros(shape, device=self.device)
        return guidance


class Helper:
    def run(self, shape):
        buffer = torch.zeros(shape, device=self.device)
        return buffer
"""


def test_a_pipelines_own_device_is_the_accelerator() -> None:
    assert _placed(PIPELINE, "guidance", "return guidance", traced=True) is Place.DEVICE


def test_the_device_of_a_class_that_registers_no_models_is_not_known() -> None:
    assert _placed(PIPELINE, "buffer", "return buffer") is Place.UNKNOWN


SMOOTHING = """
import torch
import torch.nn.functional as F


class Smoothing:
    def __init__(self, device):
        self.weight = torch.ones(1, 1, 3, 3).to(device)

    def __call__(self, input):
        return F.conv2d(input, weight=self.weight.to(input.dtype))


class MovableSmoothing:
    def __init__(self, device):
        self.weight = torch.ones(1, 1, 3, 3).to(device)

    def __call__(self, input):
        return F.conv2d(input, weight=self.weight)

    def move(self, device):
        self.weight = self.weight.to(device)


class InheritedSmoothing(Base):
    def __init__(self, device):
        self.weight = torch.ones(1, 1, 3, 3).to(device)

    def __call__(self, input):
        return F.conv2d(input, weight=self.weight)


class Doubling:
    def __call__(self, input: torch.Tensor):
        return input * 2


class Pipe(DiffusionPipeline):
    def __init__(self, unet):
        self.register_modules(unet=unet)

    def __call__(self, maps):
        self.smoothing = Smoothing(self.device)
        self.movable = MovableSmoothing(self.device)
        self.inherited = InheritedSmoothing(self.device)
        self.doubling = Doubling()
        smoothed = self.smoothing(maps)
        moved = self.movable(maps)
        inherited = self.inherited(maps)
        doubled = self.doubling(maps)
        return smoothed, moved, inherited, doubled
"""


def test_a_called_object_of_a_same_file_class_returns_where_its_call_computes() -> None:
    # `maps` is not placed: the convolution's output lives where the weight `__init__` moved to the device does.
    assert _placed(SMOOTHING, "smoothed", "return smoothed", traced=True) is Place.DEVICE


def test_a_helper_attribute_another_method_reassigns_is_not_placed_from_init() -> None:
    assert _placed(SMOOTHING, "moved", "return smoothed") is Place.UNKNOWN


def test_a_helper_attribute_is_not_placed_from_init_where_a_base_class_may_reassign_it() -> None:
    assert _placed(SMOOTHING, "inherited", "return smoothed") is Place.UNKNOWN


def test_a_called_helper_whose_result_rests_on_an_annotation_is_not_placed_for_a_finding() -> None:
    assert _placed(SMOOTHING, "doubled", "return smoothed", traced=True) is Place.UNKNOWN
