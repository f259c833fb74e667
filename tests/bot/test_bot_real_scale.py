"""On a GPU runner the bot asks the verifier for the real-scale table, so the PR body carries milliseconds."""

from __future__ import annotations

from pathlib import Path

from bot_harness import FakeReport, FakeTarget

from bot.groups import FixGroup
from bot.verification import verify_group


def _options_asked(tmp_path: Path, device: str) -> dict[str, object]:
    group = FixGroup("DIF004", ("models/ops",), {"src/diffusers/ops.py": ("a = 1\n", "a = 2\n")}, ())
    report = FakeReport([FakeTarget("Ops", ["DIF004"], ["ops.py:1"], "verified")], ["ops.py"], own_tests=None)
    asked: dict[str, object] = {}

    def verifier(src: Path, **options: object) -> FakeReport:
        asked.update(options)
        return report

    verify_group(verifier, tmp_path, group, device=device, work_dir=tmp_path, compile=False, reproduce="")
    return asked


def test_on_a_gpu_runner_the_verifier_is_asked_for_the_real_scale_table(tmp_path: Path) -> None:
    assert _options_asked(tmp_path, "cuda")["scale"] == "real"


def test_off_cuda_the_verifier_keeps_its_default_scale(tmp_path: Path) -> None:
    assert "scale" not in _options_asked(tmp_path, "emu")
