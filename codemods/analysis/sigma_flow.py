"""How a scheduler's sigmas are used: read on the host, or needed on the device.

Moving `self.sigmas` to the CPU (diffusers #6173) is right when every use either reads a
single sigma (`self.sigmas[self.step_index]`, a 0-dim tensor, which CUDA kernels accept from the
CPU as a scalar) and does arithmetic with it, or reads it on the host (`if s_tmin <= sigma:`,
`.item()`, `torch.tensor([...])`), which costs a sync per step while the sigmas are on the device.
It is wrong where the vector, a slice of it, or a sigma given dimensions (`sigma.view(1)`,
`sigma[None]`) meets device tensors, or where the code moves sigmas to the device itself (with
CPU sigmas that becomes a copy per call).

`SigmaFlow` follows the values taken from a source expression (`self.sigmas` in a scheduler,
`self.scheduler.sigmas` in a pipeline) through each function: names bound to them, arithmetic
on them, elementwise torch ops, and `self.<method>(...)` calls with them, into the callee.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from codemods.analysis.bindings import Binding
from codemods.analysis.host_reads import host_reads
from codemods.analysis.placement import FunctionPlaces, Place
from codemods.source import dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef

# Ops that keep a 0-dim tensor 0-dim and accept a CPU scalar next to device tensors.
_ELEMENTWISE = {
    "exp", "log", "sqrt", "rsqrt", "abs", "clamp", "clip", "sin", "cos", "tan", "tanh", "sigmoid", "expm1", "log1p",
    "pow", "square", "neg", "reciprocal", "maximum", "minimum", "where", "lerp", "atan", "asin", "acos", "floor",
    "ceil", "round", "sign", "float", "double", "half", "bfloat16", "clamp_min", "clamp_max", "log2", "log10",
    "exp2", "mul", "add", "sub", "div", "true_divide", "detach", "clone", "type_as",
}  # fmt: skip
# Give a sigma dimensions: as a CPU tensor it can no longer meet device tensors.
_RESHAPING = {
    "view",
    "reshape",
    "unsqueeze",
    "expand",
    "repeat",
    "flatten",
    "broadcast_to",
    "expand_as",
    "repeat_interleave",
    "ravel",
    "view_as",
    "reshape_as",
    "tile",
}
_HARMLESS = {"len", "isinstance", "print", "repr", "str", "getattr", "hasattr", "type", "id"}
_HOST_BUILTINS = {"float", "int", "bool", "min", "max", "round", "abs"}


@dataclass(frozen=True)
class SigmaUse:
    line: int
    text: str
    why: str


@dataclass
class SigmaFlow:
    host_reads: list[SigmaUse] = field(default_factory=list)  # reads that sync while the sigmas are on the device
    device_needs: list[SigmaUse] = field(default_factory=list)  # uses that need them on the device


Taint = str  # "scalar": one sigma (0-dim); "vector": the sigmas or a slice of them


class _FunctionFlow:
    """The taint of one function, given which parameters carry sigmas."""

    def __init__(
        self,
        function: Function,
        is_source: Callable[[ast.expr], Taint | None],
        tainted_parameters: dict[str, Taint],
        places: FunctionPlaces,
        call_result: Callable[[ast.Call, _FunctionFlow], Taint | None] = lambda call, flow: None,
    ):
        self.function = function
        self.is_source = is_source
        self.places = places
        self.call_result = call_result
        self.parameters = dict(tainted_parameters)
        self._memo: dict[int, Taint | None] = {}
        self._bindings: dict[int, Taint | None] = {}
        self._in_progress: set[int] = set()
        self._appends = [n for n in ast.walk(function) if _is_append(n) and isinstance(n.func.value, ast.Name)]

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
        func = call.func
        name = dotted_name(func) or ""
        if isinstance(func, ast.Attribute) and dotted_name(func.value) == "self":
            return self.call_result(call, self)
        if isinstance(func, ast.Attribute) and not name.startswith("torch."):
            receiver = self.taint(func.value)
            if receiver and func.attr in _ELEMENTWISE or receiver and func.attr in ("to", "type") and not _moves(call):
                return receiver
            if receiver and func.attr in ("max", "min", "sum", "mean", "prod") and not call.args:
                return "scalar"
            return None
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _ELEMENTWISE:
            arguments = [*call.args, *(k.value for k in call.keywords)]
            taints = [self.taint(a) for a in arguments]
            if any(taints) and not any(
                self.places.place(a) is Place.DEVICE for a, t in zip(arguments, taints) if not t
            ):
                return "vector" if "vector" in taints else "scalar"
        return None


def _same_loop(call: ast.AST, use: ast.AST, function: Function) -> bool:
    """Both inside one loop, the append after the use: it reaches the use on the next iteration."""
    for loop in ast.walk(function):
        if isinstance(loop, ast.For | ast.While) and loop.lineno < getattr(use, "lineno", 0) < getattr(
            call, "lineno", 0
        ) <= (loop.end_lineno or 0):
            return True
    return False


def _wider(first: Taint | None, second: Taint) -> Taint:
    return "vector" if "vector" in (first, second) else second


def _moves(call: ast.Call) -> bool:
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


def _is_append(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and len(node.args) == 1
    )


def _is_int_index(index: ast.expr, flow: _FunctionFlow) -> bool:
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


def _bound_to_int(function: Function, name: str, flow: _FunctionFlow) -> bool:
    values = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == name:
            if not (isinstance(node.iter, ast.Call) and dotted_name(node.iter.func) == "range"):
                return False
            values.append(ast.Constant(0))
    return bool(values) and all(_is_int_index(v, flow) for v in values if not isinstance(v, ast.Name) or v.id != name)


class SigmaFlowAnalysis:
    """The sigma uses of a class's methods (and of the methods they hand sigmas to)."""

    def __init__(
        self,
        cls: ast.ClassDef,
        is_source: Callable[[ast.expr], Taint | None],
        hot: Callable[[Function], bool],
        places: Callable[[Function], FunctionPlaces],
    ):
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.is_source = is_source
        self.hot = hot
        self.places = places
        self.flow = SigmaFlow()
        self._done: dict[tuple[str, frozenset], Taint | None] = {}
        self._seen_uses: set[tuple[int, int, str]] = set()
        # Attributes a method stores one sigma in (`self.dt = dt`): their reads are sigmas too.
        self.stored: set[str] = set()

    def run(self, names: list[str]) -> SigmaFlow:
        """Follow the sigmas through `names` (and what they call), and through attributes that keep one."""
        for _ in range(3):
            stored = set(self.stored)
            self.flow, self._done, self._seen_uses = SigmaFlow(), {}, set()
            for name in names:
                self.analyse(self.methods[name], {})
            if self.stored == stored:
                break
            names = sorted(set(names) | {m for m, f in self.methods.items() if _reads_attributes(f, self.stored)})
        return self.flow

    def _source(self, node: ast.expr) -> Taint | None:
        found = self.is_source(node)
        if found is None and isinstance(node, ast.Attribute) and node.attr in self.stored:
            return "scalar" if dotted_name(node.value) == "self" and isinstance(node.ctx, ast.Load) else None
        return found

    def analyse(self, function: Function, parameters: dict[str, Taint]) -> Taint | None:
        """Record the uses in `function` and return the taint of what it returns."""
        key = (function.name, frozenset(parameters.items()))
        if key in self._done:
            return self._done[key]
        self._done[key] = None  # recursion: assume nothing flows back
        flow = _FunctionFlow(function, self._source, parameters, self.places(function), self._call_result)
        self._record(flow, function)
        returned = [
            flow.taint(n.value) for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None
        ]
        result = "vector" if "vector" in returned else "scalar" if "scalar" in returned else None
        self._done[key] = result
        return result

    def _call_result(self, call: ast.Call, flow: _FunctionFlow) -> Taint | None:
        """`self.m(...)` with sigma arguments: follow them into `m`."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return None
        callee = self.methods.get(func.attr)
        if callee is None:
            return None
        parameters = _bind_arguments(callee, call, flow)
        if not parameters:
            return None
        return self.analyse(callee, parameters)

    def _record(self, flow: _FunctionFlow, function: Function) -> None:
        hot = self.hot(function)
        parents = {id(child): node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(function):
            for read in host_reads(node):
                if flow.taint(read.operand) and hot:
                    self._add(self.flow.host_reads, read.node, _HOST_READ_WHY.get(read.kind, "reads it on the host"))
            if (
                isinstance(node, ast.expr)
                and not isinstance(getattr(node, "ctx", None), ast.Store | ast.Del)
                and flow.taint(node)
            ):
                parent = parents.get(id(node))
                if _stores_scalar(parent, node, flow):
                    self.stored.update(t.attr for t in parent.targets if isinstance(t, ast.Attribute))  # type: ignore[union-attr]
                    continue
                if parent is not None and not _propagates(parent, node, flow):
                    why = _device_need(parent, node, flow, parents)
                    if why:
                        self._add(self.flow.device_needs, _shown(parent, parents), why)

    def _add(self, uses: list[SigmaUse], node: ast.AST, why: str) -> None:
        key = (node.lineno, node.col_offset, why)  # type: ignore[attr-defined]
        if key not in self._seen_uses:
            self._seen_uses.add(key)
            uses.append(SigmaUse(node.lineno, _short(ast.unparse(node)), why))  # type: ignore[attr-defined]


_HOST_READ_WHY = {
    "compare": "compares it in Python", "truth": "tests its truth in Python", "minmax": "takes a builtin min/max",
    "tensor": "builds a tensor from it with `torch.tensor`", "item": "reads `.item()`", "int": "converts it with `int()`",
    "float": "converts it with `float()`", "bool": "converts it with `bool()`", "tolist": "reads `.tolist()`",
    "cpu": "copies it to the host", "numpy": "copies it to the host",
}  # fmt: skip


def _stores_scalar(parent: ast.AST | None, node: ast.expr, flow: _FunctionFlow) -> bool:
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


def _reads_attributes(function: Function, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr in names and dotted_name(n.value) == "self" for n in ast.walk(function)
    )


def _propagates(parent: ast.AST, node: ast.expr, flow: _FunctionFlow) -> bool:
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


def _device_need(parent: ast.AST, node: ast.expr, flow: _FunctionFlow, parents: dict[int, ast.AST]) -> str | None:
    """Why this use needs the sigmas on the device (None: it works as well with CPU sigmas)."""
    taint = flow.taint(node)
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent), parent)
    if isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        is_call = isinstance(call, ast.Call) and call.func is parent
        if not is_call:
            return None if parent.attr in ("shape", "dtype", "device", "ndim", "T") else f"reads `.{parent.attr}` of it"
        if parent.attr in ("to", "cuda") and (parent.attr == "cuda" or _moves(call)):
            return "moves it to the device on every call (with CPU sigmas, a copy each time)"
        if parent.attr in _RESHAPING:
            return f"gives a sigma dimensions (`.{parent.attr}()`): as a CPU tensor it could not meet device tensors"
        if (
            parent.attr in ("item", "tolist", "cpu", "numpy", "numel", "size", "dim", "max", "min")
            or parent.attr in _ELEMENTWISE
        ):
            return None if taint == "scalar" or parent.attr not in _ELEMENTWISE else "computes with the whole vector"
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
        if _is_append(parent):
            return None  # the list carries the sigmas on; its uses are checked
        name = dotted_name(parent.func) or ""
        if name in _HARMLESS or name in _HOST_BUILTINS or name.startswith(("math.", "np.", "numpy.", "logger.")):
            return None
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _ELEMENTWISE:
            return None if taint == "scalar" else "computes with the vector next to device tensors"
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in ("tensor", "as_tensor"):
            return None
        if isinstance(parent.func, ast.Attribute) and dotted_name(parent.func.value) == "self":
            return None  # followed into the method
        return f"passes it to `{name or ast.unparse(parent.func)}()`"
    if isinstance(parent, ast.List | ast.Tuple):
        container = parents.get(id(parent))
        if isinstance(container, ast.Call):
            name = (dotted_name(container.func) or "").rsplit(".", 1)[-1]
            if name in ("tensor", "as_tensor") or _is_append(container):
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
    return f"uses it in `{_short(ast.unparse(parent))}`"


def _shown(parent: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The expression a message quotes: the call for `x.to`, the node itself otherwise."""
    call = parents.get(id(parent))
    if isinstance(parent, ast.Attribute) and isinstance(call, ast.Call) and call.func is parent:
        return call
    return parent


def _bind_arguments(callee: Function, call: ast.Call, flow: _FunctionFlow) -> dict[str, Taint]:
    parameters = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)][1:]  # without `self`
    bound: dict[str, Taint] = {}
    for position, argument in enumerate(call.args):
        taint = flow.taint(argument) if not isinstance(argument, ast.Starred) else None
        if taint and position < len(parameters):
            bound[parameters[position]] = taint
    names = set(parameters) | {a.arg for a in callee.args.kwonlyargs}
    for keyword in call.keywords:
        taint = flow.taint(keyword.value)
        if taint and keyword.arg in names:
            bound[keyword.arg] = taint
    return bound


def _is_self_sigmas(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "sigmas" and dotted_name(node.value) == "self"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
