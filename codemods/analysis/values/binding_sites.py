"""What binds a name in one function, and to what: parameters, assignments, loop targets, imports.

The syntax half of `FunctionBindings` (codemods.analysis.values.bindings), which works out which of
these bindings reach a use. A binding records how its value relates to the name (the value
itself, an element of it, an item of a tuple it unpacks), so that what holds the name can be
worked out from the value later.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.node_index import nodes_within
from codemods.source import dotted_name, local_or_self_name

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Tuples, not `A | B`: a union is built again each time the expression runs (for every statement of every function).
_TESTED_LOOPS = (ast.If, ast.While)
_FOR_LOOPS = (ast.For, ast.AsyncFor)
_WITHS = (ast.With, ast.AsyncWith)
_IMPORTS = (ast.Import, ast.ImportFrom)


# Not frozen, though nothing changes one once made: a frozen dataclass sets each field through `object.__setattr__`,
# five times slower to build, and an analysis builds one for every parameter and assignment of every function.
@dataclass(eq=False, slots=True)
class Binding:
    """`name` bound by `owner` (a statement, a comprehension, or the function for a parameter).

    kind: "value" (to `value`), "element" (an element of `value`, a loop's iterable), "item"
    (item `position` of `value`, `a, b = value`), "augmented" (`name op= value`), "parameter"
    (`argument`), "python" (not a tensor: an import, an `except ... as e`), "unknown".
    """

    name: str
    owner: ast.AST
    kind: str
    value: ast.expr | None = None
    position: int = 0
    operator: ast.operator | None = None
    argument: ast.arg | None = None
    path: tuple[int, ...] = ()  # positions inside item `position`: `(_, b), c = f()` binds `b` at 0, path (1,)


def bindings_by_name(function: Function, statements: list[ast.AST]) -> dict[str, list[Binding]]:
    """The bindings of each name: `function`'s parameters, then those made by `statements` (its own), in that order."""
    found: dict[str, list[Binding]] = {}

    def add(binding: Binding) -> None:
        found.setdefault(binding.name, []).append(binding)

    arguments = function.args
    for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        add(Binding(argument.arg, function, "parameter", argument=argument))
    for argument in (arguments.vararg, arguments.kwarg):
        if argument is not None:
            add(Binding(argument.arg, function, "python"))
    walruses = bool(nodes_within(function, ast.NamedExpr))  # rare: one look instead of one per `if` and `while`
    for node in statements:
        if walruses and isinstance(node, _TESTED_LOOPS):
            # The one place diffusers binds with `:=` (statements are walked, not expressions).
            for walrus in nodes_within(node.test, ast.NamedExpr):
                _bind(walrus.target, node, "value", walrus.value, add)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, node, "value", node.value, add)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind(node.target, node, "value", node.value, add)
        elif isinstance(node, ast.AugAssign):
            name = local_or_self_name(node.target)
            if name:
                add(Binding(name, node, "augmented", node.value, operator=node.op))
        elif isinstance(node, _FOR_LOOPS):
            _bind_loop(node.target, node.iter, node, add)
        elif isinstance(node, _WITHS):
            for item in node.items:
                if item.optional_vars is not None:
                    _bind(item.optional_vars, node, "unknown", None, add)
        elif isinstance(node, _IMPORTS):
            for alias in node.names:
                add(Binding((alias.asname or alias.name).split(".")[0], node, "python"))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(Binding(node.name, node, "python"))
    return found


def comprehension_bindings(name: str, chain: list[ast.AST]) -> list[Binding]:
    """Bindings of `name` by the comprehensions a use sits in."""
    found: list[Binding] = []

    def add(binding: Binding) -> None:
        if binding.name == name:
            found.append(binding)

    for node in reversed(chain):
        if isinstance(node, _COMPREHENSIONS):
            for generator in node.generators:
                _bind_loop(generator.target, generator.iter, generator, add)
    return found


def _bind(target: ast.expr, owner: ast.AST, kind: str, value: ast.expr | None, add) -> None:
    name = local_or_self_name(target)
    if name is not None:
        add(Binding(name, owner, kind, value))
    elif isinstance(target, ast.Tuple | ast.List):
        items = value.elts if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts) else None
        for position, element in enumerate(target.elts):
            if isinstance(element, ast.Starred):
                _bind(element.value, owner, "unknown", None, add)
            elif items is not None:
                _bind(element, owner, kind, items[position], add)
            elif value is not None and kind == "value":
                _bind_item(element, owner, value, (position,), add)
            else:
                _bind(element, owner, "unknown", None, add)
    elif isinstance(target, ast.Starred):
        _bind(target.value, owner, "unknown", None, add)


def _bind_item(target: ast.expr, owner: ast.AST, value: ast.expr, path: tuple[int, ...], add) -> None:
    """`target`, the item at `path` of the tuple `value` gives: a name, or a tuple of them unpacked further."""
    name = local_or_self_name(target)
    if name is not None:
        add(Binding(name, owner, "item", value, position=path[0], path=path[1:]))
    elif isinstance(target, ast.Tuple | ast.List) and not any(isinstance(e, ast.Starred) for e in target.elts):
        for position, element in enumerate(target.elts):
            _bind_item(element, owner, value, (*path, position), add)
    else:
        _bind(target, owner, "unknown", None, add)


def _bind_loop(target: ast.expr, iterable: ast.expr, owner: ast.AST, add) -> None:
    function = dotted_name(iterable.func) if isinstance(iterable, ast.Call) else None
    if function == "enumerate" and iterable.args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        _bind(target.elts[0], owner, "python", None, add)
        _bind_loop(target.elts[1], iterable.args[0], owner, add)
    elif function == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args):
        for element, source in zip(target.elts, iterable.args):
            _bind_loop(element, source, owner, add)
    elif local_or_self_name(target) is not None:
        add(Binding(local_or_self_name(target), owner, "element", iterable))  # type: ignore[arg-type]
    else:
        _bind(target, owner, "unknown", None, add)
