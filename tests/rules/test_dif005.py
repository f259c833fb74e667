"""DIF005 on installed diffusers 0.42.1: the begin index is set before the loop, and nothing else changes.

The diff test runs DIF005 alone on a copy of the Stable Diffusion pipeline: the only change is the
inserted, guarded call before the progress-bar loop. The run test builds a tiny Stable Diffusion
pipeline (UNet, VAE, Euler, prompt embeddings given: no text encoder, no download) in the original and
in the rewritten tree (`diffusers_trees`, every rule applied), each in its own interpreter, and
compares the images exactly.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import DiffusersTrees, run_python_in_tree

from codemods.engine import Mode, RunOptions, run
from codemods.project import installed_diffusers

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

COMPARE = """
import sys, torch
before, after = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert before.dtype == torch.float32 and torch.equal(before, after)
print("identical")
"""


def test_the_rewrite_only_inserts_the_guarded_call_before_the_loop(tmp_path: Path) -> None:
    target = tmp_path / "pipeline_stable_diffusion.py"
    shutil.copy(installed_diffusers() / PIPELINE, target)
    before = target.read_text().splitlines()

    result = run(RunOptions(paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF005",), jobs=1))

    after = target.read_text().splitlines()
    assert [f.fixed for f in result.findings] == [True]
    changes = [line for line in difflib.unified_diff(before, after, lineterm="", n=0) if line[:1] in "+-"]
    assert changes[2:] == [f"+{line}" for line in INSERTED]  # after the `---`/`+++` header
    inserted_at = after.index(INSERTED[0])
    assert (
        after[inserted_at + len(INSERTED)].strip()
        == "with self.progress_bar(total=num_inference_steps) as progress_bar:"
    )


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
    compared = subprocess.run(
        [sys.executable, "-c", COMPARE, str(tmp_path / "before.pt"), str(tmp_path / "after.pt")],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compared.returncode == 0 and "identical" in compared.stdout, compared.stderr[-2000:]
