"""The census of ``census.py``, taken from a real CUDA run's profile.

``run_cuda_census`` profiles a workload (CPU + CUDA activities, Python
stacks) under ``torch.cuda.set_sync_debug_mode("warn")`` and exports a Chrome
trace; ``census_from_chrome_trace`` turns that trace into a ``CensusResult``
with the emulated census's kinds, plus durations. The parser is a pure
function, tested on a hand-written trace; only the runner needs a GPU.

How CUDA shows the kinds, and how they are folded to match the emulated census:

* every cross-device ``copy_`` that is not ``non_blocking`` is a
  ``cudaMemcpyAsync`` followed by ``cudaStreamSynchronize``; ``.item()`` and
  ``nonzero`` are a small device-to-host ``cudaMemcpyAsync`` and a
  ``cudaStreamSynchronize``;
* so a host-to-device memcpy counts ``h2d``; a device-to-host memcpy counts
  ``d2h`` when the user-level op (the outermost ``aten::`` op around it) is a
  copy (``.cpu()``, ``.to()``), and is part of a sync otherwise;
* a ``cudaStreamSynchronize``/``cudaDeviceSynchronize``/``cudaEventSynchronize``
  counts ``sync`` unless that user-level op is a copy (the copy's own wait).

Every host wait (those synchronize calls, device-to-host memcpy calls) longer
than ``big_sync_ms`` is listed in ``big_syncs``, folded or not: that is where
the host sat idle. Sites on CUDA name the ``def`` line of the innermost
function under a site root (the profiler records frames when they start), not
the statement line the emulated census gives.
"""

from __future__ import annotations

import json
import re
import warnings
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.verify.census_result import UNKNOWN_SITE, CensusEvent, CensusResult, relative_to_roots, summarize

CENSUS_WINDOW = "sync_census"
"""The ``record_function`` around the workload; only what happens inside it counts."""

BIG_SYNC_MS = 50.0

SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}

COPY_OPS = {"aten::to", "aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::cpu"}
"""User-level ops whose memcpy is the point, not a means to read a value."""

SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"

_PYTHON_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): ")
_TORCH_FILE = re.compile(r"^(torch|torchgen)/|/site-packages/torch/")


@dataclass(frozen=True)
class _Span:
    """One complete ("X") trace event on a host thread."""

    name: str
    start: float
    end: float

    def contains(self, other: _Span) -> bool:
        return self.start <= other.start and other.end <= self.end


def _span(event: Mapping[str, Any]) -> _Span:
    return _Span(event["name"], float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0)))


class _HostThread:
    """The aten ops and Python frames of one host thread, for lookups by time."""

    def __init__(self, ops: list[_Span], frames: list[_Span]) -> None:
        self.ops = sorted(ops, key=lambda s: (s.start, -s.end))
        self.frames = sorted(frames, key=lambda s: (s.start, -s.end))
        self._frame_starts = [frame.start for frame in self.frames]

    def outermost_op(self, inner: _Span) -> _Span | None:
        return next((op for op in self.ops if op.contains(inner)), None)

    def site(self, moment: _Span, roots: Sequence[Path]) -> str:
        """The innermost frame under a root around ``moment``, else the innermost outside torch."""
        enclosing = [f for f in self.frames[: bisect_right(self._frame_starts, moment.start)] if f.contains(moment)]
        fallback = None
        for frame in reversed(enclosing):
            match = _PYTHON_FRAME.match(frame.name)
            if match is None:
                continue
            relative = relative_to_roots(match["file"], roots)
            if relative is not None:
                return f"{relative}:{match['line']}"
            if fallback is None and not _TORCH_FILE.search(match["file"]):
                fallback = f"{match['file']}:{match['line']}"
        return fallback or UNKNOWN_SITE


def census_from_chrome_trace(
    trace: Mapping[str, Any],
    site_roots: Sequence[str | Path] = (),
    big_sync_ms: float = BIG_SYNC_MS,
) -> CensusResult:
    """The census of a trace written by ``torch.profiler``'s ``export_chrome_trace``."""
    roots = [Path(root) for root in site_roots]
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    threads = _host_threads(complete)
    ops_by_id = {e["args"]["External id"]: e for e in complete if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    memcpys = {e["args"]["correlation"]: e for e in complete if e.get("cat") == "gpu_memcpy"}
    window = _census_window(complete)

    events: list[CensusEvent] = []
    big_syncs: list[CensusEvent] = []
    for call in complete:
        if call.get("cat") not in ("cuda_runtime", "cuda_driver") or not window.contains(_span(call)):
            continue
        name = call["name"]
        memcpy = memcpys.get(call.get("args", {}).get("correlation")) if name.startswith("cudaMemcpy") else None
        if name not in SYNC_CALLS and memcpy is None:
            continue
        thread = threads[(call["pid"], call["tid"])]
        linked = ops_by_id.get(call.get("args", {}).get("External id"))
        # The linked op shares the Python frames' clock; the runtime call may not.
        moment = _span(linked) if linked is not None else _span(call)
        user_op = thread.outermost_op(moment) if linked is not None else None
        op_name = user_op.name if user_op is not None else name
        is_copy_op = user_op is None or user_op.name in COPY_OPS
        site = thread.site(moment, roots)
        host_wait_ms = float(call.get("dur", 0)) / 1000

        direction = _direction(memcpy["name"]) if memcpy is not None else None
        if direction == "h2d" or (direction == "d2h" and is_copy_op):
            gpu_ms = float(memcpy.get("dur", 0)) / 1000
            events.append(CensusEvent(direction, op_name, site, int(memcpy["args"].get("bytes", 0)), gpu_ms))
        elif name in SYNC_CALLS and not (user_op is not None and user_op.name in COPY_OPS):
            events.append(CensusEvent("sync", op_name, site, 0, host_wait_ms))
        if (name in SYNC_CALLS or direction == "d2h") and host_wait_ms > big_sync_ms:
            big_syncs.append(CensusEvent("sync", op_name, site, 0, host_wait_ms))
    return summarize(events, timed=True, big_syncs=big_syncs)


def _direction(memcpy_name: str) -> str | None:
    """``Memcpy HtoD (Pageable -> Device)`` -> ``h2d``; device-to-device copies are neither."""
    if memcpy_name.startswith("Memcpy HtoD"):
        return "h2d"
    if memcpy_name.startswith("Memcpy DtoH"):
        return "d2h"
    return None


def _host_threads(complete: list[Mapping[str, Any]]) -> dict[tuple[Any, Any], _HostThread]:
    ops: dict[tuple[Any, Any], list[_Span]] = {}
    frames: dict[tuple[Any, Any], list[_Span]] = {}
    for event in complete:
        key = (event.get("pid"), event.get("tid"))
        if event.get("cat") == "cpu_op":
            ops.setdefault(key, []).append(_span(event))
        elif event.get("cat") == "python_function":
            frames.setdefault(key, []).append(_span(event))
    keys = {(e.get("pid"), e.get("tid")) for e in complete}
    return {key: _HostThread(ops.get(key, []), frames.get(key, [])) for key in keys}


def _census_window(complete: list[Mapping[str, Any]]) -> _Span:
    """The ``CENSUS_WINDOW`` annotation, or the whole trace for traces made without one."""
    marks = [e for e in complete if e.get("cat") == "user_annotation" and e["name"] == CENSUS_WINDOW]
    if marks:
        return _span(marks[0])
    return _Span("trace", float("-inf"), float("inf"))


def run_cuda_census(
    workload: Callable[[], object],
    site_roots: Sequence[str | Path],
    trace_path: Path,
) -> CensusResult:
    """Profile ``workload`` on CUDA, keep its Chrome trace at ``trace_path``, and census it."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    # Work queued before the census must not be charged to its first sync.
    torch.cuda.synchronize()
    previous_mode = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
                with record_function(CENSUS_WINDOW):
                    workload()
        finally:
            torch.cuda.set_sync_debug_mode(previous_mode)
    prof.export_chrome_trace(str(trace_path))
    census = census_from_chrome_trace(json.loads(trace_path.read_text()), site_roots)
    sync_warnings = sum(SYNC_DEBUG_MESSAGE in str(warning.message) for warning in caught)
    return replace(census, sync_debug_warnings=sync_warnings)
