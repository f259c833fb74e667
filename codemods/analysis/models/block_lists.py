"""The classes a module's `__init__` appends to the block lists it fills one block at a time, as UNets do.

`self.down_blocks = nn.ModuleList([])` and `self.down_blocks.append(down_block)` in a loop over the
configured block types (`UNetMotionModel`, `SparseControlNetModel`), or `down_blocks = []`,
`down_blocks.append(ControlNetXSCrossAttnDownBlock2D(...))` and `self.down_blocks = nn.ModuleList(down_blocks)`
(`UNetControlNetXSModel`). Such a list holds different blocks (other channels, with or without attention):
what repeats is stacked inside them, as inside the blocks `get_down_block(...)` returns, so these classes are
where `codemods.analysis.models.model_graph` starts looking. An appended value is read when it is a constructor call
or a local every assignment of which is one; anything else (`zero_module(conv)`) is left out.
"""

from __future__ import annotations

import ast

from codemods.analysis.models.function_nodes import FunctionNodes
from codemods.analysis.values.types import constructed_type
from codemods.source import dotted_name, local_or_self_name


def appended_classes(methods: list[FunctionNodes]) -> tuple[str, ...]:
    """The classes appended to the `nn.ModuleList`s that `methods` (`__init__` and its helpers) fill by appending."""
    found: list[str] = []
    for method in methods:
        appends = [
            (node.func, node.args[0])
            for node in method.calls
            if isinstance(node.func, ast.Attribute) and node.func.attr == "append" and len(node.args) == 1
        ]
        if not appends:
            continue  # most `__init__`s append nothing: no list or local to read
        lists = _filled_lists(method)
        constructed = _constructed_locals(method)
        for append, value in appends:
            if local_or_self_name(append.value) not in lists:
                continue
            built = constructed_type(value) if isinstance(value, ast.Call) else None
            if built is None and isinstance(value, ast.Name):
                built = constructed.get(value.id)
            found.extend(built or ())
    return tuple(dict.fromkeys(found))


def _is_module_list(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and (dotted_name(node.func) or "").endswith("ModuleList")


def _filled_lists(method: FunctionNodes) -> set[str]:
    """`self.x = nn.ModuleList([])` / `nn.ModuleList()`, and locals `xs = []` later wrapped as `nn.ModuleList(xs)`."""
    empty_modules: set[str] = set()
    empty_locals: dict[str, int] = {}
    wrapped: set[str] = set()
    for node in method.assigns:
        if len(node.targets) != 1:
            continue
        key, value = local_or_self_name(node.targets[0]), node.value
        if key is None:
            continue
        if key.startswith("self.") and _is_module_list(value):
            argument = value.args[0] if value.args else None
            if argument is None or (isinstance(argument, ast.List) and not argument.elts):
                empty_modules.add(key)
            elif isinstance(argument, ast.Name):
                wrapped.add(argument.id)
        elif not key.startswith("self."):
            # A local bound more than once may hold anything by the time it is wrapped.
            empty = isinstance(value, ast.List) and not value.elts
            empty_locals[key] = empty_locals.get(key, 0) + (1 if empty else 2)
    return empty_modules | {name for name, times in empty_locals.items() if times == 1 and name in wrapped}


def _constructed_locals(method: FunctionNodes) -> dict[str, tuple[str, ...]]:
    """Locals every assignment of which constructs a class (`down_block = CrossAttnDownBlockMotion(...)`)."""
    found: dict[str, list[str] | None] = {}
    plain: set[int] = set()
    for node in method.assigns:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            plain.add(id(node.targets[0]))
            name, built = node.targets[0].id, constructed_type(node.value)
            held = found.get(name, [])
            found[name] = None if built is None or held is None else [*held, *built]
    # A name also bound another way (a loop target, `a, b = ...`) may hold anything.
    for node in method.bound_names:
        if id(node) not in plain:
            found[node.id] = None
    return {name: tuple(dict.fromkeys(b)) for name, b in found.items() if b}
