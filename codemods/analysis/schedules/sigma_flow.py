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
A pipeline's calls of its scheduler's methods with sigma arguments are not followed here: they are
recorded (`DelegatedCall`) for the scheduler's own analysis (`codemods.analysis.schedules.delegated_calls`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.host_reads import host_reads
from codemods.analysis.schedules.sigma_taint import Function, SigmaTaint, Taint
from codemods.analysis.schedules.sigma_uses import (
    HOST_LIBRARIES,
    HOST_READ_WHY,
    MOVES_TO_DEVICE,
    device_need,
    propagates,
    shown,
    stores_scalar,
)
from codemods.node_index import nodes_within, parent_of
from codemods.source import dotted_name, shortened


@dataclass(frozen=True)
class SigmaUse:
    line: int
    text: str
    why: str
    # A move to the device outside per-step code (`add_noise`): with CPU sigmas, a copy per call of it.
    per_call_move: bool = False


Accessor = str | int | None  # how the caller reads a call's result: `.prev_sample`, `[0]`, or as it is
NodeKey = tuple[str, int, int, int, int]  # a node's kind and span: unlike its start, no other node shares it


def node_key(node: ast.AST) -> NodeKey:
    span = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    return (type(node).__name__, *span, getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


@dataclass(frozen=True)
class DelegatedCall:
    """`self.scheduler.step(noise_pred, t, latents)[0]` with sigma arguments: judged by the scheduler's code."""

    line: int
    text: str
    method: str
    arguments: tuple[tuple[str | int, Taint], ...]  # (position or keyword, what of the sigmas it carries)
    accessor: Accessor
    key: NodeKey  # where the accessed result is, to assume its taint in a second run
    # Whether the caller's code works as well if what it reads of the result is one CPU sigma (0-dim).
    result_may_be_scalar: bool = False


@dataclass
class SigmaFlow:
    host_reads: list[SigmaUse] = field(default_factory=list)  # reads that sync while the sigmas are on the device
    device_needs: list[SigmaUse] = field(default_factory=list)  # uses that need them on the device
    delegated: list[DelegatedCall] = field(default_factory=list)


class SigmaFlowAnalysis:
    """The sigma uses of a class's methods (and of the methods they hand sigmas to)."""

    def __init__(
        self,
        cls: ast.ClassDef,
        is_source: Callable[[ast.expr], Taint | None],
        hot: Callable[[Function], bool],
        places: Callable[[Function], FunctionPlaces],
        delegate: Callable[[ast.Call], str | None] = lambda call: None,
        assumed: dict[NodeKey, Taint] | None = None,
        returned_outputs: frozenset[str] = frozenset(),
    ):
        """`delegate` names the callee's method where a call is judged by another class's code; `assumed` gives
        the taint of such calls' results; `returned_outputs` are output dataclasses whose fields a caller of the
        analysed entry reads one by one (their construction in its `return` is judged per field, by the caller)."""
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.is_source = is_source
        self.hot = hot
        self.places = places
        self.delegate = delegate
        self.assumed = assumed or {}
        self.returned_outputs = returned_outputs
        self.entry: Function | None = None
        self.entry_parameters: dict[str, Taint] = {}
        self.flows: dict[str, SigmaTaint] = {}  # each method's taint, as the entry's parameters left it
        self.flow = SigmaFlow()
        self._done: dict[tuple[str, frozenset], Taint | None] = {}
        self._seen_uses: set[tuple[int, int, str]] = set()
        # Attributes a method stores one sigma in (`self.dt = dt`): their reads are sigmas too.
        self.stored: set[str] = set()

    def run(self, names: list[str], entry: tuple[str, dict[str, Taint]] | None = None) -> SigmaFlow:
        """Follow the sigmas through `names` (and what they call), and through attributes that keep one; `entry`:
        a method called from elsewhere with sigma arguments (which parameters carry what)."""
        if entry is not None:
            self.entry, self.entry_parameters = self.methods[entry[0]], entry[1]
        for _ in range(3):
            stored = set(self.stored)
            self.flow, self._done, self._seen_uses = SigmaFlow(), {}, set()
            if entry is not None:
                self.analyse(self.methods[entry[0]], entry[1])
            for name in names:
                self.analyse(self.methods[name], {})
            if self.stored == stored:
                break
            names = sorted(set(names) | {m for m, f in self.methods.items() if _reads_attributes(f, self.stored)})
        return self.flow

    def _source(self, node: ast.expr) -> Taint | None:
        found = self.is_source(node) or self.assumed.get(node_key(node))
        if found is None and isinstance(node, ast.Attribute) and node.attr in self.stored:
            return "scalar" if dotted_name(node.value) == "self" and isinstance(node.ctx, ast.Load) else None
        return found

    def analyse(self, function: Function, parameters: dict[str, Taint]) -> Taint | None:
        """Record the uses in `function` and return the taint of what it returns."""
        key = (function.name, frozenset(parameters.items()))
        if key in self._done:
            return self._done[key]
        self._done[key] = None  # recursion: assume nothing flows back
        flow = SigmaTaint(function, self._source, parameters, self.places(function), self._call_result)
        if function is self.entry and parameters == self.entry_parameters:
            self.flows[function.name] = flow
        self._record(flow, function)
        returned = [
            flow.taint(n.value) for n in nodes_within(function, ast.Return, breadth_first=True) if n.value is not None
        ]
        result = "vector" if "vector" in returned else "scalar" if "scalar" in returned else None
        self._done[key] = result
        return result

    def _call_result(self, call: ast.Call, flow: SigmaTaint) -> Taint | None:
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

    def _record(self, flow: SigmaTaint, function: Function) -> None:
        hot = self.hot(function)
        for node in nodes_within(function, ast.AST, breadth_first=True):
            for read in host_reads(node):
                if flow.taint(read.operand) and hot:
                    self._add(self.flow.host_reads, read.node, HOST_READ_WHY.get(read.kind, "reads it on the host"))
            if hot and _hands_to_host_library(node, flow):
                self._add(self.flow.host_reads, node, "hands it to a host library, which reads it as a float")
            if (
                isinstance(node, ast.expr)
                and not isinstance(getattr(node, "ctx", None), ast.Store | ast.Del)
                and flow.taint(node)
            ):
                parent = parent_of(node)
                if self._delegated(node, parent, flow) or self._returned_output(function, parent):
                    continue
                if stores_scalar(parent, node, flow):
                    self.stored.update(t.attr for t in parent.targets if isinstance(t, ast.Attribute))  # type: ignore[union-attr]
                    continue
                if parent is not None and not propagates(parent, node, flow):
                    why = device_need(parent, node, flow)
                    if why:
                        moves = why == MOVES_TO_DEVICE and not hot
                        self._add(self.flow.device_needs, shown(parent), why, moves)

    def _delegated(self, node: ast.expr, parent: ast.AST | None, flow: SigmaTaint) -> bool:
        """An argument of a call another class's code judges: record the call (once) instead of a use."""
        call = parent_of(parent) if isinstance(parent, ast.keyword) else parent
        if not isinstance(call, ast.Call) or node is call.func:
            return False
        method = self.delegate(call)
        if method is None:
            return False
        arguments = tuple(
            (position, taint) for position, a in enumerate(call.args) if (taint := flow.taint(a))
        ) + tuple((k.arg, taint) for k in call.keywords if k.arg and (taint := flow.taint(k.value)))
        accessed, accessor = _accessed(call)
        found = DelegatedCall(
            call.lineno, shortened(ast.unparse(call)), method, arguments, accessor, node_key(accessed)
        )  # fmt: skip
        if found not in self.flow.delegated:
            self.flow.delegated.append(found)
        return True

    def _returned_output(self, function: Function, parent: ast.AST | None) -> bool:
        """A field of an output dataclass the entry returns (`return XOutput(prev_sample=...)`): the caller reads it."""
        if function is not self.entry or not isinstance(parent, ast.keyword):
            return False
        call = parent_of(parent)
        return (
            isinstance(call, ast.Call)
            and dotted_name(call.func) in self.returned_outputs
            and isinstance(parent_of(call), ast.Return)
        )

    def _add(self, uses: list[SigmaUse], node: ast.AST, why: str, per_call_move: bool = False) -> None:
        key = (node.lineno, node.col_offset, why)  # type: ignore[attr-defined]
        if key not in self._seen_uses:
            self._seen_uses.add(key)
            uses.append(SigmaUse(node.lineno, shortened(ast.unparse(node)), why, per_call_move))  # type: ignore[attr-defined]


def _accessed(call: ast.Call) -> tuple[ast.expr, Accessor]:
    """What of a call's result its caller reads: `.name`, `[k]` (an int), or the result itself."""
    parent = parent_of(call)
    if isinstance(parent, ast.Attribute) and not isinstance(parent_of(parent), ast.Call):
        return parent, parent.attr
    if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and type(parent.slice.value) is int:
        return parent, parent.slice.value
    return call, None


def _hands_to_host_library(node: ast.AST, flow: SigmaTaint) -> bool:
    """`integrate.quad(f, self.sigmas[t], ...)`, `math.log(sigma)`: NumPy, SciPy and `math` read their arguments."""
    if not isinstance(node, ast.Call) or not (dotted_name(node.func) or "").startswith(HOST_LIBRARIES):
        return False
    return any(flow.taint(a) for a in (*node.args, *(k.value for k in node.keywords)) if not isinstance(a, ast.Starred))


def _reads_attributes(function: Function, names: set[str]) -> bool:
    return any(n.attr in names and dotted_name(n.value) == "self" for n in nodes_within(function, ast.Attribute))


def _bind_arguments(callee: Function, call: ast.Call, flow: SigmaTaint) -> dict[str, Taint]:
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
