"""Which assignments of a local name can reach a given use of it, in one function.

Scheduler and pipeline code reuses names across types (`sigmas` is a NumPy array, then a
tensor on the device; `timesteps` is a parameter list, then the scheduler's device tensor), so
a flow-insensitive view ("everything ever assigned to it") says nothing useful. This is a cheap
structural approximation of reaching definitions, good for straight-line code with branches and
loops: the last assignment before the use in a block that encloses it wins; assignments after
that one in branches (which may or may not run), and assignments later in an enclosing loop
(which reach around the back edge), are added to it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

from codemods.source import dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BINDS_BODY = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.comprehension)


@dataclass(frozen=True, eq=False)
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


class FunctionBindings:
    def __init__(self, function: Function, skip_branch: Callable[[ast.If], bool] = lambda branch: False) -> None:
        self.function = function
        # A branch that never runs on the path analysed (`if XLA_AVAILABLE:`): its body binds nothing.
        self.skip_branch = skip_branch
        self._reaching: dict[tuple[str, int], list[Binding]] = {}

    def of(self, name: str) -> list[Binding]:
        return self._all.get(name, [])

    def reaching(self, name: str, use: ast.AST | None) -> list[Binding]:
        """The bindings of `name` that may hold when `use` runs (all of them if `use` is not in the function)."""
        bindings = self.of(name)
        if use is None or id(use) not in self._parents or not bindings:
            return bindings
        key = (name, id(use))
        if key not in self._reaching:
            self._reaching[key] = self._reaching_at(name, use, bindings)
        return self._reaching[key]

    def _reaching_at(self, name: str, use: ast.AST, bindings: list[Binding]) -> list[Binding]:
        chain = self._chain(use)
        at = _position(use)
        latest: Binding | None = None
        for binding in bindings:
            if self._dominates(binding, chain, at) and (latest is None or self._where(binding) >= self._where(latest)):
                latest = binding
        start = self._where(latest) if latest is not None else (-1, -1)
        loops = [node for node in chain if isinstance(node, _LOOPS) and _in_body(node, chain)]
        found = [latest] if latest is not None else []
        for binding in bindings:
            if binding is latest or binding.owner is self.function:
                continue
            where = self._where(binding)
            before = start < where < at and binding.owner not in chain
            around = where > at and any(_inside(binding.owner, loop) for loop in loops)
            if before or around:
                found.append(binding)
        return found

    def _where(self, binding: Binding) -> tuple[int, int]:
        return (-1, -1) if binding.owner is self.function else _position(binding.owner)

    # -- structure ------------------------------------------------------------------------------

    @cached_property
    def _parents(self) -> dict[int, ast.AST]:
        parents: dict[int, ast.AST] = {}
        body = [self.function.body] if isinstance(self.function, ast.Lambda) else self.function.body
        for statement in body:
            parents[id(statement)] = self.function
        for node in self._own_nodes():
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        return parents

    def _own_nodes(self) -> Iterator[ast.AST]:
        body = [self.function.body] if isinstance(self.function, ast.Lambda) else self.function.body
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, ast.If) and self.skip_branch(node):
                stack.append(node.test)
                stack.extend(node.orelse)
                continue
            stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, _SCOPES))

    def _chain(self, node: ast.AST) -> list[ast.AST]:
        """`node`'s ancestors, innermost first, up to the function."""
        chain = []
        current = self._parents.get(id(node))
        while current is not None and current is not self.function:
            chain.append(current)
            current = self._parents.get(id(current))
        chain.append(self.function)
        return [node, *chain]

    def _dominates(self, binding: Binding, chain: list[ast.AST], at: tuple[int, int]) -> bool:
        """Whether `binding` runs on every path to the use (before it, in a block that encloses it)."""
        owner = binding.owner
        if owner is self.function:
            return True
        if isinstance(owner, ast.comprehension):
            return self._parents.get(id(owner)) in chain  # the comprehension's own element and conditions
        if isinstance(owner, _BINDS_BODY) and owner in chain:
            return _in_body(owner, chain)
        if _position(owner) >= at or owner in chain:
            return False
        block = self._block(owner)
        return block is not None and any(self._block(member) == block for member in chain if member is not owner)

    def _block(self, statement: ast.AST) -> tuple[int, str] | None:
        parent = self._parents.get(id(statement))
        if parent is None:
            return None
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is statement for s in block):
                return id(parent), field
        return None

    @cached_property
    def _all(self) -> dict[str, list[Binding]]:
        found: dict[str, list[Binding]] = {}

        def add(binding: Binding) -> None:
            found.setdefault(binding.name, []).append(binding)

        arguments = self.function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            add(Binding(argument.arg, self.function, "parameter", argument=argument))
        for argument in (arguments.vararg, arguments.kwarg):
            if argument is not None:
                add(Binding(argument.arg, self.function, "python"))
        for node in self._own_nodes():
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(target, node, "value", node.value, add)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                _bind(node.target, node, "value", node.value, add)
            elif isinstance(node, ast.AugAssign):
                name = _name(node.target)
                if name:
                    add(Binding(name, node, "augmented", node.value, operator=node.op))
            elif isinstance(node, ast.NamedExpr):
                _bind(node.target, self._statement_of(node), "value", node.value, add)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                _bind_loop(node.target, node.iter, node, add)
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        _bind(item.optional_vars, node, "unknown", None, add)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    add(Binding((alias.asname or alias.name).split(".")[0], node, "python"))
            elif isinstance(node, ast.ExceptHandler) and node.name:
                add(Binding(node.name, node, "python"))
        for bindings in found.values():
            bindings.sort(key=self._where)
        return found

    def _statement_of(self, node: ast.AST) -> ast.AST:
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self._parents.get(id(current))
        return current or self.function


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", -1), getattr(node, "col_offset", -1)


def _in_body(owner: ast.AST, chain: list[ast.AST]) -> bool:
    """The use is in `owner`'s body (not in a loop's iterable or a `with`'s items)."""
    inner = chain[chain.index(owner) - 1] if chain.index(owner) > 0 else None
    if isinstance(owner, ast.comprehension):
        return False  # the comprehension's element is a sibling, handled by its parent
    body = [*getattr(owner, "body", []), *getattr(owner, "orelse", [])]
    return any(statement is inner for statement in body)


def _inside(node: ast.AST, loop: ast.AST) -> bool:
    start, end = _position(loop)[0], getattr(loop, "end_lineno", None) or _position(loop)[0]
    return start < _position(node)[0] <= end


def _name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return f"self.{target.attr}"
    return None


def _bind(target: ast.expr, owner: ast.AST, kind: str, value: ast.expr | None, add) -> None:
    name = _name(target)
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
                inner = _name(element)
                if inner is not None:
                    add(Binding(inner, owner, "item", value, position=position))
                else:
                    _bind(element, owner, "unknown", None, add)
            else:
                _bind(element, owner, "unknown", None, add)
    elif isinstance(target, ast.Starred):
        _bind(target.value, owner, "unknown", None, add)


def _bind_loop(target: ast.expr, iterable: ast.expr, owner: ast.AST, add) -> None:
    function = dotted_name(iterable.func) if isinstance(iterable, ast.Call) else None
    if function == "enumerate" and iterable.args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        _bind(target.elts[0], owner, "python", None, add)
        _bind_loop(target.elts[1], iterable.args[0], owner, add)
    elif function == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(iterable.args):
        for element, source in zip(target.elts, iterable.args):
            _bind_loop(element, source, owner, add)
    elif _name(target) is not None:
        add(Binding(_name(target), owner, "element", iterable))  # type: ignore[arg-type]
    else:
        _bind(target, owner, "unknown", None, add)
