"""Which calls set a scheduler's schedule, and on what device: the one answer every analysis asks.

Two forms set it: the scheduler's own `<scheduler>.set_timesteps(n, device=...)`, and diffusers'
helper `retrieve_timesteps(<scheduler>, n, device)`, which calls `set_timesteps(..., device=device)`
on the scheduler it is given first and returns `(timesteps, n)`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.source import call_argument, dotted_name

# Functions that set a scheduler's timesteps when given it first: `retrieve_timesteps(self.scheduler, n, device)`.
TIMESTEP_SOURCES = ("retrieve_timesteps",)


@dataclass(frozen=True)
class ScheduleCall:
    """A call that sets `scheduler`'s schedule."""

    scheduler: ast.expr  # the receiver of `set_timesteps`, or the helper's first argument
    device: ast.expr | None  # the device it passes (None: none given, or given after a `*args`)
    by_helper: bool  # `retrieve_timesteps(...)`, which returns `(timesteps, n)`; `set_timesteps` returns nothing


def schedule_call(node: ast.AST) -> ScheduleCall | None:
    """`node` as a call that sets a scheduler's schedule; None when it is not one."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Attribute) and node.func.attr == "set_timesteps":
        return ScheduleCall(node.func.value, call_argument(node, "device", 1), by_helper=False)
    if (dotted_name(node.func) or "").rsplit(".", 1)[-1] in TIMESTEP_SOURCES and node.args:
        return ScheduleCall(node.args[0], call_argument(node, "device", 2), by_helper=True)
    return None


def is_scheduler_timesteps(node: ast.Attribute) -> bool:
    return node.attr == "timesteps" and names_scheduler(node.value)


def names_scheduler(node: ast.expr) -> bool:
    """`self.scheduler`, `scheduler`, `self.sound_scheduler`: a name or attribute naming a scheduler."""
    return isinstance(node, ast.Attribute | ast.Name) and (dotted_name(node) or "").rsplit(".", 1)[-1].endswith(
        "scheduler"
    )
