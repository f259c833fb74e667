"""What one use of a sigma means: a read on the host, a need for the sigmas on the device, or neither.

The judging half of `codemods.analysis.schedules.sigma_flow`: given a tainted expression and its parent
node, say why (if at all) the use would stop working with the sigmas on the CPU.
"""

from __future__ import annotations

import ast

from codemods.analysis.schedules.sigma_taint import ELEMENTWISE, SigmaTaint, is_append, made_like, moves_to_device
from codemods.node_index import parent_of
from codemods.source import dotted_name, shortened

# Give a sigma dimensions: as a CPU tensor it can no longer meet device tensors.
_RESHAPING = {
    "view", "reshape", "unsqueeze", "expand", "repeat", "flatten", "broadcast_to", "expand_as", "repeat_interleave",
    "ravel", "view_as", "reshape_as", "tile",
}  # fmt: skip
_HARMLESS = {"len", "isinstance", "print", "repr", "str", "getattr", "hasattr", "type", "id"}
_HOST_BUILTINS = {"float", "int", "bool", "min", "max", "round", "abs"}

# Modules whose functions take numbers: a sigma handed to them is read on the host (a CPU one for free).
HOST_LIBRARIES = ("math.", "np.", "numpy.", "scipy.", "integrate.")
MOVES_TO_DEVICE = "moves it to the device on every call (with CPU sigmas, a copy each time)"
# With CPU sigmas a sigma's device is the CPU: what is built there has dimensions on the CPU.
_READS_DEVICE = "reads its `.device` (with CPU sigmas, the CPU) for something not shaped like it"

HOST_READ_WHY = {
    "compare": "compares it in Python", "truth": "tests its truth in Python", "minmax": "takes a builtin min/max",
    "tensor": "builds a tensor from it with `torch.tensor`", "item": "reads `.item()`", "int": "converts it with `int()`",
    "float": "converts it with `float()`", "bool": "converts it with `bool()`", "tolist": "reads `.tolist()`",
    "cpu": "copies it to the host", "numpy": "copies it to the host",
}  # fmt: skip


def stores_scalar(parent: ast.AST | None, node: ast.expr, flow: SigmaTaint) -> bool:
    """`self.dt = dt`: one sigma kept for the next step (a 0-dim CPU tensor keeps working there)."""
    return (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and flow.taint(node) == "scalar"
        and all(
            isinstance(t, ast.Attribute) and dotted_name(t.value) == "self" and t.attr != "sigmas"
            for t in parent.targets
        )
    )


def propagates(parent: ast.AST, node: ast.expr, flow: SigmaTaint) -> bool:
    """The parent carries the taint on (its own use is what counts) or is a plain binding."""
    if (
        isinstance(parent, ast.expr)
        and flow.taint(parent)
        and not (isinstance(parent, ast.Subscript) and flow.taint(node) == "scalar")
    ):
        return True
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return all(isinstance(t, ast.Name | ast.Tuple | ast.List) or _is_self_sigmas(t) for t in targets)
    if isinstance(parent, ast.keyword | ast.Starred):
        return False
    return False


def device_need(parent: ast.AST, node: ast.expr, flow: SigmaTaint) -> str | None:
    """Why this use needs the sigmas on the device (None: it works as well with CPU sigmas)."""
    taint = flow.taint(node)
    if isinstance(parent, ast.keyword):
        parent = parent_of(parent)
    if isinstance(parent, ast.Attribute):
        call = parent_of(parent)
        is_call = isinstance(call, ast.Call) and call.func is parent
        if not is_call:
            if parent.attr == "device":
                return None if _builds_like(parent, node) else _READS_DEVICE
            return None if parent.attr in ("shape", "dtype", "ndim", "T") else f"reads `.{parent.attr}` of it"
        if parent.attr in ("to", "cuda") and (parent.attr == "cuda" or moves_to_device(call)):
            return MOVES_TO_DEVICE
        if parent.attr in _RESHAPING:
            return f"gives a sigma dimensions (`.{parent.attr}()`): as a CPU tensor it could not meet device tensors"
        if (
            parent.attr in ("item", "tolist", "cpu", "numpy", "numel", "size", "dim", "max", "min")
            or parent.attr in ELEMENTWISE
        ):
            return None if taint == "scalar" or parent.attr not in ELEMENTWISE else "computes with the whole vector"
        if parent.attr == "append":
            return None
        return f"calls `.{parent.attr}()` on it"
    if isinstance(parent, ast.Subscript):
        return "indexes a single sigma again (`[None]`, ...): as a CPU tensor it could not meet device tensors"
    if isinstance(parent, ast.Compare) and all(
        isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in parent.ops
    ):
        return None
    if isinstance(parent, ast.BinOp | ast.Compare | ast.UnaryOp | ast.BoolOp | ast.IfExp):
        return None if taint == "scalar" else "computes with the vector next to device tensors"
    if isinstance(parent, ast.Call):
        if is_append(parent):
            return None  # the list carries the sigmas on; its uses are checked
        name = dotted_name(parent.func) or ""
        if name in _HARMLESS or name in _HOST_BUILTINS or name.startswith((*HOST_LIBRARIES, "logger.")):
            return None
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in ELEMENTWISE:
            return None if taint == "scalar" else "computes with the vector next to device tensors"
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in ("tensor", "as_tensor"):
            return None
        if isinstance(parent.func, ast.Attribute) and dotted_name(parent.func.value) == "self":
            return None  # followed into the method
        return f"passes it to `{name or ast.unparse(parent.func)}()`"
    if isinstance(parent, ast.List | ast.Tuple):
        container = parent_of(parent)
        if isinstance(container, ast.Call):
            name = (dotted_name(container.func) or "").rsplit(".", 1)[-1]
            if name in ("tensor", "as_tensor") or is_append(container):
                return None
            if name in ("cat", "stack", "concat", "hstack", "vstack"):
                return f"joins it with `torch.{name}`: on the CPU it could not meet device tensors"
        if isinstance(container, ast.Assign | ast.Return):
            return None if taint == "scalar" else "hands the vector on"
        return "puts it in a container"
    if isinstance(parent, ast.Return):
        return None if taint == "scalar" else "returns the vector"
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return "stores it in an attribute"
    if isinstance(parent, ast.For | ast.comprehension):
        return "iterates over it"
    if isinstance(parent, ast.FormattedValue | ast.If | ast.While | ast.Assert | ast.Expr):
        return None
    return f"uses it in `{shortened(ast.unparse(parent))}`"


def _builds_like(device: ast.Attribute, node: ast.expr) -> bool:
    """`randn_tensor(x.shape, device=x.device)`: a tensor shaped and placed like `x` (0-dim where `x` is)."""
    keyword = parent_of(device)
    call = parent_of(keyword) if isinstance(keyword, ast.keyword) else None
    return isinstance(call, ast.Call) and made_like(call) is node


def shown(parent: ast.AST) -> ast.AST:
    """The expression a message quotes: the call for `x.to`, the node itself otherwise."""
    call = parent_of(parent)
    if isinstance(parent, ast.Attribute) and isinstance(call, ast.Call) and call.func is parent:
        return call
    return parent


def _is_self_sigmas(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "sigmas" and dotted_name(node.value) == "self"
