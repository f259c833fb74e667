"""A function's calls, assignments and bound names, read off the file's node index.

What a model's `__init__` builds, stacks and appends (`model_graph`, `block_lists`) is read from these three
kinds of node alone.
Each of those questions used to walk the whole function again (five walks of every `__init__`); the
index (`nodes_within`) answers them without a walk, memoized with the file's other analyses.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.node_index import in_walk_order, nodes_within
from codemods.source import SourceFile

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class FunctionNodes:
    """The nodes of `function` (nested functions and classes included, as `ast.walk` meets them), in
    `ast.walk`'s order: what is found first stays first in every list built from them."""

    function: Function
    calls: tuple[ast.Call, ...]
    assigns: tuple[ast.Assign, ...]
    bound_names: tuple[ast.Name, ...]  # names in a `Store` or `Del` context (targets of any binding)


def function_nodes(source: SourceFile, function: Function) -> FunctionNodes:
    """`function`'s nodes by kind, found once per file however many analyses ask."""
    return source.memo(f"function_nodes:{id(function)}", lambda: _walked(function))


def _walked(function: Function) -> FunctionNodes:
    bound = [name for name in nodes_within(function, ast.Name) if not isinstance(name.ctx, ast.Load)]
    return FunctionNodes(
        function,
        tuple(nodes_within(function, ast.Call, breadth_first=True)),
        tuple(nodes_within(function, ast.Assign, breadth_first=True)),
        tuple(in_walk_order(bound)),
    )
