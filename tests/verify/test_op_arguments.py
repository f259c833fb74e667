"""The emulated device's own walk over op arguments gives what torch's pytree gives."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import pytest
import torch
from torch.utils._pytree import tree_leaves, tree_map

from bot.verify.census.op_arguments import leaves, map_leaves

Pair = namedtuple("Pair", "first second")

STRUCTURES = [
    torch.ones(2),
    None,
    3,
    (torch.ones(1), 2.0, None, [torch.zeros(3), torch.float16]),
    ([], (), {}),
    ({"out": torch.ones(2), "dim": [0, 1]},),
    ((torch.ones(1), {"nested": (torch.zeros(1), None)}), {"device": torch.device("cpu")}),
    Pair(torch.ones(1), [torch.zeros(1), 5]),
    OrderedDict(a=torch.ones(1), b=(2, None)),
    torch.return_types.max((torch.ones(1), torch.zeros(1, dtype=torch.long))),
]


def _mark(value: object) -> object:
    return ("leaf", value.shape if isinstance(value, torch.Tensor) else value)


@pytest.mark.parametrize("structure", STRUCTURES, ids=lambda s: type(s).__name__)
def test_map_leaves_is_tree_map(structure: object) -> None:
    ours, torchs = map_leaves(_mark, structure), tree_map(_mark, structure)
    assert ours == torchs
    assert type(ours) is type(torchs)


@pytest.mark.parametrize("structure", STRUCTURES, ids=lambda s: type(s).__name__)
def test_leaves_are_tree_leaves(structure: object) -> None:
    ours, torchs = list(leaves(structure)), tree_leaves(structure)
    assert len(ours) == len(torchs)
    assert all(a is b for a, b in zip(ours, torchs, strict=True))


def test_containers_are_rebuilt_not_shared() -> None:
    arguments = ([torch.ones(1)], {"k": [1]})
    mapped = map_leaves(lambda value: value, arguments)
    assert mapped == arguments
    assert mapped[0] is not arguments[0] and mapped[1]["k"] is not arguments[1]["k"]
