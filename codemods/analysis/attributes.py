"""What a class keeps on `self`: registered state versus plain tensors built once in `__init__`.

Registered state (buffers, parameters, submodules) is moved by `model.to()` and by group
offloading / `device_map` hooks, so a `.to(device)` of it in `forward` is required and must
never be cached or removed. A plain tensor attribute (QwenImage keeps its complex RoPE tables
so, because `model.to(dtype)` would drop a complex buffer's imaginary part) is never moved by
anyone: a per-call `.to(device)` of it copies host-to-device on every call.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.source import dotted_name

# torch.* calls that do not return a tensor.
_NOT_TENSORS = {"device", "dtype", "Generator", "finfo", "iinfo", "Size", "get_default_dtype", "is_tensor", "no_grad"}
_PARAMETER_TYPES = {"Parameter", "UninitializedParameter"}


@dataclass(frozen=True)
class ClassAttributes:
    registered: frozenset[str]  # buffers, parameters, submodules
    buffers: dict[str, ast.Call]  # name -> its `self.register_buffer(...)` call
    init_tensors: dict[str, ast.expr]  # assigned exactly once, in `__init__`, a tensor-valued expression
    changed_after_init: frozenset[str]  # assigned, deleted or mutated in place outside `__init__`


def class_attributes(cls: ast.ClassDef) -> ClassAttributes:
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    init = methods.get("__init__")
    registered: set[str] = set()
    buffers: dict[str, ast.Call] = {}
    assignments: dict[str, list[ast.expr]] = {}
    changed: set[str] = set()
    for method in methods.values():
        in_init = method is init
        for node in ast.walk(method):
            if isinstance(node, ast.Call):
                name = _registered_by_call(node)
                if name:
                    registered.add(name)
                    if (dotted_name(node.func) or "").endswith("register_buffer"):
                        buffers[name] = node
                mutated = _mutated_in_place(node)
                if mutated and not in_init:
                    changed.add(mutated)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Delete):
                for target in _targets(node):
                    attribute = _self_attribute(target)
                    if attribute is None:
                        inner = _subscripted_self_attribute(target)
                        if inner and not in_init:
                            changed.add(inner)
                        continue
                    value = getattr(node, "value", None)
                    if isinstance(node, ast.AugAssign | ast.Delete) or not in_init:
                        changed.add(attribute)
                    elif value is not None:
                        assignments.setdefault(attribute, []).append(value)
                        if _is_parameter_or_module(value):
                            registered.add(attribute)
    local_tensors = _tensor_locals(init, methods) if init else set()
    init_tensors = {
        name: values[0]
        for name, values in assignments.items()
        if len(values) == 1 and name not in registered and is_tensor_expression(values[0], methods, local_tensors)
    }
    return ClassAttributes(frozenset(registered), buffers, init_tensors, frozenset(changed))


def is_tensor_expression(node: ast.expr, methods: dict[str, ast.AST], local_tensors: frozenset[str] | set[str] = frozenset()) -> bool:
    """Provably a tensor: a torch factory/op, a method chain on one, arithmetic of them, or a helper returning one."""
    if isinstance(node, ast.Name):
        return node.id in local_tensors
    if isinstance(node, ast.BinOp):
        return is_tensor_expression(node.left, methods, local_tensors) or is_tensor_expression(
            node.right, methods, local_tensors
        )
    if isinstance(node, ast.UnaryOp):
        return is_tensor_expression(node.operand, methods, local_tensors)
    if isinstance(node, ast.Subscript):
        return is_tensor_expression(node.value, methods, local_tensors)
    if not isinstance(node, ast.Call):
        return False
    name = dotted_name(node.func) or ""
    if name.startswith("torch.") and not name.startswith(("torch.nn.", "torch.cuda.", "torch.backends.")):
        return name.rsplit(".", 1)[-1] not in _NOT_TENSORS
    if isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "self" and node.func.attr in methods:
            return _returns_tensor(methods[node.func.attr], methods)
        return is_tensor_expression(receiver, methods, local_tensors)
    return False


def _returns_tensor(function: ast.AST, methods: dict[str, ast.AST]) -> bool:
    locals_ = _tensor_locals(function, methods)
    returns = [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(is_tensor_expression(r, {}, locals_) for r in returns)


def _tensor_locals(function: ast.AST, methods: dict[str, ast.AST]) -> set[str]:
    """Local names every assignment of which is a tensor expression (in statement order)."""
    tensors: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            (tensors if is_tensor_expression(node.value, methods, tensors) else others).add(name)
    return tensors - others


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in _unpacked(target)]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return [node.target]


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]


def _self_attribute(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _subscripted_self_attribute(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return _self_attribute(node)


def _registered_by_call(call: ast.Call) -> str | None:
    """`self.register_buffer("x", ...)`, `self.register_parameter("x", ...)`, `self.add_module("x", ...)`."""
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if name in ("register_buffer", "register_parameter", "add_module") and call.args:
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    if name == "setattr" and len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)  # dynamic: treat as registered so it is never cached
    return None


def _mutated_in_place(call: ast.Call) -> str | None:
    """`self.x.mul_(...)`, `self.x.copy_(...)`: an in-place op on a `self` attribute."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("__"):
        return _self_attribute(func.value)
    return None


def _is_parameter_or_module(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qualified = dotted_name(value.func) or ""
    name = qualified.rsplit(".", 1)[-1]
    if name in _PARAMETER_TYPES or qualified.startswith(("nn.", "torch.nn.")):
        return True
    # A constructor call (`FooBlock(...)`, `Attention(...)`) builds a submodule; `torch.Tensor(...)` a tensor.
    return name[:1].isupper() and not qualified.startswith("torch.")
