"""The CUDA census reads a torch.profiler Chrome trace into the emulated census's shape.

``data/cuda_trace.json`` is written by hand in the layout torch 2.x exports for a
CUDA run (kineto's ``cpu_op``, ``python_function``, ``cuda_runtime`` and
``gpu_memcpy`` events). It holds, inside the ``sync_census`` window:
a latents ``.to("cuda")`` in ``prepare_latents``; a scheduler ``nonzero`` and
``.item()`` in ``index_for_timestep`` (the item waits 75 ms); a kernel launch;
the final ``image.cpu()`` in ``__call__`` (its pageable memcpy blocks 89 ms);
a bare ``torch.cuda.synchronize()`` in the user's script; and, after the
window, the profiler's own ``cudaDeviceSynchronize``.
"""

import json
from pathlib import Path

import pytest
import torch

from bot.verify.census.cuda import census_from_chrome_trace, run_cuda_census
from bot.verify.census.result import CensusEvent, SiteCounts

TRACE = json.loads((Path(__file__).parent / "data" / "cuda_trace.json").read_text())
ROOTS = ["/opt/diffusers/src/diffusers"]
SCHEDULER = "schedulers/scheduling_flow_match_euler_discrete.py:360"


def test_counts_copies_and_syncs_the_way_the_emulated_census_does() -> None:
    census = census_from_chrome_trace(TRACE, ROOTS)
    assert census.counts == {"h2d": 1, "d2h": 1, "sync": 3}
    assert census.bytes == {"h2d": 65536, "d2h": 786432}


def test_events_name_the_user_level_op_and_carry_durations() -> None:
    assert census_from_chrome_trace(TRACE, ROOTS).events == [
        CensusEvent("h2d", "aten::to", "pipelines/flux/pipeline_flux.py:560", 65536, 0.04),
        CensusEvent("sync", "aten::nonzero", SCHEDULER, 0, 0.03),
        CensusEvent("sync", "aten::item", SCHEDULER, 0, 75.0),
        CensusEvent("d2h", "aten::to", "pipelines/flux/pipeline_flux.py:640", 786432, 0.06),
        CensusEvent("sync", "cudaDeviceSynchronize", "run_pipeline.py:8", 0, 2.0),
    ]


def test_durations_total_gpu_copy_time_and_host_wait_time() -> None:
    assert census_from_chrome_trace(TRACE, ROOTS).durations_ms == {"h2d": 0.04, "d2h": 0.06, "sync": 77.03}


def test_unmarked_sites_are_def_lines_under_the_root_else_outside_torch() -> None:
    assert census_from_chrome_trace(TRACE, ROOTS).sites == [
        SiteCounts(SCHEDULER, {"sync": 2}),
        SiteCounts("pipelines/flux/pipeline_flux.py:560", {"h2d": 1}),
        SiteCounts("pipelines/flux/pipeline_flux.py:640", {"d2h": 1}),
        SiteCounts("run_pipeline.py:8", {"sync": 1}),
    ]


def test_big_syncs_list_every_host_wait_over_50_ms() -> None:
    # The .cpu() wait is folded into its d2h copy, yet the host sat idle there.
    assert census_from_chrome_trace(TRACE, ROOTS).big_syncs == [
        CensusEvent("sync", "aten::item", SCHEDULER, 0, 75.0),
        CensusEvent("sync", "aten::to", "pipelines/flux/pipeline_flux.py:640", 0, 89.0),
    ]


def test_big_sync_threshold_is_a_parameter() -> None:
    assert [e.op for e in census_from_chrome_trace(TRACE, ROOTS, big_sync_ms=1.0).big_syncs] == [
        "aten::item",
        "aten::to",
        "cudaDeviceSynchronize",
    ]


def test_without_a_census_window_the_whole_trace_counts() -> None:
    unmarked = {**TRACE, "traceEvents": [e for e in TRACE["traceEvents"] if e.get("name") != "sync_census"]}
    census = census_from_chrome_trace(unmarked, ROOTS)
    assert census.counts == {"h2d": 1, "d2h": 1, "sync": 4}
    assert census.events[-1] == CensusEvent("sync", "cudaDeviceSynchronize", "run_pipeline.py:8", 0, 0.5)


def _copy_item_mask_read_copy_back() -> None:
    values = torch.arange(8.0).cuda()
    values.sum().item()
    values[values > 3]
    values.cpu()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_run_on_cuda_counts_a_copy_an_item_and_a_mask_read(tmp_path: Path) -> None:
    workload = _copy_item_mask_read_copy_back
    census = run_cuda_census(workload, site_roots=[Path(__file__).parent], trace_path=tmp_path / "trace.json")
    assert census.counts == {"h2d": 1, "d2h": 1, "sync": 2}
    assert census.bytes == {"h2d": 32, "d2h": 32}
    assert census.sync_debug_warnings >= 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_run_on_cuda_names_the_statement_of_each_copy_and_sync(tmp_path: Path) -> None:
    workload = _copy_item_mask_read_copy_back
    census = run_cuda_census(workload, site_roots=[Path(__file__).parent], trace_path=tmp_path / "trace.json")
    first = workload.__code__.co_firstlineno
    assert census.sites == [
        SiteCounts(f"test_cuda_census.py:{first + 1}", {"h2d": 1}),
        SiteCounts(f"test_cuda_census.py:{first + 2}", {"sync": 1}),
        SiteCounts(f"test_cuda_census.py:{first + 3}", {"sync": 1}),
        SiteCounts(f"test_cuda_census.py:{first + 4}", {"d2h": 1}),
    ]


def test_a_real_cpu_only_profile_parses_to_an_empty_census(tmp_path: Path) -> None:
    # Same exporter as on CUDA; with no CUDA activity nothing may count.
    cpu_only = [torch.profiler.ProfilerActivity.CPU]
    with (
        torch.profiler.profile(activities=cpu_only, with_stack=True) as prof,
        torch.profiler.record_function("sync_census"),
    ):
        torch.ones(3).sum().item()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    census = census_from_chrome_trace(json.loads((tmp_path / "trace.json").read_text()), ROOTS)
    assert (census.counts, census.events, census.big_syncs) == ({"h2d": 0, "d2h": 0, "sync": 0}, [], [])
