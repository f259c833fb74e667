"""Library-wide figures from a verify report's targets (its JSON form): the HTML page and the dashboard share them.

Counts are per unit (one forward of a model, one denoising step of a pipeline, one step of a
scheduler), so totals are only summed within one kind and unit: a pipeline's step already
contains its scheduler's step and its models' forwards, and adding those again would count
them twice. The library's syncs per denoising step is the pipelines' sum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.verify.judging.verdict import CENSUS_KINDS

TOP = 10


def measured(target: dict[str, Any]) -> bool:
    """Both sides counted copies and syncs (not a class no target reached, not a CPU parity-only run)."""
    before, after = target.get("before") or {}, target.get("after") or {}
    return all(kind in before and kind in after for kind in CENSUS_KINDS)


def syncs_removed(target: dict[str, Any]) -> float:
    return target["before"]["sync"] - target["after"]["sync"] if measured(target) else 0.0


def top_by_syncs_removed(targets: list[dict[str, Any]], count: int = TOP) -> list[dict[str, Any]]:
    """The targets whose syncs per unit went down most (ties: by name); none that gained nothing."""
    gaining = [t for t in targets if syncs_removed(t) > 0]
    return sorted(gaining, key=lambda t: (-syncs_removed(t), t["target"]))[:count]


@dataclass
class Total:
    """Copies and syncs per unit, summed over every measured target of one kind."""

    kind: str  # pipeline, scheduler, model, module
    unit: str  # step or forward
    targets: int = 0
    before: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CENSUS_KINDS, 0.0))
    after: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CENSUS_KINDS, 0.0))


_KIND_ORDER = ("pipeline", "scheduler", "model", "module")


def totals_by_kind(targets: list[dict[str, Any]]) -> list[Total]:
    totals: dict[tuple[str, str], Total] = {}
    for target in filter(measured, targets):
        key = (target.get("kind") or "other", target.get("unit") or "call")
        total = totals.setdefault(key, Total(*key))
        total.targets += 1
        for kind in CENSUS_KINDS:
            total.before[kind] += target["before"][kind]
            total.after[kind] += target["after"][kind]
    order = {kind: position for position, kind in enumerate(_KIND_ORDER)}
    return sorted(totals.values(), key=lambda t: (order.get(t.kind, len(order)), t.kind, t.unit))


def syncs_per_denoising_step(targets: list[dict[str, Any]]) -> Total | None:
    """The pipelines' syncs per denoising step, before and after every fix; None if no pipeline was measured."""
    return next((t for t in totals_by_kind(targets) if (t.kind, t.unit) == ("pipeline", "step")), None)


def number(value: float) -> str:
    """At most two decimals, no trailing zeros: 0.33, 2, 1.5."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def parity_text(parity: dict[str, Any] | None) -> str:
    if not parity or parity.get("max_abs_diff") is None:
        return "–"
    if parity.get("exact"):
        return "0 (bit-identical)"
    return f"{parity['max_abs_diff']:.2e}"
