"""`verify()` on DIF002's fix of the diffusers 0.25 form: `self.sigmas.to("cpu")` with its result thrown away.

The installed 0.42.1's EulerDiscreteScheduler with its `set_timesteps` put back in that form (the
sigmas stay on the device) is what StableDiffusionLatentUpscalePipeline drove before diffusers 0.26:
the pipeline reads `self.scheduler.sigmas[i]` and hands it to `scale_model_input(sigma, t)`. DIF002
assigns the move; the target that drives the scheduler as that pipeline does must lose `step()`'s
per-step sync with bit-identical outputs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.verify import verify
from bot.verify.reporting.report import VerifyReport
from bot.verify.running.zygote import Zygote
from codemods.project.index import installed_diffusers

EULER = "schedulers/scheduling_euler_discrete.py"
KEPT_ON_CPU = '        self.sigmas = sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n'
FORM_0_25 = '        self.sigmas = sigmas\n        self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n'


@pytest.fixture(scope="module")
def euler_0_25_form(tmp_path_factory: pytest.TempPathFactory, scan_cache: Path, zygote: Zygote) -> VerifyReport:
    package = tmp_path_factory.mktemp("euler-0.25-form") / "diffusers"
    shutil.copytree(installed_diffusers(), package, ignore=shutil.ignore_patterns("__pycache__"))
    scheduler = package / EULER
    text = scheduler.read_text()
    assert text.count(KEPT_ON_CPU) == 1
    scheduler.write_text(text.replace(KEPT_ON_CPU, FORM_0_25))
    return verify(
        package,
        select=("DIF002",),
        paths=(scheduler,),
        own_tests=False,
        repo_checks=False,
        cache_dir=scan_cache,
        zygote=zygote,
    )


@pytest.mark.parametrize("name", ["EulerDiscreteScheduler", "EulerDiscreteScheduler as latent upscale drives it"])
def test_the_per_step_sync_goes_away_with_bit_identical_outputs(euler_0_25_form: VerifyReport, name: str) -> None:
    result = next(t for t in euler_0_25_form.targets if t.target == name)
    assert (result.verdict, result.rules, result.unit) == ("verified", ["DIF002"], "step")
    # `s_tmin <= sigma <= s_tmax` read a device sigma twice a step.
    assert result.before["sync"] - result.after["sync"] == 2.0
    assert result.after["h2d"] == result.before["h2d"]
    assert (result.parity["exact"], result.parity["max_abs_diff"]) == (True, 0.0)
