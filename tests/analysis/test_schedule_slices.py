"""A pipeline's `get_timesteps`: when its first return is provably a slice of the scheduler's timesteps."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.schedules.schedule_slices import sliced_argument, timesteps_slice_receiver


def _receiver(body: str) -> str | None:
    method = ast.parse(textwrap.dedent(body)).body[0]
    assert isinstance(method, ast.FunctionDef)
    return timesteps_slice_receiver(method)


def test_diffusers_get_timesteps_returns_a_slice_of_the_scheduler_timesteps() -> None:
    assert (
        _receiver(
            """
            def get_timesteps(self, num_inference_steps, strength, device):
                init_timestep = min(num_inference_steps * strength, num_inference_steps)
                t_start = int(max(num_inference_steps - init_timestep, 0))
                timesteps = self.scheduler.timesteps[t_start * self.scheduler.order :]
                if hasattr(self.scheduler, "set_begin_index"):
                    self.scheduler.set_begin_index(t_start * self.scheduler.order)
                return timesteps, num_inference_steps - t_start
            """
        )
        == "self.scheduler"
    )


def test_a_method_that_sets_the_schedule_itself_proves_nothing() -> None:
    # Its own `set_timesteps` (no device here) decides where the slice lives, not the caller's.
    assert (
        _receiver(
            """
            def get_timesteps(self, num_inference_steps, strength):
                self.scheduler.set_timesteps(num_inference_steps)
                timesteps = self.scheduler.timesteps[1:]
                return timesteps, num_inference_steps - 1
            """
        )
        is None
    )


def test_a_first_return_also_bound_from_something_else_proves_nothing() -> None:
    assert (
        _receiver(
            """
            def get_timesteps(self, num_inference_steps, strength, device):
                timesteps = self.scheduler.timesteps[1:]
                if strength == 1.0:
                    timesteps = torch.arange(num_inference_steps)
                return timesteps, num_inference_steps
            """
        )
        is None
    )


def test_a_method_that_retrieves_the_schedule_itself_proves_nothing() -> None:
    # `retrieve_timesteps` sets the schedule too: the slice lives where this method put it.
    assert (
        _receiver(
            """
            def get_timesteps(self, num_inference_steps, strength):
                retrieve_timesteps(self.scheduler, num_inference_steps)
                timesteps = self.scheduler.timesteps[1:]
                return timesteps, num_inference_steps - 1
            """
        )
        is None
    )


def _sliced(body: str, call: str) -> str | None:
    method = ast.parse(textwrap.dedent(body)).body[0]
    assert isinstance(method, ast.FunctionDef)
    argument = sliced_argument(method, ast.parse(call, mode="eval").body)
    return None if argument is None else ast.unparse(argument)


_COGVIDEOX_GET_TIMESTEPS = """
def get_timesteps(self, num_inference_steps, timesteps, strength, device):
    init_timestep = min(int(num_inference_steps * strength), num_inference_steps)
    t_start = max(num_inference_steps - init_timestep, 0)
    timesteps = timesteps[t_start * self.scheduler.order :]
    return timesteps, num_inference_steps - t_start
"""


def test_a_slice_of_a_parameter_is_the_argument_the_caller_passed() -> None:
    assert _sliced(_COGVIDEOX_GET_TIMESTEPS, "self.get_timesteps(n, schedule, strength, device)") == "schedule"


def test_a_slice_of_a_parameter_passed_by_keyword_is_that_keyword() -> None:
    assert (
        _sliced(_COGVIDEOX_GET_TIMESTEPS, "self.get_timesteps(n, timesteps=schedule, strength=s, device=d)")
        == "schedule"
    )


def test_a_slice_of_a_local_made_from_the_parameter_proves_nothing() -> None:
    # `torch.flip` made a new schedule: the caller's argument is not what comes back.
    body = """
    def get_timesteps(self, num_inference_steps, timesteps, strength):
        schedule = timesteps
        schedule = torch.flip(schedule, (0,))
        sliced = schedule[1:]
        return sliced, num_inference_steps - 1
    """
    assert _sliced(body, "self.get_timesteps(n, schedule, strength)") is None
