"""Classes in other files that hold a scheduler and read `scheduler.sigmas`: may its sigmas move to the CPU?

DIF002 moves a scheduler's sigmas to the CPU only if no pipeline in the tree needs them on the
device. A pipeline's uses are gathered when its file is scanned (`sigma_consumers`, cached with
the scan) and judged against the scheduler's finding in the whole-tree pass (`consumer_needs`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from codemods.analysis.placement.class_places import ClassPlaces
from codemods.analysis.schedules.sigma_flow import SigmaFlowAnalysis, SigmaUse, Taint
from codemods.analysis.values.types import attribute_types
from codemods.node_index import nodes_within
from codemods.project.index import ProjectIndex
from codemods.source import SourceFile, dotted_name, spans_a_line

CONSUMER_TEXT = "scheduler.sigmas"
CONSUMER_PATTERN = re.compile(re.escape(CONSUMER_TEXT))


def _scheduler_sigmas(node: ast.expr) -> Taint | None:
    """`self.scheduler.sigmas`, `scheduler.sigmas`, `components.scheduler.sigmas`: a pipeline's read."""
    if isinstance(node, ast.Attribute) and node.attr == "sigmas" and isinstance(node.ctx, ast.Load):
        return "vector" if (dotted_name(node.value) or "").endswith("scheduler") else None
    return None


@dataclass(frozen=True)
class SigmaConsumer:
    """A class in another file that holds a scheduler and reads `scheduler.sigmas` (gathered at scan time)."""

    path: str
    scheduler_types: tuple[str, ...]  # what its `self.scheduler` is annotated to be
    device_needs: tuple[SigmaUse, ...]  # its uses that need the sigmas on the device


def sigma_consumers(source: SourceFile) -> list[SigmaConsumer]:
    found = []
    lines = source.lines_matching(CONSUMER_PATTERN)
    for owner in source.classes:
        if not spans_a_line(owner, lines):
            continue
        types = attribute_types(owner).get("scheduler")
        if not types:
            continue  # untyped holders are not followed (see `_consumer_needs`)
        methods = [
            n for n in owner.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and spans_a_line(n, lines)
        ]
        names = [
            m.name for m in methods if any(_scheduler_sigmas(n) for n in nodes_within(m, ast.Attribute))
        ]
        if names:
            flow = SigmaFlowAnalysis(
                owner, _scheduler_sigmas, lambda function: False, ClassPlaces(owner, source).function
            )
            found.append(SigmaConsumer(source.path, types, tuple(flow.run(names).device_needs)))
    return found


def consumer_needs(
    scheduler: str, own_path: str, index: ProjectIndex, code: str
) -> tuple[int, list[tuple[str, SigmaUse]]]:
    """Classes in the tree typed to hold `scheduler` that read `scheduler.sigmas`: (how many, and the uses
    among theirs that need the sigmas on the device).

    Untyped code (a helper taking `scheduler`, a modular block's `components.scheduler`) is not
    followed: it already runs with the schedulers that keep their sigmas on the CPU (Euler,
    DPM-Solver, UniPC and ten more), so it cannot need them on the device.
    """
    holders = 0
    needs: list[tuple[str, SigmaUse]] = []
    for path in index.paths_containing(CONSUMER_TEXT):
        facts = index.facts(path)
        if path == own_path or facts is None:
            continue
        for consumer in facts.by_rule.get(code) or ():
            if any(t == scheduler or scheduler in index.expand_types(t) for t in consumer.scheduler_types):
                holders += 1
                needs.extend((path, use) for use in consumer.device_needs)
    return holders, needs


def consumers_verdict(scheduler: str, own_path: str, index: ProjectIndex, code: str) -> tuple[str | None, str]:
    """Why the tree's pipelines forbid CPU sigmas for `scheduler` (None: they allow them), and what was checked."""
    holders, needs = consumer_needs(scheduler, own_path, index, code)
    if needs:
        path, use = needs[0]
        return (
            f"{index.shown(path)}:{use.line} holds a {scheduler} and {use.why} (`{use.text}`), "
            "a use this rule cannot show to work with CPU sigmas"
        ), ""
    if holders:
        return None, (
            f"; {holders} class(es) in the tree typed to hold a {scheduler} read `scheduler.sigmas`, "
            "none in a way that needs them on the device"
        )
    return None, f"; no class in the tree typed to hold a {scheduler} reads `scheduler.sigmas`"
