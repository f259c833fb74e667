"""Python lists of tensors kept on `self`: tables no `model.to()` moves and no `register_buffer` can hold.

Lumina2's RoPE keeps one complex table per axis in `self.freqs_cis`, a list built once in
`__init__`, and `_get_freqs_cis` copies `self.freqs_cis[i].to(ids.device)` host-to-device on every
forward. DIF001 reports such element moves when the list is provably constant: assigned once in
`__init__` to a list display or comprehension, or to a helper annotated `-> list[torch.Tensor]`,
and read outside `__init__` only by those moves (or `len(...)`), so nothing appends to it,
replaces an element or changes one in place.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from codemods.analysis.attributes import class_attributes, module_lineage
from codemods.device_getter_sites import Site
from codemods.source import SourceFile, dotted_name, self_attribute

_LIST_TYPES = {"list", "List"}


def listed_attribute(receiver: ast.expr) -> str | None:
    """`freqs_cis` for the receiver `self.freqs_cis[i]` (an element of a `self` attribute)."""
    if isinstance(receiver, ast.Subscript) and not isinstance(receiver.slice, ast.Slice):
        return self_attribute(receiver.value)
    return None


def is_tensor_list(value: ast.expr, methods: Mapping[str, ast.AST], functions: Mapping[str, ast.AST]) -> bool:
    """A list display or comprehension, or a call of a helper of this class/module annotated `list[torch.Tensor]`."""
    if isinstance(value, ast.List | ast.ListComp):
        return True
    if not isinstance(value, ast.Call):
        return False
    helper = None
    if isinstance(value.func, ast.Attribute) and self_attribute(value.func) in methods:
        helper = methods[value.func.attr]
    elif isinstance(value.func, ast.Name):
        helper = functions.get(value.func.id)
    returns = getattr(helper, "returns", None)
    return (
        isinstance(returns, ast.Subscript)
        and dotted_name(returns.value) in _LIST_TYPES
        and dotted_name(returns.slice) == "torch.Tensor"
    )


def other_read(cls: ast.ClassDef, attribute: str, receivers: set[int]) -> ast.AST | None:
    """The first read of `self.<attribute>` outside `__init__` that is neither a reported move nor `len(...)`."""
    allowed = set(receivers)
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) or method.name == "__init__":
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and dotted_name(node.func) == "len" and len(node.args) == 1:
                allowed.add(id(node.args[0]))
        for node in ast.walk(method):
            if self_attribute(node) == attribute and id(node) not in allowed:
                return node
    return None


def constant_list_moves(
    source: SourceFile,
    cls: ast.ClassDef,
    sites: list[Site],
    classes: dict[str, ast.ClassDef],
    functions: Mapping[str, ast.AST],
) -> list[Site]:
    """The element moves (`sites`) of lists the class provably never changes (see the module docstring)."""
    lineage = module_lineage(cls, classes)
    if lineage is None:  # not provably an nn.Module, or a base elsewhere may register these names
        return []
    attributes = [class_attributes(c, functions, source) for c in lineage]
    if any(a.dynamic_registration for a in attributes):
        return []
    own, registered = attributes[0], frozenset().union(*(a.registered for a in attributes))
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    found = []
    for attribute in dict.fromkeys(s.attribute for s in sites):
        value = own.init_values.get(attribute)
        if value is None or attribute in registered or attribute in own.changed_after_init:
            continue
        listed = [s for s in sites if s.attribute == attribute]
        receivers = {id(s.call.func.value.value) for s in listed}  # type: ignore[attr-defined]
        if is_tensor_list(value, methods, functions) and other_read(cls, attribute, receivers) is None:
            found.extend(listed)
    return found
