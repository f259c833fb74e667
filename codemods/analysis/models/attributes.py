"""What a class keeps on `self`: registered state versus plain tensors built once in `__init__`.

Registered state (buffers, parameters, submodules) is moved by `model.to()` and by group
offloading / `device_map` hooks, so a `.to(device)` of it in `forward` is required and must
never be cached or removed. A plain tensor attribute (QwenImage keeps its complex RoPE tables
so, because `model.to(dtype)` would drop a complex buffer's imaginary part) is never moved by
anyone: a per-call `.to(device)` of it copies host-to-device on every call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from codemods.analysis.values.enclosing import module_functions
from codemods.line_walk import spans_a_line
from codemods.source import SourceFile, dotted_name, self_attribute, statements, walk
from codemods.triggers import Trigger

# torch.* calls that do not return a tensor.
_NOT_TENSORS = {"device", "dtype", "Generator", "finfo", "iinfo", "Size", "get_default_dtype", "is_tensor", "no_grad"}
_PARAMETER_TYPES = {"Parameter", "UninitializedParameter", "Buffer"}
_NONE: Mapping[str, ast.AST] = MappingProxyType({})
_MAX_HELPER_DEPTH = 4
# Bases that make a class an `nn.Module` and register nothing themselves.
_MODULE_ROOTS = {"Module", "ModelMixin"}
_STORES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)  # a tuple, not `A | B` built for every statement

# Text every registration or in-place op call holds (see `class_attributes`).
_CALL_HINT = Trigger(r"register_|add_module|setattr|_\(", "register_", "add_module", "setattr", "_(")


@dataclass(frozen=True)
class ClassAttributes:
    registered: frozenset[str]  # buffers, parameters, submodules
    buffers: dict[str, ast.Call]  # name -> its `self.register_buffer(...)` call
    init_tensors: dict[str, ast.expr]  # assigned exactly once, in `__init__`, a tensor-valued expression
    changed_after_init: frozenset[str]  # assigned, deleted or mutated in place outside `__init__`
    # Where each of `changed_after_init` is first changed (a line number, for messages).
    first_change: dict[str, int] = field(default_factory=dict)
    # Changed after `__init__` only by `self.x = self.x.to(...)`: moved once, then already on the device.
    lazily_moved: frozenset[str] = frozenset()
    # `register_buffer(name, ...)` / `setattr(self, name, ...)` with a computed name: any attribute may be registered.
    dynamic_registration: bool = False
    # Assigned exactly once, in `__init__`, and not registered: whatever the value (a list of tables too).
    init_values: dict[str, ast.expr] = field(default_factory=dict)


def class_attributes(
    cls: ast.ClassDef, functions: Mapping[str, ast.AST] = _NONE, source: SourceFile | None = None
) -> ClassAttributes:
    """`functions`: the module's top-level functions, for `self.x = helper(...)` in `__init__`.

    With `source`, calls are looked for only on lines that can hold a registration or an in-place
    op (the text `register_`, `add_module`, `setattr`, `_(`): walking every node is what costs.
    """
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    init = methods.get("__init__")
    registered: set[str] = set()
    buffers: dict[str, ast.Call] = {}
    assignments: dict[str, list[ast.expr]] = {}
    changes: dict[str, list[ast.AST]] = {}
    dynamic = False
    hints = source.lines_matching(_CALL_HINT, within=[(cls.lineno, cls.end_lineno)]) if source else None
    for method in methods.values():
        in_init = method is init
        for node in _calls(method, source, hints):
            name = _registered_by_call(node)
            if name:
                registered.add(name)
                if (dotted_name(node.func) or "").endswith("register_buffer"):
                    buffers[name] = node
            elif _registers_by_computed_name(node):
                dynamic = True
            mutated = _mutated_in_place(node)
            if mutated and not in_init:
                changes.setdefault(mutated, []).append(node)
        for node in statements(method.body, into_scopes=True):
            if isinstance(node, _STORES):
                for target in _targets(node):
                    attribute = self_attribute(target)
                    if attribute is None:
                        inner = _changed_through(target)
                        if inner and not in_init:
                            changes.setdefault(inner, []).append(node)
                        continue
                    value = getattr(node, "value", None)
                    if isinstance(node, ast.AugAssign | ast.Delete) or not in_init:
                        changes.setdefault(attribute, []).append(node)
                    elif value is not None:
                        assignments.setdefault(attribute, []).append(value)
                        if _is_parameter_or_module(value):
                            registered.add(attribute)
    local_tensors = _tensor_locals(init, methods, functions, 0) if init else set()
    init_tensors = {
        name: values[0]
        for name, values in assignments.items()
        if len(values) == 1
        and name not in registered
        and is_tensor_expression(values[0], methods, local_tensors, functions)
    }
    return ClassAttributes(
        registered=frozenset(registered),
        buffers=buffers,
        init_tensors=init_tensors,
        changed_after_init=frozenset(changes),
        first_change={name: min(n.lineno for n in nodes) for name, nodes in changes.items()},
        lazily_moved=frozenset(name for name, nodes in changes.items() if all(_moves_itself(n, name) for n in nodes)),
        dynamic_registration=dynamic,
        init_values={n: v[0] for n, v in assignments.items() if len(v) == 1 and n not in registered},
    )


def _calls(method: ast.AST, source: SourceFile | None, hints: list[int] | None) -> Iterator[ast.Call]:
    if source is None or hints is None:
        return (node for node in walk(method) if isinstance(node, ast.Call))
    if not spans_a_line(method, hints):
        return iter(())  # most methods hold none of the lines: not even their arguments are walked
    return (node for node, _ in source.walk_lines(hints, root=method, kinds=ast.Call))  # type: ignore[misc]


def _moves_itself(node: ast.AST, name: str) -> bool:
    """`self.x = self.x.to(...)`: after the first call the tensor already sits where it is used."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1 or self_attribute(node.targets[0]) != name:
        return False
    value = node.value
    if isinstance(value, ast.IfExp):  # `self.x = self.x.to(d) if self.x is not None else None`
        value = value.body
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "to"
        and self_attribute(value.func.value) == name
    )


def module_lineage(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef] | None:
    """`cls` and its base classes defined in the same file, when `cls` is provably an `nn.Module`.

    None when it is not one, or when a base is defined elsewhere (other than `nn.Module`,
    `ModelMixin` or a `*Mixin`): such a base may register any attribute as a buffer.
    """
    lineage: list[ast.ClassDef] = []
    is_module = False
    pending = [cls]
    while pending:
        current = pending.pop()
        if current in lineage:
            continue
        lineage.append(current)
        for base in current.bases:
            name = (dotted_name(base) or "").rsplit(".", 1)[-1]
            if name in _MODULE_ROOTS:
                is_module = True
            elif name in classes and classes[name] is not current:
                pending.append(classes[name])
            elif not name.endswith("Mixin") and name != "object":
                return None
    return lineage if is_module else None


def lineage_attributes(
    source: SourceFile, cls: ast.ClassDef, classes: dict[str, ast.ClassDef]
) -> list[ClassAttributes] | None:
    """What `cls` and each base of it in this file keep on `self` (`cls`'s first), computed once per class.

    None when `cls` is not provably an `nn.Module`, when a base defined elsewhere may register these names
    (`module_lineage`), or when one of them registers names it computes.
    """
    lineage = module_lineage(cls, classes)
    if lineage is None:
        return None
    functions = source.memo("module_functions", lambda: module_functions(source.tree))
    attributes = [
        source.memo(f"class_attributes:{id(c)}", lambda c=c: class_attributes(c, functions, source)) for c in lineage
    ]
    return None if any(a.dynamic_registration for a in attributes) else attributes


def is_tensor_expression(
    node: ast.expr,
    methods: Mapping[str, ast.AST],
    local_tensors: frozenset[str] | set[str] = frozenset(),
    functions: Mapping[str, ast.AST] = _NONE,
    depth: int = 0,
) -> bool:
    """Provably a tensor: a torch factory/op, a method chain on one, arithmetic of them, or a helper returning one.

    `methods` are the class's (`self.helper(...)`), `functions` the module's (`helper(...)`).
    """

    def recurse(inner: ast.expr) -> bool:
        return is_tensor_expression(inner, methods, local_tensors, functions, depth)

    if isinstance(node, ast.Name):
        return node.id in local_tensors
    if isinstance(node, ast.BinOp):
        return recurse(node.left) or recurse(node.right)
    if isinstance(node, ast.UnaryOp):
        return recurse(node.operand)
    if isinstance(node, ast.Subscript):
        return recurse(node.value)
    if not isinstance(node, ast.Call):
        return False
    name = dotted_name(node.func) or ""
    if name.startswith("torch.") and not name.startswith(("torch.nn.", "torch.cuda.", "torch.backends.")):
        return name.rsplit(".", 1)[-1] not in _NOT_TENSORS
    if isinstance(node.func, ast.Name) and node.func.id in functions and depth < _MAX_HELPER_DEPTH:
        return _returns_tensor(functions[node.func.id], {}, functions, depth + 1)
    if isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "self" and node.func.attr in methods:
            return depth < _MAX_HELPER_DEPTH and _returns_tensor(methods[node.func.attr], methods, functions, depth + 1)
        return recurse(receiver)
    return False


def _returns_tensor(
    function: ast.AST, methods: Mapping[str, ast.AST], functions: Mapping[str, ast.AST], depth: int
) -> bool:
    locals_ = _tensor_locals(function, methods, functions, depth)
    returns = [n.value for n in statements(function.body) if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(is_tensor_expression(r, methods, locals_, functions, depth) for r in returns)


def _tensor_locals(
    function: ast.AST, methods: Mapping[str, ast.AST], functions: Mapping[str, ast.AST], depth: int
) -> set[str]:
    """Local names every assignment of which is a tensor expression (in statement order)."""
    tensors: set[str] = set()
    others: set[str] = set()
    for node in statements(function.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            (tensors if is_tensor_expression(node.value, methods, tensors, functions, depth) else others).add(name)
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


def _changed_through(node: ast.expr) -> str | None:
    """`self.x[i] = v`, `self.x.data = v`: an assignment that changes the tensor held in `self.x`."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        attribute = self_attribute(node)
        if attribute is not None:
            return attribute
        node = node.value
    return None


def _registered_by_call(call: ast.Call) -> str | None:
    """`self.register_buffer("x", ...)`, `self.register_parameter("x", ...)`, `self.add_module("x", ...)`."""
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if name in ("register_buffer", "register_parameter", "add_module", "register_module") and call.args:
        first = call.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    if name == "setattr" and len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)  # dynamic: treat as registered so it is never cached
    return None


def _registers_by_computed_name(call: ast.Call) -> bool:
    name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if name in ("register_buffer", "register_parameter", "add_module", "register_module"):
        return bool(call.args) and not (isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str))
    return name == "setattr" and len(call.args) >= 2 and not isinstance(call.args[1], ast.Constant)


def _mutated_in_place(call: ast.Call) -> str | None:
    """`self.x.mul_(...)`, `self.x.copy_(...)`: an in-place op on a `self` attribute."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("__"):
        return self_attribute(func.value)
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
