"""A pipeline method that hands back a slice of its scheduler's timesteps: diffusers' `get_timesteps`.

An img2img pipeline sets the schedule (`retrieve_timesteps(self.scheduler, n, device)`), then
`timesteps, n = self.get_timesteps(n, strength, device)` keeps the steps that strength leaves:
`self.scheduler.timesteps[t_start * self.scheduler.order :]`. The slice lives where the schedule
was set, which only the caller knows; this module proves the method's part, the shape of its returns.
"""

from __future__ import annotations

import ast

from codemods.analysis.schedules.schedule_calls import schedule_call
from codemods.source import dotted_name, statements

Function = ast.FunctionDef | ast.AsyncFunctionDef


def timesteps_slice_receiver(method: Function | None) -> str | None:
    """`self.scheduler` when every return of `method` is `(name, ...)`, `name` only ever bound to
    `self.scheduler.timesteps` or a slice of it, and the method sets no schedule itself; else None."""
    if method is None:
        return None
    returns = [s for s in statements(method.body) if isinstance(s, ast.Return)]
    if not returns or _sets_a_schedule(method):
        return None
    names = set()
    for statement in returns:
        value = statement.value
        if not (isinstance(value, ast.Tuple) and value.elts and isinstance(value.elts[0], ast.Name)):
            return None
        names.add(value.elts[0].id)
    if len(names) != 1:
        return None
    (name,) = names
    stores = [n for n in ast.walk(method) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
    assigned = [
        s.value
        for s in statements(method.body)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == name
    ]  # fmt: skip
    if not assigned or len(assigned) != len(stores):
        return None  # also bound some other way (a loop, an unpacking, `+=`)
    receivers = {_timesteps_receiver(value) for value in assigned}
    return receivers.pop() if len(receivers) == 1 and None not in receivers else None


def _timesteps_receiver(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        value = value.value
    if isinstance(value, ast.Attribute) and value.attr == "timesteps":
        receiver = dotted_name(value.value) or ""
        return receiver if receiver.startswith("self.") and receiver.endswith("scheduler") else None
    return None


def _sets_a_schedule(method: Function) -> bool:
    return any(schedule_call(node) is not None for node in ast.walk(method))
