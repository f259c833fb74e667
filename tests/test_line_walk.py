"""`walk_lines` visits, on a real diffusers module, exactly the nodes a test of every node's lines would keep,
in the same order, while it bisects long blocks of statements instead."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from codemods.line_walk import spans_a_line
from codemods.project.index import installed_diffusers
from codemods.source import SourceFile, child_nodes


@pytest.fixture(scope="module")
def scheduler() -> SourceFile:
    path = installed_diffusers() / "schedulers" / "scheduling_ddim.py"
    return SourceFile(str(path), path.read_text(), "diffusers.schedulers.scheduling_ddim")


def _every_node_tested(tree: ast.AST, wanted: list[int]) -> Iterator[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """The walk `walk_lines` stands for: every child tested against the lines (none skipped below a one-line node)."""
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, ancestors = stack.pop()
        yield node, ancestors
        children = [child for child in child_nodes(node) if spans_a_line(child, wanted)]
        stack += [(child, (*ancestors, node)) for child in reversed(children)]


@pytest.mark.parametrize(
    "pick",
    [
        lambda count: [count // 2],  # one line: blocks bisected
        lambda count: [1, 40, 41, 200, count - 3],  # a few, some in one statement
        lambda count: list(range(1, count + 1, 2)),  # more lines than statements: tested one by one
        lambda count: [9, 10, 11] + list(range(300, count, 7)),  # blank lines and comments among them
    ],
    ids=["one", "few", "many", "between"],
)
def test_walk_lines_visits_the_nodes_a_test_of_every_node_keeps_in_order(scheduler: SourceFile, pick) -> None:
    wanted = sorted(set(pick(len(scheduler.lines))))
    walked = [(node, len(ancestors)) for node, ancestors in scheduler.walk_lines(wanted)]
    tested = [(node, len(ancestors)) for node, ancestors in _every_node_tested(scheduler.tree, wanted)]
    assert [(id(node), depth) for node, depth in walked] == [(id(node), depth) for node, depth in tested]
