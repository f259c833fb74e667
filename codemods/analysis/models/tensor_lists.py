"""Python lists of tensors kept on `self`: tables no `model.to()` moves and no `register_buffer` can hold.

Lumina2's RoPE keeps one complex table per axis in `self.freqs_cis`, a list built once in
`__init__`, and `_get_freqs_cis` copies `self.freqs_cis[i].to(ids.device)` host-to-device on every
forward. DIF001 reports such element moves of a list assigned once in `__init__` to a list display
or comprehension, or to a helper annotated `-> list[torch.Tensor]`. The list is provably unchanged
(so a per-device cache of it is sound) when, besides, the helper builds a fresh list by `append`
alone, `__init__` hands the list to nothing, the class reads it only by those moves and `len(...)`,
and nothing else in the file reaches it (`obj.<name>`, `setattr`, a subclass's `self.<name>`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from codemods.analysis.models.attributes import ClassAttributes, lineage_attributes
from codemods.analysis.values.device_moves import Site
from codemods.source import SourceFile, dotted_name, self_attribute, shortened

_LIST_TYPES = {"list", "List"}
_LIST_CHANGES = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__"}


@dataclass(frozen=True)
class TableList:
    """The element moves of one list of tables, and why the list may change after `__init__` (None: it cannot)."""

    cls: ast.ClassDef
    attribute: str
    sites: list[Site]
    changed: str | None


def listed_attribute(receiver: ast.expr) -> str | None:
    """`freqs_cis` for the receiver `self.freqs_cis[i]` (an element of a `self` attribute)."""
    if isinstance(receiver, ast.Subscript) and not isinstance(receiver.slice, ast.Slice):
        return self_attribute(receiver.value)
    return None


def _helper(value: ast.expr, methods: Mapping[str, ast.AST], functions: Mapping[str, ast.AST]) -> ast.AST | None:
    """The method of this class or function of this module that `value` calls."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and self_attribute(value.func) in methods:
        return methods[value.func.attr]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return functions.get(value.func.id)
    return None


def is_tensor_list(value: ast.expr, methods: Mapping[str, ast.AST], functions: Mapping[str, ast.AST]) -> bool:
    """A list display or comprehension, or a call of a helper of this class/module annotated `list[torch.Tensor]`."""
    if isinstance(value, ast.List | ast.ListComp):
        return True
    returns = getattr(_helper(value, methods, functions), "returns", None)
    return (
        isinstance(returns, ast.Subscript)
        and dotted_name(returns.value) in _LIST_TYPES
        and dotted_name(returns.slice) == "torch.Tensor"
    )


def _fresh_list(helper: ast.AST) -> bool:
    """`name = []`, then only `name.append(...)`, then `return name`: the list is new and nobody else holds it."""
    body = helper.body
    last = body[-1] if body else None
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
        return False
    name = last.value.id
    created = [
        s for s in body if isinstance(s, ast.Assign) and [dotted_name(t) for t in s.targets] == [name]
    ]  # fmt: skip
    if len(created) != 1 or not (isinstance(created[0].value, ast.List) and not created[0].value.elts):
        return False
    allowed = {id(created[0].targets[0]), id(last.value)}
    for node in ast.walk(helper):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
            allowed.add(id(node.func.value))
    return all(id(n) in allowed for n in ast.walk(helper) if isinstance(n, ast.Name) and n.id == name)


def _use(source: SourceFile, method: ast.AST, attribute: str, allowed: set[int]) -> str | None:
    """The first use of `self.<attribute>` in `method` that is not in `allowed`, described; None if there is none."""
    parents = {id(child): node for node in ast.walk(method) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(method):
        if self_attribute(node) != attribute or id(node) in allowed:
            continue
        where, outer = f"line {node.lineno} (`{method.name}`)", parents.get(id(node))
        if isinstance(outer, ast.Subscript) and isinstance(parents.get(id(outer)), ast.Attribute):
            outer = parents[id(outer)]  # `self.x[i].mul_(...)`: an element changed in place
        if isinstance(outer, ast.Attribute) and isinstance(parents.get(id(outer)), ast.Call):
            call = parents[id(outer)]
            if call.func is outer and (outer.attr in _LIST_CHANGES or outer.attr.endswith("_")):
                return f"{where} changes the list: `{shortened(source.segment(call))}`"
        return f"{where} uses `self.{attribute}` other than as `self.{attribute}[i].to(device)` or `len(...)`"
    return None


def _moves_each(node: ast.AST, attribute: str) -> bool:
    """`(t.to(device) for t in self.<attribute>)`: every element copied, the list itself handed to nobody."""
    if not isinstance(node, ast.GeneratorExp | ast.ListComp) or len(node.generators) != 1:
        return False
    loop, element = node.generators[0], node.elt
    return (
        self_attribute(loop.iter) == attribute
        and not loop.ifs
        and isinstance(loop.target, ast.Name)
        and isinstance(element, ast.Call)
        and isinstance(element.func, ast.Attribute)
        and element.func.attr == "to"
        and dotted_name(element.func.value) == loop.target.id
    )


def _reached_elsewhere(source: SourceFile, cls: ast.ClassDef, attribute: str, subclasses: set[str]) -> str | None:
    """A use of the list from outside the class: `obj.<attribute>`, `setattr`, `self.<attribute>` in a subclass."""
    own = {id(n) for n in ast.walk(cls)}
    unrelated = {id(n) for c in source.classes if c is not cls and c.name not in subclasses for n in ast.walk(c)}
    for node in ast.walk(source.tree):
        if not isinstance(node, ast.Attribute) or node.attr != attribute or id(node) in own:
            pass
        elif not (id(node) in unrelated and self_attribute(node) == attribute):  # another class's own `self.x`
            return f"line {node.lineno} reaches `.{attribute}` from outside `{cls.name}`"
        if isinstance(node, ast.Call) and dotted_name(node.func) in ("setattr", "delattr") and len(node.args) >= 2:
            name = node.args[1]
            if not isinstance(name, ast.Constant) or name.value == attribute:
                return f"line {node.lineno} may set `{attribute}` with `{dotted_name(node.func)}`"
    return None


def _subclasses(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> set[str]:
    """The names of the classes of this file that derive from `cls`."""
    found = {cls.name}
    grew = True
    while grew:
        grew = False
        for other in classes.values():
            if other.name not in found and any((dotted_name(b) or "") in found for b in other.bases):
                found.add(other.name)
                grew = True
    return found - {cls.name}


def table_lists(
    source: SourceFile,
    cls: ast.ClassDef,
    sites: list[Site],
    classes: dict[str, ast.ClassDef],
    functions: Mapping[str, ast.AST],
) -> list[TableList]:
    """The element moves (`sites`, hot and cold) of each list of tables of the class (see the module docstring)."""
    attributes = lineage_attributes(source, cls, classes)
    if attributes is None:  # not provably an nn.Module, or a base elsewhere may register these names
        return []
    own, registered = attributes[0], frozenset().union(*(a.registered for a in attributes))
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    found = []
    for attribute in dict.fromkeys(s.attribute for s in sites):
        value = own.init_values.get(attribute)
        if value is None or attribute in registered or not is_tensor_list(value, methods, functions):
            continue
        listed = [s for s in sites if s.attribute == attribute]
        changed = _changed(source, cls, own, attribute, listed, classes, functions)
        found.append(TableList(cls, attribute, listed, changed))
    return found


def _changed(
    source: SourceFile,
    cls: ast.ClassDef,
    own: ClassAttributes,
    attribute: str,
    sites: list[Site],
    classes: dict[str, ast.ClassDef],
    functions: Mapping[str, ast.AST],
) -> str | None:
    """Why the list may change after `__init__`, or None when it provably cannot."""
    if attribute in own.changed_after_init:
        return f"`self.{attribute}` is reassigned or changed outside `__init__` (line {own.first_change[attribute]})"
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    value = own.init_values[attribute]
    helper = _helper(value, methods, functions)
    if helper is not None and not _fresh_list(helper):
        return f"`{helper.name}` may return a list something else holds; only `x = []`, `x.append(...)`, `return x` is"
    receivers = {id(s.call.func.value.value) for s in sites}  # type: ignore[attr-defined]
    receivers |= {id(n.generators[0].iter) for n in ast.walk(cls) if _moves_each(n, attribute)}
    for method in methods.values():
        allowed = set(receivers) | {
            id(n.args[0])
            for n in ast.walk(method)
            if isinstance(n, ast.Call) and dotted_name(n.func) == "len" and len(n.args) == 1
        }
        if method.name == "__init__":
            allowed |= {
                id(n) for n in ast.walk(method) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            }
        use = _use(source, method, attribute, allowed)
        if use is not None:
            return use
    return _reached_elsewhere(source, cls, attribute, _subclasses(cls, classes))
