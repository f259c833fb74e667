"""Which values in one function hold a scheduler's sigmas: one sigma (0-dim), or the vector.

The data-flow half of `codemods.analysis.schedules.sigma_flow`: names bound to a source expression,
arithmetic on it, elementwise torch ops, and `self.<method>(...)` calls (answered by the caller).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.place import Place
from codemods.analysis.values.binding_sites import Binding
from codemods.node_index import in_walk_order, method_calls_within, nodes_within
from codemods.source import dotted_name, same_expression

Function = ast.FunctionDef | ast.AsyncFunctionDef
Taint = str  # "scalar": one sigma (0-dim); "vector": the sigmas or a slice of them

# Ops that keep a 0-dim tensor 0-dim and accept a CPU scalar next to device tensors.
ELEMENTWISE = {
    "exp", "log", "sqrt", "rsqrt", "abs", "clamp", "clip", "sin", "cos", "tan", "tanh", "sigmoid", "expm1", "log1p",
    "pow", "square", "neg", "reciprocal", "maximum", "minimum", "where", "lerp", "atan", "asin", "acos", "floor",
    "ceil", "round", "sign", "float", "double", "half", "bfloat16", "clamp_min", "clamp_max", "log2", "log10",
    "exp2", "mul", "add", "sub", "div", "true_divide", "detach", "clone", "type_as",
}  # fmt: skip


class SigmaTaint:
    """The taint of one function, given which parameters carry sigmas."""

    def __init__(
        self,
        function: Function,
        is_source: Callable[[ast.expr], Taint | None],
        tainted_parameters: dict[str, Taint],
        places: FunctionPlaces,
        call_result: Callable[[ast.Call, SigmaTaint], Taint | None] = lambda call, flow: None,
    ):
        self.function = function
        self.is_source = is_source
        self.places = places
        self.call_result = call_result
        self.parameters = dict(tainted_parameters)
        self._memo: dict[int, Taint | None] = {}
        self._bindings: dict[int, Taint | None] = {}
        self._in_progress: set[int] = set()
        appends = method_calls_within(function, "append")
        self._appends = [n for n in in_walk_order(appends) if is_append(n) and isinstance(n.func.value, ast.Name)]

    def taint(self, node: ast.expr) -> Taint | None:
        """What of the sigmas `node` holds: one sigma, the vector (or a slice), or nothing."""
        if id(node) not in self._memo:
            self._memo[id(node)] = self._taint(node)
        return self._memo[id(node)]

    def name_taint(self, name: str, use: ast.AST) -> Taint | None:
        found: Taint | None = None
        reaching = self.places.bindings.reaching(name, use)
        for binding in reaching:
            taint = self._binding_taint(binding)
            if taint:
                found = _wider(found, taint)
        if self._appended(name, use, reaching):
            found = "vector"
        return found

    def _binding_taint(self, binding: Binding) -> Taint | None:
        key = id(binding)
        if key in self._bindings:
            return self._bindings[key]
        if key in self._in_progress:
            return None  # a cycle (`x = x * 2` in a loop) adds nothing new
        self._in_progress.add(key)
        taint: Taint | None = None
        if binding.kind == "parameter":
            taint = self.parameters.get(binding.name)
        elif binding.kind in ("value", "item") and binding.value is not None:
            taint = self.taint(binding.value)
        elif binding.kind == "element" and binding.value is not None:
            taint = "scalar" if self.taint(binding.value) else None
        elif binding.kind == "augmented" and binding.value is not None:
            target = binding.owner.target  # type: ignore[attr-defined]
            taint = self.taint(binding.value) or self.name_taint(binding.name, target)
        self._in_progress.discard(key)
        self._bindings[key] = taint
        return taint

    def _appended(self, name: str, use: ast.AST, reaching: list[Binding]) -> bool:
        """`name.append(<sigma>)` between the list's creation and this use (or later in an enclosing loop)."""
        at = getattr(use, "lineno", 0)
        since = min((getattr(b.owner, "lineno", 0) for b in reaching), default=0)
        for call in self._appends:
            if call.func.value.id != name or not self.taint(call.args[0]):
                continue
            if since <= call.lineno < at or _same_loop(call, use, self.function):
                return True
        return False

    def _taint(self, node: ast.expr) -> Taint | None:
        source = self.is_source(node)
        if source:
            return source
        if isinstance(node, ast.Name):
            return self.name_taint(node.id, node)
        if (
            isinstance(node, ast.Attribute)
            and dotted_name(node.value) == "self"
            and self.places.assigns(f"self.{node.attr}")
        ):
            return self.name_taint(f"self.{node.attr}", node)
        if isinstance(node, ast.Subscript):
            base = self.taint(node.value)
            if base is None:
                return None
            return (
                "scalar"
                if base == "vector" and _is_int_index(node.slice, self)
                else base
                if base == "scalar"
                else "vector"
            )
        if isinstance(node, ast.Compare) and all(
            isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops
        ):
            return None
        if isinstance(node, ast.BinOp | ast.Compare):
            operands = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.left, *node.comparators]
            taints = [self.taint(o) for o in operands]
            if not any(taints):
                return None
            if any(self.places.place(o) is Place.DEVICE for o, t in zip(operands, taints) if not t):
                return None  # meets a device tensor: the result lives on the device either way
            return "vector" if "vector" in taints else "scalar"
        if isinstance(node, ast.UnaryOp):
            return self.taint(node.operand)
        if isinstance(node, ast.Tuple | ast.List):
            taints = [self.taint(e) for e in node.elts]
            return "vector" if "vector" in taints else "scalar" if "scalar" in taints else None
        if isinstance(node, ast.IfExp):
            return self.taint(node.body) or self.taint(node.orelse)
        if isinstance(node, ast.Call):
            return self._call_taint(node)
        return None

    def _call_taint(self, call: ast.Call) -> Taint | None:
        like = made_like(call)
        if like is not None and self.taint(like):
            return self.taint(like)  # same shape, same device: one sigma's like is one sigma
        func = call.func
        name = dotted_name(func) or ""
        if isinstance(func, ast.Attribute) and dotted_name(func.value) == "self":
            return self.call_result(call, self)
        if isinstance(func, ast.Attribute) and not name.startswith("torch."):
            receiver = self.taint(func.value)
            if (
                receiver
                and func.attr in ELEMENTWISE
                or receiver
                and func.attr in ("to", "type")
                and not moves_to_device(call)
            ):
                return receiver
            if receiver and func.attr in ("max", "min", "sum", "mean", "prod") and not call.args:
                return "scalar"
            return None
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in ELEMENTWISE:
            arguments = [*call.args, *(k.value for k in call.keywords)]
            taints = [self.taint(a) for a in arguments]
            if any(taints) and not any(
                self.places.place(a) is Place.DEVICE for a, t in zip(arguments, taints) if not t
            ):
                return "vector" if "vector" in taints else "scalar"
        return None


def _same_loop(call: ast.AST, use: ast.AST, function: Function) -> bool:
    """Both inside one loop, the append after the use: it reaches the use on the next iteration."""
    for loop in nodes_within(function, ast.For | ast.While):
        if loop.lineno < getattr(use, "lineno", 0) < getattr(
            call, "lineno", 0
        ) <= (loop.end_lineno or 0):
            return True
    return False


def _wider(first: Taint | None, second: Taint) -> Taint:
    return "vector" if "vector" in (first, second) else second


def moves_to_device(call: ast.Call) -> bool:
    """`.to(device)` / `.to(x.device)` / `.to(device=...)`: moves (a dtype alone does not)."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    if not call.args:
        return False
    first = call.args[0]
    text = (dotted_name(first) or "").rsplit(".", 1)[-1]
    if isinstance(first, ast.Constant):
        return isinstance(first.value, str)
    return "dtype" not in text and not (dotted_name(first) or "").startswith("torch.")


def made_like(call: ast.Call) -> ast.expr | None:
    """`randn_tensor(x.shape, device=x.device)`: the `x` whose shape and device the new tensor takes."""
    device = next((k.value for k in call.keywords if k.arg == "device"), None)
    shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("shape", "size")), None)
    if not (
        isinstance(device, ast.Attribute)
        and device.attr == "device"
        and isinstance(shape, ast.Attribute)
        and shape.attr == "shape"
    ):
        return None
    return device.value if same_expression(device.value, shape.value) else None


def is_append(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and len(node.args) == 1
    )


def _is_int_index(index: ast.expr, flow: SigmaTaint) -> bool:
    """An index that picks one element: an int, the step index, arithmetic of those, a name bound to them."""
    if isinstance(index, ast.Constant):
        return type(index.value) is int
    if isinstance(index, ast.UnaryOp):
        return _is_int_index(index.operand, flow)
    if isinstance(index, ast.BinOp):
        return _is_int_index(index.left, flow) and _is_int_index(index.right, flow)
    if isinstance(index, ast.Attribute):
        return index.attr in ("step_index", "_step_index", "begin_index", "_begin_index")
    if isinstance(index, ast.Call):
        return dotted_name(index.func) in ("int", "len", "min", "max")
    if isinstance(index, ast.Name):
        return flow.places.place(index) is Place.PYTHON or _bound_to_int(flow.function, index.id, flow)
    return False


def _bound_to_int(function: Function, name: str, flow: SigmaTaint) -> bool:
    values = []
    for node in nodes_within(function, ast.Assign | ast.For, breadth_first=True):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name:
            if not (isinstance(node.iter, ast.Call) and dotted_name(node.iter.func) == "range"):
                return False
            values.append(ast.Constant(0))
    return bool(values) and all(_is_int_index(v, flow) for v in values if not isinstance(v, ast.Name) or v.id != name)
