"""How a scheduler class finds its step index, followed through its source across files.

`pipe.scheduler.set_begin_index(0)` saves a device-to-host sync only where the scheduler's
`step()` (or `scale_model_input()`) looks its first index up with `index_for_timestep`
*unless* a begin index is set. Schedulers differ: Euler-style ones look up once, on the first
call, and read `begin_index` instead when it is set; Helios starts at 0 by itself and never reads
it; FlowMapEuler looks an index up on every call, begin index or not; DDIM never looks anything
up. The answer comes from the scheduler's own code: the method, and the `self.` methods it calls
(through its bases, in whatever file they live), read under the guards that decide when a
lookup runs (`if self.step_index is None:`, `if self.begin_index is None:`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from codemods.lines import LineIndex
from codemods.project.facts import ClassFacts
from codemods.project.index import ProjectIndex
from codemods.source import child_nodes, self_attribute, statements

# diffusers' name for the lookup; it is not followed (its body is the lookup: `nonzero`, `argmin`...).
LOOKUP_METHOD = "index_for_timestep"
_BEGIN = frozenset({"begin_index", "_begin_index"})
_STEP = frozenset({"step_index", "_step_index"})
_NONZERO = frozenset({"nonzero", "argwhere"})
_DEPTH = 6


@dataclass(frozen=True)
class Guards:
    """What is known where a statement runs."""

    begin_unset: bool = False  # only while no begin index is set
    first_call: bool = False  # only while no step index is set (the first call after `set_timesteps`)
    conditional: bool = False  # under some other condition


@dataclass(frozen=True)
class IndexLookups:
    """The index lookups one scheduler method runs, by when they run."""

    until_begin_index: bool = False  # on the first call, unless a begin index is set
    first_call: bool = False  # on the first call, begin index or not
    every_call: str | None = None  # on every call, unconditionally: where ("`Class.method`, line N")

    @property
    def reads_begin_index(self) -> bool:
        """Setting the begin index removes this method's only lookup."""
        return self.until_begin_index and not self.first_call and self.every_call is None


def merged(lookups: list[IndexLookups]) -> IndexLookups:
    """The lookups of several methods called in turn (a loop's `scale_model_input` and `step`)."""
    return IndexLookups(
        until_begin_index=any(found.until_begin_index for found in lookups),
        first_call=any(found.first_call for found in lookups),
        every_call=next((found.every_call for found in lookups if found.every_call), None),
    )


def every_call_lookup(index: ProjectIndex, types: tuple[str, ...], method: str) -> str | None:
    """Where a class among `types` (an annotation's classes) looks its index up on every `method` call, if one does."""
    for class_name in sorted({c for name in types for c in index.expand_types(name)}):
        found = index_lookups(index, class_name, method)
        if found is not None and found.every_call is not None:
            return found.every_call
    return None


def index_lookups(index: ProjectIndex, class_name: str, method: str) -> IndexLookups | None:
    """The lookups `class_name.method` runs; None when the class or the method is not in the tree.

    Kept per index: every pipeline of a tree asks about the same few schedulers (thousands of times).
    """
    return index.tree_fact(("index_lookups", class_name, method), lambda: _walked(index, class_name, method))


def _walked(index: ProjectIndex, class_name: str, method: str) -> IndexLookups | None:
    if _definition(index, class_name, method) is None:
        return None
    found = _Walk(index, class_name)
    found.method(method, Guards(), 0)
    return IndexLookups(
        until_begin_index=found.until_begin_index,
        first_call=found.first_call,
        every_call=found.every_call,
    )


class _Walk:
    def __init__(self, index: ProjectIndex, class_name: str) -> None:
        self.index = index
        self.class_name = class_name
        self.until_begin_index = False
        self.first_call = False
        self.every_call: str | None = None
        self._active: set[str] = set()

    def method(self, name: str, guards: Guards, depth: int) -> None:
        definition = _definition(self.index, self.class_name, name)
        if definition is None or depth > _DEPTH or name in self._active:
            return  # a recursive call: its lookups are being collected already
        self._active.add(name)
        owner, node = definition
        self.block(node.body, guards, depth, f"{owner}.{name}")
        self._active.discard(name)

    def block(self, body: list[ast.stmt], guards: Guards, depth: int, where: str) -> None:
        for statement in body:
            if isinstance(statement, ast.If):
                self.expressions(statement.test, guards, depth, where)
                inside, otherwise = _branch_guards(statement.test, guards)
                self.block(statement.body, inside, depth, where)
                self.block(statement.orelse, otherwise, depth, where)
                if statement.body and isinstance(statement.body[-1], ast.Return) and not statement.orelse:
                    guards = otherwise  # `if self._begin_index is not None: ...; return`
                continue
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            nested = [getattr(statement, f, []) for f in ("body", "orelse", "finalbody")]
            nested += [h.body for h in getattr(statement, "handlers", [])]
            if any(nested):
                # Loops, `with`, `try`: their headers run as here, their blocks perhaps not at all.
                headers = [c for c in ast.iter_child_nodes(statement) if isinstance(c, ast.expr | ast.withitem)]
                for header in headers:
                    self.expressions(header, guards, depth, where)
                inner = guards if isinstance(statement, ast.With | ast.AsyncWith) else _conditional(guards)
                for block in nested:
                    self.block(block, inner, depth, where)
                continue
            self.expressions(statement, guards, depth, where)

    def expressions(self, node: ast.AST, guards: Guards, depth: int, where: str) -> None:
        if isinstance(node, ast.IfExp):  # `index_for_timestep(t) if self._begin_index is None else ...`
            inside, otherwise = _branch_guards(node.test, guards)
            self.expressions(node.test, guards, depth, where)
            self.expressions(node.body, inside, depth, where)
            self.expressions(node.orelse, otherwise, depth, where)
            return
        if isinstance(node, ast.Call):
            called = self_attribute(node.func)
            if called == LOOKUP_METHOD or _is_inline_lookup(node):
                self.lookup(guards, where, node.lineno)
            elif called is not None and _definition(self.index, self.class_name, called) is not None:
                self.method(called, guards, depth + 1)
        for child in child_nodes(node):
            self.expressions(child, guards, depth, where)

    def lookup(self, guards: Guards, where: str, line: int) -> None:
        if guards.begin_unset:
            self.until_begin_index = True
        elif guards.first_call:
            self.first_call = True
        elif not guards.conditional and self.every_call is None:
            self.every_call = f"`{where}`, line {line}"


def _branch_guards(test: ast.expr, guards: Guards) -> tuple[Guards, Guards]:
    """Guards inside `if test:` and inside its `else:`."""
    conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    inside = guards
    for conjunct in conjuncts:
        inside = _knowing(inside, conjunct, holds=True)
    otherwise = _knowing(guards, test, holds=False) if len(conjuncts) == 1 else _conditional(guards)
    return inside, otherwise


def _knowing(guards: Guards, test: ast.expr, holds: bool) -> Guards:
    """`guards` where `test` is known to be true (`holds`) or false: an index guard, or some other condition."""
    known = _none_test(test)
    if known is None or known[1] != holds:
        return _conditional(guards)
    attribute = known[0]
    return Guards(
        guards.begin_unset or attribute in _BEGIN, guards.first_call or attribute in _STEP, guards.conditional
    )


def _conditional(guards: Guards) -> Guards:
    return Guards(guards.begin_unset, guards.first_call, True)


def _none_test(test: ast.expr) -> tuple[str, bool] | None:
    """`self.x is None` -> ("x", True); `self.x is not None` -> ("x", False)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is | ast.IsNot)):
        return None
    (right,) = test.comparators
    if not (isinstance(right, ast.Constant) and right.value is None):
        return None
    attribute = self_attribute(test.left)
    if attribute not in _BEGIN | _STEP:
        return None
    return attribute, isinstance(test.ops[0], ast.Is)


def _is_inline_lookup(call: ast.Call) -> bool:
    """`(self.timesteps == timestep).nonzero()` or `torch.nonzero(timesteps == t)`: the older, inlined lookup."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in _NONZERO):
        return False
    operands = [call.func.value, *call.args]
    return any(isinstance(o, ast.Compare) and any(isinstance(op, ast.Eq) for op in o.ops) for o in operands)


def _definition(index: ProjectIndex, class_name: str, method: str) -> tuple[str, ast.FunctionDef] | None:
    """(the class that defines it, the `def`) for `class_name.method`, through the bases as in the MRO."""
    return _resolve(index, class_name, method, frozenset())


def _resolve(index: ProjectIndex, class_name: str, method: str, seen: frozenset[str]):
    if class_name in seen:
        return None
    for facts in index.classes(class_name):
        if method in facts.methods:
            node = _method_node(index, facts, method)
            return (facts.name, node) if node is not None else None
        for base in facts.bases:
            found = _resolve(index, base, method, seen | {class_name})
            if found is not None:
                return found
    return None


def _method_node(index: ProjectIndex, facts: ClassFacts, method: str) -> ast.FunctionDef | None:
    text = index.text(facts.path)
    if text is None:
        return None
    span = facts.methods[method]
    own = _parsed_method(text, span.line, span.end_line)
    if own is not None and own.name == method:
        return own
    # An `async def` (a `def` of the same name may come before it): the class's methods as the whole file gives them.
    return _methods_of(text, facts.line).get(method)


@lru_cache(maxsize=512)
def _parsed_method(text: str, line: int, end_line: int) -> ast.FunctionDef | None:
    """The `def` on lines `line`..`end_line` of `text`, parsed alone (a walk reads a few methods of a scheduler
    file, a third of its text) at its own line numbers, without its decorators (a walk reads the body); None if
    those lines hold no `def` standing alone."""
    lines = _lines(text)
    # Below `if 1:` the def keeps its indentation, and blank lines above it keep its line numbers.
    alone = "\n" * (line - 2) + "if 1:\n" + text[lines.start_of(line) : lines.start_of(end_line + 1)]
    try:
        (block,) = ast.parse(alone).body
    except (SyntaxError, ValueError):
        return None
    node = block.body[0] if isinstance(block, ast.If) else None
    return node if isinstance(node, ast.FunctionDef) and node.lineno == line else None


@lru_cache(maxsize=32)
def _lines(text: str) -> LineIndex:
    return LineIndex(text)


@lru_cache(maxsize=256)
def _methods_of(text: str, class_line: int) -> dict[str, ast.FunctionDef]:
    """The methods of the class defined at `class_line` (a file is parsed whole once per run, if ever)."""
    return {
        node.name: node
        for cls in statements(_parsed(text).body, into_scopes=True)
        if isinstance(cls, ast.ClassDef) and cls.lineno == class_line
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
    }


@lru_cache(maxsize=32)
def _parsed(text: str) -> ast.Module:
    return ast.parse(text)
