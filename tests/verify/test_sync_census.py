"""SyncCensus counts what a CUDA run would pay for: copies and host waits, by site."""

import inspect
import json
from collections.abc import Callable
from pathlib import Path

import diffusers
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from bot.verify.census.emulated import SyncCensus
from bot.verify.census.result import CensusEvent, CensusResult, SiteCounts, relative_to_roots

HERE = Path(__file__).parent


def _census_of(action: Callable[[], object]) -> CensusResult:
    with SyncCensus() as census:
        action()
    return census.result()


def test_item_is_one_sync(emu: torch.device) -> None:
    total = torch.ones(3, device=emu).sum()
    assert _census_of(total.item).counts == {"h2d": 0, "d2h": 0, "sync": 1}


def test_int_float_and_bool_of_a_device_tensor_each_sync_once(emu: torch.device) -> None:
    value = torch.tensor(2.0).to(emu)
    assert _census_of(lambda: (int(value), float(value), bool(value))).counts == {"h2d": 0, "d2h": 0, "sync": 3}


def test_comparison_in_an_if_is_one_sync(emu: torch.device) -> None:
    sigma = torch.tensor(0.5).to(emu)

    def branch() -> str:
        if sigma < 1.0:
            return "low"
        return "high"

    assert _census_of(branch).counts == {"h2d": 0, "d2h": 0, "sync": 1}


def test_moving_a_cpu_tensor_to_the_device_is_one_h2d_and_no_sync(emu: torch.device) -> None:
    latents = torch.ones(2, 3)
    census = _census_of(lambda: latents.to(emu))
    assert (census.counts, census.bytes) == ({"h2d": 1, "d2h": 0, "sync": 0}, {"h2d": 24, "d2h": 0})


def test_moving_a_device_tensor_to_the_device_is_free(emu: torch.device) -> None:
    latents = torch.ones(2, 3, device=emu)
    assert _census_of(lambda: latents.to(emu)).counts == {"h2d": 0, "d2h": 0, "sync": 0}


def test_tensor_from_python_data_on_the_device_is_one_h2d(emu: torch.device) -> None:
    census = _census_of(lambda: torch.tensor([1.0, 2.0], device=emu))
    assert (census.counts, census.bytes) == ({"h2d": 1, "d2h": 0, "sync": 0}, {"h2d": 8, "d2h": 0})


def test_factory_ops_on_the_device_are_free(emu: torch.device) -> None:
    def build() -> None:
        torch.arange(5, device=emu)
        torch.zeros(2, device=emu)
        torch.randn(3, device=emu)
        torch.linspace(0, 1, 4, device=emu)

    assert _census_of(build).counts == {"h2d": 0, "d2h": 0, "sync": 0}


def test_each_copy_to_the_host_is_one_d2h(emu: torch.device) -> None:
    image = torch.ones(2, 2, device=emu, dtype=torch.float16)

    def read_back() -> None:
        image.cpu()
        image.to("cpu")
        image.tolist()
        image.cpu().numpy()

    assert _census_of(read_back).counts == {"h2d": 0, "d2h": 4, "sync": 0}
    assert _census_of(image.cpu).bytes == {"h2d": 0, "d2h": 8}


def test_boolean_mask_read_is_one_sync(emu: torch.device) -> None:
    values = torch.arange(6.0, device=emu)
    mask = values > 2
    assert _census_of(lambda: values[mask]).counts == {"h2d": 0, "d2h": 0, "sync": 1}


def test_boolean_mask_assignment_of_a_python_scalar_is_free(emu: torch.device) -> None:
    values = torch.arange(6.0, device=emu)
    mask = values > 2
    assert _census_of(lambda: values.__setitem__(mask, 0.0)).counts == {"h2d": 0, "d2h": 0, "sync": 0}
    assert values.tolist() == [0.0, 1.0, 2.0, 0.0, 0.0, 0.0]


def test_boolean_mask_assignment_of_a_device_tensor_is_one_sync(emu: torch.device) -> None:
    values = torch.arange(6.0, device=emu)
    mask = values > 2
    replacement = torch.zeros(3, device=emu)
    assert _census_of(lambda: values.__setitem__(mask, replacement)).counts == {"h2d": 0, "d2h": 0, "sync": 1}


def test_data_dependent_shapes_are_syncs(emu: torch.device) -> None:
    values = torch.tensor([3.0, 1.0, 3.0, 0.0]).to(emu)

    def shapes_from_data() -> None:
        values.nonzero()
        torch.where(values > 1)
        values.masked_select(values > 1)
        values.unique()

    assert _census_of(shapes_from_data).counts == {"h2d": 0, "d2h": 0, "sync": 4}


def test_repeat_interleave_syncs_only_without_output_size(emu: torch.device) -> None:
    values = torch.arange(3.0, device=emu)
    repeats = torch.tensor([1, 2, 3]).to(emu)
    # ATen's repeat_interleave_common reads the total, then checks that no repeat is negative.
    assert _census_of(lambda: values.repeat_interleave(repeats)).counts == {"h2d": 0, "d2h": 0, "sync": 2}
    assert _census_of(lambda: values.repeat_interleave(repeats, output_size=6)).counts == {
        "h2d": 0,
        "d2h": 0,
        "sync": 0,
    }
    assert _census_of(lambda: values.repeat_interleave(2)).counts == {"h2d": 0, "d2h": 0, "sync": 0}


def test_a_cpu_index_tensor_is_copied_to_the_device(emu: torch.device) -> None:
    values = torch.arange(6.0, device=emu)
    assert _census_of(lambda: values[torch.tensor([0, 2])]).counts == {"h2d": 1, "d2h": 0, "sync": 0}


def test_the_same_ops_on_cpu_tensors_count_nothing(emu: torch.device) -> None:
    values = torch.arange(6.0)

    def on_cpu() -> None:
        values.sum().item()
        values[values > 2]
        values.nonzero()
        values.tolist()

    assert _census_of(on_cpu).counts == {"h2d": 0, "d2h": 0, "sync": 0}


def _read_the_total(values: torch.Tensor) -> float:
    return values.sum().item()


def test_site_is_the_line_under_a_site_root(emu: torch.device) -> None:
    values = torch.ones(3, device=emu)
    with SyncCensus(site_roots=[HERE]) as census:
        _read_the_total(values)
    line = inspect.getsourcelines(_read_the_total)[1] + 1
    assert census.result().events == [CensusEvent("sync", "aten::_local_scalar_dense", f"test_sync_census.py:{line}")]


def test_site_falls_back_to_the_innermost_frame_outside_torch(emu: torch.device) -> None:
    values = torch.ones(3, device=emu)
    with SyncCensus(site_roots=[HERE / "data"]) as census:
        _read_the_total(values)
    line = inspect.getsourcelines(_read_the_total)[1] + 1
    assert census.result().sites == [SiteCounts(f"{__file__}:{line}", {"sync": 1})]


def test_flow_match_loop_is_counted_at_diffusers_lines(emu: torch.device) -> None:
    scheduler = FlowMatchEulerDiscreteScheduler()
    latents = torch.ones(1, 4, 8, 8, device=emu)
    with SyncCensus(site_roots=[Path(diffusers.__file__).parent]) as census:
        scheduler.set_timesteps(5, device=emu)
        for timestep in scheduler.timesteps:
            latents = scheduler.step(latents * 0.1, timestep, latents, return_dict=False)[0]
    source, first = inspect.getsourcelines(FlowMatchEulerDiscreteScheduler)
    module = "schedulers/scheduling_flow_match_euler_discrete.py"

    def line_of(code: str) -> int:
        return first + next(number for number, text in enumerate(source) if code in text)

    assert census.result().sites == [
        SiteCounts(f"{module}:{line_of('sigmas = torch.from_numpy(sigmas).to(')}", {"h2d": 1}),
        SiteCounts(f"{module}:{line_of('(schedule_timesteps == timestep).nonzero()')}", {"sync": 1}),
        SiteCounts(f"{module}:{line_of('return indices[pos].item()')}", {"sync": 1}),
    ]


def test_result_is_json_ready(emu: torch.device) -> None:
    values = torch.ones(3, device=emu)
    with SyncCensus(site_roots=[HERE]) as census:
        _read_the_total(values)
    line = inspect.getsourcelines(_read_the_total)[1] + 1
    assert json.loads(json.dumps(census.result().to_dict())) == {
        "counts": {"h2d": 0, "d2h": 0, "sync": 1},
        "bytes": {"h2d": 0, "d2h": 0},
        "sites": [{"site": f"test_sync_census.py:{line}", "counts": {"sync": 1}}],
        "events": [
            {
                "kind": "sync",
                "op": "aten::_local_scalar_dense",
                "site": f"test_sync_census.py:{line}",
                "bytes": 0,
                "duration_ms": None,
            }
        ],
        "durations_ms": None,
        "big_syncs": [],
        "sync_debug_warnings": None,
    }


def test_profiler_paths_are_matched_to_a_root_by_its_last_components() -> None:
    roots = [Path("/opt/diffusers/src/diffusers")]
    assert relative_to_roots("diffusers/schedulers/scheduling_ddim.py", roots) == "schedulers/scheduling_ddim.py"
    assert relative_to_roots("/opt/diffusers/src/diffusers/models/unet.py", roots) == "models/unet.py"
    assert relative_to_roots("transformers/models/t5.py", roots) is None
