"""How often a finding's cost is paid: from the call graph and the tree's pipelines, not from a method's name."""

from __future__ import annotations

import textwrap
from pathlib import Path

from codemods.analysis.models.frequency import site_cost
from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import Frequency
from codemods.source import SourceFile


def _frequency(code: str, marker: str = "# here") -> Frequency:
    source = SourceFile("snippet.py", textwrap.dedent(code))
    line = next(i + 1 for i, text in enumerate(source.lines) if marker in text)
    return site_cost(source, line).frequency


def test_a_denoising_loop_body_costs_every_step() -> None:
    code = """
    class Pipeline:
        def __call__(self, timesteps):
            for t in timesteps:
                x = t.item()  # here
    """
    assert _frequency(code) is Frequency.STEP


def test_a_branch_taken_at_the_last_step_costs_once() -> None:
    code = """
    class Pipeline:
        def __call__(self, timesteps):
            for i, t in enumerate(timesteps):
                if i == len(timesteps) - 1:
                    x = t.item()  # here
    """
    assert _frequency(code) is Frequency.LAST_STEP


def test_the_zero_branch_of_a_schedule_value_in_a_function_the_loop_calls_is_the_last_step() -> None:
    code = """
    def compute_noise(sigma, sample):
        if sigma > 0.0:
            return sample / sigma
        else:
            return torch.tensor([0.0]).to(sample.device)  # here

    class Pipeline:
        def __call__(self, timesteps, sample):
            for t in self.progress_bar(timesteps):
                noise = compute_noise(t, sample)
    """
    assert _frequency(code) is Frequency.LAST_STEP


def test_a_pipeline_method_outside_its_loop_costs_once_per_generation() -> None:
    code = """
    class Pipeline(DiffusionPipeline):
        def __init__(self, unet):
            self.register_modules(unet=unet)

        def __call__(self, timesteps, image):
            checked = image.cpu()  # here
            for t in timesteps:
                self.unet(image, t)
    """
    assert _frequency(code) is Frequency.GENERATION


def test_a_forward_is_left_to_the_tree_and_a_cached_method_costs_once() -> None:
    code = """
    class Block(nn.Module):
        def forward(self, x):
            return x.tolist()  # forward

        @lru_cache_unless_export
        def table(self, n):
            return torch.arange(n)  # cached
    """
    assert _frequency(code, "# forward") is Frequency.UNREACHED_FORWARD
    assert _frequency(code, "# cached") is Frequency.BUILD


_PIPELINE = """\
import torch
from ..model import Checker, Denoiser


class Pipeline(DiffusionPipeline):
    def __init__(self, transformer: Denoiser, safety_checker: Checker):
        self.register_modules(transformer=transformer, safety_checker=safety_checker)

    def __call__(self, timesteps, latents):
        for t in self.progress_bar(timesteps):
            latents = self.transformer(latents, t)
        return self.safety_checker(latents)
"""

_MODELS = """\
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        return x * torch.tensor([1.0, 2.0], device=x.device)


class Denoiser(ModelMixin):
    def __init__(self):
        self.blocks = torch.nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x, t):
        for block in self.blocks:
            x = block(x)
        return x


class Checker(ModelMixin):
    def forward(self, x):
        return x * torch.tensor([1.0, 2.0], device=x.device)


class Unused(ModelMixin):
    def forward(self, x):
        return x * torch.tensor([1.0, 2.0], device=x.device)
"""


def test_a_forward_is_hot_when_a_per_step_model_builds_it_and_cold_when_pipelines_run_it_once(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "pipelines").mkdir(parents=True)
    for path in (package / "__init__.py", package / "pipelines" / "__init__.py"):
        path.write_text("")
    (package / "pipelines" / "pipeline.py").write_text(_PIPELINE)
    (package / "model.py").write_text(_MODELS)

    result = run(RunOptions(paths=(package,), mode=Mode.CHECK, select=("DIF006",), jobs=1))

    by_line = {f.line: f.cost.frequency for f in result.findings if f.cost is not None}
    assert by_line == {6: Frequency.MODEL_FORWARD, 21: Frequency.GENERATION, 26: Frequency.UNREACHED_FORWARD}
