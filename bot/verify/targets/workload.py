"""What a target builds: a callable that does one measured run, and how to compile its hot part.

A run is one forward of a model, one pipeline call, or one scheduler loop (set_timesteps and
`units` steps). The verifier calls it once to warm up (lru caches fill, lazy state settles)
and once more under the census; counts are then divided by `units` for the per-step table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

Compiler = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass
class Workload:
    run: Callable[[], Any]
    unit: str  # "forward" or "step"
    units: int = 1
    # The ModelMixin whose `_repeated_blocks` (DIF003) and blocks are checked; None for schedulers.
    model: torch.nn.Module | None = None
    # Swaps the hot callable (a model, a bound method, a pipeline's denoiser) for compiler(it).
    compile_with: Callable[[Compiler], None] | None = None
    # A pipeline's other models (a ControlNet beside the denoiser): DIF003 evidence for their classes too.
    components: tuple[torch.nn.Module, ...] = ()


class Slot:
    """A callable the run reads at call time, so that a compiled version can replace it."""

    def __init__(self, value: Callable[..., Any]) -> None:
        self.value = value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value(*args, **kwargs)

    def compile_with(self, compiler: Compiler) -> None:
        self.value = compiler(self.value)


def model_workload(
    model: torch.nn.Module,
    call: Callable[..., Any],
    kwargs: dict[str, Any],
    args: tuple[Any, ...] = (),
) -> Workload:
    """One forward of `call` (the model, or one of its methods) with fixed inputs, under no_grad."""
    slot = Slot(call)

    def run() -> Any:
        with torch.no_grad():
            return slot(*args, **kwargs)

    return Workload(run=run, unit="forward", units=1, model=model, compile_with=slot.compile_with)


def pipeline_workload(
    pipeline: Any, kwargs: dict[str, Any], denoiser: str | None, prepare: Callable[[], Any] | None = None
) -> Workload:
    """One pipeline call (after `prepare()`, e.g. LEdits++'s `invert`); the generator is re-seeded for every call.

    Its units are the denoising loop's iterations: the scheduler's timesteps after the call; a
    pipeline without a scheduler (a latent upsampler) counts per call.
    """
    pipeline.set_progress_bar_config(disable=True)
    scheduler = getattr(pipeline, "components", {}).get("scheduler")

    def run() -> Any:
        with torch.no_grad():
            if prepare is not None:
                prepare()
            output = pipeline(**kwargs, generator=torch.Generator().manual_seed(0))
        if scheduler is not None:
            workload.units = len(pipeline.scheduler.timesteps)
        return output

    def compile_with(compiler: Compiler) -> None:
        setattr(pipeline, denoiser, compiler(getattr(pipeline, denoiser)))

    model = getattr(pipeline, denoiser) if denoiser else None
    components = tuple(c for c in pipeline.components.values() if isinstance(c, torch.nn.Module))
    workload = Workload(
        run=run,
        unit="step" if scheduler is not None else "call",
        units=1,
        model=model,
        compile_with=compile_with if denoiser else None,
        components=components,
    )
    return workload


def to_device(value: Any, device: torch.device) -> Any:
    """Tensors (also inside lists, tuples and dicts) moved to `device`; anything else as is."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: to_device(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(item, device) for item in value)
    return value
