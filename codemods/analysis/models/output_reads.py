"""Reads of a model or scheduler output's first field, and what was called to produce it.

`self.unet(x, t).sample`, `self.scheduler.step(...)["prev_sample"]`, `attn(h).sample` in a loop
over `self.attentions`: the read, the call, and the classes the called object may be (from
`codemods.analysis.values.types`), with the method that runs (`forward` for a module call).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.analysis.models.hot_paths import is_module_class
from codemods.analysis.values.element_types import element_types
from codemods.analysis.values.types import LocalTypes, Types, class_attribute_types, class_memo
from codemods.analysis.values.unpacked_keys import unpacked_keys
from codemods.source import Ancestors, SourceFile, enclosing, self_attribute

FIELDS = ("sample", "prev_sample")


@dataclass(frozen=True)
class OutputRead:
    node: ast.Attribute | ast.Subscript  # the read: `<call>.sample` or `<call>["sample"]`
    call: ast.Call
    field: str
    types: Types  # what the called object may be
    method: str  # the method that runs: `forward` for `self.unet(...)`, `step` for `self.scheduler.step(...)`
    # `self._decode(z).sample` in a model: the model reading the output of one of its own methods.
    own_method: bool

    @property
    def access(self) -> str:
        return f".{self.field}" if isinstance(self.node, ast.Attribute) else f'["{self.field}"]'


def output_read(node: ast.AST, ancestors: Ancestors, source: SourceFile) -> OutputRead | None:
    """The read at `node`, when it reads a first output field off a call whose callee's classes are known."""
    read = _field_read(node, ancestors)
    if read is None:
        return None
    call, field = read
    func, method = call.func, "forward"
    if isinstance(func, ast.Attribute) and self_attribute(func) is None:
        method, func = func.attr, func.value
    cls = enclosing(ancestors, ast.ClassDef)
    if self_attribute(func) and cls is not None:
        types = class_attribute_types(source, cls).get(func.attr)
        if types:
            return OutputRead(node, call, field, types, method, own_method=False)
        defines = any(isinstance(n, ast.FunctionDef) and n.name == func.attr for n in cls.body)
        if defines and method == "forward":
            return OutputRead(node, call, field, (cls.name,), func.attr, own_method=is_module_class(cls))
        return None
    function = enclosing(ancestors, (ast.FunctionDef, ast.AsyncFunctionDef))
    if function is None:
        return None
    types = _local_types(source, function, cls).value(func)
    return OutputRead(node, call, field, types, method, own_method=False) if types else None


def return_dict_blocker(call: ast.Call, scope: ast.AST | None, owner: ast.AST | None) -> str | None:
    """Why `return_dict=False` cannot be added to `call`'s arguments, which may already carry it (None: it can)."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return "the call forwards `*args`, which may already carry `return_dict`"
    for unpacked in (k.value for k in call.keywords if k.arg is None):
        if not isinstance(unpacked, ast.Name) or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return f"the call forwards `**{ast.unparse(unpacked)}`, which may already carry `return_dict`"
        keys = unpacked_keys(unpacked.id, scope, owner if isinstance(owner, ast.ClassDef) else None)
        if keys is None:
            return f"the call forwards `**{unpacked.id}`, which may already carry `return_dict`: no dict of known keys is built for it here"
        if "return_dict" in keys:
            return f"the call forwards `**{unpacked.id}`, which carries `return_dict`"
    if any(
        k.arg == "return_dict" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
        for k in call.keywords
    ):
        return "the call already sets `return_dict` to something other than True"
    return None


def _field_read(node: ast.AST, ancestors: Ancestors) -> tuple[ast.Call, str] | None:
    """`call(...).sample` or `call(...)["sample"]` read (not stored, not called as a method)."""
    if isinstance(node, ast.Attribute) and node.attr in FIELDS and isinstance(node.ctx, ast.Load):
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, ast.Call) and parent.func is node:
            return None
        field = node.attr
    elif (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in FIELDS
    ):
        field = node.slice.value
    else:
        return None
    return (node.value, field) if isinstance(node.value, ast.Call) else None


def _local_types(
    source: SourceFile, function: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None
) -> LocalTypes:
    def build() -> LocalTypes:
        if cls is None:
            return LocalTypes(function, {}, {})
        return LocalTypes(function, class_attribute_types(source, cls), class_memo(source, element_types, cls))

    return source.memo(f"local_types:{id(function)}", build)
