"""What a scheduler's `step()` does to find its index, read from the installed diffusers' source and from
small schedulers of our own."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemods.analysis.schedules.scheduler_lookups import IndexLookups, every_call_lookup, index_lookups
from codemods.project.index import ProjectIndex, installed_diffusers


@pytest.fixture(scope="module")
def installed() -> ProjectIndex:
    return ProjectIndex([installed_diffusers()], {})


def _index(tmp_path: Path, source: str) -> ProjectIndex:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scheduling.py").write_text(textwrap.dedent(source))
    return ProjectIndex([package], {})


def test_euler_looks_up_its_first_index_only_while_no_begin_index_is_set(installed: ProjectIndex) -> None:
    assert index_lookups(installed, "EulerDiscreteScheduler", "step") == IndexLookups(until_begin_index=True)


def test_an_inherited_step_is_followed_into_the_base_class(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        """
        class Base:
            def step(self, t):
                if self.step_index is None:
                    self._init_step_index(t)

            def _init_step_index(self, t):
                if self.begin_index is None:
                    self._step_index = self.index_for_timestep(t)
                else:
                    self._step_index = self._begin_index

        class Child(Base):
            pass
        """,
    )
    assert index_lookups(index, "Child", "step").reads_begin_index


def test_helios_never_looks_an_index_up(installed: ProjectIndex) -> None:
    assert index_lookups(installed, "HeliosScheduler", "step") == IndexLookups()


def test_flow_map_euler_looks_up_on_every_step(installed: ProjectIndex) -> None:
    found = index_lookups(installed, "FlowMapEulerDiscreteScheduler", "step")
    assert found.until_begin_index and not found.reads_begin_index
    assert found.every_call.startswith("`FlowMapEulerDiscreteScheduler.step`, line ")


def test_a_first_step_lookup_that_ignores_the_begin_index_is_told_apart(installed: ProjectIndex) -> None:
    found = index_lookups(installed, "DPMSolverMultistepInverseScheduler", "step")
    assert found.first_call and not found.reads_begin_index


def test_a_conditional_expression_on_the_begin_index_guards_the_lookup(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        """
        class Sched:
            def step(self, t):
                if self._step_index is None:
                    self._step_index = self.index_for_timestep(t) if self._begin_index is None else self._begin_index
        """,
    )
    assert index_lookups(index, "Sched", "step") == IndexLookups(until_begin_index=True)


def test_an_early_return_once_the_begin_index_is_set_guards_what_follows(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        """
        class Sched:
            def step(self, t):
                if self._step_index is None:
                    self._init(t)

            def _init(self, t):
                if self._begin_index is not None:
                    self._step_index = self._begin_index
                    return
                self._step_index = int((self.timesteps == t).nonzero()[0])
        """,
    )
    assert index_lookups(index, "Sched", "step") == IndexLookups(until_begin_index=True)


def test_a_lookup_under_another_condition_is_not_called_every_step(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        """
        class Sched:
            def step(self, t):
                if self.custom_timesteps:
                    index = self.index_for_timestep(t)
        """,
    )
    assert every_call_lookup(index, ("Sched",), "step") is None


def test_an_unknown_class_has_no_answer(installed: ProjectIndex) -> None:
    assert index_lookups(installed, "NoSuchScheduler", "step") is None


def test_an_every_call_lookup_is_placed_on_its_line_in_the_file(tmp_path: Path) -> None:
    # The method is read from its own lines (decorated, below a class it does not call): its lines are the file's.
    index = _index(
        tmp_path,
        """
        class Other:
            def step(self, t):
                return t

        class Sched(Other):
            @torch.no_grad()
            def step(self, t):
                return self._lookup(t)

            def _lookup(self, t):
                # every call
                return self.index_for_timestep(t)
        """,
    )
    assert every_call_lookup(index, ("Sched",), "step") == "`Sched._lookup`, line 13"


def test_an_async_step_is_not_followed(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        """
        class Sched:
            async def step(self, t):
                return self.index_for_timestep(t)
        """,
    )
    assert index_lookups(index, "Sched", "step") is None
