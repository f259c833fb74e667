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
the host sat idle. A site is the statement, as the emulated census names it:
``run_cuda_census`` marks each torch call with it (``statement_sites``), and the
innermost mark around the op that made the call wins. A trace made without
marks (an older run's) falls back to the innermost Python frame under a site
root, which the profiler names by the line its ``def`` starts on.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from bot.verify.census.result import UNKNOWN_SITE, CensusEvent, CensusResult, relative_to_roots, summarize
from bot.verify.census.statement_sites import SITE_MARK, StatementSites

CENSUS_WINDOW = "sync_census"
"""The ``record_function`` around the workload; only what happens inside it counts."""

BIG_SYNC_MS = 50.0

SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}

USER_COPY_OPS = {
    "aten::to",
    "aten::_to_copy",
    "aten::copy_",
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::cpu",
}
"""User-level ops whose memcpy is the point, not a means to read a value."""

SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"

_PYTHON_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): ")
_TORCH_FILE = re.compile(r"^(torch|torchgen)/|/site-packages/torch/")


@dataclass(frozen=True)
class _Span:
    """One complete ("X") trace event: a name and a time interval in microseconds."""

    name: str
    start: float
    end: float


def _span(event: Mapping[str, Any]) -> _Span:
    return _Span(event["name"], float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0)))


@dataclass(frozen=True)
class _HostCall:
    """A runtime call that copies or waits, with what the host thread was doing then."""

    event: Mapping[str, Any]
    memcpy: Mapping[str, Any] | None
    moment: _Span
    """The aten op that issued the call (it shares the Python frames' clock), else the call itself."""
    linked: bool


def census_from_chrome_trace(
    trace: Mapping[str, Any],
    site_roots: Sequence[str | Path] = (),
    big_sync_ms: float = BIG_SYNC_MS,
) -> CensusResult:
    """The census of a trace written by ``torch.profiler``'s ``export_chrome_trace``."""
    roots = [Path(root) for root in site_roots]
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    calls = _host_calls(complete)
    ops = _spans_by_thread(complete, "cpu_op")
    frames = _spans_by_thread(complete, "python_function")
    marks = _spans_by_thread([e for e in complete if e["name"].startswith(SITE_MARK)], "user_annotation")
    op_chains: dict[int, list[_Span]] = {}
    frame_chains: dict[int, list[_Span]] = {}
    mark_chains: dict[int, list[_Span]] = {}
    for thread in {_thread(call.event) for call in calls}:
        mine = [index for index, call in enumerate(calls) if _thread(call.event) == thread]
        moments = [calls[index].moment for index in mine]
        op_chains.update(zip(mine, _open_spans(ops.get(thread, []), moments), strict=True))
        frame_chains.update(zip(mine, _open_spans(frames.get(thread, []), moments), strict=True))
        mark_chains.update(zip(mine, _open_spans(marks.get(thread, []), moments), strict=True))

    events: list[CensusEvent] = []
    big_syncs: list[CensusEvent] = []
    for index, call in enumerate(calls):
        name = call.event["name"]
        user_op = op_chains[index][0] if call.linked and op_chains[index] else None
        op_name = user_op.name if user_op is not None else name
        in_copy_op = user_op is not None and user_op.name in USER_COPY_OPS
        marked = mark_chains[index]
        site = marked[-1].name.removeprefix(SITE_MARK) if marked else _site(frame_chains[index], roots)
        host_wait_ms = float(call.event.get("dur", 0)) / 1000
        direction = _direction(call.memcpy["name"]) if call.memcpy is not None else None
        if direction == "h2d" or (direction == "d2h" and (user_op is None or in_copy_op)):
            gpu_ms = float(call.memcpy.get("dur", 0)) / 1000
            events.append(CensusEvent(direction, op_name, site, int(call.memcpy["args"].get("bytes", 0)), gpu_ms))
        elif name in SYNC_CALLS and not in_copy_op:
            events.append(CensusEvent("sync", op_name, site, 0, host_wait_ms))
        if (name in SYNC_CALLS or direction == "d2h") and host_wait_ms > big_sync_ms:
            big_syncs.append(CensusEvent("sync", op_name, site, 0, host_wait_ms))
    return summarize(events, timed=True, big_syncs=big_syncs)


def _host_calls(complete: list[Mapping[str, Any]]) -> list[_HostCall]:
    """Synchronize and memcpy runtime calls inside the census window, in time order."""
    ops_by_id = {
        e["args"]["External id"]: e for e in complete if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    memcpys = {e["args"]["correlation"]: e for e in complete if e.get("cat") == "gpu_memcpy"}
    window = _census_window(complete)
    calls = []
    for event in complete:
        if event.get("cat") not in ("cuda_runtime", "cuda_driver"):
            continue
        args = event.get("args", {})
        memcpy = memcpys.get(args.get("correlation")) if event["name"].startswith("cudaMemcpy") else None
        call = _span(event)
        if (event["name"] in SYNC_CALLS or memcpy is not None) and window.start <= call.start <= window.end:
            linked = ops_by_id.get(args.get("External id"))
            moment = _span(linked) if linked is not None else call
            calls.append(_HostCall(event, memcpy, moment, linked is not None))
    return sorted(calls, key=lambda call: float(call.event["ts"]))


def _thread(event: Mapping[str, Any]) -> tuple[Any, Any]:
    return (event.get("pid"), event.get("tid"))


def _spans_by_thread(complete: list[Mapping[str, Any]], category: str) -> dict[tuple[Any, Any], list[_Span]]:
    spans: dict[tuple[Any, Any], list[_Span]] = {}
    for event in complete:
        if event.get("cat") == category:
            spans.setdefault(_thread(event), []).append(_span(event))
    return spans


def _open_spans(spans: list[_Span], moments: list[_Span]) -> list[list[_Span]]:
    """For each moment, the spans open at its start, outermost first.

    One sweep over spans that nest (ops and Python calls on one thread do), so
    a long trace costs one pass rather than one pass per moment.
    """
    ordered = sorted(spans, key=lambda span: (span.start, -span.end))
    chains: list[list[_Span]] = [[] for _ in moments]
    stack: list[_Span] = []
    position = 0
    for index in sorted(range(len(moments)), key=lambda i: moments[i].start):
        instant = moments[index].start
        while position < len(ordered) and ordered[position].start <= instant:
            span = ordered[position]
            position += 1
            while stack and stack[-1].end <= span.start:
                stack.pop()
            stack.append(span)
        while stack and stack[-1].end < instant:
            stack.pop()
        chains[index] = list(stack)
    return chains


def _site(frames: list[_Span], roots: Sequence[Path]) -> str:
    """The innermost frame under a root, else the innermost outside torch."""
    fallback = None
    for frame in reversed(frames):
        match = _PYTHON_FRAME.match(frame.name)
        if match is None:
            continue
        relative = relative_to_roots(match["file"], roots)
        if relative is not None:
            return f"{relative}:{match['line']}"
        if fallback is None and not _TORCH_FILE.search(match["file"]):
            fallback = f"{match['file']}:{match['line']}"
    return fallback or UNKNOWN_SITE


def _direction(memcpy_name: str) -> str | None:
    """``Memcpy HtoD (Pageable -> Device)`` -> ``h2d``; device-to-device copies are neither."""
    if memcpy_name.startswith("Memcpy HtoD"):
        return "h2d"
    if memcpy_name.startswith("Memcpy DtoH"):
        return "d2h"
    return None


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
    trace, sync_warnings = profile_chrome_trace(workload, site_roots, trace_path)
    return replace(census_from_chrome_trace(trace, site_roots), sync_debug_warnings=sync_warnings)


def profile_chrome_trace(
    workload: Callable[[], object],
    site_roots: Sequence[str | Path],
    trace_path: Path,
    with_stack: bool = True,
) -> tuple[dict[str, Any], int]:
    """Profile ``workload`` on CUDA with each torch call marked by its statement; the Chrome trace (written to
    ``trace_path``, parsed once) and the count of sync-debug warnings.

    ``with_stack=False`` leaves out the Python frames: the marks still give every site, and the trace is
    about 25 times smaller (on QwenImage, 18,000 of its 18,700 events per block and forward are frames),
    which is what a real-size model's trace can afford; only a call outside every mark loses its site.
    """
    # Work queued before the census must not be charged to its first sync.
    torch.cuda.synchronize()
    previous_mode = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
            with (
                profile(activities=activities, with_stack=with_stack) as prof,
                record_function(CENSUS_WINDOW),
                StatementSites(site_roots),
            ):
                workload()
        finally:
            torch.cuda.set_sync_debug_mode(previous_mode)
    prof.export_chrome_trace(str(trace_path))
    sync_warnings = sum(SYNC_DEBUG_MESSAGE in str(warning.message) for warning in caught)
    return json.loads(trace_path.read_text()), sync_warnings
