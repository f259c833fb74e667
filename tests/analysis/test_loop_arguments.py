"""Which arguments decide whether a denoising loop reaches `scheduler.step()` (DIF005's second line of defence)."""

from __future__ import annotations

from codemods.analysis.models.loop_arguments import LoopShaping, loop_shaping
from codemods.project.index import installed_diffusers

PIPELINE = '''
class Pipe:
    def __call__(self, prompt, threshold=None, num_inference_steps=4):
        timesteps = self.scheduler.timesteps
        for i, t in enumerate(timesteps):
{body}
            latents = self.scheduler.step(noise, t, latents)[0]
        return latents
'''


def _shaping(body: str) -> list[tuple[str, tuple[str, ...], int | None]]:
    indented = "\n".join(f"            {line}" for line in body.strip("\n").splitlines())
    return [(s.function, s.arguments, s.line) for s in loop_shaping(PIPELINE.format(body=indented))]


def test_a_continue_under_a_test_of_an_argument_shapes_the_loop() -> None:
    assert _shaping("if threshold is not None and t > threshold:\n    continue") == [
        ("Pipe.__call__", ("threshold",), 7)
    ]


def test_an_argument_read_through_a_local_shapes_the_loop() -> None:
    assert _shaping("limit = threshold * 2\nif t > limit:\n    continue") == [("Pipe.__call__", ("threshold",), 8)]


def test_leaving_the_stepping_loop_early_does_not_shape_it() -> None:
    # The steps taken are the schedule's first ones, with or without a begin index.
    assert _shaping("if threshold is not None and t < threshold:\n    break") == []
    assert _shaping("if threshold is not None and t < threshold:\n    return latents") == []


def test_a_continue_after_every_step_does_not_shape_the_loop() -> None:
    source = (
        "class Pipe:\n"
        "    def __call__(self, threshold=None):\n"
        "        for t in self.scheduler.timesteps:\n"
        "            latents = self.scheduler.step(n, t, latents)[0]\n"
        "            if threshold is not None:\n"
        "                continue\n"
    )
    assert loop_shaping(source) == []


def test_a_break_of_an_inner_stepping_loop_shapes_the_outer_one() -> None:
    source = (
        "class Pipe:\n"
        "    def __call__(self, confidence=None):\n"
        "        for block in range(4):\n"
        "            for t in self.scheduler.timesteps:\n"
        "                latents = self.scheduler.step(n, t, latents)[0]\n"
        "                if confidence is not None and latents.max() > confidence:\n"
        "                    break\n"
    )
    assert [(s.arguments, s.loop_line, s.line) for s in loop_shaping(source)] == [(("confidence",), 3, 7)]


def test_an_interrupt_exit_does_not_shape_the_loop() -> None:
    assert _shaping("if self.interrupt:\n    continue") == []
    assert _shaping("if threshold and getattr(self, '_interrupt', False):\n    break") == []


def test_an_exit_under_a_test_of_no_argument_does_not_shape_the_loop() -> None:
    assert _shaping("if self.counter > 3:\n    continue") == []


def test_a_continue_of_an_inner_loop_that_does_not_step_is_not_an_exit() -> None:
    assert _shaping("for c in prompt:\n    if c == threshold:\n        continue") == []


def test_a_step_in_one_branch_only_makes_the_other_branch_the_place() -> None:
    source = (
        "class Pipe:\n"
        "    def __call__(self, skip_audio=False):\n"
        "        for t in self.scheduler.timesteps:\n"
        "            if not skip_audio:\n"
        "                audio = self.audio_scheduler.step(a, t, audio)[0]\n"
        "            else:\n"
        "                audio = audio\n"
        "            latents = self.scheduler.step(n, t, latents)[0]\n"
    )
    assert [(s.arguments, s.test_line, s.line) for s in loop_shaping(source)] == [(("skip_audio",), 4, 7)]


def test_a_step_under_an_if_without_else_has_no_line_to_observe() -> None:
    source = (
        "class Pipe:\n"
        "    def __call__(self, freeze=False):\n"
        "        for t in self.scheduler.timesteps:\n"
        "            if not freeze:\n"
        "                latents = self.scheduler.step(n, t, latents)[0]\n"
    )
    (shaping,) = loop_shaping(source)
    assert (shaping.line, shaping.describe()) == (None, "freeze (the branch of line 4 that skips the step)")


def test_a_long_list_of_arguments_is_cut_short_in_the_description() -> None:
    shaping = LoopShaping("P.__call__", 3, ("a", "b", "c", "d", "e", "f"), 5, 6)
    assert shaping.describe() == "a, b, c, d and 2 more (line 6)"


def test_ltx_long_multi_prompt_skip_threshold_is_found_in_the_installed_diffusers() -> None:
    path = installed_diffusers() / "pipelines/ltx/pipeline_ltx_i2v_long_multi_prompt.py"
    text = path.read_text("utf-8")
    found = [s for s in loop_shaping(text) if s.arguments == ("skip_steps_sigma_threshold",)]
    assert len(found) == 1
    assert text.splitlines()[found[0].line - 1].strip() == "continue"
    assert found[0].function == "LTXI2VLongMultiPromptPipeline.__call__"
