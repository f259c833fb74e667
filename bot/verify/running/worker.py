"""One tree's side of a verification, in its own interpreter: `python -m bot.verify.running.worker REQUEST.json`,
or forked by the verify run's zygote (`zygote.py`), which sets the child up the same way and calls `main`.

The parent puts the tree's parent directory first on PYTHONPATH, so `import diffusers` here
is that tree and nothing else. For each target, in order: build it (seeded), warm up once
while recording which lines of the rewritten files run, then run once more under the census
(emulated device or CUDA profile; none on the CPU) and the output-object count; save the
outputs for the parity check and, when asked, try the compile checks on a fresh CPU build.
Each target's result is written as soon as it is known, so a crash costs only that target.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from bot.verify.census.cuda import run_cuda_census
from bot.verify.census.emulated import SyncCensus
from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.running.outputs import compare, flatten_outputs
from bot.verify.running.protocol import LAUNCHED_AT, WorkerRequest, outputs_path, result_path, timings_path
from bot.verify.running.tracing import LineCoverage, OutputCensus
from bot.verify.targets import TargetSpec, get_target
from bot.verify.targets.from_tests import SEPARATOR, spec_for
from bot.verify.targets.offline_hub import go_offline
from bot.verify.targets.workload import Workload


def main(argv: list[str]) -> int:
    request = WorkerRequest.load(Path(argv[0]))
    out_dir = Path(request.out_dir)
    roots = [Path(request.package)]
    timings = _Laps(time.time() - float(os.environ.get(LAUNCHED_AT, time.time())), "startup")
    # Before diffusers (and huggingface_hub) is imported. Built-in targets load nothing from the Hub.
    go_offline(stand_ins=any(SEPARATOR in name for name in request.targets))
    timings.lap("offline hub")
    # Past PYTHONDONTWRITEBYTECODE (it keeps bytecode out of the user's trees, not the verifier's copies). Modules
    # imported later outside the tree get theirs too where they have none (pip-installed ones have theirs).
    sys.dont_write_bytecode = sys.dont_write_bytecode and not request.keep_bytecode
    import diffusers

    if Path(diffusers.__file__).parent.resolve() != Path(request.package).resolve():
        raise SystemExit(f"imported diffusers from {diffusers.__file__}, expected {request.package}")
    device = _device(request.device)
    if request.scale is not None:
        return _real_scale(request, device, roots, out_dir)
    outputs = OutputCensus(roots)
    outputs.install()
    timings.lap("device")
    timings_path(out_dir).write_text(json.dumps(timings.seconds))
    for index, name in enumerate(request.targets):
        with _exclusive(request.measure_lock):
            _run_target(name, index, request, device, roots, outputs, out_dir)
    return 0


class _Laps:
    """Seconds per named phase, each from the end of the one before."""

    def __init__(self, first: float = 0.0, name: str | None = None) -> None:
        self.seconds: dict[str, float] = {name: round(first, 3)} if name else {}
        self._since = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(now - self._since, 3)
        self._since = now


@contextmanager
def _exclusive(lock: str | None) -> Iterator[None]:
    """Hold `lock` (a file both trees' workers share) while measuring: one target on the device at a time.
    None: this worker measures alone."""
    if lock is None:
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_target(
    name: str,
    index: int,
    request: WorkerRequest,
    device: torch.device,
    roots: list[Path],
    outputs: OutputCensus,
    out_dir: Path,
) -> None:
    """Measure one target and write its result (a failure is its result, not the worker's)."""
    started = time.perf_counter()
    result: dict[str, Any] = {"target": name, "ok": False}
    laps = _Laps()
    try:
        spec = spec_for(name, Path(request.tests_dir)) if SEPARATOR in name else get_target(name)
        result.update(_measure(spec, request, device, roots, outputs, out_dir, index, laps))
        result["ok"] = True
        for check in request.checks.get(name, []):
            result.setdefault("compile", {})[check] = compile_check(spec, check, request)
        if request.checks.get(name):
            laps.lap("compile checks")
    except BaseException as error:  # a target's failure is its result, not the worker's
        if isinstance(error, KeyboardInterrupt):
            raise
        result["error"] = f"{type(error).__name__}: {error}".strip()
        result["traceback"] = traceback.format_exc(limit=-12)
    result["seconds"] = round(time.perf_counter() - started, 3)
    result["phases"] = laps.seconds
    result_path(out_dir, index).write_text(json.dumps(result, default=str))


def _real_scale(request: WorkerRequest, device: torch.device, roots: list[Path], out_dir: Path) -> int:
    """Each case run of a real-scale request, its result written as soon as it is known."""
    from bot.verify.real_scale.measure import measure_case
    from bot.verify.real_scale.scale import Scale

    # A fresh compile cache per worker: the compile times reported are cold, not the other tree's cache hits.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(out_dir / "inductor-cache")
    scale = Scale(**request.scale or {})
    for index, name in enumerate(request.targets):
        started = time.perf_counter()
        result: dict[str, Any] = {"target": name, "ok": False}
        try:
            stem = out_dir / f"{index:03d}"
            with _exclusive(request.measure_lock):
                result.update(measure_case(name, scale, device, roots, request.trace_files, stem, request.seed))
            result["ok"] = True
        except Exception as error:  # a case's failure is its result, not the worker's
            result["error"] = f"{type(error).__name__}: {error}".strip()[:2000]
            result["traceback"] = traceback.format_exc(limit=-12)
        result["seconds"] = round(time.perf_counter() - started, 3)
        result_path(out_dir, index).write_text(json.dumps(result, default=str))
        print(
            f"real scale: {name}: {'done' if result['ok'] else result['error'][:200]} in {result['seconds']:.0f} s",
            flush=True,
        )
    return 0


def _device(name: str) -> torch.device:
    if name == "emu":
        return install_emulated_device()
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: this machine has no CUDA device")
    return torch.device(name)


def _measure(
    spec: TargetSpec,
    request: WorkerRequest,
    device: torch.device,
    roots: list[Path],
    outputs: OutputCensus,
    out_dir: Path,
    index: int,
    laps: _Laps,
) -> dict[str, Any]:
    torch.manual_seed(request.seed)
    workload = spec.build(device)
    laps.lap("build")
    coverage = LineCoverage(request.trace_files)
    measured: dict[str, Any] = {}
    try:
        torch.manual_seed(request.seed)
        with coverage:
            workload.run()
    finally:
        measured["lines"], measured["functions"] = coverage.by_relative_path(roots)
    measured["unit"], measured["units"] = workload.unit, workload.units
    laps.lap("warm-up (line coverage)")
    torch.manual_seed(request.seed)
    census, output = take_census(request.device, workload, roots, out_dir / f"{index:03d}.trace.json", outputs)
    laps.lap("census run")
    measured["census"] = census
    measured["outputs_built"] = {"count": outputs.count, "sites": dict(outputs.sites)}
    measured["repeated_blocks"] = repeated_blocks(workload)
    torch.save(flatten_outputs(output), outputs_path(out_dir, index))
    laps.lap("save")
    return measured


def take_census(
    device: str, workload: Workload, roots: list[Path], trace_path: Path, outputs: OutputCensus
) -> tuple[dict[str, Any] | None, Any]:
    """One measured run: its census (None on the CPU) and its output."""
    produced: list[Any] = []
    if device == "emu":
        with SyncCensus(site_roots=roots) as census, outputs:
            produced.append(workload.run())
        return census.result().to_dict(), produced[0]
    if device == "cuda":
        with outputs:
            result = run_cuda_census(lambda: produced.append(workload.run()), roots, trace_path)
        return result.to_dict(), produced[0]
    with outputs:
        produced.append(workload.run())
    return None, produced[0]


def repeated_blocks(workload: Workload) -> dict[str, Any] | None:
    """What `compile_repeated_blocks` would find: the declared class names and how many modules match.

    For the workload's model, and under "by_class" for it and every other model it holds (a
    pipeline's ControlNet): a DIF003 change is judged on the class it changed.
    """
    if workload.model is None and not workload.components:
        return None
    by_class = {type(m).__name__: _blocks_found(m) for m in (*workload.components, workload.model) if m is not None}
    return {**(_blocks_found(workload.model) if workload.model is not None else {}), "by_class": by_class}


def _blocks_found(model: torch.nn.Module) -> dict[str, Any]:
    declared = list(getattr(model, "_repeated_blocks", None) or [])
    return {"declared": declared, "found": sum(type(module).__name__ in declared for module in model.modules())}


def compile_check(spec: TargetSpec, check: str, request: WorkerRequest) -> dict[str, Any]:
    """`fullgraph`: the hot callable compiles with fullgraph=True; `repeated_blocks`: so do its blocks.

    Built afresh on the CPU (the emulated device is not traceable). The compiled run is
    compared with an eager one; a toolchain torch cannot use here makes the check "skipped".
    """
    import torch._dynamo
    import torch._inductor.exc

    if not torch._dynamo.is_dynamo_supported():
        return {"status": "skipped", "detail": "torch.compile is not supported on this Python/torch build"}
    torch._dynamo.reset()
    torch.manual_seed(request.seed)
    workload = spec.build(torch.device("cpu"))
    torch.manual_seed(request.seed)
    eager = flatten_outputs(workload.run())
    options = {"fullgraph": True, "backend": request.compile_backend}
    try:
        if check == "repeated_blocks":
            if workload.model is None:
                return {"status": "skipped", "detail": "the target has no model"}
            workload.model.compile_repeated_blocks(**options)
        elif workload.compile_with is None:
            return {"status": "skipped", "detail": "the target has nothing to compile"}
        else:
            workload.compile_with(lambda function: torch.compile(function, **options))
        torch.manual_seed(request.seed)
        compiled = flatten_outputs(workload.run())
    except (torch._inductor.exc.InvalidCxxCompiler, torch._inductor.exc.CppCompileError) as error:
        return {"status": "skipped", "detail": f"torch's build cannot compile here: {_first_line(error)}"}
    except Exception as error:  # a graph break or a refusal is the check's answer
        return {"status": "failed", "detail": f"{type(error).__name__}: {_first_line(error)}"}
    parity = compare(eager, compiled, tolerance=float("inf"))
    return {"status": "passed", "detail": f"backend={request.compile_backend}", "max_abs_diff": parity.max_abs_diff}


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
