"""The replayed schedule that DIF007's fix reads gives, number for number, what the loop read per step."""

from __future__ import annotations

import ast

import pytest

from codemods.analysis.schedules.precomputed_schedule import ScheduleReplay, is_first_element_item, schedule_replay

torch = pytest.importorskip("torch")

# The statements of the Z-Image img2img/inpaint/controlnet/omni loops (diffusers 0.42.1), and a variant.
ZIMAGE_LOOP = """
def __call__(self, latents, timesteps):
    for i, t in enumerate(timesteps):
        timestep = t.expand(latents.shape[0])
        timestep = (1000 - timestep) / 1000
        t_norm = timestep[0].item()
"""
SPREAD_LOOP = """
def __call__(self, latents, timesteps):
    for i, t in enumerate(timesteps):
        timestep = (1000 - t.expand(latents.shape[0])) * 0.001
        timestep = timestep + -0.5
        t_norm = timestep[0].item()
"""


def _replay(code: str) -> tuple[ScheduleReplay, ast.For]:
    tree = ast.parse(code)
    function = tree.body[0]
    loop = function.body[0]
    call = next(node for node in ast.walk(loop) if is_first_element_item(node))
    read = loop.body[-1]
    replay = schedule_replay(call, (tree, function, loop, read, read.value), loop)
    assert isinstance(replay, ScheduleReplay), replay
    return replay, loop


def _per_step(loop: ast.For, timesteps, batch: int) -> list:
    """What the loop body computes for `t_norm` at each step, run as written."""
    body = compile(ast.Module(body=loop.body, type_ignores=[]), "<loop>", "exec")
    values = []
    for i, t in enumerate(timesteps):
        scope = {"t": t, "i": i, "latents": torch.zeros(batch, 1)}
        exec(body, scope)  # noqa: S102  (our own test snippet, the loop body as written)
        values.append(scope["t_norm"])
    return values


def _schedules() -> list:
    from diffusers import DDIMScheduler, FlowMatchEulerDiscreteScheduler

    flow = FlowMatchEulerDiscreteScheduler(shift=3.0)
    flow.set_timesteps(9)
    ddim = DDIMScheduler()
    ddim.set_timesteps(9)  # int64 timesteps: `/` makes them floats, in both forms alike
    sliced = flow.timesteps[3:]  # what an img2img `get_timesteps` keeps
    return [flow.timesteps, ddim.timesteps, sliced, torch.rand(50) * 1000]


@pytest.mark.parametrize("code", [ZIMAGE_LOOP, SPREAD_LOOP], ids=["zimage", "spread"])
@pytest.mark.parametrize("dtype", [None, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_the_precomputed_list_equals_the_per_step_reads(code: str, dtype) -> None:
    replay, loop = _replay(code)
    for schedule in _schedules():
        timesteps = schedule if dtype is None else schedule.to(dtype)
        precomputed = eval(f"({replay.expression}).tolist()", {"timesteps": timesteps})
        per_step = _per_step(loop, timesteps, batch=2)
        assert [type(v) for v in precomputed] == [type(v) for v in per_step]
        assert precomputed == per_step  # exact: the same elementwise arithmetic, element by element


def test_the_zimage_replay_is_the_maintainers_expression_without_float() -> None:
    replay, loop = _replay(ZIMAGE_LOOP)
    assert (replay.expression, replay.index, replay.anchor) == ("(1000 - timesteps) / 1000", "i", loop)
