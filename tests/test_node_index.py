"""The per-file node index answers what `ast.walk` answered, on a real diffusers module, without walking again."""

from __future__ import annotations

import ast

import pytest

from codemods.node_index import (
    NodeIndex,
    in_walk_order,
    indexed,
    method_calls_within,
    names_within,
    nodes_within,
    parent_of,
)
from codemods.project.index import installed_diffusers
from codemods.source import SourceFile

_SHARED = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


@pytest.fixture(scope="module")
def scheduler() -> SourceFile:
    path = installed_diffusers() / "schedulers" / "scheduling_ddim.py"
    return SourceFile(str(path), path.read_text(), "diffusers.schedulers.scheduling_ddim")


def _walked(node: ast.AST, kind: type[ast.AST] | tuple[type[ast.AST], ...]) -> list[ast.AST]:
    return [n for n in ast.walk(node) if isinstance(n, kind) and not isinstance(n, _SHARED)]


def _children(node: ast.AST) -> list[ast.AST]:
    return [child for child in ast.iter_child_nodes(node) if not isinstance(child, _SHARED)]


def _methods(source: SourceFile) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(source.tree) if isinstance(n, ast.FunctionDef)]


def test_nodes_of_a_kind_in_each_method_are_those_ast_walk_finds_in_source_order(scheduler: SourceFile) -> None:
    for method in _methods(scheduler):
        found = nodes_within(method, ast.Call)
        assert {id(n) for n in found} == {id(n) for n in _walked(method, ast.Call)}
        assert found == sorted(found, key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0)))


def test_a_base_class_kind_finds_every_subclass_instance(scheduler: SourceFile) -> None:
    kinds = (ast.stmt, ast.expr, ast.Assign | ast.AugAssign, ast.AST)
    for method in _methods(scheduler):
        for kind in kinds:
            assert {id(n) for n in nodes_within(method, kind)} == {id(n) for n in _walked(method, kind)}


def test_breadth_first_order_is_ast_walks_order(scheduler: SourceFile) -> None:
    for method in _methods(scheduler):
        assert nodes_within(method, ast.expr, breadth_first=True) == _walked(method, ast.expr)


def test_names_and_method_calls_are_looked_up_by_what_they_spell(scheduler: SourceFile) -> None:
    step = next(m for m in _methods(scheduler) if m.name == "step")
    assert (
        names_within(step, "model_output") == [n for n in nodes_within(step, ast.Name) if n.id == "model_output"] != []
    )
    assert method_calls_within(step, "to") == [
        n for n in nodes_within(step, ast.Call) if isinstance(n.func, ast.Attribute) and n.func.attr == "to"
    ]


def test_parent_of_a_node_is_the_node_holding_it(scheduler: SourceFile) -> None:
    for node in _walked(scheduler.tree, ast.AST):
        for child in _children(node):
            assert parent_of(child) is node
    assert parent_of(scheduler.tree) is None


def test_a_files_nodes_lead_to_the_index_built_with_its_tree(scheduler: SourceFile) -> None:
    assert all(indexed(method) is scheduler.index for method in _methods(scheduler))


def test_a_files_index_is_built_when_a_node_of_it_is_first_asked_about(scheduler: SourceFile) -> None:
    source = SourceFile(scheduler.path, scheduler.text, scheduler.module)
    method = next(n for n in source.tree.body[-1].body if isinstance(n, ast.FunctionDef))  # type: ignore[attr-defined]
    assert "index" not in vars(source)
    assert nodes_within(method, ast.FunctionDef) == [method]
    assert indexed(method) is vars(source)["index"]


def test_a_tree_parsed_apart_gets_its_own_index() -> None:
    expression = ast.parse("a.to(b) + c(d)", mode="eval")
    assert [n.id for n in nodes_within(expression, ast.Name)] == ["a", "b", "c", "d"]
    assert in_walk_order(nodes_within(expression, ast.Name)) == _walked(expression, ast.Name)


def test_a_tree_deeper_than_the_recursion_limit_is_indexed_all_the_same() -> None:
    chain = ast.parse("x = " + " + ".join(["a"] * 2500))
    assert len(nodes_within(chain, ast.Name)) == 2501


def test_a_subtree_indexed_again_leads_to_the_newest_index_and_back_to_the_files_when_that_dies(
    scheduler: SourceFile,
) -> None:
    method = _methods(scheduler)[-1]
    call = nodes_within(method, ast.Call)[0]
    apart = NodeIndex(method)  # numbers the method's nodes again, from 0
    assert indexed(call) is apart
    assert apart.parent(method) is None
    assert in_walk_order(nodes_within(method, ast.Call)) == _walked(method, ast.Call)
    del apart
    assert indexed(method) is not scheduler.index  # its nodes' positions are the dead index's: a new one answers
    assert parent_of(method) is None


def test_every_node_of_real_modules_leads_to_its_files_index_at_its_own_place() -> None:
    for name in ("models/attention_processor.py", "pipelines/pipeline_utils.py"):
        path = installed_diffusers() / name
        source = SourceFile(str(path), path.read_text())
        walked = _walked(source.tree, ast.AST)
        assert all(indexed(node) is source.index for node in walked)
        assert nodes_within(source.tree, ast.AST, breadth_first=True) == walked
        assert all(parent_of(child) is node for node in walked for child in _children(node))
