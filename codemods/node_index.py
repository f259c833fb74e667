"""Every node of a parsed tree, found without walking the tree again: by kind, inside any subtree, with parents.

Analyses ask the same questions of the same functions and classes many times a file (the calls in this
method, the names stored in that loop); each `ast.walk` for it visited every node of the subtree again. A
tree is walked once, in preorder, instead: a node's subtree is then the run of positions from its own up
to its end, and the nodes of one kind inside it a slice of that kind's positions, found by two bisections.
Lists come back in preorder (source order), not in `ast.walk`'s breadth-first order; the contexts and
operators `ast.parse` shares between trees (`Load()`, `Add()`) are left out.

Each node keeps its position as an attribute, so that any node leads to its index: the newest live index
holding that node at that position. The index holds the nodes, and a node holding the index back would make a
cycle that only the garbage collector frees (the scan workers run with it off). Live indexes are found in a
registry that holds them weakly (rarely more than a few: the newest is nearly always the one asked for):
`SourceFile` keeps its file's index alive while the file is scanned. It builds the index only when a node of
its tree is first asked about (a node with no index yet): half the files parsed never are.
"""

from __future__ import annotations

import ast
import itertools
import sys
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any, Protocol, TypeVar

Node = TypeVar("Node", bound=ast.AST)
Kind = type[Node] | tuple[type[Node], ...]

# The attribute each indexed node carries: its preorder position in the index that numbered it last. A plain
# int, already made for the index's lists: a (serial, position) pair cost a fifth of the indexing.
_POSITION = "_codemod_position"
# Fields that never hold a node asked about: the contexts and operators `ast.parse` shares between trees (one
# `Load()`, one `Add()`... for all trees: they have no place in any one tree), names and flags.
_LEAF_FIELDS = frozenset({
    "ctx", "op", "ops", "id", "attr", "arg", "kind", "type_comment", "asname", "module", "level", "conversion",
    "is_async", "simple", "tag", "rest", "kwd_attrs",
})  # fmt: skip


def _node_classes(cls: type[ast.AST]) -> Iterator[type[ast.AST]]:
    yield cls
    for subclass in cls.__subclasses__():
        yield from _node_classes(subclass)


# Each node class's fields that may hold child nodes, for every class `ast` defines. Nearly half of a tree's nodes
# (`Name`, `Constant`) have none: a walk then neither reads their fields nor tests what they hold. A plain dict,
# filled at once: Python looks an exact dict up faster than one with `__missing__`.
CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    cls: () if cls is ast.Constant else tuple(f for f in cls._fields if f not in _LEAF_FIELDS)
    for cls in _node_classes(ast.AST)
}


class _BlockFields(dict[type[ast.AST], tuple[str, ...]]):
    """Each statement class's fields holding statements, or `except` handlers and `case`s holding them, in the
    order `statements` walks them (none for nine statements in ten), found on first use."""

    def __missing__(self, cls: type[ast.AST]) -> tuple[str, ...]:
        fields = tuple(f for f in ("body", "orelse", "finalbody", "handlers", "cases") if f in cls._fields)
        self[cls] = fields
        return fields


BLOCK_FIELDS = _BlockFields()

_DEEPER = 10  # the recursion limit while numbering a tree deeper than it, as a multiple of the usual one
_SERIALS = itertools.count()
_NONE: tuple[list[int], list[ast.AST]] = ([], [])
# The indexes built, oldest first, held weakly: a dead one leaves the list when it dies.
_LIVE: list[weakref.ref[NodeIndex]] = []
# The owners of parsed trees not indexed yet (oldest first), held weakly: about half the files parsed are never
# asked about, and indexing a tree cost more than parsing it.
_UNINDEXED: weakref.WeakValueDictionary[int, Indexed] = weakref.WeakValueDictionary()
# Indexes built for a subtree no live index holds (a tree parsed from a string, another file's class): the
# last few stay alive, so that repeated questions about the same subtree walk it once.
_RECENT: deque[NodeIndex] = deque(maxlen=16)


class NodeIndex:
    """The nodes of `root`'s subtree, by kind and by preorder position, from one walk."""

    def __init__(self, root: ast.AST) -> None:
        self._nodes: list[ast.AST] = []
        self._ends: list[int] = []  # position after the last node of each node's subtree
        self._by_class: dict[type[ast.AST], list[int]] = {}
        self._by_kind: dict[object, tuple[list[int], list[ast.AST]]] = {}
        self._groups: dict[str, dict[object, tuple[list[int], list[ast.AST]]]] = {}
        self._parents: list[int] = []  # -1 for the root
        # While walking: each class met, with its positions and child fields (one lookup a node, not two).
        self._classes: dict[type[ast.AST], tuple[list[int], tuple[str, ...]]] = {}
        self._walk(root)
        del self._classes
        _LIVE.append(weakref.ref(self, _LIVE.remove))

    def _walk(self, root: ast.AST) -> None:
        try:
            self._visit(root, -1)
        except RecursionError:
            # Deeper than Python's recursion limit (a long `a + b + ...`). `ast.parse` refuses trees a few times
            # deeper than the limit, and recursion between Python functions does not grow the C stack (3.11+).
            self._nodes.clear(), self._ends.clear(), self._parents.clear(), self._by_class.clear()
            self._classes.clear()
            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(_DEEPER * limit)
            try:
                self._visit(root, -1)
            finally:
                sys.setrecursionlimit(limit)

    def _visit(self, node: ast.AST, parent: int) -> None:
        """Number `node` and its subtree (recursion is a third faster than a stack of nodes here; `type(x)` is
        looked up faster than `x.__class__`, and `x._codemod_position = ...` stored faster than `setattr`)."""
        nodes = self._nodes
        position = len(nodes)
        node._codemod_position = position  # type: ignore[attr-defined] (_POSITION)
        nodes.append(node)
        self._parents.append(parent)
        try:
            positions, fields = self._classes[type(node)]
        except KeyError:
            positions = self._by_class[type(node)] = []
            fields = CHILD_FIELDS[type(node)]
            self._classes[type(node)] = positions, fields
        positions.append(position)
        if not fields:
            self._ends.append(position + 1)
            return
        self._ends.append(0)  # until the subtree is numbered
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self._visit(item, position)
            elif isinstance(value, ast.AST):
                self._visit(value, position)
        self._ends[position] = len(nodes)

    def nodes(self, kind: Kind[Node], within: ast.AST | None = None) -> list[Node]:
        """The nodes that are instances of `kind` in `within`'s subtree (`within` included; the whole tree if
        None), in preorder."""
        return self._slice(self._of_kind(kind), within)  # type: ignore[return-value]

    def names(self, name: str, within: ast.AST | None = None) -> list[ast.Name]:
        """The `ast.Name` nodes spelling `name` (read, stored or deleted) in `within`'s subtree, in preorder."""
        return self._slice(self._grouped("names", ast.Name, attrgetter("id")).get(name, _NONE), within)

    def method_calls(self, attribute: str, within: ast.AST | None = None) -> list[ast.Call]:
        """The calls of a method or attribute named `attribute` (`x.attribute(...)`) in `within`'s subtree."""
        by_attribute = self._grouped("method calls", ast.Call, lambda call: getattr(call.func, "attr", None))
        return self._slice(by_attribute.get(attribute, _NONE), within)  # type: ignore[return-value]

    def _slice(self, indexed: tuple[list[int], list[ast.AST]], within: ast.AST | None) -> list[ast.AST]:
        positions, found = indexed
        if within is None:
            return list(found)
        start = self._position(within)
        return found[bisect_left(positions, start) : bisect_left(positions, self._ends[start])]

    def _grouped(
        self, name: str, kind: type[ast.AST], key: Callable[[Any], object]
    ) -> dict[object, tuple[list[int], list[ast.AST]]]:
        """`kind`'s instances grouped by `key` (each group in preorder), computed on first use."""
        groups = self._groups.get(name)
        if groups is None:
            groups = self._groups[name] = {}
            positions, found = self._of_kind(kind)
            for position, node, value in zip(positions, found, map(key, found)):
                group = groups.get(value)
                if group is None:
                    group = groups[value] = ([], [])
                group[0].append(position)
                group[1].append(node)
        return groups

    def breadth_first(self, nodes: list[Node]) -> list[Node]:
        """`nodes` (all in this index) in the order `ast.walk` yields them: by depth, then in source order."""
        positions = sorted(map(self._position, nodes))
        positions.sort(key=self._depth)  # stable: source order within a depth
        return list(map(self._nodes.__getitem__, positions))  # type: ignore[arg-type] (the nodes given)

    def contains(self, outer: ast.AST, inner: ast.AST) -> bool:
        """Whether `inner` is `outer` or lies in its subtree."""
        start, position = self._position(outer), self._position(inner)
        return start <= position < self._ends[start]

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node whose child `node` is (None for the root)."""
        parent = self._parents[self._position(node)]
        return None if parent < 0 else self._nodes[parent]

    def _depth(self, position: int) -> int:
        """How many ancestors the node at `position` has: followed up for the few nodes ordered breadth first (a
        file's depths all at once cost more than all its questions)."""
        parents = self._parents
        depth = 0
        while (position := parents[position]) >= 0:
            depth += 1
        return depth

    def _position(self, node: ast.AST) -> int:
        position: int = getattr(node, _POSITION)
        if not self.holds(node, position):
            raise ValueError(f"{type(node).__name__} node is not in this index")
        return position

    def holds(self, node: ast.AST, position: int) -> bool:
        """Whether `node` is this index's node at `position`."""
        return position < len(self._nodes) and self._nodes[position] is node

    def _of_kind(self, kind: Kind[ast.AST]) -> tuple[list[int], list[ast.AST]]:
        """The positions of `kind`'s instances (subclasses included, as `isinstance` does) and the nodes there."""
        known = self._by_kind.get(kind)
        if known is None:
            lists = [found for cls, found in self._by_class.items() if issubclass(cls, kind)]
            positions = lists[0] if len(lists) == 1 else sorted(itertools.chain.from_iterable(lists))
            known = self._by_kind[kind] = (positions, list(map(self._nodes.__getitem__, positions)))
        return known


class Indexed(Protocol):
    """What holds a parsed tree and its index, built on first use (`SourceFile`)."""

    @property
    def index(self) -> NodeIndex: ...


def index_when_asked(owner: Indexed) -> None:
    """Build `owner.index` only once a node of its tree is asked about."""
    _UNINDEXED[next(_SERIALS)] = owner


def indexed(node: ast.AST) -> NodeIndex:
    """The live index holding `node`; where none does, a new one over `node`'s subtree."""
    marked = getattr(node, _POSITION, None)
    if marked is None:
        marked = _index_trees_until_marked(node)
    index = _live_holding(node, marked) if marked is not None else None
    if index is None:
        index = NodeIndex(node)
        _RECENT.append(index)
    return index


def _live_holding(node: ast.AST, position: int) -> NodeIndex | None:
    """The newest live index holding `node` at `position`: the one that numbered it last, unless that one died."""
    for reference in reversed(_LIVE):
        index = reference()
        if index is not None and index.holds(node, position):
            return index
    return None


def _index_trees_until_marked(node: ast.AST) -> int | None:
    """Index the trees not indexed yet, newest first (most likely the file being scanned), until one holds `node`."""
    for key in reversed(list(_UNINDEXED.keys())):
        owner = _UNINDEXED.pop(key, None)
        if owner is None:
            continue
        owner.index  # noqa: B018 (builds it, marking its nodes)
        marked: int | None = getattr(node, _POSITION, None)
        if marked is not None:
            return marked
    return None


def nodes_within(node: ast.AST, kind: Kind[Node], breadth_first: bool = False) -> list[Node]:
    """The instances of `kind` in `node`'s subtree, `node` included: `ast.walk` without the walk. In preorder (source
    order), or with `breadth_first` in `ast.walk`'s order, for the questions whose answer is the first one found."""
    found = indexed(node).nodes(kind, node)
    return indexed(node).breadth_first(found) if breadth_first else found


def in_walk_order(nodes: list[Node]) -> list[Node]:
    """`nodes` of one tree in the order `ast.walk` yields them."""
    return indexed(nodes[0]).breadth_first(nodes) if nodes else nodes


def names_within(node: ast.AST, name: str) -> list[ast.Name]:
    """The `ast.Name` nodes spelling `name` in `node`'s subtree, in preorder."""
    return indexed(node).names(name, node)


def method_calls_within(node: ast.AST, attribute: str) -> list[ast.Call]:
    """The calls `x.attribute(...)` in `node`'s subtree, in preorder."""
    return indexed(node).method_calls(attribute, node)


def parent_of(node: ast.AST) -> ast.AST | None:
    """The node whose child `node` is, in the tree indexed with it."""
    return indexed(node).parent(node)
