"""`verify()` end to end on real diffusers trees: the original and the rewritten copy, side by side.

QwenImage before diffusers #13406 (fixture case DIF001/qwenimage_rope_pr13406: installed 0.42.1 with
that PR's hunks reverted) copied its RoPE table to the device on every forward; our DIF001 rewrite
must take that copy away with bit-identical outputs. The installed 0.42.1 still has the pattern in NucleusMoE
(see test_cli_verify.py), and a scheduler lookup on the first step that DIF005 removes; Lumina2 copies
its per-axis RoPE tables (a list) every forward until DIF001 caches them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.verify import verify
from bot.verify.reporting.report import TargetResult, VerifyReport
from bot.verify.running.zygote import Zygote
from codemods.project.index import installed_diffusers
from codemods.rules import all_rules
from tools.fixture_cases import find_case

QWEN = "models/transformers/transformer_qwenimage.py"
LUMINA2 = "models/transformers/transformer_lumina2.py"
QWEN_BEFORE_13406 = find_case("DIF001/qwenimage_rope_pr13406").input_files()[f"diffusers/{QWEN}"]


def _copy_installed(destination: Path) -> Path:
    package = destination / "diffusers"
    shutil.copytree(installed_diffusers(), package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _target(report: VerifyReport, name: str) -> TargetResult:
    return next(t for t in report.targets if t.target == name)


@pytest.fixture(scope="module")
def dif001(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    """QwenImage as before #13406 and Lumina2 as installed, verified together: one rewrite, one worker per tree."""
    package = _copy_installed(tmp_path_factory.mktemp("qwen-before-13406"))
    (package / QWEN).write_text(QWEN_BEFORE_13406)
    return verify(
        package, select=("DIF001",), paths=(package / QWEN, package / LUMINA2), cache_dir=scan_cache, zygote=zygote
    )


def test_qwenimage_rope_copy_per_forward_goes_away_with_bit_identical_outputs(dif001: VerifyReport) -> None:
    result = _target(dif001, "QwenImageTransformer2DModel")
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF001"], "forward")
    assert result.before["h2d"] >= 1
    assert result.after["h2d"] == result.before["h2d"] - 1
    # The one copy that went away is QwenEmbedRope's `self.pos_freqs.to(device)`; nothing new appeared.
    assert result.site_changes == [
        {"site": f"{QWEN}:287", "after_site": None, "before": {"h2d": 1}, "after": {}},
    ]
    assert (result.parity["exact"], result.parity["max_abs_diff"], result.parity["tolerance"]) == (True, 0.0, 0.0)


def test_qwenimage_layered_rope_is_verified_too(dif001: VerifyReport) -> None:
    result = _target(dif001, "QwenImageTransformer2DModel[layer3d_rope]")
    assert result.verdict == "verified"
    assert [change["before"] for change in result.site_changes] == [{"h2d": 1}]
    assert result.parity["exact"]


def test_every_qwenimage_and_lumina2_rewrite_is_credited_to_a_target(dif001: VerifyReport) -> None:
    assert dif001.changed_files == [LUMINA2, QWEN]
    assert [t.verdict for t in dif001.targets if t.verdict != "verified"] == []
    assert dif001.exit_code() == 0


STABLE_DIFFUSION = {
    "pipeline_stable_diffusion.py": "StableDiffusionPipeline",
    "pipeline_stable_diffusion_upscale.py": "StableDiffusionUpscalePipeline",
}


@pytest.fixture(scope="module")
def dif005(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    """Both Stable Diffusion pipelines verified together: one rewrite, one worker per tree runs both targets."""
    pipelines = tuple(installed_diffusers() / "pipelines" / "stable_diffusion" / module for module in STABLE_DIFFUSION)
    work_dir = tmp_path_factory.mktemp("dif005")
    return verify(
        installed_diffusers(),
        select=("DIF005",),
        paths=pipelines,
        work_dir=work_dir,
        cache_dir=scan_cache,
        zygote=zygote,
    )


@pytest.mark.parametrize("pipeline_class", list(STABLE_DIFFUSION.values()))
def test_dif005_removes_the_first_step_index_lookup_in_stable_diffusion(
    dif005: VerifyReport, pipeline_class: str
) -> None:
    result = _target(dif005, pipeline_class)
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF005"], "step")
    # nonzero() and item() in index_for_timestep, once per call of 3 steps.
    assert (result.before["sync"], result.after["sync"]) == (round(2 / 3, 4), 0.0)
    assert result.parity["exact"]


@pytest.mark.skipif("DIF002" not in {rule.code for rule in all_rules()}, reason="DIF002 is not in codemods/rules yet")
def test_dif002_keeps_a_scheduler_step_free_of_copies_and_syncs(scan_cache: Path, zygote: Zygote) -> None:
    schedulers = (installed_diffusers() / "schedulers",)
    report = verify(installed_diffusers(), select=("DIF002",), paths=schedulers, cache_dir=scan_cache, zygote=zygote)
    if not report.changed_files:
        pytest.skip(f"DIF002 rewrites no scheduler of diffusers 0.42.1 yet (engine errors: {report.errors})")
    schedulers = [t for t in report.targets if t.kind == "scheduler"]
    assert schedulers, f"no scheduler target runs what DIF002 rewrote: {report.changed_files}"
    for result in schedulers:
        assert result.verdict == "verified", (result.target, result.error, result.notes)
        assert sum(result.after[k] for k in ("h2d", "d2h", "sync")) < sum(
            result.before[k] for k in ("h2d", "d2h", "sync")
        )
        assert result.parity["exact"]


OUTSIDE_PIPELINES_AND_MODELS = ("experimental/rl/value_guided_sampling.py", "training_utils.py")


@pytest.fixture(scope="module")
def dif004(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    """The RL pipeline and the training helper verified together: one rewrite, one worker per tree."""
    paths = tuple(installed_diffusers() / module for module in OUTSIDE_PIPELINES_AND_MODELS)
    work_dir = tmp_path_factory.mktemp("dif004")
    return verify(
        installed_diffusers(), select=("DIF004",), paths=paths, work_dir=work_dir, cache_dir=scan_cache, zygote=zygote
    )


@pytest.mark.parametrize(
    ("name", "unit", "outputs_before", "rewrites"),
    [
        # Per step: the value function's and the UNet's output objects, and the scheduler's.
        ("ValueGuidedRLPipeline", "step", 3.0, 3),
        # A training helper: its one UNet prediction, found by the function's name.
        ("compute_dream_and_update_latents", "forward", 1.0, 1),
    ],
)
def test_dif004_removes_the_output_objects_outside_pipelines_and_models(
    dif004: VerifyReport, name: str, unit: str, outputs_before: float, rewrites: int
) -> None:
    result = _target(dif004, name)
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF004"], unit)
    assert (result.before["outputs"], result.after["outputs"]) == (outputs_before, 0.0)
    assert len(result.rewrites) == rewrites
    assert result.parity["exact"]


def test_dif007_reads_the_query_length_instead_of_the_max_of_its_filled_tensor(
    tmp_path: Path, scan_cache: Path, zygote: Zygote
) -> None:
    # 0.42.1 with the varlen helper as main (58eb52c080) still has it: the max of the filled query lengths.
    package = _copy_installed(tmp_path / "tree")
    dispatch = package / "models/attention_dispatch.py"
    fixed_by_hand = "    return (seqlens_q, seqlens_k), (cu_seqlens_q, cu_seqlens_k), (seq_len_q, max_seqlen_k)\n"
    as_on_main = (
        "    max_seqlen_q = seqlens_q.max().item()\n"
        "    return (seqlens_q, seqlens_k), (cu_seqlens_q, cu_seqlens_k), (max_seqlen_q, max_seqlen_k)\n"
    )
    assert dispatch.read_text().count(fixed_by_hand) == 1
    dispatch.write_text(dispatch.read_text().replace(fixed_by_hand, as_on_main))
    report = verify(
        package, select=("DIF007",), paths=(dispatch,), work_dir=tmp_path / "work", cache_dir=scan_cache, zygote=zygote
    )
    result = _target(report, "prepare_for_flash_attn_or_sage_varlen_with_mask")
    assert (result.verdict, result.unit, len(result.rewrites)) == ("verified", "forward", 1)
    assert (result.before["sync"], result.after["sync"]) == (2.0, 1.0)
    assert result.parity["exact"]


def test_lumina2s_rope_tables_are_copied_once_per_device_not_every_forward(dif001: VerifyReport) -> None:
    # 0.42.1 as installed (main, 58eb52c080, has the same Lumina2RotaryPosEmbed): three tables, one per axis.
    result = _target(dif001, "Lumina2Transformer2DModel")
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF001"], "forward")
    assert (result.before["h2d"], result.after["h2d"]) == (3.0, 0.0)
    assert (result.before["sync"], result.after["sync"]) == (0.0, 0.0)
    site = f"{LUMINA2}:258"
    assert result.site_changes == [{"site": site, "after_site": None, "before": {"h2d": 3}, "after": {}}]
    assert (result.parity["exact"], result.parity["max_abs_diff"]) == (True, 0.0)
