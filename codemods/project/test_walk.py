"""One walk of a test module for all that its readers ask of it (`test_modules`, `test_sources`).

Walking a tree costs more than parsing it, and the readers ask of the same nodes: the attribute names each
test function reads (the gates), the classes the module configures and the names it imports from diffusers
(the covering tests), the methods a configuration uses on `self`, the strings it binds and the hub ids it
loads (the checkout-test targets). Each node is visited once: a method of a top-level class by a walk of
its own (`MethodReading`, in `ast.walk`'s order, which the readers' "first" and "last" depend on), the rest
of the module by walks that only note what it configures and imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

# Class attributes that name the class a test class configures.
_CONFIGURING_ATTRIBUTES = ("pipeline_class", "model_class")


@dataclass
class MethodReading:
    """What one method (of a top-level class) holds, its nested functions included."""

    names_read: set[str] = field(default_factory=set)  # `x.name`, `getattr(x, "name")`, `hasattr(x, "name")`
    used_on_self: set[str] = field(default_factory=set)  # `self.name`
    returned: list[ast.expr | None] = field(default_factory=list)  # each `return`'s value, in walk order
    assignments: list[ast.Assign] = field(default_factory=list)  # in walk order: a later binding wins
    loaded: list[ast.expr] = field(default_factory=list)  # the first argument of each `x.from_pretrained(...)`
    called: set[str] = field(default_factory=set)  # names called as `name(...)`


@dataclass
class ModuleWalk:
    methods: dict[ast.FunctionDef, MethodReading]  # each top-level class's methods (the node is its identity)
    configures: frozenset[str]  # names assigned to `pipeline_class`/`model_class` or returned by a `model_class`
    imports: frozenset[str]  # names imported from diffusers by an absolute import


def walk_module(tree: ast.Module) -> ModuleWalk:
    """Every node of the module read once (`type(node) is`: a parsed tree holds no subclasses of its nodes)."""
    configures: set[str] = set()
    imports: set[str] = set()
    methods: dict[ast.FunctionDef, MethodReading] = {}
    for root, reading in _roots(tree, methods):
        for node in _in_walk_order(root):
            kind = type(node)
            if kind is ast.Attribute:
                if reading is not None:
                    reading.names_read.add(node.attr)
                    if type(node.value) is ast.Name and node.value.id == "self":
                        reading.used_on_self.add(node.attr)
            elif kind is ast.Call:
                if reading is not None:
                    _note_call(node, reading)
            elif kind is ast.Assign:
                if reading is not None:
                    reading.assignments.append(node)
                if type(node.value) is ast.Name and any(
                    type(t) is ast.Name and t.id in _CONFIGURING_ATTRIBUTES for t in node.targets
                ):
                    configures.add(node.value.id)
            elif kind is ast.Return:
                if reading is not None:
                    reading.returned.append(node.value)
            elif kind is ast.FunctionDef:
                if node.name == "model_class":
                    configures.update(
                        n.value.id for n in ast.walk(node) if type(n) is ast.Return and type(n.value) is ast.Name
                    )
            elif kind is ast.ImportFrom:
                if node.level == 0 and (node.module or "").split(".")[0] == "diffusers":
                    imports.update(alias.name for alias in node.names)
    return ModuleWalk(methods, frozenset(configures), frozenset(imports))


def _roots(
    tree: ast.Module, methods: dict[ast.FunctionDef, MethodReading]
) -> Iterator[tuple[ast.AST, MethodReading | None]]:
    """Subtrees that together hold every node of `tree` once, but the module and its top-level classes (nothing
    a reader asks of): every method of a top-level class, with the reading its walk fills (kept in `methods`),
    and the rest around them."""
    for statement in tree.body:
        if not isinstance(statement, ast.ClassDef):
            yield statement, None
            continue
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.FunctionDef):
                methods[child] = MethodReading()
                yield child, methods[child]
            else:
                yield child, None


def _in_walk_order(root: ast.AST) -> list[ast.AST]:
    """The nodes of `root`'s subtree in `ast.walk`'s order (breadth first), but for the `Load`/`Store` contexts
    (nothing a reader asks of: a third of the nodes), from a list rather than a deque of generators: this walk
    is most of the reading's time, and this way it takes 40% less."""
    nodes = [root]
    append = nodes.append
    for node in nodes:  # the list grows as it is read: breadth first
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST) and name != "ctx":
                append(value)
    return nodes


def _note_call(node: ast.Call, reading: MethodReading) -> None:
    function = node.func
    if type(function) is ast.Name:
        reading.called.add(function.id)
        if function.id in ("getattr", "hasattr") and len(node.args) > 1:
            name = node.args[1]
            if type(name) is ast.Constant and isinstance(name.value, str):
                reading.names_read.add(name.value)
    elif type(function) is ast.Attribute and function.attr == "from_pretrained" and node.args:
        reading.loaded.append(node.args[0])
