"""A pipeline method that hands back a slice of its scheduler's timesteps: diffusers' `get_timesteps`.

An img2img pipeline sets the schedule (`retrieve_timesteps(self.scheduler, n, device)`), then
`timesteps, n = self.get_timesteps(n, strength, device)` keeps the steps that strength leaves:
`self.scheduler.timesteps[t_start * self.scheduler.order :]`. The slice lives where the schedule
was set, which only the caller knows; this module proves the method's part, the shape of its returns.
"""

from __future__ import annotations

import ast

from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.node_index import names_within, nodes_within
from codemods.source import dotted_name, statements

Function = ast.FunctionDef | ast.AsyncFunctionDef


def timesteps_slice_receiver(method: Function | None) -> str | None:
    """`self.scheduler` when every return of `method` is `(name, ...)`, `name` only ever bound to
    `self.scheduler.timesteps` or a slice of it, and the method sets no schedule itself; else None."""
    assigned = _returned_assignments(method)
    if assigned is None:
        return None
    receivers = {_timesteps_receiver(value) for value in assigned}
    return receivers.pop() if len(receivers) == 1 and None not in receivers else None


def sliced_argument(method: Function | None, call: ast.expr) -> ast.expr | None:
    """The argument of `call` (a call of `method`) whose slice every return hands back first: CogVideoX
    video-to-video's `get_timesteps(n, timesteps, strength, device)` returns `timesteps[t_start * order :]`."""
    assigned = _returned_assignments(method)
    if assigned is None or not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    sliced = {
        v.value.id
        for v in assigned
        if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Slice) and isinstance(v.value, ast.Name)
    }
    if len(sliced) != 1 or len(assigned) != 1:
        return None
    (name,) = sliced
    if any(isinstance(n.ctx, ast.Store) for n in names_within(method, name)):
        if name != _returned_name(method):
            return None  # rebound: the slice may be of something else than what the caller passed
    positional = [a.arg for a in (*method.args.posonlyargs, *method.args.args)][1:]  # without `self`
    if name in positional and positional.index(name) < len(call.args):
        return call.args[positional.index(name)]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _returned_name(method: Function) -> str | None:
    returns = [s for s in statements(method.body) if isinstance(s, ast.Return)]
    names = {
        s.value.elts[0].id
        for s in returns
        if isinstance(s.value, ast.Tuple) and s.value.elts and isinstance(s.value.elts[0], ast.Name)
    }
    return names.pop() if len(names) == 1 and len(returns) > 0 else None


def _returned_assignments(method: Function | None) -> list[ast.expr] | None:
    """What `name` is assigned, when every return of `method` is `(name, ...)`, the method sets no schedule
    itself and binds `name` only by plain assignments; else None."""
    if method is None:
        return None
    returns = [s for s in statements(method.body) if isinstance(s, ast.Return)]
    if not returns or _sets_a_schedule(method):
        return None
    if any(
        not (isinstance(r.value, ast.Tuple) and r.value.elts and isinstance(r.value.elts[0], ast.Name)) for r in returns
    ):
        return None
    name = _returned_name(method)
    if name is None:
        return None
    stores = [n for n in names_within(method, name) if isinstance(n.ctx, ast.Store)]
    assigned = [
        s.value
        for s in statements(method.body)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == name
    ]  # fmt: skip
    if not assigned or len(assigned) != len(stores):
        return None  # also bound some other way (a loop, an unpacking, `+=`)
    return assigned


def _timesteps_receiver(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        value = value.value
    if isinstance(value, ast.Attribute) and value.attr == "timesteps":
        receiver = dotted_name(value.value) or ""
        return receiver if receiver.startswith("self.") and receiver.endswith("scheduler") else None
    return None


def _sets_a_schedule(method: Function) -> bool:
    return any(schedule_call(node) is not None for node in nodes_within(method, ast.Call))
