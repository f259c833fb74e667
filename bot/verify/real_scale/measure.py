"""One tree's side of a real-scale case, in the worker: build, warm up, time, census; eager, then compiled.

Per mode: the first run (with the lines of the rewritten files it runs recorded, in eager mode; with
the compile, in a compiled mode) is the cold run; then `repeats` timed runs, each between two
device synchronizations, timed by the host clock and, on CUDA, by events on the stream; the medians
per unit are reported. On CUDA one more run is profiled: its syncs over 50 ms (as diffusers #13406
listed them) and every host wait (synchronize calls and device-to-host copies), whose total per
unit is the host wait per step. Peak memory is the allocator's peak over the timed runs.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bot.verify.census.cuda import BIG_SYNC_MS, census_from_chrome_trace, profile_chrome_trace
from bot.verify.real_scale.cases import RealCase, get_case
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.running.tracing import LineCoverage
from bot.verify.targets.workload import Workload

LARGEST_WAITS = 5
# What the device ran: set against the wall time per unit, it says whether the GPU or the host set the pace. A
# host that launches work no faster than the GPU runs it keeps the queue empty, so no sync can wait long, however
# many blocks the model has (each block adds host and GPU time alike).
GPU_WORK = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
"""Host waits listed per run besides the big syncs, so a run with none over 50 ms shows what it had."""


def measure_case(
    name: str,
    scale: Scale,
    device: torch.device,
    roots: list[Path],
    trace_files: list[str],
    trace_stem: Path,
    seed: int,
) -> dict[str, Any]:
    """The case run `name` (see `CaseRun`) in this tree: what was built and one entry per mode."""
    run = CaseRun.parse(name)
    case = get_case(run.case)
    scale = run.scale(scale)
    _release_memory(device)  # the previous case's models
    began = time.perf_counter()
    torch.manual_seed(seed)
    built = case.build(device, scale)
    build_s = time.perf_counter() - began
    coverage = LineCoverage(trace_files)
    torch.manual_seed(seed)
    with coverage:
        cold_ms = _host_ms(built.workload.run, device)
    lines, functions = coverage.by_relative_path(roots)
    modes = [_measure_mode(built.workload, "eager", "eager", cold_ms, device, scale, roots, trace_stem)]
    modes[0]["seconds"] = {"build": round(build_s, 2), "cold run": round(cold_ms / 1000, 2), **modes[0]["seconds"]}
    compiles = [f"compile:{mode}" for mode in run.compile_modes] or (
        ["compile:default"] if case.regional_compile else []
    )
    for mode in compiles:
        del built
        _release_memory(device)
        torch._dynamo.reset()
        torch.manual_seed(seed)
        built = case.build(device, scale)
        try:
            how = _compile(case, built.workload, mode.partition(":")[2])
            torch.manual_seed(seed)
            cold_ms = _host_ms(built.workload.run, device)
            modes.append(_measure_mode(built.workload, mode, how, cold_ms, device, scale, roots, trace_stem))
        except Exception as error:  # noqa: BLE001  the eager numbers stand; the compiled mode reports why it has none
            modes.append({"mode": mode, "error": f"{type(error).__name__}: {str(error).strip()[:300]}"})
    result = {
        "case": case.name,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else device.type,
        "scale": scale.to_dict(),
        "described": built.described,
        "modes": modes,
        "lines": lines,
        "functions": functions,
    }
    # Freed before the worker lets the other tree's worker build: two Qwen-Image transformers at the released
    # 60 layers (41 GB each in bf16) do not fit an H100's 80 GB together.
    del built
    _release_memory(device)
    return result


def _release_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _compile(case: RealCase, workload: Workload, mode: str) -> str:
    """Compile the workload's denoiser; DIF003 cases compile its repeated blocks where the tree declares them."""
    options = {} if mode == "default" else {"mode": mode}
    model = workload.model
    if case.regional_compile and model is not None and getattr(model, "_repeated_blocks", None):
        model.compile_repeated_blocks(**options)
        return f"compile_repeated_blocks ({', '.join(model._repeated_blocks)}), mode {mode}"
    if workload.compile_with is None:
        raise ValueError(f"{case.name}: nothing to compile")
    workload.compile_with(lambda function: torch.compile(function, **options))
    return f"torch.compile (whole model), mode {mode}"


def _measure_mode(
    workload: Workload,
    mode: str,
    how: str,
    cold_ms: float,
    device: torch.device,
    scale: Scale,
    roots: list[Path],
    trace_stem: Path,
) -> dict[str, Any]:
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    walls, events = [], []
    began = time.perf_counter()
    for _ in range(scale.repeats):
        wall, on_stream = _timed(workload.run, device)
        walls.append(wall)
        events.append(on_stream)
    units = workload.units
    measured: dict[str, Any] = {
        "mode": mode,
        "how": how,
        "unit": workload.unit,
        "units": units,
        "runs": scale.repeats,
        "cold_ms": round(cold_ms, 2),
        "wall_ms_per_unit": round(statistics.median(walls) / units, 3),
        "cuda_ms_per_unit": round(statistics.median(events) / units, 3) if cuda else None,
        "peak_memory_mib": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None,
    }
    # Where a case's time goes, so a run that outgrows its cap says which phase grew.
    measured["seconds"] = {"timed runs": round(time.perf_counter() - began, 2)}
    if cuda:
        began = time.perf_counter()
        measured.update(_host_waits(workload, roots, trace_stem.with_name(f"{trace_stem.name}-{mode}.trace.json")))
        measured["seconds"]["profiled run and its trace"] = round(time.perf_counter() - began, 2)
    return measured


def _host_waits(workload: Workload, roots: list[Path], trace_path: Path) -> dict[str, Any]:
    # No Python frames in this trace: with them, QwenImage's 60 layers made a trace of about a GB, whose
    # export and parsing ran past the case's 120 s on the H200; the statement marks give the sites.
    trace, _ = profile_chrome_trace(workload.run, roots, trace_path, with_stack=False)
    trace_path.unlink()  # the numbers are what is kept
    return host_waits(trace, roots, workload.units)


def host_waits(trace: dict[str, Any], roots: list[Path], units: int) -> dict[str, Any]:
    """From one profiled run's Chrome trace: syncs over 50 ms, every host wait, and counts, per unit."""
    census = census_from_chrome_trace(trace, roots, big_sync_ms=0.0)  # the counts do not depend on the threshold
    every_wait = census.big_syncs

    def listed(events: Any) -> list[dict[str, Any]]:
        return [{"op": e.op, "site": e.site, "ms": round(e.duration_ms or 0.0, 2)} for e in events]

    return {
        "big_syncs": listed(e for e in every_wait if (e.duration_ms or 0.0) > BIG_SYNC_MS),
        "big_sync_ms": BIG_SYNC_MS,
        "host_wait_ms_per_unit": round(sum(e.duration_ms or 0.0 for e in every_wait) / units, 3),
        "gpu_busy_ms_per_unit": round(gpu_busy_us(trace) / 1000 / units, 3),
        "largest_host_waits": listed(sorted(every_wait, key=lambda e: -(e.duration_ms or 0.0))[:LARGEST_WAITS]),
        "counts_per_unit": {kind: round(n / units, 3) for kind, n in census.counts.items()},
    }


def gpu_busy_us(trace: dict[str, Any]) -> float:
    """Microseconds of kernels and copies on the device in a Chrome trace (the profiled run is the whole trace)."""
    return sum(event.get("dur", 0.0) for event in trace.get("traceEvents", []) if event.get("cat") in GPU_WORK)


def _timed(run: Callable[[], Any], device: torch.device) -> tuple[float, float | None]:
    """Milliseconds of one run by the host clock and, on CUDA, by events recorded on the stream around it."""
    if device.type != "cuda":
        return _host_ms(run, device), None
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began = time.perf_counter()
    start.record()
    run()
    end.record()
    torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1000, start.elapsed_time(end)


def _host_ms(run: Callable[[], Any], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1000
