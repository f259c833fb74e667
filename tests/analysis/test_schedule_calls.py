"""Which calls set a scheduler's schedule, on which scheduler, with which device."""

from __future__ import annotations

import ast

from codemods.analysis.schedules.schedule_calls import ScheduleCall, schedule_call


def _call(text: str) -> ScheduleCall | None:
    return schedule_call(ast.parse(text, mode="eval").body)


def _shown(found: ScheduleCall | None) -> tuple[str, str | None, bool] | None:
    if found is None:
        return None
    return ast.unparse(found.scheduler), found.device and ast.unparse(found.device), found.by_helper


def test_set_timesteps_sets_its_receiver_schedule_with_the_device_given_second_or_by_keyword() -> None:
    assert _shown(_call("self.scheduler.set_timesteps(n, device)")) == ("self.scheduler", "device", False)
    assert _shown(_call("self.scheduler.set_timesteps(n, device=d)")) == ("self.scheduler", "d", False)
    assert _shown(_call("self.scheduler.set_timesteps(n)")) == ("self.scheduler", None, False)


def test_retrieve_timesteps_sets_its_first_argument_schedule_with_the_device_given_third() -> None:
    assert _shown(_call("retrieve_timesteps(self.scheduler, n, device)")) == ("self.scheduler", "device", True)
    assert _shown(_call("utils.retrieve_timesteps(audio_scheduler, n, device=d)")) == ("audio_scheduler", "d", True)


def test_other_calls_set_no_schedule() -> None:
    assert _call("retrieve_timesteps()") is None  # no scheduler given
    assert _call("self.scheduler.set_begin_index(0)") is None
    assert _call("my_retrieve_timesteps(self.scheduler, n, device)") is None
    assert _call("self.scheduler.timesteps") is None
