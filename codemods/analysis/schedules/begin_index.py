"""Where DIF005 sets a scheduler's begin index: which schedulers a pipeline class already sets it for, and
the statement before which `set_begin_index(0)` goes (the loop, or the `with` that holds it)."""

from __future__ import annotations

import ast

from codemods.node_index import method_calls_within, nodes_within
from codemods.source import dotted_name


def begin_index_set(cls: ast.ClassDef) -> set[str] | None:
    """The schedulers whose begin index the class sets itself; None when it sets one it does not name
    (`scheduler.set_begin_index(...)` on a helper's parameter, which may be any of them)."""
    handled: set[str] = set()
    parameters = {a.arg for n in nodes_within(cls, ast.arguments) for a in (*n.args, *n.kwonlyargs)}
    for node in method_calls_within(cls, "set_begin_index"):
        if isinstance(node.func, ast.Attribute):
            receiver = dotted_name(node.func.value)
            if receiver is None or receiver in parameters:
                return None
            handled.add(receiver)
    return handled


def begin_index_anchor(method: ast.FunctionDef, loop: ast.For) -> ast.stmt | None:
    """The statement to insert before: the loop, or the `with self.progress_bar(...)` that holds it, where
    what the `with` runs before the loop leaves the schedulers alone (CogVideoX-Fun sets
    `old_pred_original_sample = None` there): diffusers sets the begin index before the `with`."""
    for node in nodes_within(method, ast.stmt):
        for block in _blocks(node):
            for statement in block:
                if statement is loop:
                    return statement
                if isinstance(statement, ast.With | ast.AsyncWith) and loop in statement.body:
                    before = statement.body[: statement.body.index(loop)]
                    return statement if not any(map(_touches_a_scheduler, before)) else loop
    return None


def _touches_a_scheduler(statement: ast.stmt) -> bool:
    return any(
        "scheduler" in (node.id if isinstance(node, ast.Name) else node.attr)
        for node in nodes_within(statement, ast.Name | ast.Attribute)
    )


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    return [
        getattr(node, field)
        for field in ("body", "orelse", "finalbody")
        if isinstance(getattr(node, field, None), list)
    ]
