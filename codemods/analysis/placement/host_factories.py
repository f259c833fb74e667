"""Torch factories that build host data on every call, and where their values meet the device.

DIF006's vocabulary: which factories compute the same values on any device (a safe move), which
may round differently there (a move that needs verification), and which draw random numbers
(never moved). `device_meeting` follows a factory's value (`scales = torch.logspace(...)`,
`scales *= c`, `scales[-1]`) to the first place it is combined with a device tensor
(`mid_block_res_sample *= scales[-1]`): created there on the host, it crosses to the device on
every call (or, as ControlNet's guess mode did before diffusers #3313, breaks `torch.compile`).
"""

from __future__ import annotations

import ast

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.place import Place
from codemods.analysis.schedules.sigma_taint import SigmaTaint
from codemods.node_index import method_calls_within, nodes_within
from codemods.source import dotted_name

FROM_DATA = {"tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor"}
# Factories whose values do not depend on the device they are computed on.
EXACT_FACTORIES = {"ones", "zeros", "full", "eye", "empty"}
# Same values only if the arguments are integers (an integer range is exact in any dtype here).
RANGE_FACTORIES = {"arange"}
# Computed by a different kernel on the accelerator: the last bits may differ.
ROUNDING_FACTORIES = {"linspace", "logspace"}


_HOST_DATA = FROM_DATA | EXACT_FACTORIES | RANGE_FACTORIES | ROUNDING_FACTORIES | {"from_numpy"}


def factory_name(node: ast.expr) -> str | None:
    """`arange` for `torch.arange(...)` (a factory that builds host data when given no device)."""
    if isinstance(node, ast.Call) and (dotted_name(node.func) or "").startswith("torch."):
        name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if name in _HOST_DATA:
            return name
    return None


def calls_a_factory(node: ast.AST) -> bool:
    """Whether `node`'s subtree may call a factory `factory_name` knows (a look in the index of method calls)."""
    return any(method_calls_within(node, name) for name in _HOST_DATA)


def host_factory(node: ast.expr, places: FunctionPlaces, depth: int) -> ast.Call | None:
    """The torch factory (without `device=`) a host value is computed from, within this function."""
    if depth > 6:
        return None
    if isinstance(node, ast.Attribute) and dotted_name(node.value) == "self":
        return None  # an attribute: DIF001's business
    if factory_name(node) is not None and keyword(node, "device") is None:  # type: ignore[arg-type]
        return node  # type: ignore[return-value]
    if isinstance(node, ast.Name):
        for binding in places.bindings.reaching(node.id, node):
            if binding.kind == "value" and binding.value is not None:
                found = host_factory(binding.value, places, depth + 1)
                if found is not None:
                    return found
        return None
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            found = host_factory(child, places, depth + 1)
            if found is not None:
                return found
    return None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def exact(call: ast.Call, factory: str) -> bool:
    if factory in EXACT_FACTORIES:
        return True
    if factory in RANGE_FACTORIES:
        values = [*call.args, *(k.value for k in call.keywords if k.arg in ("start", "end", "step"))]
        return all(_int_literal(v) for v in values)
    return False


def _int_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def device_meeting(call: ast.Call, function: ast.AST, places: FunctionPlaces) -> ast.AST | None:
    """The first operation in `function` that combines `call`'s value (or one derived from it) with a device tensor."""
    flow = SigmaTaint(function, lambda node: "vector" if node is call else None, {}, places)  # type: ignore[arg-type]
    meetings = []
    for node in nodes_within(function, ast.BinOp | ast.AugAssign | ast.Call | ast.Subscript, breadth_first=True):
        if isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
        elif isinstance(node, ast.AugAssign):
            operands = [node.target, node.value]
        elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").startswith("torch."):
            operands = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Subscript):
            operands = [node.value, node.slice]  # a host index tensor into a device tensor: copied every call
        else:
            continue
        tainted = [o for o in operands if not isinstance(o, ast.Starred) and flow.taint(o)]
        if tainted and any(_before(o, node, places) is Place.DEVICE for o in operands if o not in tainted):
            meetings.append(node)
    return min(meetings, key=lambda n: (n.lineno, n.col_offset), default=None)  # type: ignore[attr-defined]


def _before(operand: ast.expr, node: ast.AST, places: FunctionPlaces) -> Place:
    """Where `operand` lives as `node` reads it (the target of `x *= y` as it was before the statement)."""
    if isinstance(node, ast.AugAssign) and operand is node.target and isinstance(operand, ast.Name):
        return places.name_place(operand.id, node.value)
    return places.place(operand)


def device_at(
    call: ast.Call, meeting: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef, places: FunctionPlaces
) -> str | None:
    """A device to create `call` on: `<name>.device` for a name that holds a device tensor where `call` runs (a
    parameter annotated as a tensor, never optional, or the device operand it meets), the shortest one."""
    optional = {a.arg for a, d in _defaults(function) if isinstance(d, ast.Constant) and d.value is None}
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
    names += [n.id for n in ast.iter_child_nodes(meeting) if isinstance(n, ast.Name)]
    found = [
        name
        for name in dict.fromkeys(names)
        if name not in ("self", "cls") and name not in optional and places.name_place(name, call) is Place.DEVICE
    ]
    return f"{min(found, key=len)}.device" if found else None


def _defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.arg, ast.expr | None]]:
    positional = [*function.args.posonlyargs, *function.args.args]
    defaults = [None] * (len(positional) - len(function.args.defaults)) + list(function.args.defaults)
    return [*zip(positional, defaults), *zip(function.args.kwonlyargs, function.args.kw_defaults)]


def met_on_device(call: ast.Call, factory: str, places: FunctionPlaces) -> tuple[ast.AST, str | None] | None:
    """Where the host tensor a range or rounding `factory` builds (`call`) is first combined with device
    tensors (`x *= scales[-1]`), and a device to create it on there (None: no name holds one); None when it
    is no such factory, or never meets a device tensor."""
    function = places.function
    if factory not in RANGE_FACTORIES | ROUNDING_FACTORIES or isinstance(function, ast.Lambda):
        return None
    meeting = device_meeting(call, function, places)
    if meeting is None:
        return None
    return meeting, device_at(call, meeting, function, places)
