"""Where a node sits: the class and method that hold it, and the functions its module defines."""

from __future__ import annotations

import ast

from codemods.source import Ancestors


def method_owner(ancestors: Ancestors) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    """The innermost class whose method (taking `self`) holds the node."""
    for position in range(len(ancestors) - 2, -1, -1):
        cls, method = ancestors[position], ancestors[position + 1]
        if isinstance(cls, ast.ClassDef) and isinstance(method, ast.FunctionDef):
            arguments = method.args.posonlyargs + method.args.args
            return (cls, method) if arguments and arguments[0].arg == "self" else None
    return None


def module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
