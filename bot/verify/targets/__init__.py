"""Targets: a diffusers class, a tiny configuration and inputs that exercise a rewritten path.

One spec per class, registered with `@target`. The spec modules import torch and diffusers
only inside their build functions: the parent process reads this registry (names, classes)
without importing either, and only a worker, inside one tree, builds anything.

`classes` names every diffusers class a target builds or drives; a target is run when one
of their files (or a file those import) changed, and it is credited with a rewrite only if
its warm-up run executed the rewritten lines.

May import: codemods.project
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from bot.verify.targets.workload import Workload

Builder = Callable[["torch.device"], "Workload"]

KINDS = ("model", "module", "scheduler", "pipeline", "function")

_SPEC_MODULES = (
    "models",
    "transformers",
    "rope",
    "attention",
    "autoencoders",
    "schedulers",
    "sigma_loops",
    "pipelines",
    "kandinsky5",
    "rl",
    "training",
)


@dataclass(frozen=True)
class TargetSpec:
    name: str
    kind: str
    classes: tuple[str, ...]
    exercises: str  # what the run goes through, for the report
    build: Builder
    # Taken from a checkout's tests: failing on both trees says nothing about a rewrite.
    best_effort: bool = False
    hub_ids: tuple[str, ...] = ()  # repositories its configuration loads from the Hub (see offline_hub)
    # Runs beside a checkout's own test target for its class instead of replacing it: that one is the
    # better witness where it runs, but needs what some environments lack (kandinsky5.py: torchvision).
    beside_checkout_tests: bool = False


_registry: dict[str, TargetSpec] = {}


def target(
    name: str, kind: str, classes: tuple[str, ...], exercises: str, beside_checkout_tests: bool = False
) -> Callable[[Builder], Builder]:
    """Register `build(device) -> Workload` under `name`."""
    if kind not in KINDS:
        raise ValueError(f"target {name}: kind must be one of {KINDS}, not {kind!r}")

    def register(build: Builder) -> Builder:
        add_target(TargetSpec(name, kind, classes, exercises, build, beside_checkout_tests=beside_checkout_tests))
        return build

    return register


def add_target(spec: TargetSpec) -> None:
    if spec.name in _registry:
        raise ValueError(f"target {spec.name} is registered twice")
    _registry[spec.name] = spec


@cache
def _load() -> None:
    for module in _SPEC_MODULES:
        importlib.import_module(f"{__name__}.{module}")


def all_targets() -> list[TargetSpec]:
    _load()
    return sorted(_registry.values(), key=lambda spec: spec.name)


def get_target(name: str) -> TargetSpec:
    _load()
    if name not in _registry:
        raise KeyError(f"no target named {name!r} (known: {len(_registry)}; see `bot.verify.targets.all_targets()`)")
    return _registry[name]
