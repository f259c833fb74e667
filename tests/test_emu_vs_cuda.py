"""benchmarks/emu_vs_cuda.py: the emulated device against CUDA, target by target.

The first H200 run's reports live in the shared folder beside the clone
(`../shared/gpu-runs/2026-12-04-h200/`, or `$CODEMOD_SHARED_DIR/gpu-runs/...`); the tests on them
skip where it is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.emu_vs_cuda import comparison, main

PROJECT = Path(__file__).resolve().parent.parent
H200_RUN = Path(os.environ.get("CODEMOD_SHARED_DIR", PROJECT.parent / "shared")) / "gpu-runs" / "2026-12-04-h200"
needs_h200_run = pytest.mark.skipif(not H200_RUN.is_dir(), reason=f"the H200 run's reports are not at {H200_RUN}")

DIF002_FAILED_ON_CUDA = """\
FlowMatchHeunDiscreteScheduler
  verdict: emu verified, cuda failed (outputs differ (max abs diff 2.38e-07): differs in output)"""


def _report(**verdicts: str) -> dict[str, Any]:
    counts = {"h2d": 1.0, "d2h": 0.0, "sync": 2.0, "outputs": 0.0}
    return {
        "targets": [
            {"target": name, "verdict": verdict, "error": None, "unit": "step", "before": counts, "after": counts}
            for name, verdict in verdicts.items()
        ]
    }


@needs_h200_run
def test_the_h200_run_of_0_42_1_differs_from_the_emulator_only_in_dif002s_verdict(capsys: Any) -> None:
    name = "release-0.42.1-whole-tree"
    assert main(["compare", str(H200_RUN / f"{name}.emu.json"), str(H200_RUN / f"{name}.cuda.json")]) == 1
    assert capsys.readouterr().out == (
        f"{DIF002_FAILED_ON_CUDA}\n187 targets in both reports (24 with a verdict on both), 186 identical, 1 differ,"
        " 1 verdict difference(s); only on emu: 0, only on cuda: 0\n"
    )


@needs_h200_run
def test_the_h200_run_of_main_adds_three_absolute_h2d_differences_that_change_nothing(capsys: Any) -> None:
    name = "main-58eb52c080-sync-rules"
    assert main(["compare", str(H200_RUN / f"{name}.emu.json"), str(H200_RUN / f"{name}.cuda.json")]) == 1
    tests = "tests/pipelines"
    assert capsys.readouterr().out.splitlines()[:10] == [
        *DIF002_FAILED_ON_CUDA.splitlines(),
        f"{tests}/cogview4/test_cogview4.py::CogView4PipelineFastTests",
        "  h2d per step: emu 23.5 -> 23.5, cuda 19.5 -> 19.5 (same change)",
        f"{tests}/hunyuan_video/test_hunyuan_video.py::HunyuanVideoPipelineFastTests",
        "  h2d per step: emu 5 -> 5, cuda 3 -> 3 (same change)",
        f"{tests}/lumina2/test_pipeline_lumina2.py::Lumina2PipelineFastTests",
        "  h2d per step: emu 15 -> 15, cuda 11 -> 11 (same change)",
        # torch.equal in _get_gemma_prompt_embeds: the emulator of that run did not count it (issue 21, item 2).
        "  sync per step: emu 1 -> 0, cuda 3 -> 2 (same change)",
        f"{tests}/kandinsky5/test_kandinsky5.py::Kandinsky5T2VPipelineFastTests",
    ]


def test_reports_that_agree_print_only_the_summary_and_exit_0() -> None:
    report = _report(UNet2DModel="verified", DDIMScheduler="no-gain")
    assert comparison(report, report) == (
        "2 targets in both reports (2 with a verdict on both), 2 identical, 0 differ, 0 verdict difference(s);"
        " only on emu: 0, only on cuda: 0",
        0,
    )


def test_two_report_files_with_a_verdict_apart_exit_1(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "emu.json").write_text(json.dumps(_report(DDIMScheduler="verified")))
    (tmp_path / "cuda.json").write_text(json.dumps(_report(DDIMScheduler="no-gain")))
    assert main(["compare", str(tmp_path / "emu.json"), str(tmp_path / "cuda.json")]) == 1
    assert capsys.readouterr().out.splitlines()[:2] == ["DDIMScheduler", "  verdict: emu verified, cuda no-gain"]


def test_an_unreadable_report_is_one_line_and_exit_2(tmp_path: Path, capsys: Any) -> None:
    assert main(["compare", str(tmp_path / "missing.json"), str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.startswith("emu_vs_cuda: cannot read a report: [Errno 2]")
