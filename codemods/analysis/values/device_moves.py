"""`.to(...)` calls: what they move where, and whether what they return is later changed in place.

`tensor.to(x)` means different things for different `x` (a device, a dtype, another tensor whose
device *and* dtype it copies), so a move is recognised only where the device is evident: a
`device=` keyword, an expression ending in `.device`, a name that says `device`, `torch.device(...)`
or a device string.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.node_index import nodes_within
from codemods.source import Ancestors, dotted_name

_DEVICE_STRINGS = ("cpu", "cuda", "mps", "xpu", "npu", "meta", "hpu")
_OTHER_KEYWORDS = ("non_blocking", "copy", "memory_format")
# torch functions whose result shares storage with an argument; any other `torch.f(...)` returns a new tensor.
_VIEW_FUNCTIONS = {
    "view_as_real", "view_as_complex", "narrow", "select", "split", "split_with_sizes", "tensor_split", "chunk",
    "unbind", "movedim", "moveaxis", "transpose", "swapaxes", "permute", "squeeze", "unsqueeze", "flatten",
    "reshape", "as_strided", "t", "diagonal", "broadcast_to", "expand", "unflatten", "detach",
}  # fmt: skip
_FRESH_METHODS = {"clone"}


@dataclass(frozen=True)
class DeviceMove:
    """`x.to(device)`, possibly with a dtype or other options."""

    device: ast.expr
    dtype: ast.expr | None
    options: tuple[str, ...]  # other keywords: non_blocking, copy, memory_format

    @property
    def device_only(self) -> bool:
        return self.dtype is None and not self.options

    @property
    def constant_dtype(self) -> bool:
        return self.dtype is not None and (dotted_name(self.dtype) or "").startswith("torch.")


def device_move(call: ast.Call) -> DeviceMove | None:
    """What `call` (a `.to(...)` call) moves to, when it provably names a device; None otherwise."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    keywords = {k.arg: k.value for k in call.keywords}
    device = keywords.get("device")
    dtype = keywords.get("dtype")
    args = list(call.args)
    if device is None:
        if not args or not is_device_expression(args[0]):
            return None
        device = args.pop(0)
    if args:
        if dtype is not None or len(args) > 1:
            return None
        dtype = args[0]
    options = tuple(k for k in keywords if k in _OTHER_KEYWORDS)
    if set(keywords) - {"device", "dtype", *_OTHER_KEYWORDS}:
        return None
    return DeviceMove(device, dtype, options)


def is_device_expression(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "device" or node.attr.endswith("_device")
    if isinstance(node, ast.Name):
        return "device" in node.id.lower()
    if isinstance(node, ast.Call):
        return dotted_name(node.func) == "torch.device"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":")[0] in _DEVICE_STRINGS
    return False


def changed_in_place(function: ast.AST, sources: list[ast.expr]) -> ast.AST | None:
    """The first place in `function` that changes in place a tensor that may share storage with one of `sources`.

    Flow-insensitive and conservative: a local bound anywhere to a view of a source (a slice, a
    `.view()`, an unknown call's result) is an alias everywhere; `torch.cat(...)`, arithmetic and
    `.clone()` make new tensors.
    """
    source_ids = {id(s) for s in sources}
    aliases: set[str] = set()
    assignments = [n for n in nodes_within(function, ast.Assign | ast.AnnAssign) if n.value is not None]
    changed = True
    while changed:
        changed = False
        for node in assignments:
            if not _may_alias(node.value, source_ids, aliases):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (n.id for t in targets for n in nodes_within(t, ast.Name)):
                if name not in aliases:
                    aliases.add(name)
                    changed = True
    for node in nodes_within(function, ast.Call | ast.AugAssign | ast.Assign, breadth_first=True):
        if _changes(node, source_ids, aliases):
            return node
    return None


def _may_alias(value: ast.expr, source_ids: set[int], aliases: set[str]) -> bool:
    root = value
    while True:
        if id(root) in source_ids:
            return True
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            if root.func.attr in _FRESH_METHODS:
                return False
            root = root.func.value
        elif isinstance(root, ast.Subscript | ast.Attribute | ast.Starred):
            root = root.value
        else:
            break
    if isinstance(root, ast.Name):
        return root.id in aliases
    if isinstance(root, ast.BinOp | ast.UnaryOp | ast.Compare | ast.Constant):
        return False
    if isinstance(root, ast.Call):
        name = dotted_name(root.func) or ""
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] not in _VIEW_FUNCTIONS:
            return False
    return any(id(n) in source_ids or (isinstance(n, ast.Name) and n.id in aliases) for n in nodes_within(root, ast.AST))


def _changes(node: ast.AST, source_ids: set[int], aliases: set[str]) -> bool:
    def is_alias(expression: ast.expr) -> bool:
        while True:
            if isinstance(expression, ast.Subscript | ast.Attribute):
                expression = expression.value
            elif isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
                if id(expression) in source_ids:
                    return True
                expression = expression.func.value
            else:
                break
        return id(expression) in source_ids or (isinstance(expression, ast.Name) and expression.id in aliases)

    if isinstance(node, ast.Call):
        func = node.func
        in_place = isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_")
        if in_place and is_alias(func.value):
            return True
        return any(k.arg == "out" and is_alias(k.value) for k in node.keywords)
    if isinstance(node, ast.AugAssign):
        return is_alias(node.target)
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Subscript | ast.Attribute) and is_alias(t) for t in node.targets)
    return False


@dataclass(frozen=True)
class Site:
    """One `self.<attribute>.to(<device>)` in a method of a class."""

    call: ast.Call
    attribute: str
    move: DeviceMove
    ancestors: Ancestors
    method: ast.FunctionDef
    hot: bool
