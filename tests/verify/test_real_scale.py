"""The real-scale run's machinery on the CPU, at a reduced size: builds, the loop runner, pairing, the table.

No timing is asserted: on the CPU the numbers mean nothing, and the report says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bot.verify.planning.changes import ChangeSet, Rewrite
from bot.verify.real_scale.builders import released_model
from bot.verify.real_scale.cases import KANDINSKY5_T2V, cases_for
from bot.verify.real_scale.measure import host_waits, measure_case
from bot.verify.real_scale.run import not_measured, pair, real_scale_section
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.real_scale.table import real_scale_lines
from bot.verify.reporting.report import VerifyReport
from codemods.engine.entry import Mode, RunResult
from codemods.project.index import installed_diffusers

PROJECT = Path(__file__).resolve().parents[2]
REDUCED = Scale(blocks=1, pixels=64, frames=1, text_tokens=8, steps=2, repeats=1)
SANA = "pipelines/sana/pipeline_sana.py"


def test_a_model_is_built_at_released_width_with_its_blocks_capped() -> None:
    model, blocks = released_model(
        "Kandinsky5Transformer3DModel", KANDINSKY5_T2V, {"num_visual_blocks": 32}, Scale(blocks=2), "meta"
    )
    assert (model.config.model_dim, len(model.visual_transformer_blocks), blocks) == (
        2048,
        2,
        "num_visual_blocks 2 of 32",
    )


def test_built_parameters_are_on_the_device_in_bf16_but_the_modules_kept_in_float32() -> None:
    model, _ = released_model(
        "Kandinsky5Transformer3DModel", KANDINSKY5_T2V, {"num_visual_blocks": 32}, REDUCED, "meta"
    )
    dtypes = {name.split(".")[0]: p.dtype for name, p in model.named_parameters()}
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert (dtypes["time_embeddings"], dtypes["visual_transformer_blocks"]) == (torch.float32, torch.bfloat16)


def test_plain_tensor_attributes_stay_on_the_host_as_in_a_loaded_model() -> None:
    # Kandinsky5TimeEmbeddings.freqs is no buffer: `.to(device)` leaves it where __init__ made it,
    # which is what DIF001's cached copy is about.
    model, _ = released_model(
        "Kandinsky5Transformer3DModel", KANDINSKY5_T2V, {"num_visual_blocks": 32}, REDUCED, "meta"
    )
    assert model.time_embeddings.freqs.device.type == "cpu"


def test_the_loop_runner_drives_the_pipelines_own_loop_from_precomputed_embeddings() -> None:
    package = installed_diffusers()
    source = (package / SANA).read_text(encoding="utf-8").splitlines()
    step_line = next(n for n, line in enumerate(source, 1) if "latents = self.scheduler.step(" in line)
    result = measure_case("SanaPipeline", REDUCED, torch.device("cpu"), [package], [str(package / SANA)], Path(), 0)
    eager = result["modes"][0]
    assert (eager["mode"], eager["unit"], eager["units"], step_line in result["lines"][SANA]) == (
        "eager",
        "step",
        2,
        True,
    )


def test_a_cpu_run_reports_no_cuda_figures() -> None:
    result = measure_case(
        "NucleusMoEImageTransformer2DModel", REDUCED, torch.device("cpu"), [installed_diffusers()], [], Path(), 0
    )
    eager = result["modes"][0]
    assert (eager["cuda_ms_per_unit"], eager["peak_memory_mib"], "big_syncs" in eager) == (None, None, False)


def test_a_case_reports_the_seconds_of_each_phase() -> None:
    result = measure_case(
        "NucleusMoEImageTransformer2DModel", REDUCED, torch.device("cpu"), [installed_diffusers()], [], Path(), 0
    )
    assert list(result["modes"][0]["seconds"]) == ["build", "cold run", "timed runs"]


def test_a_profiled_run_gives_its_big_syncs_every_host_wait_and_the_counts_per_step() -> None:
    trace = json.loads((Path(__file__).parent / "data" / "cuda_trace.json").read_text())
    roots = [Path("/opt/diffusers/src/diffusers")]
    waits = host_waits(trace, roots, units=2)
    euler, flux = "schedulers/scheduling_flow_match_euler_discrete.py:360", "pipelines/flux/pipeline_flux.py"
    assert waits == {
        "big_syncs": [
            {"op": "aten::item", "site": euler, "ms": 75.0},
            {"op": "aten::to", "site": f"{flux}:640", "ms": 89.0},
        ],
        "big_sync_ms": 50.0,
        "host_wait_ms_per_unit": 83.209,
        "gpu_busy_ms_per_unit": 0.054,
        "largest_host_waits": [
            {"op": "aten::to", "site": f"{flux}:640", "ms": 89.0},
            {"op": "aten::item", "site": euler, "ms": 75.0},
            {"op": "cudaDeviceSynchronize", "site": "run_pipeline.py:8", "ms": 2.0},
            {"op": "aten::to", "site": f"{flux}:560", "ms": 0.37},
            {"op": "aten::nonzero", "site": euler, "ms": 0.03},
        ],
        "counts_per_unit": {"h2d": 0.5, "d2h": 0.5, "sync": 1.5},
    }


def test_case_runs_name_their_block_cap_and_compile_modes() -> None:
    run = CaseRun.parse("QwenImagePipeline@blocks=60,compile=default")
    assert (run, run.scale(REDUCED).blocks) == (CaseRun("QwenImagePipeline", 60, ("default",)), 60)


def test_an_unknown_case_run_option_is_refused_with_the_options_there_are() -> None:
    with pytest.raises(ValueError, match=r"QwenImagePipeline@fast=1: unknown option 'fast=1' \(use blocks=N"):
        CaseRun.parse("QwenImagePipeline@fast=1")


def test_cases_are_chosen_by_the_files_that_changed() -> None:
    assert [case.name for case in cases_for({SANA, "models/unets/unet_2d.py"})] == ["SanaPipeline"]


def test_off_cuda_the_section_says_not_measured_and_why() -> None:
    changes = ChangeSet(Path("a"), Path("b"), [], RunResult(Mode.WRITE, [], 0))
    section = real_scale_section(changes, "emu", Path(), None, print)
    assert real_scale_lines(section) == [
        "#### At real scale",
        "",
        (
            "Not measured at real scale: --device emu runs nothing at real size (timings there would not be a "
            "GPU's); the real-scale run needs --device cuda."
        ),
    ]


def test_the_verify_markdown_carries_the_real_scale_section() -> None:
    report = VerifyReport("src/diffusers", "cpu", None, {}, [], [], real_scale=not_measured("no GPU here"))
    assert "#### At real scale\n\nNot measured at real scale: no GPU here.\n" in report.to_markdown("codemod verify")


def _side(wall: float, big: list[dict[str, object]]) -> dict[str, object]:
    waits = big or [{"op": "cudaStreamSynchronize", "site": "models/x.py:9", "ms": 1.5}]
    return {
        "mode": "eager",
        "how": "eager",
        "unit": "step",
        "units": 2,
        "runs": 3,
        "cold_ms": 900.0,
        "wall_ms_per_unit": wall,
        "cuda_ms_per_unit": wall - 1,
        "peak_memory_mib": 40960,
        "big_syncs": big,
        "big_sync_ms": 50.0,
        "host_wait_ms_per_unit": sum(float(s["ms"]) for s in waits) / 2,
        "gpu_busy_ms_per_unit": wall / 4,
        "largest_host_waits": waits,
    }


def _paired() -> dict[str, object]:
    rewrite = Rewrite(
        "models/transformers/transformer_qwenimage.py",
        236,
        236,
        ("DIF001",),
        "QwenEmbedRope",
        "f",
        frozenset({236}),
        False,
    )
    changes = ChangeSet(Path("a"), Path("b"), [rewrite], RunResult(Mode.WRITE, [], 1))
    big = [{"op": "aten::to", "site": "models/transformers/transformer_qwenimage.py:236", "ms": 76.0}] * 3
    described = {"blocks": "num_layers 60 of 60", "input": "1024x1024"}
    before = {"ok": True, "device": "NVIDIA H200", "described": described, "modes": [_side(500.0, big)]}
    after = {"ok": True, "device": "NVIDIA H200", "described": described, "modes": [_side(386.0, [])]}
    after["lines"] = {"models/transformers/transformer_qwenimage.py": [236]}
    return pair("QwenImagePipeline@blocks=60", before, after, changes)


def test_pairing_scales_the_saving_per_step_to_a_whole_generation() -> None:
    generation = _paired()["modes"][0]["generation"]
    assert generation == {"units": 50, "saved_ms": {"wall": 5700.0, "cuda": 5700.0, "host_wait": 5662.5}}


def test_the_table_renders_the_seed_columns_before_and_after() -> None:
    section = {"measured": True, "device": "cuda", "scale": {"blocks": 4}, "cases": [_paired()]}
    lines = real_scale_lines(section)
    assert lines[4] == (
        "| `QwenImagePipeline@blocks=60` (DIF001) | eager | step (of 2) | 500.0 → 386.0 | 499.0 → 385.0 "
        "| 114.0 → 0.8 | 3, 228.0 ms → 0, 0.0 ms | 40960 → 40960 | 0.9 → 0.9 |"
    )


def test_the_table_turns_the_saving_into_a_generations_seconds() -> None:
    section = {"measured": True, "device": "cuda", "scale": {"blocks": 4}, "cases": [_paired()]}
    assert (
        "- `QwenImagePipeline@blocks=60`, eager: 50 steps (the pipeline's default): 50 steps × 114.00 ms = "
        "**5.70 s** wall clock (5.70 s on the GPU's clock); host blocked in syncs 5.66 s less"
    ) in real_scale_lines(section)


def test_a_side_without_big_syncs_lists_its_largest_host_waits() -> None:
    section = {"measured": True, "device": "cuda", "scale": {"blocks": 4}, "cases": [_paired()]}
    assert (
        "- `QwenImagePipeline@blocks=60` eager, after: none over 50 ms; largest host waits: "
        "1.5 ms in `cudaStreamSynchronize` at `models/x.py:9`; the GPU was busy 96.5 of 386.0 ms per step (25%)"
    ) in real_scale_lines(section)


def test_gpu_scale_sh_stops_with_exit_2_on_a_machine_without_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    environment = {**os.environ, "PYTHON": sys.executable, "OUT": ""}
    done = subprocess.run(
        [str(PROJECT / "benchmarks" / "gpu_scale.sh")], env=environment, capture_output=True, text=True, check=False
    )
    assert (done.returncode, "gpu_scale: no CUDA device" in done.stderr) == (2, True)


def test_both_trees_run_the_case_in_their_own_workers_and_the_rewrites_ran(tmp_path: Path, scan_cache: Path) -> None:
    from bot.verify.planning.changes import rewrite_copy
    from bot.verify.real_scale.run import run_real_scale

    nucleus = "models/transformers/transformer_nucleusmoe_image.py"
    src = installed_diffusers()
    changes = rewrite_copy(src, tmp_path / "trees", select=("DIF001",), paths=(src / nucleus,), cache_dir=scan_cache)
    section = run_real_scale(changes, ["NucleusMoEImageTransformer2DModel"], "cpu", tmp_path / "runs", REDUCED)
    case = section["cases"][0]
    assert (section["measured"], case["errors"], case["rewrites_run"] == case["rewrites"][1:]) == (False, {}, True)
    assert [(m["mode"], m["before"]["units"], m["after"]["units"]) for m in case["modes"]] == [("eager", 4, 4)]
