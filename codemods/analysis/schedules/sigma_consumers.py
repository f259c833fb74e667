"""Classes in other files that hold a scheduler and read `scheduler.sigmas`: may its sigmas move to the CPU?

DIF002 moves a scheduler's sigmas to the CPU only if no pipeline in the tree needs them on the
device. A pipeline's uses are gathered when its file is scanned (`sigma_consumers`, cached with
the scan) and judged against the scheduler's finding in the whole-tree pass (`consumer_needs`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from codemods.analysis.placement.class_places import ClassPlaces
from codemods.analysis.schedules.delegated_calls import delegated_call_blocker
from codemods.analysis.schedules.sigma_flow import DelegatedCall, SigmaFlow, SigmaFlowAnalysis, SigmaUse, Taint
from codemods.analysis.values.types import class_attribute_types
from codemods.line_walk import spans_a_line
from codemods.node_index import nodes_within
from codemods.project.index import ProjectIndex
from codemods.source import SourceFile, dotted_name
from codemods.triggers import Trigger

CONSUMER_TEXT = "scheduler.sigmas"
CONSUMER_PATTERN = Trigger(re.escape(CONSUMER_TEXT), CONSUMER_TEXT)


def _scheduler_sigmas(node: ast.expr) -> Taint | None:
    """`self.scheduler.sigmas`, `scheduler.sigmas`, `components.scheduler.sigmas`: a pipeline's read."""
    if isinstance(node, ast.Attribute) and node.attr == "sigmas" and isinstance(node.ctx, ast.Load):
        return "vector" if (dotted_name(node.value) or "").endswith("scheduler") else None
    return None


def _scheduler_method(call: ast.Call) -> str | None:
    """`self.scheduler.step(...)`: a call the scheduler's own code judges (`delegated_calls`)."""
    func = call.func
    if isinstance(func, ast.Attribute) and (dotted_name(func.value) or "").endswith("scheduler"):
        return func.attr
    return None


@dataclass(frozen=True)
class SigmaConsumer:
    """A class in another file that holds a scheduler and reads `scheduler.sigmas` (gathered at scan time)."""

    path: str
    scheduler_types: tuple[str, ...]  # what its `self.scheduler` is annotated to be
    device_needs: tuple[SigmaUse, ...]  # its uses that need the sigmas on the device
    scheduler_calls: tuple[DelegatedCall, ...] = ()  # its calls of the scheduler's methods with sigma arguments


def sigma_consumers(source: SourceFile) -> list[SigmaConsumer]:
    found = []
    lines = source.lines_matching(CONSUMER_PATTERN)
    for owner in source.classes:
        if not spans_a_line(owner, lines):
            continue
        types = class_attribute_types(source, owner).get("scheduler")
        if not types:
            continue  # untyped holders are not followed (see `_consumer_needs`)
        methods = [
            n for n in owner.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and spans_a_line(n, lines)
        ]
        names = [
            m.name for m in methods if any(_scheduler_sigmas(n) for n in nodes_within(m, ast.Attribute))
        ]
        if names:
            places = ClassPlaces(owner, source)

            def flow(assumed: dict) -> SigmaFlowAnalysis:
                return SigmaFlowAnalysis(
                    owner, _scheduler_sigmas, lambda function: False, places.function, _scheduler_method, assumed
                )

            base = flow({}).run(names)
            calls = tuple(
                _may_take_a_sigma(call, base, flow({call.key: "scalar"}).run(names)) for call in base.delegated
            )
            found.append(SigmaConsumer(source.path, types, tuple(base.device_needs), calls))
    return found


def _may_take_a_sigma(call: DelegatedCall, base: SigmaFlow, assumed: SigmaFlow) -> DelegatedCall:
    """The call, with whether the caller's code works as well when what it reads of the result is one sigma: the
    run that assumes so finds no use and no scheduler call the first run did not."""
    new_calls = set(assumed.delegated) - set(base.delegated)
    return replace(call, result_may_be_scalar=set(assumed.device_needs) <= set(base.device_needs) and not new_calls)


def consumer_needs(
    scheduler: str, own_path: str, index: ProjectIndex, code: str
) -> tuple[int, list[tuple[str, SigmaUse]], list[tuple[str, DelegatedCall]]]:
    """Classes in the tree typed to hold `scheduler` that read `scheduler.sigmas`: (how many, and the uses
    among theirs that need the sigmas on the device).

    Untyped code (a helper taking `scheduler`, a modular block's `components.scheduler`) is not
    followed: it already runs with the schedulers that keep their sigmas on the CPU (Euler,
    DPM-Solver, UniPC and ten more), so it cannot need them on the device.
    """
    holders = 0
    needs: list[tuple[str, SigmaUse]] = []
    calls: list[tuple[str, DelegatedCall]] = []
    for path, facts in index.facts_holding(CONSUMER_TEXT):  # the rule's facts trigger: only texts holding it
        if path == own_path:
            continue
        for consumer in facts.by_rule.get(code) or ():
            if any(t == scheduler or scheduler in index.expand_types(t) for t in consumer.scheduler_types):
                holders += 1
                needs.extend((path, use) for use in consumer.device_needs)
                calls.extend((path, call) for call in consumer.scheduler_calls)
    return holders, needs, calls


def consumers_verdict(scheduler: str, own_path: str, index: ProjectIndex, code: str) -> tuple[str | None, str]:
    """Why the tree's pipelines forbid CPU sigmas for `scheduler` (None: they allow them), and what was checked."""
    holders, needs, calls = consumer_needs(scheduler, own_path, index, code)
    if needs:
        path, use = needs[0]
        return (
            f"{index.shown(path)}:{use.line} holds a {scheduler} and {use.why} (`{use.text}`), "
            "a use this rule cannot show to work with CPU sigmas"
        ), ""
    if calls:
        text = index.text(own_path)
        source = SourceFile(own_path, text or "")
        for path, call in calls:
            blocker = delegated_call_blocker(source, scheduler, call)
            if blocker is not None:
                return f"{index.shown(path)}:{call.line} hands a {scheduler} sigma to `{call.text}`: {blocker}", ""
    if holders:
        handed = f", and {len(calls)} call(s) handing a sigma to its methods, which take a CPU one" if calls else ""
        return None, (
            f"; {holders} class(es) in the tree typed to hold a {scheduler} read `scheduler.sigmas`{handed}, "
            "none in a way that needs them on the device"
        )
    return None, f"; no class in the tree typed to hold a {scheduler} reads `scheduler.sigmas`"
