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
from collections.abc import Callable
from functools import cached_property

from codemods.analysis.values.binding_sites import Binding, Function, bindings_by_name, comprehension_bindings
from codemods.node_index import indexed, nodes_within
from codemods.source import local_or_self_name, walk

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BINDS_BODY = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.comprehension)
# The fields of a compound statement that hold statements (its own expressions are the others).
_BLOCK_ITEMS = (ast.stmt, ast.excepthandler, ast.match_case)
_FIELDS_BY_KIND: dict[type[ast.AST], tuple[str, ...]] = {}


class FunctionBindings:
    def __init__(self, function: Function, skip_branch: Callable[[ast.If], bool] = lambda branch: False) -> None:
        self.function = function
        # A branch that never runs on the path analysed (`if XLA_AVAILABLE:`): its body binds nothing.
        self.skip_branch = skip_branch
        self._reaching: dict[tuple[str, int], list[Binding]] = {}
        self._blocks: dict[int, dict[int, str]] = {}
        self._block_of: dict[int, tuple[int, str] | None] = {}
        # By statement: it and the statements around it up to the function, and the blocks they are in (asked for
        # every use in the statement).
        self._arounds: dict[int, tuple[list[ast.AST], frozenset[tuple[int, str] | None]]] = {}
        # Parents of expressions come from the file's node index; held so that a tree parsed on its own (no
        # `SourceFile` keeping its index alive) is indexed once, not once per question.
        self._index = indexed(function)

    def of(self, name: str) -> list[Binding]:
        return self._all.get(name, [])

    def binds(self, name: str) -> bool:
        if name.startswith("self.") and name[5:] not in self._stored_self_attributes:
            return False  # asked of every method of a class: no binding analysis where no `self.<name> =` is
        return bool(self.of(name))

    @cached_property
    def _stored_self_attributes(self) -> frozenset[str]:
        """The `<name>`s of the `self.<name>` the function (or a scope inside it) stores to: a binding of one is a store."""
        return frozenset(
            node.attr
            for node in nodes_within(self.function, ast.Attribute)
            if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self"
        )

    @cached_property
    def _comprehension_names(self) -> frozenset[str | None]:
        """What the function's comprehensions (nested scopes' too) may bind: every name and `self.x` in their targets."""
        return frozenset(
            local_or_self_name(node)
            for comprehension in nodes_within(self.function, ast.comprehension)
            for node in walk(comprehension.target)  # a name or a few: no file-wide index of names to build
        )

    def reaching(self, name: str, use: ast.AST | None) -> list[Binding]:
        """The bindings of `name` that may hold when `use` runs (all of them if `use` is not in the function)."""
        key = (name, id(use))
        if key in self._reaching:  # asked again (a name's place, then its element's...): skip the chain and the sort
            return self._reaching[key]
        bindings = self.of(name)
        rebound = name in self._comprehension_names
        if not rebound and all(binding.owner is self.function for binding in bindings):
            return bindings  # parameters only (or nothing): no use to place, no comprehension to shadow them
        found = self._chain(use) if use is not None else None
        if found is None:
            return bindings
        chain, holder = found
        # A comprehension's variables are seen only inside it, so only those around the use count.
        inner = comprehension_bindings(name, chain) if rebound else []
        if inner:  # the function's own are in order already
            bindings = sorted([*bindings, *inner], key=self._where)
        if not bindings:
            return bindings
        self._reaching[key] = self._reaching_at(use, chain, self._around(holder)[1], bindings)
        return self._reaching[key]

    def _reaching_at(
        self, use: ast.AST, chain: list[ast.AST], blocks: frozenset[tuple[int, str] | None], bindings: list[Binding]
    ) -> list[Binding]:
        """`blocks`: those around the use (of the members of `chain`)."""
        at = _position(use)
        wheres = [self._where(binding) for binding in bindings]
        latest: Binding | None = None
        start = (-1, -1)
        for binding, where in zip(bindings, wheres):
            if self._dominates(binding, where, chain, at, blocks) and (latest is None or where >= start):
                latest, start = binding, where
        found = [latest] if latest is not None else []
        loops: list[ast.AST] | None = None  # the loops whose body holds the use: asked for a binding after it only
        for binding, where in zip(bindings, wheres):
            if binding is latest or binding.owner is self.function:
                continue
            if start < where < at and binding.owner not in chain:  # after the dominating one, in a branch that may run
                found.append(binding)
                continue
            if where <= at:
                continue
            if loops is None:
                loops = [node for node in chain if isinstance(node, _LOOPS) and self._in_body(node, chain)]
            # Through a loop's back edge, unless the binding that dominates the use is in that loop too (and kills it).
            if any(
                _inside(binding.owner, loop) and (latest is None or not _inside(latest.owner, loop)) for loop in loops
            ):
                found.append(binding)
        return found

    def _where(self, binding: Binding) -> tuple[int, int]:
        return (-1, -1) if binding.owner is self.function else _position(binding.owner)

    # -- structure ------------------------------------------------------------------------------

    @cached_property
    def _statements(self) -> tuple[list[ast.AST], dict[int, ast.AST]]:
        """The function's own statements (and `except` handlers) in source order, and each one's parent.

        Only statements: nine nodes in ten are expressions, whose parents the file's node index
        gives (`_chain`). Nested scopes and skipped branches get a parent but are not entered.
        """
        body = [self.function.body] if isinstance(self.function, ast.Lambda) else self.function.body
        parents: dict[int, ast.AST] = {}
        nodes: list[ast.AST] = []
        stack: list[tuple[ast.AST, ast.AST]] = [(statement, self.function) for statement in reversed(body)]
        while stack:
            node, parent = stack.pop()
            parents[id(node)] = parent
            if not isinstance(node, _BLOCK_ITEMS):
                continue  # a Lambda's body expression
            nodes.append(node)
            if isinstance(node, _SCOPES):
                continue
            skipped = isinstance(node, ast.If) and self.skip_branch(node)
            for field in reversed(_block_fields(node)):  # the first block's first statement on top: in source order
                for child in reversed(getattr(node, field, None) or ()):
                    if skipped and field == "body":
                        parents[id(child)] = node
                    else:
                        stack.append((child, node))
        return nodes, parents

    def _chain(self, node: ast.AST) -> tuple[list[ast.AST], ast.AST] | None:
        """`node` and its ancestors, innermost first, up to the function, and the statement that holds `node` (itself,
        for a statement); None if `node` is not the function's own."""
        _, parents = self._statements
        if id(node) in parents:
            return self._around(node)[0], node
        # An expression: up through the file's node index to the statement that holds it, which must be one
        # of the function's own (not in a nested scope, nor in a branch that is skipped).
        chain: list[ast.AST] = [node]
        current = self._parent_in_tree(node)
        while current is not None and not isinstance(current, _BLOCK_ITEMS):
            if isinstance(current, _SCOPES):
                return None
            chain.append(current)
            current = self._parent_in_tree(current)
        if current is None or id(current) not in self._holders:
            return None
        return [*chain, *self._around(current)[0]], current

    def _parent_in_tree(self, node: ast.AST) -> ast.AST | None:
        try:
            return self._index.parent(node)
        except ValueError:  # a node of another tree
            return None

    def _around(self, statement: ast.AST) -> tuple[list[ast.AST], frozenset[tuple[int, str] | None]]:
        """`statement` and the statements around it, innermost first, up to the function; and the blocks they are in."""
        key = id(statement)
        if key not in self._arounds:
            _, parents = self._statements
            chain = []
            current: ast.AST | None = statement
            while current is not None and current is not self.function:
                chain.append(current)
                current = parents.get(id(current))
            chain.append(self.function)
            self._arounds[key] = (chain, frozenset(self._block(member) for member in chain))
        return self._arounds[key]

    @cached_property
    def _holders(self) -> frozenset[int]:
        """The own statements an expression can be in: not a nested scope, whose expressions are its own."""
        return frozenset(id(s) for s in self._statements[0] if not isinstance(s, (ast.match_case, *_SCOPES)))

    def _parent(self, node: ast.AST) -> ast.AST | None:
        return self._statements[1].get(id(node))

    def _dominates(
        self,
        binding: Binding,
        where: tuple[int, int],
        chain: list[ast.AST],
        at: tuple[int, int],
        blocks: frozenset[tuple[int, str] | None],
    ) -> bool:
        """Whether `binding` (at `where`) runs on every path to the use (before it, in a block that encloses it: one of
        `blocks`, those of the members of `chain`)."""
        owner = binding.owner
        if owner is self.function:
            return True
        if isinstance(owner, ast.comprehension):
            return True  # only the comprehensions around the use are asked about
        if isinstance(owner, _BINDS_BODY) and owner in chain:
            return self._in_body(owner, chain)
        if where >= at or owner in chain:
            return False
        block = self._block(owner)
        return block is not None and block in blocks  # `owner` is not in `chain`: its own block is not counted

    def _block(self, statement: ast.AST) -> tuple[int, str] | None:
        key = id(statement)
        if key not in self._block_of:
            parent = self._parent(statement)
            field = self._fields_of(parent).get(key) if parent is not None else None
            self._block_of[key] = (id(parent), field) if field is not None else None
        return self._block_of[key]

    def _in_body(self, owner: ast.AST, chain: list[ast.AST]) -> bool:
        """The use is in `owner`'s body (not in a loop's iterable or a `with`'s items)."""
        if isinstance(owner, ast.comprehension):
            return False  # the comprehension's element is a sibling, handled by its parent
        position = chain.index(owner)
        inner = chain[position - 1] if position > 0 else None
        return inner is not None and self._fields_of(owner).get(id(inner)) in ("body", "orelse")

    def _fields_of(self, parent: ast.AST) -> dict[int, str]:
        """Which block of `parent` each of its statements is in (computed once per parent: bodies are long)."""
        if id(parent) not in self._blocks:
            self._blocks[id(parent)] = {
                id(statement): field
                for field in ("body", "orelse", "finalbody", "handlers", "cases")
                if isinstance(getattr(parent, field, None), list)
                for statement in getattr(parent, field)
            }
        return self._blocks[id(parent)]

    @cached_property
    def _all(self) -> dict[str, list[Binding]]:
        # Parameters, then the statements in source order: each name's bindings in the order they are made.
        return bindings_by_name(self.function, self._statements[0])


def _block_fields(node: ast.AST) -> tuple[str, ...]:
    """Which of the fields that hold statements `node`'s kind has (none, for nine statements in ten), in source order."""
    kind = node.__class__
    if kind not in _FIELDS_BY_KIND:
        _FIELDS_BY_KIND[kind] = tuple(
            f for f in ("body", "handlers", "orelse", "finalbody", "cases") if f in kind._fields
        )
    return _FIELDS_BY_KIND[kind]


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", -1), getattr(node, "col_offset", -1)


def _inside(node: ast.AST, loop: ast.AST) -> bool:
    start, end = _position(loop)[0], getattr(loop, "end_lineno", None) or _position(loop)[0]
    return start < _position(node)[0] <= end
