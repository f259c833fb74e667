"""What the files of the main-like checkout (tests/main_like.py) say: a `setup.py` with diffusers main's pins,
its Makefile and pull-request workflow, the two repository checks they run, and small tests written for
this project in the layout and style of diffusers' own.
"""

SETUP_PY = """\
from setuptools import find_packages, setup

# Written for the tests in the shape of diffusers main's: its own pins, its `torch` and `test` extras.
extras = {
    "quality": ["ruff==0.9.10"],
    "test": ["pytest", "torchvision", "transformers>=4.41.2"],
    "torch": ["torch>=2.6", "accelerate>=0.31.0"],
}

setup(
    name="diffusers",
    version="0.40.0.dev0",
    package_dir={"": "src"},
    packages=find_packages("src"),
    install_requires=["huggingface-hub>=1.32.0,<2.0", "httpx<1.0.0", "numpy", "safetensors>=0.8.0", "Pillow"],
    extras_require=extras,
)
"""

CONFTEST = """\
import sys
from os.path import abspath, dirname, join

# As in diffusers: the checkout's own src wins over any installed diffusers.
sys.path.insert(1, abspath(join(dirname(dirname(__file__)), "src")))
"""

TESTING_UTILS = """\
import os

import pytest

torch_device = os.environ.get("DIFFUSERS_TEST_DEVICE", "cpu")


def slow(test_case):
    return pytest.mark.skipif(not os.environ.get("RUN_SLOW"), reason="test is slow")(test_case)
"""

NUCLEUS_TEST = """\
import unittest

import torch

from diffusers import NucleusMoEImageTransformer2DModel

from ...testing_utils import slow, torch_device


class NucleusMoEImageTransformerTests(unittest.TestCase):
    model_class = NucleusMoEImageTransformer2DModel

    def get_dummy_model(self):
        torch.manual_seed(0)
        return self.model_class(
            patch_size=2, in_channels=16, out_channels=4, num_layers=2, attention_head_dim=16,
            num_attention_heads=2, joint_attention_dim=16, axes_dims_rope=(8, 4, 4), moe_enabled=False,
            capacity_factors=[8.0, 8.0],
        ).to(torch_device)

    def get_dummy_inputs(self):
        generator = torch.Generator("cpu").manual_seed(0)
        return {
            "hidden_states": torch.randn(1, 16, 16, generator=generator),
            "encoder_hidden_states": torch.randn(1, 8, 16, generator=generator),
            "encoder_hidden_states_mask": torch.ones(1, 8, dtype=torch.long),
            "timestep": torch.tensor([1.0]),
            "img_shapes": [(1, 4, 4)],
        }

    def test_output_shape(self):
        output = self.get_dummy_model()(**self.get_dummy_inputs(), return_dict=False)[0]
        self.assertEqual(tuple(output.shape), (1, 16, 16))

    def test_forward_is_deterministic(self):
        model = self.get_dummy_model()
        first = model(**self.get_dummy_inputs(), return_dict=False)[0]
        second = model(**self.get_dummy_inputs(), return_dict=False)[0]
        self.assertTrue(torch.equal(first, second))

    @slow
    def test_full_size_model(self):
        raise AssertionError("slow tests never run here")
"""

PIXART_TEST = """\
import unittest

import torch

from diffusers import PixArtTransformer2DModel


class PixArtTransformer2DModelTests(unittest.TestCase):
    model_class = PixArtTransformer2DModel

    def test_output_shape(self):
        torch.manual_seed(0)
        model = self.model_class(
            sample_size=8, num_layers=2, patch_size=2, attention_head_dim=4, num_attention_heads=2, in_channels=4,
            cross_attention_dim=8, out_channels=8, attention_bias=True, activation_fn="gelu-approximate",
            num_embeds_ada_norm=8, norm_type="ada_norm_single", norm_elementwise_affine=False, norm_eps=1e-6,
            use_additional_conditions=False, caption_channels=None,
        )
        output = model(
            torch.randn(1, 4, 8, 8), encoder_hidden_states=torch.randn(1, 8, 8), timestep=torch.tensor([500]),
            added_cond_kwargs={"resolution": None, "aspect_ratio": None}, return_dict=False,
        )[0]
        self.assertEqual(tuple(output.shape), (1, 8, 8, 8))
"""

DDPM_TEST = """\
import unittest

import numpy as np
import torch

from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel


class DDPMPipelineFastTests(unittest.TestCase):
    pipeline_class = DDPMPipeline

    def get_dummy_components(self):
        torch.manual_seed(0)
        unet = UNet2DModel(
            block_out_channels=(4, 8), layers_per_block=1, norm_num_groups=4, sample_size=8, in_channels=3,
            out_channels=3, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        )
        return {"unet": unet, "scheduler": DDPMScheduler()}

    def test_inference(self):
        pipe = self.pipeline_class(**self.get_dummy_components())
        image = pipe(generator=torch.Generator("cpu").manual_seed(0), num_inference_steps=2, output_type="np").images
        self.assertEqual(image.shape, (1, 8, 8, 3))

    def test_dict_and_tuple_outputs_are_equal(self):
        pipe = self.pipeline_class(**self.get_dummy_components())
        as_dict = pipe(generator=torch.Generator("cpu").manual_seed(0), num_inference_steps=2, output_type="np")
        as_tuple = pipe(
            generator=torch.Generator("cpu").manual_seed(0), num_inference_steps=2, output_type="np", return_dict=False
        )
        self.assertTrue(np.array_equal(as_dict.images, as_tuple[0]))
"""

STABLE_DIFFUSION_TEST = """\
import unittest

from diffusers import DDIMScheduler
from diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion import retrieve_timesteps


class StableDiffusionTimestepsFastTests(unittest.TestCase):
    def test_retrieve_timesteps_sets_the_schedule(self):
        scheduler = DDIMScheduler(num_train_timesteps=100)
        timesteps, steps = retrieve_timesteps(scheduler, num_inference_steps=4)
        self.assertEqual((steps, timesteps.tolist()), (4, [75, 50, 25, 0]))

    def test_retrieve_timesteps_refuses_both_timesteps_and_sigmas(self):
        with self.assertRaises(ValueError):
            retrieve_timesteps(DDIMScheduler(), timesteps=[1], sigmas=[1.0])
"""

MAKEFILE = """\
# Written for the tests in the shape of diffusers main's Makefile: its check targets and their variables.
export PYTHONPATH = src

check_dirs := src utils

repo-consistency:
\tpython utils/check_copies.py

quality:
\truff check $(check_dirs) setup.py
\truff format --check $(check_dirs) setup.py

fix-copies:
\tpython utils/check_copies.py --fix_and_overwrite
"""

PR_WORKFLOW = """\
# Written for the tests in the shape of diffusers main's pr_tests.yml: the jobs that check the repository.
name: Fast tests for PRs
on: pull_request
jobs:
  check_code_quality:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/checkout@v6
      - name: Check quality
        run: make quality
  check_repository_consistency:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/checkout@v6
      - name: Check repo consistency
        run: |
          python utils/check_copies.py
          python utils/check_dummies.py
"""

# Written for the tests: what diffusers' utils/check_copies.py checks, in a short script. The body of every
# function marked `# Copied from diffusers.<module>.<name>` must be that function's body (as parsed). Each function
# is found in its lines, as diffusers' own check finds it, and parsed alone (a whole-tree parse took seconds per
# run; the bot runs this check on every fix group's rewritten tree); each source once, however many copies cite it.
CHECK_COPIES = """\
import ast
import functools
import pathlib
import re
import sys

MARK = re.compile(r"^\\s*# Copied from diffusers\\.([\\w.]+)\\s*$")
SIGNATURE_END = re.compile(r"^\\s*\\)(\\s*->.*)?:\\s*$")
root = pathlib.Path("src")


def indent(line):
    return len(line) - len(line.lstrip())


def block(lines, start):
    # The def or class at `start`: its lines up to the first one indented no deeper (a signature's end aside).
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or indent(lines[end]) > indent(lines[start]) or SIGNATURE_END.match(lines[end])
    ):
        end += 1
    return [line[indent(lines[start]):] for line in lines[start:end]]


def body(lines, start):
    # The AST of the body of the def or class at `start` (the whole module is parsed when its lines alone do not).
    try:
        return ast.parse("\\n".join(block(lines, start))).body[0].body
    except SyntaxError:
        parsed = ast.walk(ast.parse("\\n".join(lines)))
        return next(n for n in parsed if getattr(n, "lineno", 0) == start + 1 and hasattr(n, "body")).body


def same_text(copy, original):
    # Whether the lines after both def lines are the same, each def line ending where its body starts.
    ends = copy[0].rstrip().endswith(":") and original[0].rstrip().endswith(":")
    return ends and len(copy) > 1 and copy[1:] == original[1:]


@functools.cache
def definition(dotted):
    # The lines of the module defining `dotted` and the line of its def or class, or None.
    parts = dotted.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = (root / "diffusers" / "/".join(parts[:end])).with_suffix(".py")
        if module.is_file():
            lines, start, stop, depth = module.read_text().splitlines(), 0, None, ""
            for name in parts[end:]:
                named = re.compile(rf"^{depth}(?:async def|def|class)\\s+{name}\\b")
                found = next((i for i in range(start, stop or len(lines)) if named.match(lines[i])), None)
                if found is None:
                    return None
                start, stop, depth = found, found + len(block(lines, found)), depth + "    "
            return lines, start
    return None


failures, sources = [], {}
for path in sorted(root.rglob("*.py")):
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines[:-1]):
        mark = MARK.match(line)
        if not mark or not lines[number + 1].lstrip().startswith("def "):
            continue
        wanted = definition(mark.group(1))
        if wanted is None or same_text(block(lines, number + 1), block(*wanted)):
            continue
        if mark.group(1) not in sources:
            sources[mark.group(1)] = list(map(ast.dump, body(*wanted)))
        if list(map(ast.dump, body(lines, number + 1))) != sources[mark.group(1)]:
            name = re.match(r"\\s*def\\s+(\\w+)", lines[number + 1]).group(1)
            failures.append(f"{path}:{number + 2}: {name} is not a copy of diffusers.{mark.group(1)}")
if failures:
    sys.exit("\\n".join(failures) + "\\nRun `make fix-copies` to fix them.")
"""

CHECK_DUMMIES = """\
# Written for the tests: a check that passes, as diffusers' check_dummies.py does on a clean tree.
"""

TESTS = {
    "models/transformers/test_models_transformer_nucleusmoe_image.py": NUCLEUS_TEST,
    "models/transformers/test_models_pixart_transformer2d.py": PIXART_TEST,
    "pipelines/ddpm/test_ddpm.py": DDPM_TEST,
    "pipelines/stable_diffusion/test_stable_diffusion.py": STABLE_DIFFUSION_TEST,
}
