"""What a `ModuleList` kept on `self` holds: the classes of its elements, from how it is built.

`self.attentions = nn.ModuleList([A(...), B(...)])`, `nn.ModuleList([A(...) for _ in range(n)])`, or a local
list filled only by `append(A(...))` before it is wrapped. A list changed any other way has unknown elements.
"""

from __future__ import annotations

import ast

from codemods.analysis.values.types import Function, Types, constructed_type
from codemods.node_index import nodes_within
from codemods.source import dotted_name, self_attribute

_LIST_MUTATORS = ("append", "extend", "insert", "__setitem__")
_SELF_LIST_WRITES = ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Subscript | ast.Call  # what may set or fill one


def element_types(cls: ast.ClassDef) -> dict[str, Types | None]:
    """`self.<name> = nn.ModuleList(...)` -> the classes its elements may be, from every assignment (None: unknown).

    Changed in any other way (`self.<name>.append(...)`, `+=`, an item store), its elements are unknown.
    """
    found: dict[str, Types | None] = {}

    def record(name: str, types: Types | None) -> None:
        previous = found.get(name, ())
        found[name] = None if types is None or previous is None else tuple(dict.fromkeys(previous + types))

    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for method in methods:
        for node in nodes_within(method, _SELF_LIST_WRITES, breadth_first=True):
            if isinstance(node, ast.Assign):
                for name in filter(None, map(self_attribute, node.targets)):
                    record(name, _module_list_types(node.value, method))
            elif isinstance(node, ast.AugAssign | ast.AnnAssign) and self_attribute(node.target):
                record(self_attribute(node.target), None)
            elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                if self_attribute(node.value):
                    record(self_attribute(node.value), None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = self_attribute(node.func.value)
                if name and node.func.attr in _LIST_MUTATORS:
                    record(name, None)
    return found


def _module_list_types(value: ast.expr, method: Function) -> Types | None:
    if isinstance(value, ast.Constant) and value.value is None:
        return ()  # `self.downsamplers = None`: nothing to iterate
    if not (isinstance(value, ast.Call) and (dotted_name(value.func) or "").rsplit(".", 1)[-1] == "ModuleList"):
        return None
    if not value.args:
        return ()
    if len(value.args) != 1 or value.keywords:
        return None
    (items,) = value.args
    if isinstance(items, ast.Name):
        return _appended_types(items.id, method)
    return _display_types(items)


def _display_types(items: ast.expr) -> Types | None:
    """`[A(...), B(...)]` or `[A(...) for _ in range(n)]` -> ("A", "B") / ("A",)."""
    if isinstance(items, ast.ListComp):
        return constructed_type(items.elt)
    if isinstance(items, ast.List | ast.Tuple):
        found: list[str] = []
        for item in items.elts:
            types = constructed_type(item)
            if types is None:
                return None
            found.extend(types)
        return tuple(dict.fromkeys(found))
    return None


def _appended_types(name: str, method: Function) -> Types | None:
    """A list built in `method` as `name = []` and `name.append(A(...))` (in any branch) -> its classes.

    Any other way of filling it (`extend`, `insert`, `+=`, an item store, a second source) -> None.
    """
    found: list[str] = []
    filling = ast.Assign | ast.Attribute | ast.Call | ast.AugAssign | ast.Subscript
    for node in nodes_within(method, filling, breadth_first=True):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            types = _display_types(node.value)
            if types is None:
                return None
            found.extend(types)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            if node.attr != "append":
                return None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
            if isinstance(node.func.value, ast.Name) and node.func.value.id == name:
                types = constructed_type(node.args[0]) if len(node.args) == 1 else None
                if types is None:
                    return None
                found.extend(types)
        elif (isinstance(node, ast.AugAssign) and _is_name(node.target, name)) or (
            isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and _is_name(node.value, name)
        ):
            return None
    return tuple(dict.fromkeys(found))


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
