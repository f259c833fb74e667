"""A pipeline's call of its scheduler's method with a sigma argument, judged by the scheduler's own code.

With CPU sigmas, a sigma a pipeline reads (`sigma = self.scheduler.sigmas[i]`) is a 0-dim CPU tensor,
which meets device tensors as a scalar. Where the pipeline hands it (or arithmetic on it) to the
scheduler (`self.scheduler.scale_model_input(sigma, t)`, `self.scheduler.step((x - latents) / -sigma, ...)`),
whether it still works is a question about the scheduler's method: its parameter is followed as one
sigma through the method (and what it calls or stores) exactly as the scheduler's own sigmas are, and
what the pipeline reads of the result (`.prev_sample`, `[0]`, the result itself) must hold no more of
the sigmas than the pipeline showed it can take (`DelegatedCall.result_may_be_scalar`).
"""

from __future__ import annotations

import ast

from codemods.analysis.models.hot_paths import hot_paths
from codemods.analysis.placement.class_places import class_places
from codemods.analysis.schedules.sigma_flow import Accessor, DelegatedCall, SigmaFlowAnalysis
from codemods.analysis.schedules.sigma_setter import reads_sigmas, self_sigmas
from codemods.analysis.schedules.sigma_taint import SigmaTaint, Taint
from codemods.source import SourceFile, dotted_name


def delegated_call_blocker(source: SourceFile, scheduler: str, call: DelegatedCall) -> str | None:
    """Why `call` would stop working with the scheduler's sigmas on the CPU (None: it is shown to work)."""
    cls = next((c for c in source.classes if c.name == scheduler), None)
    if cls is None:
        return f"`{scheduler}` is not defined where the rule found it"
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    method = methods.get(call.method)
    if method is None:
        return f"`{scheduler}.{call.method}` is inherited, and this rule follows sigmas only through the class's code"
    parameters = _parameters(method, call)
    if parameters is None:
        return f"`{scheduler}.{call.method}` takes its sigma argument in `*args`/`**kwargs`"
    outputs = output_fields(source.tree)
    places = class_places(source, cls)
    analysis = SigmaFlowAnalysis(
        cls, self_sigmas, hot_paths(source).hot_function, places.function, returned_outputs=frozenset(outputs)
    )
    users = [name for name, m in methods.items() if name not in ("__init__", "set_timesteps") and reads_sigmas(m)]
    flow = analysis.run(users, (call.method, parameters))
    needs = [u for u in flow.device_needs if not u.per_call_move]
    if needs:
        return f"with it, {scheduler}.{call.method} line {needs[0].line} {needs[0].why} (`{needs[0].text}`)"
    result = returned(analysis.flows[call.method], method, call.accessor, outputs)
    if result == "vector" or (result == "scalar" and not call.result_may_be_scalar):
        read = "its result" if call.accessor is None else f"`{_shown(call.accessor)}` of its result"
        return f"{scheduler}.{call.method} returns the sigma in {read}, which the caller cannot take as a CPU scalar"
    return None


def _parameters(method: ast.FunctionDef | ast.AsyncFunctionDef, call: DelegatedCall) -> dict[str, Taint] | None:
    positional = [a.arg for a in (*method.args.posonlyargs, *method.args.args)][1:]  # without `self`
    named = {*positional, *(a.arg for a in method.args.kwonlyargs)}
    bound: dict[str, Taint] = {}
    for where, taint in call.arguments:
        name = positional[where] if isinstance(where, int) and where < len(positional) else where
        if not isinstance(name, str) or name not in named:
            return None
        bound[name] = taint
    return bound


def output_fields(module: ast.Module) -> dict[str, list[str]]:
    """The module's dataclasses (a scheduler's `XSchedulerOutput`) and their fields in order."""
    return {
        node.name: [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        for node in module.body
        if isinstance(node, ast.ClassDef) and any(dotted_name(d) == "dataclass" for d in node.decorator_list)
    }


def returned(flow: SigmaTaint, method: ast.AST, accessor: Accessor, outputs: dict[str, list[str]]) -> Taint | None:
    """What of the sigmas the caller's read of the method's result (`accessor`) may hold."""
    found: list[Taint | None] = []
    for value in (n.value for n in ast.walk(method) if isinstance(n, ast.Return) and n.value is not None):
        name = dotted_name(value.func) if isinstance(value, ast.Call) else None
        if isinstance(value, ast.Tuple) and accessor is not None:
            # A tuple has no fields; an index past its end fails on either device.
            if isinstance(accessor, int) and accessor < len(value.elts):
                found.append(flow.taint(value.elts[accessor]))
        elif isinstance(value, ast.Call) and name in outputs:
            found.extend(_output_read(flow, value, outputs[name], accessor))
        else:
            found.append(flow.taint(value))
    return "vector" if "vector" in found else "scalar" if "scalar" in found else None


def _output_read(flow: SigmaTaint, output: ast.Call, fields: list[str], accessor: Accessor) -> list[Taint | None]:
    """`XOutput(prev_sample=a, pred_original_sample=b)` read as `.prev_sample`, `[0]` or whole.

    `BaseOutput[k]` is its k-th field that is not None: field k when the fields before it are never None,
    any later one otherwise."""
    given = dict(zip(fields, output.args)) | {k.arg: k.value for k in output.keywords if k.arg}
    if isinstance(accessor, str):
        return [flow.taint(given[accessor])] if accessor in given else []
    if isinstance(accessor, int) and all(_never_none(given.get(f), flow) for f in fields[: accessor + 1]):
        return [flow.taint(given[fields[accessor]])] if accessor < len(fields) else []
    start = accessor if isinstance(accessor, int) else 0
    return [flow.taint(given[f]) for f in fields[start:] if f in given]


def _never_none(value: ast.expr | None, flow: SigmaTaint) -> bool:
    """Arithmetic (not `|`, which joins dicts) or a `.to()`: a tensor, neither None nor the dict BaseOutput unpacks."""
    if isinstance(value, ast.BinOp):
        return not isinstance(value.op, ast.BitOr)
    if isinstance(value, ast.Call):
        return isinstance(value.func, ast.Attribute) and value.func.attr == "to"
    if isinstance(value, ast.Name):
        reaching = flow.places.bindings.reaching(value.id, value)
        return bool(reaching) and all(b.kind == "value" and _never_none(b.value, flow) for b in reaching)
    return False


def _shown(accessor: str | int) -> str:
    return f".{accessor}" if isinstance(accessor, str) else f"[{accessor}]"
