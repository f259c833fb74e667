"""A function's calls, assignments and bound names, read off the file's node index.

What a model's `__init__` builds, stacks and appends (`model_graph`, `block_lists`) is read from these three
kinds of node alone.
Each of those questions used to walk the whole function again (five walks of every `__init__`); the
index (`nodes_within`) answers them without a walk, memoized with the file's other analyses.
"""

from __future__ import annotations

import ast
from functools import cached_property

from codemods.node_index import in_walk_order, nodes_within
from codemods.source import SourceFile

Function = ast.FunctionDef | ast.AsyncFunctionDef


class FunctionNodes:
    """The nodes of `function` (nested functions and classes included, as `ast.walk` meets them), in
    `ast.walk`'s order: what is found first stays first in every list built from them. The assignments and bound
    names are found only when asked: most `__init__`s append to no block list, the one question that reads them."""

    def __init__(self, function: Function) -> None:
        self.function = function
        self.calls: tuple[ast.Call, ...] = tuple(nodes_within(function, ast.Call, breadth_first=True))

    @cached_property
    def assigns(self) -> tuple[ast.Assign, ...]:
        return tuple(nodes_within(self.function, ast.Assign, breadth_first=True))

    @cached_property
    def bound_names(self) -> tuple[ast.Name, ...]:
        """Names in a `Store` or `Del` context (targets of any binding)."""
        return tuple(
            in_walk_order([n for n in nodes_within(self.function, ast.Name) if not isinstance(n.ctx, ast.Load)])
        )


def function_nodes(source: SourceFile, function: Function) -> FunctionNodes:
    """`function`'s nodes by kind, found once per file however many analyses ask."""
    return source.memo(f"function_nodes:{id(function)}", lambda: FunctionNodes(function))
