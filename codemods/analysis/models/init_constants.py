"""Tensors built on every call from Python values a module keeps on `self`, and whether they can be cached.

OmniGen's scaled RoPE keeps `self.long_factor = rope_scaling["long_factor"]`, a list of floats set
once in `__init__`, and runs `torch.tensor(self.long_factor, dtype=torch.float32, device=x.device)`
on every forward: the same values, copied host-to-device each time. Such a call can become a
getter cached per device (DIF006's fix) when nothing can make the cached tensor differ from a
fresh one, as far as the module shows:
- the call is `torch.tensor(self.<attr>, ...)` with only a constant `dtype=` and a `device=` that
  names a device (`x.device`, a `device` variable), in a method of a provable `nn.Module`;
- `self.<attr>` is assigned once, in `__init__`, from a literal or from `__init__`'s arguments
  (`rope_scaling["long_factor"]`), and is not registered state;
- nowhere in the module is an attribute of that name stored, deleted, or read other than by such
  a `torch.tensor(...)` (which copies it) or `len(...)`: no `.append`, no `[i] = `, no alias;
- every such build in the class passes the same arguments (one getter serves them all), and the
  method does not change the built tensor in place.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.analysis.models.attributes import class_attributes, module_lineage
from codemods.analysis.values.device_moves import changed_in_place, is_device_expression
from codemods.analysis.values.enclosing import method_owner, module_functions
from codemods.source import Ancestors, SourceFile, dotted_name, self_attribute

_BUILDERS = {"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor"}
# `len(self.x)` and `torch.tensor(self.x, ...)` read the value without keeping a reference to it.
_COPYING_READS = {"len", "torch.tensor"}


@dataclass(frozen=True)
class ConstantBuild:
    """`torch.tensor(self.<attribute>, ...)`, provably the same tensor on every call but for its device."""

    call: ast.Call
    attribute: str
    device: ast.expr
    cls: ast.ClassDef
    method: ast.FunctionDef


def built_attribute(call: ast.Call) -> str | None:
    """`long_factor` for `torch.tensor(self.long_factor, ...)` (any tensor factory given a `self` attribute)."""
    if dotted_name(call.func) in _BUILDERS and len(call.args) == 1:
        return self_attribute(call.args[0])
    return None


def constant_build(source: SourceFile, call: ast.Call, ancestors: Ancestors) -> ConstantBuild | str:
    """The proven build (see the module docstring), or why it cannot be cached per device."""
    attribute = built_attribute(call)
    if dotted_name(call.func) != "torch.tensor" or attribute is None:
        return "only `torch.tensor(self.<attribute>, ...)` is cached per device"
    device = next((k.value for k in call.keywords if k.arg == "device"), None)
    others = [k.arg or "**" for k in call.keywords if k.arg not in ("device", "dtype")]
    if others:
        return f"the call passes `{others[0]}`; only `dtype=` and `device=` are cached"
    dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
    if dtype is not None and not (dotted_name(dtype) or "").startswith("torch."):
        return "the dtype is not a constant `torch.<dtype>`; the cache would need it in its key"
    if device is None or not isinstance(device, ast.Name | ast.Attribute) or not is_device_expression(device):
        return "`device=` is not a device expression (`x.device` or a device variable)"
    owner = method_owner(ancestors)
    classes = {c.name: c for c in source.classes}
    lineage = module_lineage(owner[0], classes) if owner else None
    if owner is None or lineage is None:
        return "not in a method of a provable `nn.Module` (a base defined elsewhere may change the attribute)"
    cls, method = owner
    reason = _why_changing(source, cls, lineage, attribute, call)
    if reason is not None:
        return reason
    changed = changed_in_place(method, [call])
    if changed is not None:
        return f"line {changed.lineno} changes the built tensor in place; a cached tensor would keep the change"
    return ConstantBuild(call, attribute, device, cls, method)


def build_text(source: SourceFile, call: ast.Call, device: str) -> str | None:
    """The call's text with `device=<device>`; None when it spans lines (the getter is written on one)."""
    span, value = source.span(call), source.span(next(k.value for k in call.keywords if k.arg == "device"))
    if span.line != span.end_line:
        return None
    line = source.lines[span.line - 1]
    return line[span.column : value.column] + device + line[value.end_column : span.end_column]


def _why_changing(
    source: SourceFile, cls: ast.ClassDef, lineage: list[ast.ClassDef], attribute: str, call: ast.Call
) -> str | None:
    functions = source.memo("module_functions", lambda: module_functions(source.tree))
    attributes = [class_attributes(c, functions, source) for c in lineage]
    if any(a.dynamic_registration for a in attributes) or any(attribute in a.registered for a in attributes):
        return f"`self.{attribute}` is or may be registered state (a buffer, parameter or submodule)"
    value = attributes[0].init_values.get(attribute)
    if value is None:
        return f"`self.{attribute}` is not assigned exactly once, in `__init__`"
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    parameters = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)} - {"self"}
    # An argument rebound in `__init__` may hold anything by the time it is kept (a buffer, say).
    parameters -= {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if not _host_data(value, parameters):
        return f"`self.{attribute}` is set from `{source.segment(value)}` (line {value.lineno}), not provably constant"
    parents = source.memo("parents", lambda: _parents(source.tree))
    arguments = (ast.unparse(call.func), [ast.unparse(k) for k in call.keywords if k.arg != "device"])
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and dotted_name(node.func) in ("setattr", "delattr") and len(node.args) > 1:
            name = node.args[1]
            if not isinstance(name, ast.Constant) or name.value == attribute:
                return f"line {node.lineno} may set `{attribute}` by name"
        if not (isinstance(node, ast.Attribute) and node.attr == attribute):
            continue
        parent = parents.get(id(node))
        if isinstance(node.ctx, ast.Store | ast.Del):
            if isinstance(parent, ast.Assign) and parent.value is value and parent.targets == [node]:
                continue  # the assignment in `__init__`
            return f"line {node.lineno} assigns, extends or deletes `{source.segment(node)}`"
        if not (isinstance(parent, ast.Call) and dotted_name(parent.func) in _COPYING_READS and parent.args == [node]):
            return f"line {node.lineno} reads `{source.segment(node)}` other than to copy it, and may change it"
        built = (ast.unparse(parent.func), [ast.unparse(k) for k in parent.keywords if k.arg != "device"])
        if dotted_name(parent.func) == "torch.tensor" and built != arguments:
            return f"line {node.lineno} builds `{source.segment(node)}` with other arguments, which one getter cannot serve"
    return None


def _host_data(value: ast.expr, parameters: set[str]) -> bool:
    """A literal number, string or list/tuple of them, or a read of `__init__`'s arguments (`config["key"]`)."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        return _host_data(value.operand, parameters)
    if isinstance(value, ast.List | ast.Tuple):
        return all(_host_data(e, parameters) for e in value.elts)
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        return _host_data(value.value, parameters)
    if isinstance(value, ast.Attribute):
        return _host_data(value.value, parameters)
    return isinstance(value, ast.Name) and value.id in parameters


def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
