"""The Kandinsky 5 pipeline targets verify DIF004 on the installed 0.42.1 without torchvision.

diffusers' own Kandinsky 5 tests need a Qwen2VLProcessor (torchvision); the built-in targets run each
pipeline's `__call__` from precomputed prompt embeddings instead: 2 steps with guidance, so both
transformer calls of a step build a Transformer2DModelOutput before the rewrite and none after.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.verify import verify
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.zygote import Zygote
from codemods.project.index import installed_diffusers

KANDINSKY5 = installed_diffusers() / "pipelines" / "kandinsky5"
MODULES = (
    "pipeline_kandinsky.py",
    "pipeline_kandinsky_i2i.py",
    "pipeline_kandinsky_i2v.py",
    "pipeline_kandinsky_t2i.py",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    paths = tuple(KANDINSKY5 / module for module in MODULES)
    work_dir = tmp_path_factory.mktemp("k5")
    return verify(
        installed_diffusers(), select=("DIF004",), paths=paths, work_dir=work_dir, cache_dir=scan_cache, zygote=zygote
    )


@pytest.mark.parametrize(
    ("pipeline_class", "outputs_before", "outputs_after"),
    [
        # Per step: 2 transformer outputs, and half of the call's 2 VAE decode outputs (the pipeline's
        # `.sample` and the VAE's own inner one, which stays: it is outside the selected files).
        ("Kandinsky5T2VPipeline", 3.0, 0.5),
        ("Kandinsky5T2IPipeline", 3.0, 0.5),
        # The image-conditioned ones also encode their image once a call: its output holds the
        # `latent_dist` they sample, so it stays.
        ("Kandinsky5I2VPipeline", 3.5, 1.0),
        ("Kandinsky5I2IPipeline", 3.5, 1.0),
    ],
)
def test_dif004_drops_the_transformer_and_decode_outputs_with_bit_identical_results(
    report: VerifyReport, pipeline_class: str, outputs_before: float, outputs_after: float
) -> None:
    result = next(t for t in report.targets if t.target == pipeline_class)
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF004"], "step")
    assert len(result.rewrites) == 3  # the two transformer calls of a step and the decode
    assert (result.before["outputs"], result.after["outputs"]) == (outputs_before, outputs_after)
    assert (result.before["sync"], result.before["h2d"]) == (result.after["sync"], result.after["h2d"])
    assert (result.parity["exact"], result.parity["max_abs_diff"]) == (True, 0.0)


def test_every_kandinsky5_rewrite_is_credited(report: VerifyReport) -> None:
    assert report.changed_files == [f"pipelines/kandinsky5/{module}" for module in MODULES]
    assert [(t.target, t.verdict) for t in report.targets if t.verdict != "verified"] == []
    assert report.exit_code() == 0


def test_the_t2v_target_builds_no_text_encoder() -> None:
    import torch

    from bot.verify.targets import get_target

    workload = get_target("Kandinsky5T2VPipeline").build(torch.device("cpu"))
    modules = sorted(type(component).__name__ for component in workload.components)
    assert modules == ["AutoencoderKLHunyuanVideo", "Kandinsky5Transformer3DModel"]


def test_a_checkout_keeps_its_kandinsky5_test_targets_beside_the_built_in_ones() -> None:
    from bot.verify.targets import all_targets
    from bot.verify.targets.from_tests import replaced_by

    replaced = replaced_by(all_targets())
    assert "StableDiffusionPipeline" in replaced
    assert not {f"Kandinsky5{kind}Pipeline" for kind in ("T2V", "I2V", "T2I", "I2I")} & replaced
