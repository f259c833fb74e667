"""A function's calls, assignments and bound names, from one walk of its body.

What a model's `__init__` builds, stacks and appends (`model_graph`, `block_lists`) and which locals of a
pipeline's denoising method hold a component (`denoisers`) are read from these three kinds of node alone.
Each of those questions used to walk the whole function again (five walks of every `__init__`); one walk
per function, memoized with the file's other analyses, answers them all.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.source import SourceFile, child_nodes

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
    """`function`'s nodes by kind, walked once per file however many analyses ask."""
    return source.memo(f"function_nodes:{id(function)}", lambda: _walked(function))


def _walked(function: Function) -> FunctionNodes:
    calls: list[ast.Call] = []
    assigns: list[ast.Assign] = []
    bound: list[ast.Name] = []
    order: list[ast.AST] = [function]
    for node in order:  # breadth first, as `ast.walk` goes: the list grows behind the loop
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Assign):
            assigns.append(node)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.append(node)
        order.extend(child_nodes(node))
    return FunctionNodes(function, tuple(calls), tuple(assigns), tuple(bound))
