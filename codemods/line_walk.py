"""Walking a tree on some lines only: which nodes hold a wanted line, without testing every node there is.

`SourceFile.walk_lines` (a rule's second pass, on the lines its regex found) asks this of every node it enters.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator

from codemods.node_index import CHILD_FIELDS, Kind, NodeIndex

# The nodes that may have decorators (tested by class: looking the field up on every other node fails, and slowly).
DECORATED = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def spans_a_line(node: ast.AST, wanted: list[int]) -> bool:
    """Whether `node`'s lines (decorators included) hold one of `wanted` (sorted)."""
    start = getattr(node, "lineno", None)
    if start is None:  # arguments, comprehensions... have no position: look inside
        return True
    if node.__class__ in DECORATED and node.decorator_list:  # type: ignore[attr-defined]
        start = node.decorator_list[0].lineno  # type: ignore[attr-defined] (decorators come first, in source order)
    end = node.end_lineno or start
    first_at_or_after = bisect.bisect_left(wanted, start)
    return first_at_or_after < len(wanted) and wanted[first_at_or_after] <= end


def signature_on_lines(function: ast.AST, wanted: list[int]) -> bool:
    """Whether one of `wanted` (sorted) lies from `function`'s `def` (or `lambda`) to its body's first line, where its
    parameters lie: their `arguments` have no position, and a walk would otherwise test each of them."""
    body = function.body  # type: ignore[attr-defined]
    end = body[0].lineno if body.__class__ is list else body.lineno
    first_at_or_after = bisect.bisect_left(wanted, function.lineno)  # type: ignore[attr-defined]
    return first_at_or_after < len(wanted) and wanted[first_at_or_after] <= end


def children_on_lines(node: ast.AST, wanted: list[int]) -> list[ast.AST]:
    """`child_nodes(node)` whose lines hold one of `wanted` (sorted), in the same order; a long block of statements
    is bisected for them, not tested statement by statement (a function's body against one wanted line)."""
    children: list[ast.AST] = []
    for name in CHILD_FIELDS[node.__class__]:
        value = getattr(node, name, None)
        if value.__class__ is list:
            if len(value) > _BISECTED_BLOCK and isinstance(value[0], ast.stmt):
                children += _statements_on_lines(value, wanted)
            else:
                children += [item for item in value if isinstance(item, ast.AST) and spans_a_line(item, wanted)]
        elif isinstance(value, ast.AST) and spans_a_line(value, wanted):
            children.append(value)
    return children


_BISECTED_BLOCK = 8  # statements: below this, testing each is as cheap


def _statements_on_lines(block: list[ast.stmt], wanted: list[int]) -> list[ast.stmt]:
    """The statements of `block` whose lines hold one of `wanted` (sorted), in order. A block's statements follow
    each other: their first and last lines never decrease (`a = 1; b = 2` share theirs)."""
    lines = wanted[
        bisect.bisect_left(wanted, first_line(block[0])) : bisect.bisect_right(wanted, block[-1].end_lineno or 0)
    ]
    if len(lines) >= len(block):
        return [statement for statement in block if spans_a_line(statement, wanted)]
    found: list[ast.stmt] = []
    start, last = 0, -1
    for line in lines:
        start = bisect.bisect_left(block, line, start, key=_last_line)  # the first statement not over before `line`
        index = start
        while index < len(block) and first_line(block[index]) <= line:
            if index > last:
                found.append(block[index])
                last = index
            index += 1
    return found


def first_line(statement: ast.stmt) -> int:
    """Where `statement` starts, its decorators included (as `spans_a_line` counts it)."""
    if statement.__class__ in DECORATED and statement.decorator_list:  # type: ignore[attr-defined]
        return statement.decorator_list[0].lineno  # type: ignore[attr-defined]
    return statement.lineno


def _last_line(statement: ast.stmt) -> int:
    return statement.end_lineno or statement.lineno


def nodes_below(
    index: NodeIndex, node: ast.AST, ancestors: tuple[ast.AST, ...], kinds: Kind[ast.AST]
) -> Iterator[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """The nodes of `kinds` under `node` (its ancestors: `ancestors`), each with its ancestors, in preorder: what a walk
    of `node`'s whole subtree yields of them, without stepping on every name and constant of it."""
    above = (*ancestors, node)
    for found in index.nodes(kinds, node):
        if found is node:
            continue
        between = []
        parent = index.parent(found)
        while parent is not node:
            between.append(parent)
            parent = index.parent(parent)  # type: ignore[arg-type] (`node` holds `found`: its parents lead to it)
        yield found, (*above, *reversed(between))
