"""Hot versus cold code: what the sync rules may report."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.models.hot_paths import hot_paths
from codemods.source import SourceFile


def _hot_lines(code: str, marker: str = "# here") -> list[bool]:
    source = SourceFile("snippet.py", textwrap.dedent(code))
    paths = hot_paths(source)
    lines = [i + 1 for i, text in enumerate(source.lines) if marker in text]
    answers = []
    for line in lines:
        statement = next(
            (node, ancestors) for node, ancestors in source.walk_lines([line])
            if isinstance(node, ast.stmt) and node.lineno == line
        )  # fmt: skip
        answers.append(paths.is_hot(statement[1], statement[0]))
    return answers


def test_a_scheduler_first_step_branch_is_cold() -> None:
    code = """
    class EulerScheduler(SchedulerMixin):
        def step(self, model_output, timestep, sample):
            if self.step_index is None:
                self._init_step_index(timestep)  # here
            sigma = self.sigmas[self.step_index]  # here
    """
    assert _hot_lines(code) == [False, True]


def test_step_helpers_and_scale_model_input_are_hot() -> None:
    code = """
    class ScoreSdeVeScheduler(SchedulerMixin):
        def step_correct(self, model_output, sample):
            x = 1  # here

        def scale_model_input(self, sample, timestep):
            return sample  # here

        def add_noise(self, original, noise, timesteps):
            return original  # here
    """
    assert _hot_lines(code) == [True, True, False]


def test_an_attention_processor_call_is_hot() -> None:
    code = """
    class WanAttnProcessor:
        def __call__(self, attn, hidden_states):
            def apply_rotary_emb(x):
                return x  # here
            return apply_rotary_emb(hidden_states)  # here
    """
    assert _hot_lines(code) == [True, True]


def test_a_workaround_for_another_backend_is_cold() -> None:
    code = """
    class Block(nn.Module):
        def forward(self, diff):
            if diff.device.type in {"mps", "npu"}:
                v0 = diff.cpu().double()  # here
            else:
                v0 = diff.double()  # here
    """
    assert _hot_lines(code) == [False, True]


def test_a_scheduler_loop_over_timesteps_is_not_a_denoising_loop() -> None:
    code = """
    class DPMSolverMultistepScheduler(SchedulerMixin):
        def add_noise(self, original, noise, timesteps):
            for timestep in timesteps:
                index = (self.timesteps == timestep).nonzero()  # here
    """
    assert _hot_lines(code) == [False]


def test_a_while_loop_that_steps_the_scheduler_is_a_step_loop() -> None:
    code = """
    class Pipe(DiffusionPipeline):
        def __call__(self, x):
            while not done:
                x = self.scheduler.step(self.model(x), 0, x).prev_sample  # here
                done = x.isfinite().all()  # here
    """
    assert _hot_lines(code) == [True, True]


def test_a_loop_over_segments_that_holds_the_denoising_loop_is_not_one() -> None:
    # Wan Animate: each segment prepares its latents once, then runs a whole denoising loop.
    code = """
    class Pipe(DiffusionPipeline):
        def __call__(self, segments):
            for segment in segments:
                latents = self.prepare_latents(segment)  # here
                for t in steps:
                    latents = self.scheduler.step(self.model(latents, t), t, latents).prev_sample  # here
    """
    assert _hot_lines(code) == [False, True]


def test_a_registered_attention_backend_and_its_helpers_are_hot_but_not_an_npu_one() -> None:
    code = """
    def _lengths(mask):
        return mask.sum(dim=1).max().item()  # here


    @_AttentionBackendRegistry.register(AttentionBackendName.FLASH_VARLEN, constraints=[])
    def _flash_varlen_attention(query, key, value, attn_mask=None):
        return _lengths(attn_mask)  # here


    @_AttentionBackendRegistry.register(AttentionBackendName._NATIVE_NPU, constraints=[])
    def _native_npu_attention(query, key, value, attn_mask=None):
        return torch.all(attn_mask != 0)  # here
    """
    assert _hot_lines(code) == [True, True, False]


def test_the_lines_run_per_call_leave_out_a_hot_functions_signature_and_docstring() -> None:
    code = """
    class Block(nn.Module):
        @torch.no_grad()
        def forward(
            self, x: torch.Tensor, eps: float = float("inf")
        ):
            \"\"\"Scaled if `eps` is finite.\"\"\"
            return x * 2

        def helper(self):
            for step in self.progress_bar(timesteps):
                pass
    """
    paths = hot_paths(SourceFile("snippet.py", textwrap.dedent(code)))
    assert sorted(paths.ranges) == [(4, 8), (11, 12)]
    assert sorted(paths.run_ranges) == [(8, 8), (11, 12)]
