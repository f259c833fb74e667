"""Walking an aten op's arguments and results: the emulated device does it for every op it runs.

An op's arguments are tensors and scalars in plain tuples, lists and a kwargs dict. torch's
pytree handles every registered container, at a cost of several Python calls per leaf that
made up a fifth of a pipeline step on the emulated device (AnimateDiff SDXL, 22k ops a call).
These walk the plain containers themselves and leave anything else (a named tuple, a
registered node) to pytree, so the result is the same as `tree_map`/`tree_leaves`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from torch.utils._pytree import tree_leaves, tree_map


def map_leaves(function: Callable[[Any], Any], value: Any) -> Any:
    """`tree_map(function, value)`."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind([map_leaves(function, item) for item in value])
    if kind is dict:
        return {key: map_leaves(function, item) for key, item in value.items()}
    if value is None or isinstance(value, (tuple, list, dict)):
        return tree_map(function, value)
    return function(value)


def leaves(value: Any) -> Iterator[Any]:
    """`tree_leaves(value)`, lazily."""
    kind = type(value)
    if kind is tuple or kind is list:
        for item in value:
            yield from leaves(item)
    elif kind is dict:
        for item in value.values():
            yield from leaves(item)
    elif value is None or isinstance(value, (tuple, list, dict)):
        yield from tree_leaves(value)
    else:
        yield value
