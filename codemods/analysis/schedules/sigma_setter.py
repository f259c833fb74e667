"""What a scheduler's `set_timesteps` does with `self.sigmas`: where it assigns them last, where a
move to the CPU could go, the moves written without their assignment (`self.sigmas.to("cpu")`), and
what it leaves on the device for the other methods to read (`sigmas_left_on_device`, and DIF002's message).

The statement-level half of DIF002 (`codemods.rules.scheduler_sigmas_on_device`); how the
sigmas are used per step is `codemods.analysis.schedules.sigma_flow`'s.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.analysis.models.hot_paths import HotPaths
from codemods.analysis.placement.class_places import ClassPlaces
from codemods.analysis.placement.discarded_results import DiscardedConversion, discarded_conversions
from codemods.analysis.placement.method_calls import attribute_assignments
from codemods.analysis.placement.place import Place
from codemods.analysis.schedules.sigma_flow import SigmaFlow, SigmaFlowAnalysis, SigmaUse
from codemods.analysis.schedules.sigma_taint import Taint
from codemods.analysis.values.device_moves import device_move
from codemods.node_index import nodes_within
from codemods.source import SourceFile, dotted_name

_SETTER = "set_timesteps"
# What the scheduler's siblings reset just before keeping their sigmas on the CPU.
_RESETS = {"_step_index", "_begin_index"}


def self_sigmas(node: ast.expr) -> Taint | None:
    if isinstance(node, ast.Attribute) and node.attr == "sigmas" and dotted_name(node.value) == "self":
        return "vector" if isinstance(node.ctx, ast.Load) else None
    return None


Move = tuple[ast.FunctionDef, DiscardedConversion]


def discarded_moves(places: ClassPlaces) -> list[Move]:
    """`self.sigmas.to("cpu")` / `self.sigmas.cpu()` as statements of their own, in any method."""
    found = []
    for method in places.methods.values():
        for conversion in discarded_conversions(method):
            if dotted_name(conversion.receiver) != "self.sigmas":
                continue
            move = device_move(conversion.call)
            to_cpu = conversion.method == "cpu" or (
                move is not None
                and move.device_only
                and places.function(method).device_place(move.device) is Place.HOST
            )
            if to_cpu:
                found.append((method, conversion))
    return found


@dataclass(frozen=True)
class SigmasLeftOnDevice:
    """The sigmas `set_timesteps` (`setter`) may leave on the device, and how the other methods use them."""

    setter: ast.FunctionDef
    assignment: ast.stmt  # its last assignment of `self.sigmas`
    bare: DiscardedConversion | None  # a move after it that throws its result away (`self.sigmas.to("cpu")`)
    flow: SigmaFlow  # how the methods that read them (but `__init__`) use them, per step or per call


def sigmas_left_on_device(
    cls: ast.ClassDef, places: ClassPlaces, hot: HotPaths, discarded: list[Move]
) -> SigmasLeftOnDevice | None:
    """What `set_timesteps` leaves on the device (None: it has none, or its sigmas end on the CPU)."""
    setter = places.methods.get(_SETTER)
    if setter is None or not places.may_exit_on_device(setter, "sigmas"):
        return None
    assignment = final_assignment(setter)
    bare = next(
        (
            m
            for method, m in discarded
            if method is setter and m.statement in setter.body and m.statement.lineno > assignment.lineno
        ),
        None,
    )
    users = [
        m for m in places.methods.values() if m not in (setter, places.methods.get("__init__")) and reads_sigmas(m)
    ]
    flow = SigmaFlowAnalysis(cls, self_sigmas, hot.hot_function, places.function).run([m.name for m in users])
    return SigmasLeftOnDevice(setter, assignment, bare, flow)


def may_be_on_device(places: ClassPlaces, method: ast.FunctionDef, sigmas: ast.expr) -> bool:
    """Whether some assignment of `self.sigmas` in `method` that reaches `sigmas` may put them on the device
    (none in the method: they come from elsewhere, so maybe)."""
    function = places.function(method)
    bindings = function.bindings.reaching("self.sigmas", sigmas)
    return not bindings or any(
        b.kind != "value" or b.value is None or function.may_be_on_device(b.value) for b in bindings
    )


def reads_sigmas(method: ast.AST) -> bool:
    return any(self_sigmas(n) for n in nodes_within(method, ast.Attribute))


def final_assignment(setter: ast.FunctionDef) -> ast.stmt:
    return attribute_assignments(setter, "sigmas")[-1][0]


def anchor(setter: ast.FunctionDef) -> ast.stmt | None:
    """The last top-level statement of `set_timesteps` that touches the sigmas or resets the step index."""
    found = None
    for statement in setter.body:
        touches = any(
            self_sigmas(n) or _is_self_store(n, "sigmas") for n in nodes_within(statement, ast.Attribute)
        )
        resets = isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr in _RESETS and dotted_name(t.value) == "self"
            for t in statement.targets
        )
        if touches or resets:
            found = statement
    if found is not None and isinstance(found, ast.Return | ast.Raise):
        return None
    return found


def _is_self_store(node: ast.Attribute, name: str) -> bool:
    return node.attr == name and dotted_name(node.value) == "self" and isinstance(node.ctx, ast.Store)


def why_no_fix(setter: ast.FunctionDef, needs: list[SigmaUse]) -> str | None:
    if needs:
        return (
            f"line {needs[0].line} {needs[0].why} (`{needs[0].text}`), a use this rule cannot show to work with "
            "CPU sigmas"
        )
    early = [n for n in nodes_within(setter, ast.Return, breadth_first=True) if n is not setter.body[-1]]
    if early:
        return f"`set_timesteps` returns early (line {early[0].lineno}); the sigmas must move on every path, by hand"
    return None


def describe(uses: list[SigmaUse]) -> str:
    shown = "; ".join(f"`{u.text}` (line {u.line}) {u.why}" for u in uses[:2])
    return shown + (f"; {len(uses) - 2} more" if len(uses) > 2 else "")


def left_on_device_message(
    source: SourceFile,
    assignment: ast.stmt,
    bare: DiscardedConversion | None,
    reads: list[SigmaUse],
    copies: list[SigmaUse],
    needs: list[SigmaUse] | None = None,
) -> str:
    """DIF002's message: where the sigmas stay on the device (`assignment`, or a `bare` move after it that does
    nothing), what per-step code `reads` them on the host, what would copy them back per call (`copies`), and
    what of the scheduler's own code `needs` them on the device (then CPU sigmas are no cure)."""
    where = f"`{_SETTER}` leaves `self.sigmas` on the device (line {assignment.lineno})"
    if bare is not None:
        where = f"`{source.segment(bare.call)}` throws its result away (`Tensor.to` is not in place), so " + where
    if reads:
        where += f" and the per-step code reads them on the host, a sync every step: {describe(reads)}"
    else:
        where += "; nothing per step reads them on the host"
    if reads and needs:
        # Both a host read and a device use (LTX's `.item()` next to `sigma.view(1)`): one place cannot serve both.
        return where + (
            f"; line {needs[0].line} also uses them on the device (`{needs[0].text}` {needs[0].why}), so moving them "
            "to the CPU would break that: keep a CPU copy for the host reads (a list from `self.sigmas.tolist()`, made "
            "once in `set_timesteps`) and index it where the step reads a sigma on the host"
        )
    message = where + '; keep them on the CPU (`self.sigmas = self.sigmas.to("cpu")`)'
    if copies and reads:
        message += (
            f"; line {copies[0].line} (`{copies[0].text}`) then copies them to the device on each call, once per "
            "generation in most pipelines and once per step in inpainting: fewer than the syncs removed"
        )
    return message
