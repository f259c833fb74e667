"""A real-scale run cut short keeps what finished: each side is reported as it ends, and a cut side says so.

The workers are replaced by canned results (`run_tree` is the only thing that starts one), so these
tests run no model; the table and gpu_scale's Markdown are rendered from what the run handed out.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import gpu_scale
from bot.verify.planning.changes import ChangeSet, Rewrite
from bot.verify.real_scale import run
from bot.verify.real_scale.table import real_scale_lines
from bot.verify.running.protocol import WorkerRequest
from codemods.engine.entry import Mode, RunResult

QWEN = "models/transformers/transformer_qwenimage.py"
EAGER = {
    "mode": "eager",
    "how": "eager",
    "unit": "step",
    "units": 2,
    "runs": 3,
    "cold_ms": 1100.0,
    "wall_ms_per_unit": 25.2,
    "cuda_ms_per_unit": 25.1,
    "peak_memory_mib": 3080,
    "big_syncs": [],
    "big_sync_ms": 50.0,
    "host_wait_ms_per_unit": 0.1,
    "largest_host_waits": [],
}


def _changes(tmp_path: Path) -> ChangeSet:
    rewrite = Rewrite(QWEN, 236, 236, ("DIF001",), "QwenEmbedRope", "f", frozenset({236}), False)
    return ChangeSet(tmp_path / "a", tmp_path / "b", [rewrite], RunResult(Mode.WRITE, [], 1))


TIMED_OUT = "timed out while running this target: real scale: QwenImagePipeline: done in 20 s"


def _rewritten_side_times_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Workers whose original side measures the case and whose rewritten side times out; the packages asked for."""
    asked: list[str] = []

    def fake_run_tree(request: WorkerRequest, timeout_s: float, python: Path | None) -> list[dict[str, Any]]:
        tree = Path(request.package).name
        asked.append(tree)
        if tree == "b":
            time.sleep(0.2)  # the original side finishes first, as when the lock let it measure first
            return [{"target": request.targets[0], "ok": False, "error": TIMED_OUT}]
        return [{"target": request.targets[0], "ok": True, "device": "NVIDIA H200", "modes": [EAGER]}]

    monkeypatch.setattr(run, "run_tree", fake_run_tree)
    return asked


def _qwen(tmp_path: Path, progress: Any = lambda section: None, deadline: float | None = None) -> dict[str, Any]:
    return run.run_real_scale(
        _changes(tmp_path),
        ["QwenImagePipeline"],
        "cuda",
        tmp_path,
        deadline=deadline,
        progress=progress,
        caps={"QwenImagePipeline": 60.0},
    )


def test_a_case_that_no_longer_fits_the_deadline_is_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _rewritten_side_times_out(monkeypatch)
    section = _qwen(tmp_path, deadline=time.monotonic() + 59.0)
    cut = "not run: cut by time"
    assert (asked, section["cases"][0]["errors"]) == ([], {"before": cut, "after": cut})


def test_a_case_whose_rewritten_side_failed_keeps_the_original_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rewritten_side_times_out(monkeypatch)
    lines = real_scale_lines(_qwen(tmp_path))
    assert [line for line in lines if line.startswith("| `")] == [
        (
            "| `QwenImagePipeline` (DIF001) | eager | step (of 2) | 25.2 → – | 25.1 → – | 0.1 → – | 0, 0.0 ms → – "
            "| 3080 → – | 1.1 → – |"
        )
    ]


def test_a_case_whose_rewritten_side_failed_says_original_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _rewritten_side_times_out(monkeypatch)
    lines = real_scale_lines(_qwen(tmp_path))
    assert f"- `QwenImagePipeline`: original only, rewritten {TIMED_OUT}" in lines


def test_progress_hands_out_the_section_at_the_start_and_after_every_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rewritten_side_times_out(monkeypatch)
    seen: list[tuple[list[str], list[str]]] = []

    def progress(section: dict[str, Any]) -> None:
        seen.append(([c["case"] for c in section["cases"]], section.get("pending", [])))

    run.run_real_scale(_changes(tmp_path), ["QwenImagePipeline", "SanaPipeline"], "cuda", tmp_path, progress=progress)
    assert seen == [
        ([], ["QwenImagePipeline", "SanaPipeline"]),
        (["QwenImagePipeline"], ["SanaPipeline"]),
        (["QwenImagePipeline"], ["SanaPipeline"]),
        (["QwenImagePipeline", "SanaPipeline"], []),
        (["QwenImagePipeline", "SanaPipeline"], []),
    ]


def test_gpu_scale_writes_the_finished_side_while_the_other_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rewritten_side_times_out(monkeypatch)
    written: list[tuple[bool, bool]] = []

    def progress(section: dict[str, Any]) -> None:
        record = {"command": "python -m benchmarks.gpu_scale", "groups": []}
        gpu_scale.keep_group(record, gpu_scale.GROUPS[0], time.monotonic(), tmp_path, time.monotonic(), section)
        markdown = (tmp_path / "gpu-evidence.md").read_text()
        running = json.loads((tmp_path / "gpu-scale.json").read_text())["groups"][0]["running"]
        written.append(
            ("| 25.2 → – |" in markdown, "Still running when this file was last written" in markdown and running)
        )

    _qwen(tmp_path, progress)
    assert written[1] == (True, True)


def test_a_case_cut_before_it_started_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _rewritten_side_times_out(monkeypatch)
    lines = real_scale_lines(_qwen(tmp_path, deadline=time.monotonic() + 59.0))
    assert [line for line in lines if line.endswith("cut by time")] == ["- `QwenImagePipeline`: not run: cut by time"]
