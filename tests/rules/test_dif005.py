"""DIF005 on installed diffusers 0.42.1: the begin index is set before the loop, and nothing else changes.

The diff test runs DIF005 alone on a copy of the Stable Diffusion pipeline: the only change is the
inserted, guarded call before the progress-bar loop. The review cases (issue 11 §2-4, issue 13)
run DIF005 and DIF007 once over copies of the real pipelines they name, taken from the installed
package at test time, and check each verdict: what a maintainer would merge is inserted, what
would change results is reported only, and what saves nothing is not proposed. The run test builds a tiny Stable Diffusion
pipeline (UNet, VAE, Euler, prompt embeddings given: no text encoder, no download) in the original and
in the rewritten tree (`diffusers_trees`, every rule applied), each in its own interpreter, and
compares the images exactly.
"""

from __future__ import annotations

import difflib
import json
import shutil
import textwrap
from pathlib import Path

import pytest
import torch
from installed_trees import DiffusersTrees, run_python_in_tree

from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.project.index import installed_diffusers
from tools.releases import release_tree

PIPELINE = "pipelines/stable_diffusion/pipeline_stable_diffusion.py"
INSERTED = [
    "        # We set the index here to remove DtoH sync, helpful especially during compilation.",
    "        # Check out more details here: https://github.com/huggingface/diffusers/pull/11696",
    '        if hasattr(self.scheduler, "set_begin_index"):',
    "            self.scheduler.set_begin_index(0)",
]

GENERATE = """
import json, torch
import diffusers
from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionPipeline, UNet2DConditionModel

assert diffusers.__file__.startswith({tree!r}), diffusers.__file__
torch.manual_seed(0)
unet = UNet2DConditionModel(
    sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
    down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    cross_attention_dim=16, attention_head_dim=2, norm_num_groups=4,
)
vae = AutoencoderKL(
    in_channels=3, out_channels=3, block_out_channels=(8,), down_block_types=("DownEncoderBlock2D",),
    up_block_types=("UpDecoderBlock2D",), latent_channels=4, norm_num_groups=4, sample_size=8,
)
pipe = StableDiffusionPipeline(
    vae=vae, text_encoder=None, tokenizer=None, unet=unet, scheduler=EulerDiscreteScheduler(steps_offset=1),
    safety_checker=None, feature_extractor=None, requires_safety_checker=False,
)
pipe.set_progress_bar_config(disable=True)
generator = torch.Generator().manual_seed(0)
prompt_embeds = torch.randn(1, 4, 16, generator=generator)
negative_prompt_embeds = torch.randn(1, 4, 16, generator=generator)
images = pipe(
    prompt_embeds=prompt_embeds, negative_prompt_embeds=negative_prompt_embeds, height=8, width=8,
    num_inference_steps=4, guidance_scale=2.0, generator=torch.Generator().manual_seed(1), output_type="pt",
).images
torch.save(images, {saved!r})
print(json.dumps({{"begin_index": pipe.scheduler.begin_index, "shape": list(images.shape)}}))
"""


def test_the_rewrite_only_inserts_the_guarded_call_before_the_loop(tmp_path: Path) -> None:
    target = tmp_path / "pipeline_stable_diffusion.py"
    shutil.copy(installed_diffusers() / PIPELINE, target)
    before = target.read_text().splitlines()

    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF005",), jobs=1))

    after = target.read_text().splitlines()
    assert [f.fixed for f in result.findings] == [True]
    changes = [line for line in difflib.unified_diff(before, after, lineterm="", n=0) if line[:1] in "+-"]
    assert changes[2:] == [f"+{line}" for line in INSERTED]  # after the `---`/`+++` header
    inserted_at = after.index(INSERTED[0])
    assert (
        after[inserted_at + len(INSERTED)].strip()
        == "with self.progress_bar(total=num_inference_steps) as progress_bar:"
    )


REVIEWED = (
    "ltx/pipeline_ltx_i2v_long_multi_prompt.py",
    "helios/pipeline_helios.py",
    "helios/pipeline_helios_pyramid.py",
    "anyflow/pipeline_anyflow.py",
    "ltx2/pipeline_ltx2_image2video.py",
    "ltx2/pipeline_ltx2_condition.py",
    "ltx2/pipeline_ltx2_hdr_lora.py",
    "ltx2/pipeline_ltx2_ic_lora.py",
    "kandinsky6/pipeline_kandinsky6_ti2va.py",
    "stable_diffusion/pipeline_stable_unclip.py",
    "cosmos/pipeline_cosmos_text2world.py",
)
COMMENT = "# We set the index here to remove DtoH sync, helpful especially during compilation."


class Reviewed:
    """DIF005 and DIF007 applied to copies of the reviewed pipelines (one run for all of them)."""

    def __init__(self, root: Path, result: RunResult) -> None:
        self.root, self.result = root, result

    def findings(self, name: str, code: str = "DIF005") -> list:
        return [f for f in self.result.findings if f.code == code and Path(f.path).name == Path(name).name]

    def original(self, name: str) -> list[str]:
        return (installed_diffusers() / "pipelines" / name).read_text().splitlines()

    def inserted(self, name: str) -> list[str]:
        """The lines the run added to the file (it only ever inserts)."""
        after = (self.root / Path(name).name).read_text().splitlines()
        diff = difflib.unified_diff(self.original(name), after, lineterm="", n=0)
        return [line[1:].strip() for line in diff if line.startswith("+") and not line.startswith("+++")]


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    root = tmp_path_factory.mktemp("reviewed")
    for name in REVIEWED:
        shutil.copy(installed_diffusers() / "pipelines" / name, root / Path(name).name)
    options = RunOptions(context=installed_diffusers(), paths=(root,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF005", "DIF007"), jobs=1)
    return Reviewed(root, run(options))


def test_a_loop_that_continues_before_step_keeps_its_lookup(reviewed: Reviewed) -> None:
    name = "ltx/pipeline_ltx_i2v_long_multi_prompt.py"
    continue_line = 1 + next(
        i
        for i, line in enumerate(reviewed.original(name))
        if line.strip() == "continue" and "sigma_val >" in reviewed.original(name)[i - 1]
    )
    (finding,) = reviewed.findings(name)
    assert not finding.fixed and reviewed.inserted(name) == []
    assert f"`continue` on line {continue_line}" in finding.not_fixed_reason


@pytest.mark.parametrize("name", ["helios/pipeline_helios.py", "helios/pipeline_helios_pyramid.py"])
def test_a_scheduler_that_never_reads_the_begin_index_gets_none(reviewed: Reviewed, name: str) -> None:
    assert reviewed.findings(name) == [] and reviewed.inserted(name) == []


def test_a_scheduler_that_looks_up_every_step_is_reported_by_dif007_not_dif005(reviewed: Reviewed) -> None:
    name = "anyflow/pipeline_anyflow.py"
    assert reviewed.findings(name) == [] and reviewed.inserted(name) == []
    lookups = [f for f in reviewed.findings(name, "DIF007") if "on every call" in f.message]
    (finding,) = lookups
    assert reviewed.original(name)[finding.line - 1].strip().startswith("latents = self.scheduler.step(")
    assert "`FlowMapEulerDiscreteScheduler.step`" in finding.message


def test_a_deep_copied_audio_scheduler_gets_its_begin_index_too(reviewed: Reviewed) -> None:
    name = "ltx2/pipeline_ltx2_image2video.py"
    assert reviewed.inserted(name)[2:] == ["self.scheduler.set_begin_index(0)", "audio_scheduler.set_begin_index(0)"]


def test_an_audio_copy_that_may_be_none_is_guarded(reviewed: Reviewed) -> None:
    name = "kandinsky6/pipeline_kandinsky6_ti2va.py"
    assert reviewed.inserted(name)[2:] == [
        "self.scheduler.set_begin_index(0)",
        "if audio_scheduler is not None:",
        "audio_scheduler.set_begin_index(0)",
    ]


@pytest.mark.parametrize(
    "name", ["ltx2/pipeline_ltx2_condition.py", "ltx2/pipeline_ltx2_hdr_lora.py", "ltx2/pipeline_ltx2_ic_lora.py"]
)
def test_an_audio_scheduler_that_may_be_its_own_component_gets_its_index_where_the_loop_pairs_its_schedule(
    reviewed: Reviewed, name: str
) -> None:
    # `audio_scheduler` is `self.audio_scheduler` or a deep copy of `self.scheduler`; it gets its own schedule with
    # the video's arguments, and the loop reads `audio_timesteps[i]` at iteration i: begin index 0 is that pairing.
    (finding,) = reviewed.findings(name)
    assert finding.fixed
    assert reviewed.inserted(name)[2:] == ["self.scheduler.set_begin_index(0)", "audio_scheduler.set_begin_index(0)"]


def test_a_prior_loop_over_timesteps_read_from_its_scheduler_gets_that_schedulers_index(reviewed: Reviewed) -> None:
    name = "stable_diffusion/pipeline_stable_unclip.py"
    inserted = reviewed.inserted(name)
    assert [line for line in inserted if "set_begin_index(0)" in line and not line.startswith("if")] == [
        "self.prior_scheduler.set_begin_index(0)",
        "self.scheduler.set_begin_index(0)",
    ]
    assert inserted.count(COMMENT) == 2


def test_a_loop_that_steps_twice_per_iteration_is_still_fixed(reviewed: Reviewed) -> None:
    name = "cosmos/pipeline_cosmos_text2world.py"
    (finding,) = reviewed.findings(name)
    assert finding.fixed and "self.scheduler.set_begin_index(0)" in reviewed.inserted(name)


def test_schedulers_without_a_begin_index_get_nothing_in_an_old_release() -> None:
    # Schedulers before 0.27 look their first index up whatever the pipeline sets: a guarded call does nothing.
    pipeline = release_tree("0.25.1") / "diffusers" / PIPELINE
    result = run(RunOptions(context=installed_diffusers(), paths=(pipeline,), mode=Mode.CHECK, select=("DIF005",), jobs=1))
    assert result.findings == [] and result.errors == []


def _generate(tree: Path, saved: Path) -> dict:
    completed = run_python_in_tree(tree, textwrap.dedent(GENERATE.format(tree=str(tree), saved=str(saved))))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_a_tiny_stable_diffusion_pipeline_gives_the_same_image_after_the_rewrite(
    diffusers_trees: DiffusersTrees, tmp_path: Path
) -> None:
    rewritten = (diffusers_trees.rewritten / "diffusers" / PIPELINE).read_text()
    assert "\n".join(INSERTED) in rewritten

    before = _generate(diffusers_trees.original, tmp_path / "before.pt")
    after = _generate(diffusers_trees.rewritten, tmp_path / "after.pt")

    # The original looked the first index up; the rewritten pipeline set it before the loop.
    assert before["begin_index"] is None and after["begin_index"] == 0
    assert before["shape"] == after["shape"] == [1, 3, 8, 8]
    # Tensors only, compared here: this process imports torch, never a diffusers.
    image_before, image_after = torch.load(tmp_path / "before.pt"), torch.load(tmp_path / "after.pt")
    assert image_before.dtype == torch.float32 and torch.equal(image_before, image_after)
